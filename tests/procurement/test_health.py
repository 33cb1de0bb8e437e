import pytest
from django.conf import settings
from django.test import override_settings


@pytest.mark.django_db
def test_healthz_reports_every_dependency(client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] is True
    assert body["database"]["vendor"] == ("postgresql" if settings.DATABASE_URL else "sqlite")
    assert body["channel_layer"]["ok"] is True
    assert body["broker"]["ok"] is True
    expected_broker = "redis" if settings.TASK_RUNNER == "celery" else "in-process thread"
    assert body["broker"]["backend"] == expected_broker


@pytest.mark.django_db
def test_healthz_needs_no_login_and_only_allows_get(client) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.post("/healthz").status_code == 405


@pytest.mark.django_db
@override_settings(TASK_RUNNER="celery", CELERY_BROKER_URL="redis://127.0.0.1:1/0")
def test_healthz_is_503_when_the_broker_is_down(client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "degraded"
    assert body["broker"]["ok"] is False
    assert "Error" in body["broker"]["error"]
    assert body["database"]["ok"] is True

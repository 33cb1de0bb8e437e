"""API authentication: guessing passwords over Basic auth is locked out, users are rate-limited."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.cache import cache
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework.throttling import UserRateThrottle

from tests.procurement.conftest import PASSWORD

URL = "/api/scenarios/"
GUESSES = 30


def basic(username: str, password: str, address: str = "127.0.0.1") -> APIClient:
    client = APIClient(REMOTE_ADDR=address)
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {token}")
    return client


@pytest.mark.django_db
def test_basic_auth_password_guessing_is_locked_out(
    user_with_role, settings, snapshot_counts
) -> None:
    # Before: 300 wrong passwords in a row were each checked, and the right one then worked.
    user_with_role("analyst", username="bob")
    before = snapshot_counts()
    limit = settings.AXES_FAILURE_LIMIT
    statuses = [basic("bob", f"guess-{i}").get(URL).status_code for i in range(GUESSES)]
    assert statuses == [401] * (limit - 1) + [429] * (GUESSES - limit + 1)

    locked = basic("bob", PASSWORD).get(URL)  # even the right password, while locked
    assert locked.status_code == 429
    assert "too many login attempts" in locked.json()["detail"]
    assert int(locked["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()
    assert snapshot_counts() == before

    # The lock is per account and address: bob elsewhere is not locked out by the attacker.
    assert basic("bob", PASSWORD, address="10.0.0.7").get(URL).status_code == 200


@pytest.mark.django_db
def test_basic_auth_lock_lifts_after_the_cool_off(user_with_role, settings) -> None:
    user_with_role("analyst", username="bob")
    for i in range(settings.AXES_FAILURE_LIMIT):
        basic("bob", f"guess-{i}").get(URL)
    assert basic("bob", PASSWORD).get(URL).status_code == 429
    later = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=later)
    assert basic("bob", PASSWORD).get(URL).status_code == 200
    assert basic("bob", "guess-again").get(URL).status_code == 401  # counting starts afresh


@pytest.mark.django_db
def test_an_authenticated_client_is_rate_limited(api_client_for, monkeypatch) -> None:
    # DRF reads the rate per request from this dict; a small one keeps the test quick.
    monkeypatch.setitem(UserRateThrottle.THROTTLE_RATES, "user", "3/minute")
    cache.clear()  # the process-local cache: earlier tests' requests must not count
    client, other = api_client_for("analyst"), api_client_for("analyst")
    assert [client.get(URL).status_code for _ in range(3)] == [200] * 3
    throttled = client.get(URL)
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    assert "throttled" in throttled.json()["detail"]
    assert other.get(URL).status_code == 200  # per user


EPISODE = {"scenario": "easy_negotiation", "policy": "expert", "seed": 5}


@pytest.mark.django_db
def test_a_cross_site_post_with_cached_basic_credentials_is_refused(
    user_with_role, seeded, snapshot_counts
) -> None:
    # Before: a form on http://evil.example posted with the credentials the browser had
    # cached for this site, and the episode was created (201).
    user_with_role("analyst", username="bob")
    before = snapshot_counts()
    client = basic("bob", PASSWORD)
    refused = client.post("/api/episodes/", EPISODE, HTTP_ORIGIN="http://evil.example")
    assert refused.status_code == 403 and "Origin" in refused.json()["detail"]
    other_port = client.post("/api/episodes/", EPISODE, HTTP_ORIGIN="http://testserver:9999")
    assert other_port.status_code == 403
    assert snapshot_counts() == before
    # This site's own pages, and scripts (no Origin), get through to the view (a bad
    # body, so nothing runs).
    assert client.post("/api/episodes/", {}, HTTP_ORIGIN="http://testserver").status_code == 400
    assert client.post("/api/episodes/", {}).status_code == 400


@pytest.mark.django_db
def test_basic_posts_from_a_trusted_origin_are_taken(user_with_role, settings) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://arena.example"]
    user_with_role("analyst", username="bob")
    client = basic("bob", PASSWORD)
    assert client.post("/api/episodes/", {}, HTTP_ORIGIN="https://arena.example").status_code == 400

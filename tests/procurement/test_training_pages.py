"""The Training page per role: analysts read, ops start and cancel; a bad form or a
refused request shows its error and creates nothing. And ``manage.py train``'s errors."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from negotiation.training.report import REPORT_DIR, RESULTS_FILE
from procurement.models import TrainingRun
from procurement.services.sweep_runner import sweep_cells_run, sweep_start
from procurement.services.sweeps import sweep_create
from tests.training_bench import plant_bench_report

pytestmark = pytest.mark.django_db

FORM = {
    "kind": "sft",
    "name": "page-sft",
    "base": "smollm2",
    "scenarios": ["easy_negotiation"],
    "source_policy": "expert",
    "episodes": 2,
    "max_steps": 2,
    "learning_rate": 5e-5,
}


@pytest.fixture
def expert_episodes(preset, expert):
    sweep = sweep_create(scenarios=[preset], policies=[expert], seeds=2, enqueue=False)
    for chunk in sweep_start(sweep_id=sweep.pk):
        sweep_cells_run(sweep_id=sweep.pk, cell_ids=chunk.cell_ids)


def _client(user_with_role, role: str) -> Client:
    client = Client()
    client.force_login(user_with_role(role))
    return client


def test_analysts_read_but_do_not_start(user_with_role, expert_episodes) -> None:
    client = _client(user_with_role, "analyst")
    page = client.get(reverse("training-list-page"))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'href="/training/"' in html  # the navigation link
    assert "start-training" not in html and "needs the ops role" in html
    assert client.post(reverse("training-list-page"), FORM).status_code == 403
    assert not TrainingRun.objects.exists()


def test_ops_start_then_cancel(user_with_role, expert_episodes) -> None:
    client = _client(user_with_role, "ops")
    assert "start-training" in client.get(reverse("training-list-page")).content.decode()
    response = client.post(reverse("training-list-page"), FORM)
    run = TrainingRun.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("training-page", args=[run.pk])
    page = client.get(response.url).content.decode()
    assert "Lineage" in page and 'id="cancel-form"' in page and "easy_negotiation" in page

    analyst = _client(user_with_role, "analyst")
    assert analyst.post(reverse("training-cancel", args=[run.pk])).status_code == 403
    run.refresh_from_db()
    assert run.status == "queued"

    response = client.post(reverse("training-cancel", args=[run.pk]))
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == "cancelled"
    again = client.post(reverse("training-cancel", args=[run.pk]))
    assert again.status_code == 409 and "only queued or running" in again.content.decode()

    assert "resume-form" in client.get(response.url).content.decode()
    assert analyst.post(reverse("training-resume", args=[run.pk])).status_code == 403
    assert client.post(reverse("training-resume", args=[run.pk])).status_code == 302
    run.refresh_from_db()
    assert run.status == "queued"  # its task takes it again, from its last checkpoint
    again = client.post(reverse("training-resume", args=[run.pk]))
    assert again.status_code == 409 and "only failed or cancelled" in again.content.decode()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": "expert"}, "A policy is called"),
        ({"min_score": "0.99"}, "No stored episodes"),
        ({"episodes": "0"}, "greater than or equal to 1"),
        ({"base": "nope"}, "Select a valid choice"),
        ({"continuation": "model"}, "A continuation is a GRPO setting"),
    ],
)
def test_a_bad_start_shows_why(user_with_role, expert_episodes, change, message) -> None:
    client = _client(user_with_role, "ops")
    response = client.post(reverse("training-list-page"), {**FORM, **change})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not TrainingRun.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenarios", "atlantis"], "--scenarios: Unknown scenario"),
        (["--min-score", "0.99"], "--episodes: No stored episodes"),
        (["--name", "expert"], "--name: A policy is called"),
        (["--base", "gpt-9"], "--base: Unknown base"),
        (["--continuation", "model"], "--continuation: A continuation is a GRPO setting"),
    ],
)
def test_train_command_errors(expert_episodes, args, message) -> None:
    base = ["train", "sft", "--scenarios", "easy_negotiation", "--episodes", "2"]
    base += ["--name", "cli-sft"]
    with pytest.raises(CommandError, match=message):
        call_command(*base, *args, stdout=io.StringIO(), stderr=io.StringIO())
    assert not TrainingRun.objects.exists()


def test_the_admin_shows_a_runs_lineage_and_its_policys(admin_client, expert_episodes) -> None:
    from procurement.services.policies import policy_create
    from procurement.services.training import TrainingRequest, training_create

    run = training_create(
        request=TrainingRequest(
            kind="sft", base="smollm2", scenarios=["easy_negotiation"], episodes=2, name="adm"
        ),
        enqueue=False,
    )
    policy = policy_create(name="adm", policy="llm", backend="transformers", model="/m")
    lineage = {"base": "smollm2", "steps": 7, "data": {"examples": 3}}
    TrainingRun.objects.filter(pk=run.pk).update(lineage=lineage, policy=policy, status="finished")
    for url in (
        reverse("admin:procurement_trainingrun_change", args=[run.pk]),
        reverse("admin:procurement_policyconfig_change", args=[policy.pk]),
    ):
        page = admin_client.get(url)
        assert page.status_code == 200, url
        assert "&quot;steps&quot;: 7" in page.content.decode(), url


def test_the_bench_report_is_on_the_page_with_its_curves(user_with_role, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    report = plant_bench_report(tmp_path / REPORT_DIR, seeds=2)
    # a model's row, as the bench writes one: its play's tokens over its wall time
    results = tmp_path / REPORT_DIR / RESULTS_FILE
    stored = json.loads(results.read_text())
    stored["table"][0].update(wall_s=60.0, prefill_tokens=12_000, decode_tokens=600)
    results.write_text(json.dumps(stored))
    client = _client(user_with_role, "analyst")
    html = client.get(reverse("training-list-page")).content.decode()
    table = html[html.index('id="training-bench-table"') :]
    for c in report.table:
        assert f'<td data-label="Buyer">{c.policy}</td>' in table
    speeds = re.findall(r'data-label="Play tokens/s">([^<]*)<', table)
    assert speeds == ["prefill 200, decode 10.0", "\N{EN DASH}", "\N{EN DASH}"]
    assert "always_accept \u2212 random" in html and "award_contract 2" in html
    assert f'src="{reverse("training-bench-curves")}"' in html
    image = client.get(reverse("training-bench-curves"))
    assert image.status_code == 200 and image["Content-Type"] == "image/png"
    assert b"".join(image.streaming_content).startswith(b"\x89PNG")


def test_no_report_or_a_broken_one_never_breaks_the_page(user_with_role, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    client = _client(user_with_role, "analyst")
    page = client.get(reverse("training-list-page"))
    assert page.status_code == 200 and "No training bench report yet" in page.content.decode()
    assert client.get(reverse("training-bench-curves")).status_code == 404
    (tmp_path / REPORT_DIR).mkdir()
    (tmp_path / REPORT_DIR / RESULTS_FILE).write_text('{"table": "not a table"}')
    page = client.get(reverse("training-list-page"))
    html = page.content.decode()
    assert page.status_code == 200 and "report cannot be shown" in html
    assert f"{REPORT_DIR}/{RESULTS_FILE} is not a training bench report" in html
    assert str(tmp_path) not in html and 'id="training-bench-table"' not in html


def test_the_curves_are_for_signed_in_users(client, settings, tmp_path) -> None:
    settings.DATA_DIR = tmp_path
    plant_bench_report(tmp_path / REPORT_DIR, seeds=1)
    response = client.get(reverse("training-bench-curves"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]

"""Episode services: start (enqueue on commit), bulk decisions, finish, cancel, replay."""

from __future__ import annotations

import math

import pytest
from django.db import connection
from django.test import override_settings

from procurement.errors import Conflict
from procurement.models import Decision, Episode, EpisodeStatus, PolicyConfig
from procurement.services import episodes as svc
from procurement.services.episode_runner import episode_run


def record(step: int, week: int = 0) -> dict:
    return {
        "step": step,
        "week": week,
        "action": {"action_type": "defer"},
        "valid": True,
        "error": None,
        "response": None,
        "reward": 0.001 * step,
        "running_score": 0.5,
        "events": [],
        "state": {"budget_remaining": 100.0},
    }


@pytest.fixture
def episode(preset, expert) -> Episode:
    return svc.episode_create(scenario=preset, policy=expert, seed=11, enqueue=False)


@pytest.mark.django_db
def test_start_episode_snapshots_and_dispatches_after_commit(
    preset, expert, django_capture_on_commit_callbacks, monkeypatch
) -> None:
    from procurement import dispatch

    sent = []
    monkeypatch.setattr(
        dispatch.producer(),
        "send_task",
        lambda name, args, ignore_result, **opts: sent.append((name, args, opts)),
    )
    with override_settings(TASK_RUNNER="celery"):
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            episode = svc.episode_create(scenario=preset, policy=expert, seed=5)
        assert len(callbacks) == 1 and sent == []  # nothing is sent before the commit
        callbacks[0]()
    assert sent == [(dispatch.RUN_EPISODE, (episode.pk,), {"queue": "cpu"})]
    episode.refresh_from_db()
    assert episode.status == EpisodeStatus.QUEUED
    assert (episode.scenario_name, episode.policy_name, episode.seed) == (
        "easy_negotiation",
        "expert",
        5,
    )
    assert episode.scenario_snapshot == preset.engine_config()
    assert episode.policy_snapshot == expert.snapshot()
    assert episode.scenario_version == preset.version


@pytest.mark.django_db
def test_start_episode_without_enqueue_sends_nothing(
    preset, expert, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        svc.episode_create(scenario=preset, policy=expert, seed=5, enqueue=False)
    assert callbacks == []


@pytest.mark.django_db
def test_llm_work_goes_to_the_gpu_queue(preset) -> None:
    llm = PolicyConfig.objects.create(name="llm-a", policy="llm", backend="vllm", model="/m")
    assert svc.episode_build(scenario=preset, policy=llm, seed=0).queue == "gpu"
    rule = PolicyConfig.objects.get(name="expert")
    llm_suppliers = {"model": "x", "personas": ["hardball"]}
    preset.config = {**preset.config, "supplier_llm": llm_suppliers}
    assert svc.episode_build(scenario=preset, policy=rule, seed=0).queue == "gpu"
    # A supplier_llm that names no persona plays rule suppliers: cpu work.
    preset.config = {**preset.config, "supplier_llm": {"model": "x"}}
    assert svc.episode_build(scenario=preset, policy=rule, seed=0).queue == "cpu"


@pytest.mark.django_db
def test_append_decisions_is_one_insert_whatever_the_batch(
    episode, django_assert_num_queries
) -> None:
    # savepoint, the rows, the episode's step counter, release. On PostgreSQL the rows go
    # through one COPY (psycopg's copy API, below Django's query log); on SQLite through
    # bulk INSERTs, split only where SQLite caps the parameters of one statement.
    records = [record(i, i // 10) for i in range(200)]
    fields = [f for f in Decision._meta.concrete_fields if not f.primary_key]
    batch = min(1000, connection.ops.bulk_batch_size(fields, records) or 1000)
    inserts = 0 if connection.vendor == "postgresql" else math.ceil(len(records) / batch)
    attempt = svc.episode_claim(episode=episode)
    with django_assert_num_queries(3 + inserts):
        assert (
            svc.episode_decisions_append(episode=episode, records=records, attempt=attempt) == 200
        )
    with django_assert_num_queries(3 + (0 if connection.vendor == "postgresql" else 1)):
        assert (
            svc.episode_decisions_append(
                episode=episode, records=[record(200)], attempt=attempt, actor="human"
            )
            == 1
        )
    with django_assert_num_queries(0):
        assert svc.episode_decisions_append(episode=episode, records=[], attempt=attempt) == 0
    episode.refresh_from_db()
    assert episode.steps == 201
    assert Decision.objects.filter(episode=episode).count() == 201
    last = episode.decisions.get(step=200)
    assert last.actor == "human" and last.state == {"budget_remaining": 100.0}
    assert last.action_type == "defer"


@pytest.mark.django_db
def test_only_the_newest_attempt_writes(episode) -> None:
    """A re-delivered task claims the episode anew; the attempt it replaced writes nothing
    more (its batch is refused whole), and cannot finish or fail the episode."""
    old = svc.episode_claim(episode=episode)
    assert (
        old == 1
        and svc.episode_decisions_append(episode=episode, records=[record(0)], attempt=old) == 1
    )
    new = svc.episode_claim(episode=Episode.objects.get(pk=episode.pk))
    assert new == 2
    with pytest.raises(svc.AttemptSuperseded):
        svc.episode_decisions_append(episode=episode, records=[record(1), record(2)], attempt=old)
    assert Decision.objects.filter(episode=episode).count() == 1
    assert not svc.episode_finish(
        episode=episode, attempt=old, score=1.0, metrics={}, engine_seconds=0
    )
    assert not svc.episode_fail(episode=episode, error="stale attempt", attempt=old)
    assert svc.episode_decisions_append(episode=episode, records=[record(1)], attempt=new) == 1
    assert svc.episode_finish(episode=episode, attempt=new, score=0.5, metrics={}, engine_seconds=0)
    episode.refresh_from_db()
    assert (episode.status, episode.score, episode.steps) == ("finished", 0.5, 2)


@pytest.mark.django_db
def test_a_cancelled_episode_refuses_further_batches(episode) -> None:
    attempt = svc.episode_claim(episode=episode)
    svc.episode_cancel(episode=Episode.objects.get(pk=episode.pk))
    with pytest.raises(svc.AttemptSuperseded):
        svc.episode_decisions_append(episode=episode, records=[record(0)], attempt=attempt)
    assert not Decision.objects.filter(episode=episode).exists()


@pytest.mark.django_db
def test_finish_fail_and_cancel(episode) -> None:
    attempt = svc.episode_claim(episode=episode)
    assert episode.status == EpisodeStatus.RUNNING and attempt == episode.attempts == 1
    assert episode.started_at is not None
    svc.episode_finish(
        episode=episode,
        attempt=attempt,
        score=0.75,
        metrics={"deal_rate": 1.0},
        engine_seconds=0.01,
    )
    episode.refresh_from_db()
    assert (episode.status, episode.score, episode.metrics) == (
        "finished",
        0.75,
        {"deal_rate": 1.0},
    )
    assert episode.finished_at >= episode.started_at and episode.duration_seconds >= 0
    assert svc.episode_claim(episode=episode) is None  # a finished episode is never claimed again
    with pytest.raises(Conflict, match="only queued or running ones cancel"):
        svc.episode_cancel(episode=episode)
    assert episode.status == EpisodeStatus.FINISHED


@pytest.mark.django_db
def test_cancel_and_fail(preset, expert) -> None:
    queued = svc.episode_create(scenario=preset, policy=expert, seed=1, enqueue=False)
    assert svc.episode_cancel(episode=queued) is queued
    assert queued.status == EpisodeStatus.CANCELLED and queued.finished_at
    failing = svc.episode_create(scenario=preset, policy=expert, seed=2, enqueue=False)
    attempt = svc.episode_claim(episode=failing)
    assert svc.episode_fail(episode=failing, error="x" * 10_000, attempt=attempt)
    failing.refresh_from_db()
    assert failing.status == EpisodeStatus.FAILED and len(failing.error) == 5000


@pytest.mark.django_db
@pytest.mark.parametrize("policy", ["expert", "greedy_lowball", "random"])
def test_replay_reproduces_the_stored_score(seeded, policy) -> None:
    from procurement.models import Scenario

    scenario = Scenario.objects.get(name="medium_adversarial")
    episode = svc.episode_create(
        scenario=scenario, policy=PolicyConfig.objects.get(name=policy), seed=7, enqueue=False
    )
    episode_run(episode_id=episode.pk, live_updates=False)
    episode.refresh_from_db()
    assert episode.status == EpisodeStatus.FINISHED, episode.error
    assert episode.steps == episode.decisions.count() > 0
    assert list(episode.decisions.values_list("step", flat=True)) == list(range(episode.steps))
    assert 0.0 <= episode.score <= 1.0

    report = svc.episode_replay(episode=episode)
    assert report.matches, report
    assert report.steps == episode.steps
    assert report.replayed_score == pytest.approx(episode.score, abs=1e-12)

    # a tampered stored score is detected
    Episode.objects.filter(pk=episode.pk).update(score=episode.score + 0.05)
    episode.refresh_from_db()
    assert not svc.episode_replay(episode=episode).matches


@pytest.mark.django_db
def test_the_largest_accepted_seed_runs_and_replays(preset) -> None:
    from procurement.api.serializers import MAX_SEED

    policy = PolicyConfig.objects.get(name="random")
    episode = svc.episode_create(scenario=preset, policy=policy, seed=MAX_SEED, enqueue=False)
    episode_run(episode_id=episode.pk, live_updates=False)
    episode.refresh_from_db()
    assert episode.status == EpisodeStatus.FINISHED, episode.error
    assert episode.seed == MAX_SEED and svc.episode_replay(episode=episode).matches

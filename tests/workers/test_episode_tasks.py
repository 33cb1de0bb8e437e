"""Episodes run by tasks: batched persistence, resume after interruption, retries, and
paced episodes that hold no worker through their pauses."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import pytest
from django.db import OperationalError
from django.test import override_settings

from negotiation import run_episode
from procurement import dispatch
from procurement.limits import MAX_STEP_DELAY
from procurement.models import Decision, Episode, EpisodeStatus
from procurement.services import episode_runner
from procurement.services.episodes import episode_cancel, episode_create
from tests.workers.helpers import assert_contiguous_decisions, engine_score, seeded
from workers.inprocess import InProcessRunner, install_local_runner
from workers.tasks import run_episode_task

pytestmark = pytest.mark.django_db(transaction=True)


def _episode(scenario: str = "medium_adversarial", policy: str = "expert", seed: int = 3):
    scenarios, policies = seeded()
    return episode_create(
        scenario=scenarios[scenario], policy=policies[policy], seed=seed, enqueue=False
    )


def test_task_runs_the_episode_and_matches_the_pure_engine() -> None:
    episode = _episode()
    run_episode_task.apply(args=[episode.pk]).get()
    episode.refresh_from_db()
    assert episode.status == EpisodeStatus.FINISHED
    assert episode.steps > 10
    assert_contiguous_decisions(episode)
    assert episode.score == pytest.approx(engine_score(episode), abs=1e-12)
    last = episode.decisions.order_by("-step").first()
    assert last.running_score == pytest.approx(episode.score, abs=1e-9)


def test_decisions_are_written_in_batches_not_per_step(django_assert_max_num_queries) -> None:
    episode = _episode(seed=5)
    # claim + replay read + one INSERT/UPDATE pair and a status check per batch + finish
    with django_assert_max_num_queries(20):
        episode_runner.episode_run(episode_id=episode.pk, live_updates=False)
    episode.refresh_from_db()
    assert episode.steps > 20


def test_an_interrupted_episode_resumes_from_its_stored_steps() -> None:
    episode = _episode(seed=11)
    reference = engine_score(episode)
    # Simulate a worker that died after storing the first steps of the episode.
    episode_runner.episode_run(episode_id=episode.pk, live_updates=False)
    episode.refresh_from_db()
    full = list(episode.decisions.order_by("step").values("step", "action", "running_score"))
    keep = len(full) // 2
    Decision.objects.filter(episode=episode, step__gte=keep).delete()
    Episode.objects.filter(pk=episode.pk).update(
        status=EpisodeStatus.RUNNING, steps=keep, score=None, finished_at=None
    )
    run_episode_task.apply(args=[episode.pk]).get()
    episode.refresh_from_db()
    assert episode.status == EpisodeStatus.FINISHED
    assert episode.attempts == 2
    assert_contiguous_decisions(episode)
    resumed = list(episode.decisions.order_by("step").values("step", "action", "running_score"))
    assert resumed == full
    assert episode.score == pytest.approx(reference, abs=1e-12)


def test_a_finished_episode_is_not_run_twice() -> None:
    episode = _episode(seed=2)
    run_episode_task.apply(args=[episode.pk]).get()
    count = Decision.objects.filter(episode=episode).count()
    run_episode_task.apply(args=[episode.pk]).get()  # re-delivered message
    assert Decision.objects.filter(episode=episode).count() == count


def test_infrastructure_errors_are_retried_and_engine_errors_are_not(monkeypatch) -> None:
    episode = _episode(seed=4)
    calls = {"n": 0}
    real = episode_runner.episode_run

    def flaky(*, episode_id: int, **kwargs):
        calls["n"] += 1
        if calls["n"] < 3:
            raise OperationalError("server closed the connection unexpectedly")
        return real(episode_id=episode_id, **kwargs)

    monkeypatch.setattr(episode_runner, "episode_run", flaky)
    result = run_episode_task.apply(args=[episode.pk])
    assert result.successful() and calls["n"] == 3

    def broken(*, episode_id: int, **kwargs):
        calls["n"] += 1
        raise ZeroDivisionError("engine bug")

    calls["n"] = 0
    monkeypatch.setattr(episode_runner, "episode_run", broken)
    result = run_episode_task.apply(args=[episode.pk])
    assert result.failed() and calls["n"] == 1


def test_cancelling_stops_a_running_episode_at_the_next_batch(monkeypatch) -> None:
    from procurement.services.episodes import episode_cancel

    episode = _episode(scenario="hard_arena", seed=1)
    monkeypatch.setattr(episode_runner, "BATCH_STEPS", 5)
    original = episode_runner.episode_decisions_append

    def cancel_after_first_batch(*, episode, **kw):
        rows = original(episode=episode, **kw)
        episode_cancel(episode=Episode.objects.get(pk=episode.pk))
        return rows

    monkeypatch.setattr(episode_runner, "episode_decisions_append", cancel_after_first_batch)
    episode = episode_runner.episode_run(episode_id=episode.pk, live_updates=False)
    assert episode.status == EpisodeStatus.CANCELLED
    assert episode.decisions.count() == 5


@contextlib.contextmanager
def _own_runner(threads: int = 1) -> Iterator[InProcessRunner]:
    """A runner of this test's own (the embedded default: one rule thread), installed as
    the embedded web process installs it."""
    runner = InProcessRunner(threads=threads)
    dispatch.set_local_runner(lambda: runner)
    try:
        yield runner
    finally:
        assert runner.join(timeout=60)
        install_local_runner()


def _wait_until(done: Callable[[], bool], *, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout  # a bound on a hang, not a speed figure
    while not done():
        assert time.monotonic() < deadline, f"{what} did not happen"
        time.sleep(0.02)


@override_settings(TASK_RUNNER="thread")
def test_a_paced_episode_plays_to_the_end_one_task_per_decision_on_one_claim() -> None:
    scenarios, policies = seeded()
    with _own_runner() as runner:
        episode = episode_create(
            scenario=scenarios["bilateral_hardball"],
            policy=policies["expert"],
            seed=6,
            step_delay=0.01,
        )
        assert runner.join(timeout=120)
    episode.refresh_from_db()
    assert episode.status == EpisodeStatus.FINISHED, episode.error
    assert episode.attempts == 1  # every continuation kept the first claim
    assert_contiguous_decisions(episode)
    assert episode.score == pytest.approx(engine_score(episode), abs=1e-12)
    assert runner.status()["completed"] == episode.steps  # one task per decision


@override_settings(TASK_RUNNER="thread")
def test_paced_episodes_hold_no_worker_while_they_wait() -> None:
    """Two episodes paced at the slowest pace, then a fast one, on one rule thread: the
    fast one finishes while both paced ones are still early in their games (today's main
    played each paced episode to its end, pauses included, before the fast one began)."""
    scenarios, policies = seeded()
    world = {"scenario": scenarios["medium_adversarial"], "policy": policies["expert"]}
    with _own_runner():
        paced = [episode_create(**world, seed=s, step_delay=MAX_STEP_DELAY) for s in (1, 2)]
        fast = episode_create(**world, seed=3)
        try:
            _wait_until(
                lambda: Episode.objects.get(pk=fast.pk).status == EpisodeStatus.FINISHED,
                what="the fast episode finishing",
            )
            for episode in paced:
                episode.refresh_from_db()
                total = len(run_episode(episode.scenario_snapshot, "expert", episode.seed).steps)
                assert episode.status == EpisodeStatus.RUNNING
                assert 1 <= episode.steps < total
        finally:
            for episode in paced:
                episode_cancel(episode=episode)  # their next continuation stops at once
    for episode in paced:
        episode.refresh_from_db()
        assert episode.status == EpisodeStatus.CANCELLED
        assert Decision.objects.filter(episode=episode).count() == episode.steps


@pytest.mark.celery_worker
def test_a_paced_episode_waits_by_countdown_on_celery_not_in_a_worker(
    celery_worker_process,
) -> None:
    from workers.celery_app import app

    scenarios, policies = seeded()
    world = {"scenario": scenarios["medium_adversarial"], "policy": policies["expert"]}
    episode = episode_create(**world, seed=6, step_delay=MAX_STEP_DELAY)

    def continuation_scheduled() -> bool:
        scheduled = app.control.inspect(timeout=0.5).scheduled() or {}
        return any(
            list(entry["request"]["args"]) == [episode.pk, 1]  # the same claim, later
            for entries in scheduled.values()
            for entry in entries
        )

    try:
        _wait_until(continuation_scheduled, what="a continuation waiting for its countdown")
    finally:
        episode_cancel(episode=episode)
    _wait_until(
        lambda: not continuation_scheduled(), what="the cancelled episode's continuation ending"
    )
    episode.refresh_from_db()
    assert episode.status == EpisodeStatus.CANCELLED and episode.attempts == 1

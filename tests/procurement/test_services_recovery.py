"""The reconciler's pass (services.recovery.reconcile) and the runner's failure handling,
on the embedded thread runner.

Each test builds the state a fault leaves behind (a committed run whose task never came,
a sweep whose chunks were lost, a cell the engine or the database refuses) and shows the
run ends, with exactly one result per cell.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from procurement.models import Episode, EpisodeStatus, PolicyConfig, Sweep, SweepCell, SweepStatus
from procurement.services import recovery, sweep_runner
from procurement.services.episodes import episode_create
from procurement.services.recovery import reconcile
from procurement.services.sweeps import sweep_cancel, sweep_create
from tests.workers.helpers import assert_contiguous_decisions, engine_score, seeded
from workers.inprocess import get_runner

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("thread_runner"),
]

LONG_AGO = timezone.now() - timedelta(hours=1)


@pytest.fixture
def thread_runner():
    with override_settings(TASK_RUNNER="thread", SWEEP_CHUNK_CELLS=3):
        yield get_runner()


def _age(model, pk: int, **fields) -> None:
    """Make a run look as if its last sign of life was an hour ago."""
    model.objects.filter(pk=pk).update(created_at=LONG_AGO, heartbeat_at=LONG_AGO, **fields)


def _finish(runner) -> None:
    assert runner.join(timeout=120), "the in-process runner did not drain"


def _one_result_per_cell(sweep: Sweep) -> None:
    cells = SweepCell.objects.filter(sweep=sweep)
    assert Episode.objects.filter(sweep=sweep).count() == cells.filter(status="finished").count()
    assert set(cells.values_list("status", flat=True)) <= {"finished", "failed"}
    for cell in cells.filter(status="finished").select_related("episode")[:5]:
        assert_contiguous_decisions(cell.episode)
        assert cell.score == pytest.approx(engine_score(cell.episode), abs=1e-12)


def test_a_committed_episode_whose_task_never_came_is_run(thread_runner) -> None:
    scenarios, policies = seeded()
    episode = episode_create(
        scenario=scenarios["easy_negotiation"], policy=policies["expert"], seed=5, enqueue=False
    )
    assert not reconcile().episodes_resumed  # within the grace period: maybe in flight
    _age(Episode, episode.pk)
    assert reconcile().episodes_resumed == [episode.pk]
    _finish(thread_runner)
    episode.refresh_from_db()
    assert episode.status == EpisodeStatus.FINISHED
    assert episode.score == pytest.approx(engine_score(episode), abs=1e-12)


def test_a_running_episode_is_resumed_only_once_its_heartbeat_stops(thread_runner) -> None:
    scenarios, policies = seeded()
    episode = episode_create(
        scenario=scenarios["medium_adversarial"], policy=policies["expert"], seed=3, enqueue=False
    )
    now = timezone.now()
    Episode.objects.filter(pk=episode.pk).update(
        status=EpisodeStatus.RUNNING, attempts=1, created_at=LONG_AGO, heartbeat_at=now
    )
    assert not reconcile(stall_s=60).episodes_resumed  # making progress: left alone
    _age(Episode, episode.pk)
    found = reconcile(stall_s=60)
    assert found.episodes_resumed == [episode.pk]
    assert not reconcile(stall_s=60).episodes_resumed  # claimed: not resumed twice
    _finish(thread_runner)
    episode.refresh_from_db()
    assert episode.status == EpisodeStatus.FINISHED and episode.attempts == 2
    assert_contiguous_decisions(episode)


def test_runs_the_runner_holds_are_live(thread_runner) -> None:
    """A run with a task waiting (here: in the runner's queue) is never resumed twice."""
    scenarios, policies = seeded()
    episode = episode_create(
        scenario=scenarios["easy_negotiation"], policy=policies["expert"], seed=1, enqueue=False
    )
    _age(Episode, episode.pk)
    stalled = recovery.stalled_episode_ids(
        live={("episode", episode.pk)}, queued_grace_s=0, stall_s=0
    )
    assert stalled == []


def test_a_sweep_whose_chunks_were_lost_is_resumed_with_one_result_per_cell(
    thread_runner,
) -> None:
    scenarios, policies = seeded()
    sweep = sweep_create(
        scenarios=[scenarios["easy_negotiation"]],
        policies=[policies["expert"], policies["random"]],
        seeds=5,
        enqueue=False,
    )
    chunks = sweep_runner.sweep_start(sweep_id=sweep.pk)
    # one chunk runs, then the broker lost the rest
    sweep_runner.sweep_cells_run(sweep_id=sweep.pk, cell_ids=chunks[0].cell_ids)
    _age(Sweep, sweep.pk)
    assert reconcile().sweeps_resumed == [sweep.pk]
    _finish(thread_runner)
    sweep.refresh_from_db()
    assert sweep.status == SweepStatus.FINISHED
    assert (sweep.done_cells, sweep.failed_cells, sweep.total_cells) == (10, 0, 10)
    _one_result_per_cell(sweep)
    board = sweep.summary["leaderboard"]
    assert sum(row["episodes"] for row in board) == 10


def test_a_sweep_left_running_with_every_cell_done_is_closed_not_rerun(thread_runner) -> None:
    scenarios, policies = seeded()
    sweep = sweep_create(
        scenarios=[scenarios["easy_negotiation"]],
        policies=[policies["expert"]],
        seeds=3,
        enqueue=False,
    )
    sweep_runner.sweep_start(sweep_id=sweep.pk)
    cell_ids = list(SweepCell.objects.filter(sweep=sweep).values_list("pk", flat=True))
    sweep_runner.sweep_cells_run(sweep_id=sweep.pk, cell_ids=cell_ids)
    sweep.refresh_from_db()
    assert sweep.status == SweepStatus.FINISHED  # the last chunk closes it
    Sweep.objects.filter(pk=sweep.pk).update(status=SweepStatus.RUNNING, summary={})
    _age(Sweep, sweep.pk)
    found = reconcile()
    assert (found.sweeps_closed, found.sweeps_resumed) == ([sweep.pk], [])
    sweep.refresh_from_db()
    assert sweep.status == SweepStatus.FINISHED and sweep.done_cells == 3


def test_a_cancelled_sweep_whose_chunks_are_gone_is_closed(thread_runner) -> None:
    scenarios, policies = seeded()
    sweep = sweep_create(
        scenarios=[scenarios["easy_negotiation"]],
        policies=[policies["expert"]],
        seeds=4,
        enqueue=False,
    )
    chunks = sweep_runner.sweep_start(sweep_id=sweep.pk)
    sweep_runner.sweep_cells_run(sweep_id=sweep.pk, cell_ids=chunks[0].cell_ids)
    assert sweep_cancel(sweep=sweep) is sweep
    assert reconcile().sweeps_closed == [sweep.pk]
    sweep.refresh_from_db()
    assert sweep.status == SweepStatus.CANCELLED and sweep.summary
    assert (sweep.done_cells, sweep.failed_cells) == (3, 1)


@pytest.mark.parametrize("params", [{"fraction": "abc"}, {"seed": 5}, {"fraction": 1e308}])
def test_a_policy_with_bad_params_fails_its_cells_alone(thread_runner, params) -> None:
    """A policy row saved before params were validated (or edited in the database) must
    not sink the sweep: its cells fail with the error, the valid cells of the same chunks
    finish, and the sweep ends with the failures counted."""
    scenarios, policies = seeded()
    bad = PolicyConfig.objects.create(name="bad-lowball", policy="greedy_lowball", params=params)
    sweep = sweep_create(
        scenarios=[scenarios["easy_negotiation"]],
        policies=[policies["expert"], bad],
        seeds=3,
    )
    _finish(thread_runner)
    sweep.refresh_from_db()
    cells = SweepCell.objects.filter(sweep=sweep)
    assert set(cells.filter(policy=policies["expert"]).values_list("status", flat=True)) == {
        "finished"
    }
    assert sweep.status == SweepStatus.FINISHED and sweep.done_cells == 3
    bad_cells = cells.filter(policy=bad)
    assert set(bad_cells.values_list("status", flat=True)) == {"failed"}
    assert sweep.failed_cells == 3 and "3 of 6 cells failed" in sweep.error
    # the engine checks params against the policy's schema; a seed clashes with the runner's
    expected = {
        "fraction": "PolicyParamsError: Invalid params for policy 'greedy_lowball': fraction",
        "seed": "TypeError",
    }[next(iter(params))]
    assert all(e.startswith(expected) for e in bad_cells.values_list("error", flat=True))
    _one_result_per_cell(sweep)


def test_a_single_episode_with_bad_params_fails_visibly(thread_runner) -> None:
    scenarios, _ = seeded()
    bad = PolicyConfig.objects.create(name="bad-seed", policy="greedy_lowball", params={"seed": 5})
    episode = episode_create(scenario=scenarios["easy_negotiation"], policy=bad, seed=1)
    _finish(thread_runner)
    episode.refresh_from_db()
    assert episode.status == EpisodeStatus.FAILED
    assert "seed" in episode.error and episode.finished_at


@pytest.mark.postgres
def test_a_cell_the_database_refuses_fails_alone(thread_runner, monkeypatch) -> None:
    """PostgreSQL refuses a NUL character inside JSON: that cell fails with the database's
    error, and the other cells of its chunk are stored."""
    assert connection.vendor == "postgresql"
    real_play = sweep_runner._play

    def play(cell, episode):
        cell_, episode, result = real_play(cell, episode)
        if cell.seed == 1:
            episode.metrics = {**episode.metrics, "note": "nul \u0000 here"}
        return cell_, episode, result

    monkeypatch.setattr(sweep_runner, "_play", play)
    scenarios, policies = seeded()
    sweep = sweep_create(
        scenarios=[scenarios["easy_negotiation"]], policies=[policies["expert"]], seeds=3
    )
    _finish(thread_runner)
    sweep.refresh_from_db()
    statuses = dict(SweepCell.objects.filter(sweep=sweep).values_list("seed", "status"))
    assert statuses == {0: "finished", 1: "failed", 2: "finished"}
    assert (sweep.status, sweep.done_cells, sweep.failed_cells) == ("finished", 2, 1)
    assert "\\u0000" in SweepCell.objects.get(sweep=sweep, seed=1).error
    _one_result_per_cell(sweep)


def test_decisions_that_are_not_strict_json_are_refused_on_every_database() -> None:
    """An offer of infinity (once possible with absurd policy params) is refused the same
    way on SQLite as on PostgreSQL, so the cell fails instead of storing a bad row."""
    from procurement.services.decision_store import insert_decisions

    scenarios, policies = seeded()
    episode = episode_create(
        scenario=scenarios["easy_negotiation"], policy=policies["expert"], seed=1, enqueue=False
    )
    record = {
        "step": 0,
        "week": 0,
        "action": {"action_type": "negotiate", "price": float("inf")},
        "valid": True,
        "error": None,
        "response": None,
        "reward": 0.0,
        "running_score": 0.0,
        "events": [],
        "state": {},
    }
    with pytest.raises(ValueError, match="not JSON compliant"):
        insert_decisions([(episode.pk, record)], actor="policy")
    assert not episode.decisions.exists()


def test_reconcile_command_reports_what_it_resumed(thread_runner) -> None:
    import io

    from django.core.management import CommandError, call_command

    scenarios, policies = seeded()
    episode = episode_create(
        scenario=scenarios["easy_negotiation"], policy=policies["expert"], seed=2, enqueue=False
    )
    _age(Episode, episode.pk)
    out = io.StringIO()
    call_command("reconcile", stdout=out)
    assert f"episodes resumed: #{episode.pk}" in out.getvalue()
    _finish(thread_runner)
    with pytest.raises(CommandError, match="stall-seconds"):
        call_command("reconcile", "--stall-seconds", "-1")

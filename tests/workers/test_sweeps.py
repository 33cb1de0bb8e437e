"""Sweeps on a real Celery worker process (PostgreSQL + Redis), and in the embedded thread."""

from __future__ import annotations

import os
import signal
import time

import pytest
from django.test import override_settings

from procurement.models import Episode, Sweep, SweepCell, SweepStatus
from procurement.services.sweeps import sweep_create
from tests.workers.helpers import assert_contiguous_decisions, engine_score, seeded


def _wait_for(sweep: Sweep, timeout: float = 120) -> Sweep:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sweep.refresh_from_db()
        if sweep.status in (SweepStatus.FINISHED, SweepStatus.FAILED, SweepStatus.CANCELLED):
            return sweep
        time.sleep(0.2)
    raise AssertionError(f"sweep still {sweep.status}: {sweep.done_cells}/{sweep.total_cells}")


def _assert_exactly_one_result_per_cell(sweep: Sweep, check_scores: int = 10) -> None:
    cells = list(SweepCell.objects.filter(sweep=sweep).select_related("episode"))
    assert len(cells) == sweep.total_cells
    assert {c.status for c in cells} == {"finished"}
    assert Episode.objects.filter(sweep=sweep).count() == sweep.total_cells  # no orphans
    assert len({c.episode_id for c in cells}) == sweep.total_cells
    for cell in cells[:check_scores]:
        assert cell.score == cell.episode.score
        assert_contiguous_decisions(cell.episode)
        assert cell.episode.score == pytest.approx(engine_score(cell.episode), abs=1e-12)
    assert sweep.done_cells == sweep.total_cells and sweep.failed_cells == 0


@pytest.mark.postgres
@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_sweep_on_a_real_worker_ends_with_one_result_per_cell(celery_worker_process) -> None:
    scenarios, policies = seeded()
    sweep = sweep_create(
        scenarios=[scenarios["easy_negotiation"], scenarios["medium_adversarial"]],
        policies=[policies["expert"], policies["random"]],
        seeds=6,
    )
    sweep = _wait_for(sweep)
    assert sweep.status == SweepStatus.FINISHED
    _assert_exactly_one_result_per_cell(sweep)
    board = sweep.summary["leaderboard"]
    assert {(r["scenario"], r["policy"]) for r in board} == {
        (s, p) for s in ("easy_negotiation", "medium_adversarial") for p in ("expert", "random")
    }
    assert all(r["episodes"] == 6 for r in board)


@pytest.mark.postgres
@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_sigkilled_worker_process_mid_sweep_still_gives_exactly_one_result_per_cell(
    celery_worker_process,
) -> None:
    scenarios, policies = seeded()
    sweep = sweep_create(
        scenarios=[scenarios["hard_arena"]], policies=[policies["expert"]], seeds=400
    )
    # 80 chunks queued for 2 pool processes. At ~10 % and ~40 %, SIGKILL a pool process
    # that the worker reports busy, so the kill lands in the middle of a chunk.
    kills_at, killed = [40, 160], []
    deadline = time.monotonic() + 120
    while kills_at and time.monotonic() < deadline:
        done = SweepCell.objects.filter(sweep=sweep, status="finished").count()
        busy = celery_worker_process.busy_child_pids() if done >= kills_at[0] else []
        for pid in busy:
            if pid in killed:
                continue  # its task is still reported until the pool notices the loss
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue  # it finished (or was replaced) after the worker reported it busy
            killed.append(pid)
            kills_at.pop(0)
            break
        time.sleep(0.01)
    assert len(killed) == 2, "the sweep ended before both kills"
    sweep = _wait_for(sweep, timeout=180)
    assert sweep.status == SweepStatus.FINISHED
    _assert_exactly_one_result_per_cell(sweep, check_scores=40)
    # The pool notices a killed process when its sentinel wakes the loop, or else at its
    # 5-second maintenance tick (waitpid can still say "running" when the sentinel fires).
    # A kill that lands after the chunk's result was sent needs no re-run, so the sweep can
    # end before that tick: wait for it rather than read the log once.
    expected = [f"pid:{pid} exited with 'signal 9 (SIGKILL)'" for pid in killed]
    deadline = time.monotonic() + 20
    log = celery_worker_process.log_path.read_text()
    while not all(line in log for line in expected) and time.monotonic() < deadline:
        time.sleep(0.2)
        log = celery_worker_process.log_path.read_text()
    for line in expected:  # the pool noticed each killed process
        assert line in log
    assert "WorkerLostError" in log  # and at least one kill cost a chunk that was re-run


@pytest.mark.django_db(transaction=True)
@override_settings(TASK_RUNNER="thread", SWEEP_CHUNK_CELLS=3)
def test_embedded_thread_runs_the_same_sweep_tasks() -> None:
    from workers.inprocess import get_runner

    scenarios, policies = seeded()
    sweep = sweep_create(
        scenarios=[scenarios["easy_negotiation"]],
        policies=[policies["expert"], policies["always_accept"]],
        seeds=4,
    )
    assert get_runner().join(timeout=120)
    sweep.refresh_from_db()
    assert sweep.status == SweepStatus.FINISHED
    _assert_exactly_one_result_per_cell(sweep)
    board = {r["policy"]: r for r in sweep.summary["leaderboard"]}
    assert board["expert"]["score"]["mean"] > board["always_accept"]["score"]["mean"]


@pytest.mark.django_db(transaction=True)
@override_settings(TASK_RUNNER="thread")
def test_cancelled_sweep_stops_and_marks_the_rest_cancelled() -> None:
    from procurement.services.sweep_runner import sweep_cells_run, sweep_start
    from procurement.services.sweeps import sweep_cancel, sweep_finish

    scenarios, policies = seeded()
    sweep = sweep_create(
        scenarios=[scenarios["easy_negotiation"]],
        policies=[policies["expert"]],
        seeds=6,
        enqueue=False,
    )
    chunks = sweep_start(sweep_id=sweep.pk)
    cell_ids = [c for chunk in chunks for c in chunk.cell_ids]
    sweep_cells_run(sweep_id=sweep.pk, cell_ids=cell_ids[:2])
    assert sweep_cancel(sweep=sweep) is sweep
    sweep_cells_run(sweep_id=sweep.pk, cell_ids=cell_ids[2:])
    sweep = sweep_finish(sweep=sweep)
    assert sweep.status == SweepStatus.CANCELLED
    statuses = list(SweepCell.objects.filter(sweep=sweep).values_list("status", flat=True))
    assert statuses.count("finished") == 2 and statuses.count("cancelled") == 4


@pytest.mark.django_db
@override_settings(SWEEP_CHUNK_CELLS=4)
def test_llm_cells_are_chunked_onto_the_gpu_queue_and_rule_cells_onto_cpu() -> None:
    from procurement.models import PolicyConfig
    from procurement.services.sweep_runner import sweep_start

    scenarios, policies = seeded()
    llm = PolicyConfig.objects.create(
        name="llm-buyer", policy="llm", backend="transformers", model="/models/tiny"
    )
    sweep = sweep_create(
        scenarios=[scenarios["easy_negotiation"]],
        policies=[policies["expert"], llm],
        seeds=6,
        enqueue=False,
    )
    chunks = sweep_start(sweep_id=sweep.pk)
    cells = dict(SweepCell.objects.filter(sweep=sweep).values_list("pk", "policy__name"))
    by_queue = {
        q: [cells[c] for ch in chunks if ch.queue == q for c in ch.cell_ids] for q in ("cpu", "gpu")
    }
    assert by_queue == {"cpu": ["expert"] * 6, "gpu": ["llm-buyer"] * 6}
    assert all(len(ch.cell_ids) <= 4 for ch in chunks)
    assert sweep.total_cells == sum(len(ch.cell_ids) for ch in chunks)

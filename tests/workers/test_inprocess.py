"""The embedded default's in-process runner executes real tasks off the request thread."""

import threading
import time

import pytest
from django.test import override_settings

from procurement.dispatch import enqueue
from workers.celery_app import app
from workers.inprocess import InProcessRunner

seen: list[tuple[str, str]] = []


@app.task(name="tests.record_thread")
def record_thread(tag: str) -> str:
    seen.append((tag, threading.current_thread().name))
    return tag


@app.task(name="tests.explode")
def explode() -> None:
    raise ValueError("boom")


def test_runner_executes_tasks_in_order_on_a_worker_thread() -> None:
    seen.clear()
    runner = InProcessRunner(threads=1)
    for tag in ("a", "b", "c"):
        runner.submit(record_thread.name, (tag,))
    assert runner.join(timeout=10)
    assert [tag for tag, _ in seen] == ["a", "b", "c"]
    assert all(name.startswith("arena-worker-") for _, name in seen)
    assert runner.status()["completed"] == 3


def test_a_failing_task_is_counted_and_the_thread_survives() -> None:
    seen.clear()
    runner = InProcessRunner(threads=1)
    runner.submit(explode.name)
    runner.submit(record_thread.name, ("after",))
    assert runner.join(timeout=10)
    assert runner.status()["failed"] == 1
    assert seen == [("after", "arena-worker-0")]


@pytest.mark.django_db(transaction=True)
@override_settings(TASK_RUNNER="thread")
def test_enqueue_waits_for_commit_then_runs_in_the_thread() -> None:
    from django.db import transaction

    from workers.inprocess import get_runner

    seen.clear()
    with transaction.atomic():
        enqueue(record_thread.name, "committed")
        assert seen == []  # nothing runs before the commit
    assert get_runner().join(timeout=10)
    assert seen[-1][0] == "committed"


# --- two lanes: rule work never waits behind a model --------------------------------


def _until(condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


gate = threading.Event()


@app.task(name="tests.wait_for_gate")
def wait_for_gate() -> None:
    gate.wait(60)


def test_a_busy_model_lane_never_holds_up_the_rule_lane() -> None:
    seen.clear()
    gate.clear()
    runner = InProcessRunner(threads=1, llm_threads=1)
    runner.submit(wait_for_gate.name, queue="gpu")
    runner.submit(record_thread.name, ("model",), queue="gpu")  # waits behind the gate
    runner.submit(record_thread.name, ("rule",), queue="cpu")
    try:
        assert runner.lanes["cpu"].join(timeout=10)
        assert seen == [("rule", "arena-worker-0")]
        lanes = runner.status()["lanes"]
        assert (lanes["gpu"]["running"], lanes["gpu"]["queued"]) == (1, 1)
    finally:
        gate.set()
    assert runner.join(timeout=10)
    assert seen[-1] == ("model", "arena-llm-0")
    assert runner.status()["completed"] == 3


def test_a_task_for_a_queue_without_a_lane_runs_in_the_rule_lane() -> None:
    seen.clear()
    runner = InProcessRunner(threads=1)
    runner.submit(record_thread.name, ("human",), queue="human")
    assert runner.join(timeout=10)
    assert seen == [("human", "arena-worker-0")]


@pytest.mark.django_db(transaction=True)
def test_runs_waiting_in_either_lane_are_known_with_their_place() -> None:
    """run_refs (the reconciler's "is a task coming?") and each run's place cover both
    lanes; taking a job tells the runs behind it their new places."""
    from procurement import dispatch
    from tests.workers.helpers import seeded

    scenarios, policies = seeded()

    def new_episode(seed: int) -> int:
        from procurement.services.episodes import episode_create

        return episode_create(
            scenario=scenarios["bilateral"], policy=policies["expert"], seed=seed, enqueue=False
        ).pk

    moves: list[tuple[str, list]] = []
    gate.clear()
    runner = InProcessRunner(
        threads=1, llm_threads=1, on_line_moved=lambda q, line: moves.append((q, line))
    )
    a, b, c = (new_episode(seed) for seed in (1, 2, 3))
    runner.submit(wait_for_gate.name, queue="gpu")
    runner.submit(wait_for_gate.name, queue="cpu")
    _until(lambda: all(s["running"] for s in runner.status()["lanes"].values()))
    try:
        for pk, queue in ((a, "gpu"), (b, "gpu"), (c, "cpu")):
            runner.submit(dispatch.RUN_EPISODE, (pk,), queue=queue)
        assert runner.run_refs() == {("episode", a), ("episode", b), ("episode", c)}
        assert [runner.place(("episode", pk)) for pk in (a, b, c)] == [
            ("gpu", 1),
            ("gpu", 2),
            ("cpu", 1),
        ]
    finally:
        gate.set()
    assert runner.join(timeout=60)
    assert runner.run_refs() == set() and runner.place(("episode", a)) is None
    gpu_moves = [line for queue, line in moves if queue == "gpu"]
    assert gpu_moves == [[], [("episode", b)], []]  # the gate taken, then a, then b

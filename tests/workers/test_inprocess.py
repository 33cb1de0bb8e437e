"""The embedded default's in-process runner executes real tasks off the request thread."""

import threading

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

"""Hand work to the workers by task name: the one way the Django side starts a task.

The Django side never imports ``workers/``: it names tasks. The caller picks the queue
(``cpu`` by default, ``gpu`` for language-model runs: ``RunPlan.queue``). In full mode a
name goes to Celery (``send_task``) on that queue. On the embedded default
(TASK_RUNNER=thread) it goes to the in-process runner that the worker side registers when
its process starts (``workers.inprocess.install_local_runner``: the embedded web process,
manage.py, tests), into the lane of that queue.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Protocol

from celery import Celery
from django.conf import settings
from django.db import transaction
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

# The tasks' names, as workers/tasks.py registers them and the broker carries them.
RUN_EPISODE = "workers.tasks.run_episode"
RUN_SWEEP = "workers.tasks.run_sweep"
RUN_SWEEP_CHUNK = "workers.tasks.run_sweep_chunk"
RUN_TRAINING = "workers.tasks.run_training"
RUN_EVALUATION = "workers.tasks.run_evaluation"
RECONCILE = "workers.tasks.reconcile"
PING = "workers.tasks.ping"

RunRef = tuple[str, int]  # ("episode" | "sweep" | "training" | "evaluation", id)
Place = tuple[str, int]  # (queue, 1-based place among the runs waiting in its lane)
RUN_OF_TASK = {
    RUN_EPISODE: "episode",
    RUN_SWEEP: "sweep",
    RUN_SWEEP_CHUNK: "sweep",
    RUN_TRAINING: "training",
    RUN_EVALUATION: "evaluation",
}


class LocalRunner(Protocol):
    """What the embedded default's in-process runner offers this module."""

    def submit(
        self,
        name: str,
        args: tuple[Any, ...] = (),
        kwargs: dict | None = None,
        *,
        queue: str | None = None,
        countdown: float = 0.0,
    ) -> None:
        """Run the task called ``name`` in a worker thread of ``queue``'s lane (after
        ``countdown`` seconds, during which no thread waits for it)."""

    def run_refs(self) -> set[RunRef]:
        """The runs queued or running here."""

    def place(self, ref: RunRef) -> Place | None:
        """Where ``ref`` waits for a thread of its lane; None when it waits in none."""

    def status(self) -> dict[str, Any]:
        """Threads alive, queued, completed and failed tasks."""


_local_runner: Callable[[], LocalRunner] | None = None


def set_local_runner(factory: Callable[[], LocalRunner] | None) -> None:
    """Register (or, with None, forget) this process's in-process runner; called once."""
    global _local_runner
    _local_runner = factory


def local_runner() -> LocalRunner | None:
    return _local_runner() if _local_runner is not None else None


@functools.cache
def producer() -> Celery:
    """A Celery app that only sends, configured from the CELERY_ settings the workers'
    app reads too (broker, serializer, publish retries, routes)."""
    app = Celery("procurement_arena", set_as_current=False)
    app.config_from_object("django.conf:settings", namespace="CELERY")
    return app


def enqueue(name: str, *args: Any, queue: str | None = None, countdown: float = 0.0) -> None:
    """Send the task ``name`` after the current transaction commits, so it finds its rows;
    it runs ``countdown`` seconds later (a Celery countdown, or the in-process runner's
    timer: either way no worker waits meanwhile).

    A broker that is down does not fail the caller: the run is committed and queued, and
    the reconciler sends its task once the broker is back (publishing gives up within
    about two seconds, see CELERY_TASK_PUBLISH_RETRY_POLICY). So does a process without
    an in-process runner on the embedded default: the web process's reconciler runs it.
    """

    def send() -> None:
        if settings.TASK_RUNNER == "thread":
            runner = local_runner()
            if runner is None:
                log.warning("no in-process runner here: %s%r left for the reconciler", name, args)
            else:
                runner.submit(name, args, queue=queue, countdown=countdown)
            return
        options: dict[str, Any] = {"queue": queue} if queue else {}
        if countdown > 0:
            options["countdown"] = countdown
        try:
            # No result is stored: sending needs the broker alone (a result backend would
            # subscribe, and retry, at every send).
            producer().send_task(name, args=args, ignore_result=True, **options)
        except (BrokerError, RedisError, OSError):
            log.warning("broker unavailable: %s%r left for the reconciler", name, args)

    transaction.on_commit(send)


def runs_in_flight(*, taken_within_s: float) -> set[RunRef]:
    """Runs whose task is on its way: queued or running in this process's runner, or
    (Celery) waiting in the broker or taken by a worker within ``taken_within_s``."""
    if settings.TASK_RUNNER == "thread":
        runner = local_runner()
        return runner.run_refs() if runner is not None else set()
    from procurement.broker import runs_with_messages

    return runs_with_messages(taken_within_s=taken_within_s)


def run_place(ref: RunRef) -> Place | None:
    """Where a queued run waits in this process's runner (the embedded default); None
    when it waits in none here (Celery's broker holds it, or a thread took it)."""
    runner = local_runner() if settings.TASK_RUNNER == "thread" else None
    return runner.place(ref) if runner is not None else None

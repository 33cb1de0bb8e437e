"""The embedded default's task runner: worker threads inside the web process.

Tasks run outside the request (the page stays responsive) but in the same process, so the
in-memory channel layer carries their live events to the page's WebSockets. The Django
side hands it tasks by name (``procurement.dispatch``), once ``install_local_runner`` has
registered it: the embedded web process (workers.embedded), manage.py and the tests do.

Two lanes, as Celery has two queues: the task's queue (``RunPlan.queue``, which the caller
passes) picks its lane. The rule lane (``cpu``: rule episodes, sweeps, human seats handed
to their fallback) never waits behind a language model; the model lane (``gpu``) plays
LLM episodes and LLM sweep chunks with threads of its own. Episodes it plays at once share
the process's model, their turns in one batch (``negotiation.llm.shared``). A task for any
other queue runs in the rule lane.
"""

from __future__ import annotations

import importlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celery import Task
from django.db import close_old_connections, connections

from procurement import dispatch
from procurement.run_plan import CPU_QUEUE, GPU_QUEUE
from workers.celery_app import app

log = logging.getLogger(__name__)

# Told, when a lane's thread takes a job, the runs still waiting in that lane, in order.
LineMoved = Callable[[str, list[dispatch.RunRef]], None]


@dataclass
class _Job:
    task: Task
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    @property
    def run_ref(self) -> dispatch.RunRef | None:
        kind = dispatch.RUN_OF_TASK.get(self.task.name)
        return (kind, int(self.args[0])) if kind is not None else None


class Lane:
    """One FIFO of Celery tasks executed with ``task.apply`` by its own daemon threads."""

    def __init__(
        self, queue_name: str, threads: int, thread_name: str, on_line_moved: LineMoved | None
    ) -> None:
        self.queue_name = queue_name
        self._queue: queue.Queue[_Job] = queue.Queue()
        self._threads = threads
        self._thread_name = thread_name
        self._on_line_moved = on_line_moved
        self._workers: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._running: list[_Job] = []
        self._scheduled: list[_Job] = []  # due later (submit_later): no thread waits
        self.completed = 0
        self.failed = 0

    def submit(self, job: _Job) -> None:
        self._ensure_started()
        self._queue.put(job)

    def submit_later(self, job: _Job, delay_s: float) -> None:
        """Put ``job`` in line after ``delay_s`` seconds (a timer, not a thread of the
        lane). Meanwhile it counts as queued for ``join`` and ``jobs``."""
        with self._queue.mutex:
            self._queue.unfinished_tasks += 1  # released by _due, once it is in line
            self._scheduled.append(job)
        timer = threading.Timer(delay_s, self._due, args=(job,))
        timer.daemon = True
        timer.start()

    def _due(self, job: _Job) -> None:
        with self._queue.mutex:
            self._scheduled.remove(job)
        self.submit(job)
        self._queue.task_done()

    def jobs(self) -> list[_Job]:
        """Waiting, running and scheduled jobs."""
        with self._queue.mutex:
            return [*self._queue.queue, *self._running, *self._scheduled]

    def place(self, ref: dispatch.RunRef) -> int | None:
        """``ref``'s 1-based place among the jobs waiting here (None: none waits)."""
        with self._queue.mutex:
            waiting = [job.run_ref for job in self._queue.queue]
        return waiting.index(ref) + 1 if ref in waiting else None

    def status(self) -> dict[str, int]:
        return {
            "threads_alive": sum(t.is_alive() for t in self._workers),
            "queued": self._queue.qsize(),
            "running": len(self._running),
            "scheduled": len(self._scheduled),
            "completed": self.completed,
            "failed": self.failed,
        }

    def join(self, timeout: float | None) -> bool:
        """Wait until every job put here is done. True when it is."""
        done = self._queue.all_tasks_done
        with done:
            return done.wait_for(lambda: self._queue.unfinished_tasks == 0, timeout)

    def idle(self) -> bool:
        with self._queue.mutex:
            return self._queue.unfinished_tasks == 0

    def _ensure_started(self) -> None:
        with self._lock:
            self._workers = [t for t in self._workers if t.is_alive()]
            for i in range(len(self._workers), self._threads):
                name = f"{self._thread_name}-{i}"
                thread = threading.Thread(target=self._loop, name=name, daemon=True)
                thread.start()
                self._workers.append(thread)

    def _tell_line(self, line: list[dispatch.RunRef]) -> None:
        if self._on_line_moved is None:
            return
        try:
            self._on_line_moved(self.queue_name, line)
        except Exception:  # news of the line is best effort; the job runs regardless
            log.warning("could not tell the %s lane's line", self.queue_name, exc_info=True)

    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            with self._queue.mutex:
                self._running.append(job)
                line = [ref for j in self._queue.queue if (ref := j.run_ref) is not None]
            self._tell_line(line)
            try:
                close_old_connections()
                result = job.task.apply(args=job.args, kwargs=job.kwargs)
                if result.failed():
                    self.failed += 1
                    log.error("task %s failed: %s", job.task.name, result.result)
                else:
                    self.completed += 1
            except Exception:  # keep the thread alive whatever a task does
                self.failed += 1
                log.exception("task %s crashed", job.task.name)
            finally:
                connections.close_all()  # a thread must not hold connections between tasks
                with self._queue.mutex:
                    self._running.remove(job)
                self._queue.task_done()


class InProcessRunner:
    """The rule lane (``threads`` threads) and the model lane (``llm_threads``)."""

    def __init__(
        self, threads: int = 1, *, llm_threads: int = 1, on_line_moved: LineMoved | None = None
    ) -> None:
        self.lanes = {
            CPU_QUEUE: Lane(CPU_QUEUE, threads, "arena-worker", on_line_moved),
            GPU_QUEUE: Lane(GPU_QUEUE, llm_threads, "arena-llm", on_line_moved),
        }

    def submit(
        self,
        name: str,
        args: tuple[Any, ...] = (),
        kwargs: dict | None = None,
        *,
        queue: str | None = None,
        countdown: float = 0.0,
    ) -> None:
        """Queue the task registered as ``name`` in ``queue``'s lane, ``countdown``
        seconds from now (KeyError for an unknown task name)."""
        task = app.tasks[name]
        lane = self.lanes.get(queue or CPU_QUEUE, self.lanes[CPU_QUEUE])
        job = _Job(task, tuple(args), dict(kwargs or {}))
        if countdown > 0:
            lane.submit_later(job, countdown)
        else:
            lane.submit(job)

    def run_refs(self) -> set[dispatch.RunRef]:
        """The runs queued or running in either lane (the reconciler leaves them alone)."""
        jobs = (job for lane in self.lanes.values() for job in lane.jobs())
        return {ref for job in jobs if (ref := job.run_ref) is not None}

    def place(self, ref: dispatch.RunRef) -> dispatch.Place | None:
        for lane in self.lanes.values():
            if (place := lane.place(ref)) is not None:
                return lane.queue_name, place
        return None

    def status(self) -> dict[str, Any]:
        lanes = {name: lane.status() for name, lane in self.lanes.items()}
        totals = {
            key: sum(s[key] for s in lanes.values())
            for key in ("threads_alive", "queued", "completed", "failed")
        }
        return {**totals, "lanes": lanes}

    def join(self, timeout: float | None = None) -> bool:
        """Wait until both lanes are drained (tests and shutdown). True when they are.

        A task of one lane may queue one in the other (a sweep's LLM chunks): the lanes
        are joined until all of them are idle at once."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            for lane in self.lanes.values():
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not lane.join(left):
                    return False
            if all(lane.idle() for lane in self.lanes.values()):
                return True


_runner: InProcessRunner | None = None
_runner_lock = threading.Lock()


def get_runner() -> InProcessRunner:
    global _runner
    with _runner_lock:
        if _runner is None:
            from django.conf import settings

            from procurement.services.live import publish_line

            importlib.import_module("workers.tasks")  # registers the tasks names refer to
            _runner = InProcessRunner(
                threads=settings.EMBEDDED_WORKER_THREADS,
                llm_threads=settings.EMBEDDED_LLM_THREADS,
                on_line_moved=publish_line,
            )
        return _runner


def install_local_runner() -> None:
    """Make this process's runner the one ``procurement.dispatch`` hands tasks to on the
    embedded default (its threads start with the first task)."""
    dispatch.set_local_runner(get_runner)

"""The embedded default's task runner: worker threads inside the web process.

Tasks run outside the request (the page stays responsive) but in the same process, so the
in-memory channel layer carries their live events to the page's WebSockets. The Django
side hands it tasks by name (``procurement.dispatch``), once ``install_local_runner`` has
registered it: the embedded web process (workers.embedded), manage.py and the tests do.
"""

from __future__ import annotations

import importlib
import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any

from celery import Task
from django.db import close_old_connections, connections

from procurement import dispatch
from workers.celery_app import app

log = logging.getLogger(__name__)


@dataclass
class _Job:
    task: Task
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class InProcessRunner:
    """A small FIFO of Celery tasks executed with ``task.apply`` by daemon threads."""

    def __init__(self, threads: int = 1) -> None:
        self._queue: queue.Queue[_Job] = queue.Queue()
        self._threads = threads
        self._workers: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._running: list[_Job] = []
        self.completed = 0
        self.failed = 0

    def submit(self, name: str, args: tuple[Any, ...] = (), kwargs: dict | None = None) -> None:
        """Queue the task registered as ``name`` (KeyError for an unknown name)."""
        task = app.tasks[name]
        self._ensure_started()
        self._queue.put(_Job(task, tuple(args), dict(kwargs or {})))

    def run_refs(self) -> set[dispatch.RunRef]:
        """The runs queued or running here (the reconciler leaves them alone)."""
        with self._queue.mutex:
            jobs = [*self._queue.queue, *self._running]
        kinds = dispatch.RUN_OF_TASK
        return {(kinds[j.task.name], int(j.args[0])) for j in jobs if j.task.name in kinds}

    def status(self) -> dict[str, Any]:
        return {
            "threads_alive": sum(t.is_alive() for t in self._workers),
            "queued": self._queue.qsize(),
            "completed": self.completed,
            "failed": self.failed,
        }

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the queue is drained (tests and shutdown). True when it is."""
        done = threading.Event()

        def waiter() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=waiter, daemon=True).start()
        return done.wait(timeout)

    def _ensure_started(self) -> None:
        with self._lock:
            self._workers = [t for t in self._workers if t.is_alive()]
            for i in range(len(self._workers), self._threads):
                thread = threading.Thread(target=self._loop, name=f"arena-worker-{i}", daemon=True)
                thread.start()
                self._workers.append(thread)

    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            with self._queue.mutex:
                self._running.append(job)
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


_runner: InProcessRunner | None = None
_runner_lock = threading.Lock()


def get_runner() -> InProcessRunner:
    global _runner
    with _runner_lock:
        if _runner is None:
            from django.conf import settings

            importlib.import_module("workers.tasks")  # registers the tasks names refer to
            _runner = InProcessRunner(threads=getattr(settings, "EMBEDDED_WORKER_THREADS", 1))
        return _runner


def install_local_runner() -> None:
    """Make this process's runner the one ``procurement.dispatch`` hands tasks to on the
    embedded default (its threads start with the first task)."""
    dispatch.set_local_runner(get_runner)

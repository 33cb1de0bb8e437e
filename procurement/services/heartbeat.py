"""A run's heartbeat while slow (LLM) work goes on in this process.

Rule episodes and cells beat on their own progress (every stored batch, every cell). An
LLM decision can take minutes on a slow machine, longer than any stall window that
still catches dead workers quickly, so LLM work beats from a thread of the process that
runs it, for as long as it runs: if the process dies, the beat stops and the reconciler
resumes the run; while it lives, the run is its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.conf import settings
from django.db import connection


class Heartbeat:
    """Calls ``touch`` every ``interval_s`` (default: a quarter of the stall window) from a
    daemon thread until the ``with`` block ends."""

    def __init__(self, touch: Callable[[], object], interval_s: float | None = None) -> None:
        self.touch = touch
        self.interval_s = interval_s or max(0.5, min(30.0, settings.RUN_STALL_SECONDS / 4))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="run-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.interval_s):
                self.touch()
        finally:
            connection.close()  # this thread's own connection

"""An in-process runner that keeps what it is handed instead of running it.

A test that plays a run itself installs it (``dispatch._local_runner``, with
``TASK_RUNNER="thread"``) so that no lane thread plays the same run beside it: on the
embedded default's SQLite the two lock each other's tables, and which one wins is luck.
"""

from __future__ import annotations

from typing import Any


class RecordingRunner:
    """``sent`` lists (task name, args, queue) in the order they were handed over."""

    def __init__(self, sent: list | None = None) -> None:
        self.sent: list[tuple[str, tuple[Any, ...], str | None]] = [] if sent is None else sent

    def submit(
        self,
        name: str,
        args: tuple[Any, ...] = (),
        kwargs: dict | None = None,
        *,
        queue: str | None = None,
        countdown: float = 0.0,
    ) -> None:
        self.sent.append((name, tuple(args), queue))

    def run_refs(self) -> set:
        return set()

    def place(self, ref: Any) -> None:
        return None

    def status(self) -> dict[str, Any]:
        return {"recording": len(self.sent)}

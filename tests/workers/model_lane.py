"""The embedded runner's model lane, held and released by tests: a runner of the test
process's own, a task that occupies the lane until ``gate`` opens, and a poll."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from procurement import dispatch
from workers.celery_app import app
from workers.inprocess import InProcessRunner, install_local_runner

gate = threading.Event()


@app.task(name="tests.hold_model_lane")
def hold_model_lane() -> None:
    gate.wait(120)


def local_runner(
    llm_threads: int, on_line_moved: Callable[..., None] | None = None
) -> Iterator[InProcessRunner]:
    """A runner of this process's own, installed as the embedded web process installs it;
    on the way out the gate opens, the runner drains and the default runner is back."""
    runner = InProcessRunner(threads=1, llm_threads=llm_threads, on_line_moved=on_line_moved)
    dispatch.set_local_runner(lambda: runner)
    try:
        yield runner
    finally:
        gate.set()
        runner.join(timeout=300)
        install_local_runner()


def until(condition: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll ``condition``; the seconds it took."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, f"{what}: not within {timeout} s"
        time.sleep(0.02)
    return time.monotonic() - started

"""The ``celery worker`` command line, in one place: docker-compose.yml, the tests' worker
process and bench/sweep.py all start the same worker."""

from __future__ import annotations

import sys


def worker_argv(
    queues: str, *, concurrency: int, name: str, loglevel: str = "INFO", pool: str = "prefork"
) -> list[str]:
    """prefork for the cpu queue (one process per core); threads for the gpu queue (one
    process holds the model, concurrent LLM episodes batch through it)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers",
        "worker",
        "-Q",
        queues,
        "-c",
        str(concurrency),
        "--pool",
        pool,
        "-n",
        f"{name}@%h",
        "--without-gossip",
        "--without-mingle",
        "--loglevel",
        loglevel,
    ]

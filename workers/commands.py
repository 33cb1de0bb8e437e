"""The ``celery worker`` command line, in one place: docker-compose.yml, the tests' worker
process and bench/sweep.py all start the same worker."""

from __future__ import annotations

import sys


def worker_argv(queues: str, *, concurrency: int, name: str, loglevel: str = "INFO") -> list[str]:
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
        "prefork",
        "-n",
        f"{name}@%h",
        "--without-gossip",
        "--without-mingle",
        "--loglevel",
        loglevel,
    ]

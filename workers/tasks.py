"""Celery tasks. Tasks stay thin: they take ids, load, and call a service."""

from __future__ import annotations

import os
import socket

from celery import chord, shared_task
from django.db import InterfaceError, OperationalError, connection
from redis.exceptions import ConnectionError as RedisConnectionError


@shared_task(name="workers.tasks.ping")
def ping(payload: str = "ping") -> dict[str, object]:
    """Liveness probe that also proves the worker has Django and a database connection."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return {
        "echo": payload,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "db_vendor": connection.vendor,
    }


INFRASTRUCTURE_ERRORS = (OperationalError, InterfaceError, RedisConnectionError)


@shared_task(
    name="workers.tasks.run_episode",
    autoretry_for=INFRASTRUCTURE_ERRORS,
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=5,
)
def run_episode_task(episode_id: int) -> dict[str, object]:
    """Run (or resume) one stored episode on a CPU worker."""
    from procurement.services.episode_runner import run_stored_episode

    episode = run_stored_episode(episode_id)
    return {"episode": episode.pk, "status": episode.status, "score": episode.score}


RETRY_POLICY = {
    "autoretry_for": INFRASTRUCTURE_ERRORS,
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "max_retries": 5,
}


@shared_task(name="workers.tasks.run_sweep", **RETRY_POLICY)
def run_sweep_task(sweep_id: int) -> dict[str, object]:
    """Fan a sweep's unfinished cells out in chunks; a chord body aggregates at the end."""
    from django.conf import settings

    from procurement.services import sweep_runner

    chunks = sweep_runner.start_sweep(sweep_id)
    if settings.TASK_RUNNER == "thread":  # embedded: this thread is the only worker
        for chunk in chunks:
            sweep_runner.run_cells(sweep_id, chunk.cell_ids)
        sweep_runner.complete_sweep(sweep_id)
    elif chunks:
        chord(
            run_sweep_chunk.s(sweep_id, chunk.cell_ids).set(queue=chunk.queue) for chunk in chunks
        )(finish_sweep_task.si(sweep_id))
    else:
        finish_sweep_task.delay(sweep_id)
    return {"sweep": sweep_id, "chunks": len(chunks)}


@shared_task(name="workers.tasks.run_sweep_chunk", **RETRY_POLICY)
def run_sweep_chunk(sweep_id: int, cell_ids: list[int]) -> int:
    from procurement.services.sweep_runner import run_cells

    return run_cells(sweep_id, cell_ids)


@shared_task(name="workers.tasks.finish_sweep", **RETRY_POLICY)
def finish_sweep_task(sweep_id: int) -> dict[str, object]:
    from procurement.services.sweep_runner import complete_sweep

    sweep = complete_sweep(sweep_id)
    return {"sweep": sweep.pk, "status": sweep.status, "done": sweep.done_cells}

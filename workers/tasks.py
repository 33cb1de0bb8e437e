"""Celery tasks. Tasks stay thin: they take ids, load, and call a service.

Retries: infrastructure errors only (a lost database or broker connection), with an
exponential backoff without jitter (2, 4, 8 ... 60 s; about 7 minutes in all), so a
minute-long outage is ridden out. Jitter would let several retries fire within seconds
and use them up during a short outage. Whatever outlasts the retries, the reconciler
(``workers.reconciler``) resumes. Names come from ``procurement.dispatch``, by which the
Django side sends them.
"""

from __future__ import annotations

import gc
import os
import socket

from celery import group, shared_task
from django.conf import settings
from django.db import connection

from procurement import dispatch
from procurement.run_plan import GPU_QUEUE
from procurement.services.faults import INFRASTRUCTURE_ERRORS

RETRY_POLICY = {
    # The database is the truth about a run; no result is stored, so sending a task needs
    # the broker alone (the result backend would subscribe, and retry, at every send).
    "ignore_result": True,
    "autoretry_for": INFRASTRUCTURE_ERRORS,
    "retry_backoff": 2,
    "retry_backoff_max": 60,
    "retry_jitter": False,
    "max_retries": settings.TASK_RETRY_MAX,
}


@shared_task(name=dispatch.PING)
def ping(payload: str = "ping") -> dict[str, object]:
    """Liveness probe that also proves the worker has Django and a database connection
    (and its startup heap out of the collector's way, procurement.heap)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return {
        "echo": payload,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "db_vendor": connection.vendor,
        "heap_frozen": gc.get_freeze_count() > 0,
    }


@shared_task(name=dispatch.RUN_EPISODE, **RETRY_POLICY)
def run_episode_task(episode_id: int, attempt: int | None = None) -> dict[str, object]:
    """Run (or resume) one stored episode; ``attempt``: continue a paced episode's claim."""
    from procurement.services.episode_runner import episode_run

    episode = episode_run(episode_id=episode_id, attempt=attempt)
    return {"episode": episode.pk, "status": episode.status, "score": episode.score}


@shared_task(name=dispatch.RUN_SWEEP, **RETRY_POLICY)
def run_sweep_task(sweep_id: int) -> dict[str, object]:
    """Fan a sweep's open cells out in chunks; the chunk that ends last closes the sweep."""
    from procurement.services import sweep_runner
    from procurement.services.sweeps import sweep_close_if_done

    chunks = sweep_runner.sweep_start(sweep_id=sweep_id)
    if settings.TASK_RUNNER == "thread":
        # Embedded: rule chunks play here, in the rule lane; LLM chunks go to the model
        # lane, so that no rule run waits behind a model.
        for chunk in chunks:
            if chunk.queue == GPU_QUEUE:
                dispatch.enqueue(
                    dispatch.RUN_SWEEP_CHUNK, sweep_id, chunk.cell_ids, queue=GPU_QUEUE
                )
            else:
                sweep_runner.sweep_cells_run(sweep_id=sweep_id, cell_ids=chunk.cell_ids)
    elif chunks:
        group(
            run_sweep_chunk.s(sweep_id, chunk.cell_ids).set(queue=chunk.queue) for chunk in chunks
        ).apply_async()
    sweep_close_if_done(sweep_id=sweep_id)  # nothing (left) to run: close it now
    return {"sweep": sweep_id, "chunks": len(chunks)}


@shared_task(name=dispatch.RUN_SWEEP_CHUNK, **RETRY_POLICY)
def run_sweep_chunk(sweep_id: int, cell_ids: list[int]) -> int:
    from procurement.services.sweep_runner import sweep_cells_run

    return sweep_cells_run(sweep_id=sweep_id, cell_ids=cell_ids)


@shared_task(name=dispatch.RUN_TRAINING, **RETRY_POLICY)
def run_training_task(run_id: int) -> dict[str, object]:
    """Train (or resume) one training run; on the gpu queue (RUN_TRAINING's sender)."""
    from procurement.services.training import training_execute

    run = training_execute(run_id=run_id)
    return {"training_run": run.pk, "status": run.status, "step": run.step}


@shared_task(name=dispatch.RUN_EVALUATION, **RETRY_POLICY)
def run_evaluation_task(evaluation_id: int, lane: str | None = None) -> dict[str, object]:
    """Play one lane of an evaluation run (rule episodes on cpu, model ones on gpu: its
    sender, services.evaluations, picks); the lane that ends last seals the run. No
    ``lane`` (a message sent before lanes): every lane, in turn."""
    from procurement.services.evaluations import evaluation_execute

    evaluation = evaluation_execute(evaluation_id=evaluation_id, lane=lane)
    return {"evaluation": evaluation.pk, "lane": lane, "status": evaluation.status}


@shared_task(name=dispatch.RECONCILE, ignore_result=True)
def reconcile_task() -> dict[str, object]:
    """Resume stalled runs now (operators; the workers' timer does it periodically)."""
    from procurement.services.recovery import reconcile

    return reconcile().as_dict()

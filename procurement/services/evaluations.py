"""Writes for evaluations: start one (check, create the queued run, send it to a
worker), run it with live progress, cancel it, and store its league tables.

An evaluation is a run like a sweep or a training run (queued, running, finished /
failed / cancelled; heartbeat; the reconciler restarts a stalled one). Its task goes to
the ``gpu`` queue when any of its episodes calls a language model (buyer or suppliers),
else to ``cpu``; on the embedded default, to the in-process model lane or the rule lane.
``manage.py evaluate`` creates the same run and plays it in its own process
(``evaluation_create``). negotiation/evaluation.py does the engine work: rule episodes
in this process (or worker processes), LLM ones batched per model.

Every check runs before the first write: bad parameters (an unknown policy, line-up or
scenario, a model that is not there or a server that does not answer, a seed count over
the limit) raise ValidationError and create nothing. People who played a seat on the
evaluated scenarios and seeds of a sealed evaluation join its ratings: buyer seats the
buyers' pool, supplier seats the suppliers' (selectors/seat_outcomes.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone

from negotiation.evaluation import (
    MAX_WORKERS,
    EvaluationError,
    EvaluationSpec,
    build_spec,
    evaluate,
    llm_episodes,
)
from negotiation.lineups import AS_CONFIGURED
from procurement import dispatch
from procurement.errors import ApplicationError, Conflict
from procurement.models import (
    Evaluation,
    EvaluationStatus,
    PolicyConfig,
    Scenario,
)
from procurement.run_plan import CPU_QUEUE, GPU_QUEUE, Queue
from procurement.selectors.evaluations import MAX_STORED_OUTCOMES, outcome_row
from procurement.selectors.seat_outcomes import human_buyer_outcomes, human_supplier_outcomes
from procurement.services import live
from procurement.services.faults import describe, is_infrastructure_error
from procurement.services.heartbeat import Heartbeat
from procurement.services.quotas import llm_evaluation_quota_check
from procurement.services.run_status import cancel_run
from procurement.worlds import server_world_key

log = logging.getLogger(__name__)

NAME_LENGTH = Evaluation._meta.get_field("name").max_length
FLUSH_INTERVAL_S = 1.0  # store and publish progress, and read the cancel flag, once a second


class EvaluationFailed(ApplicationError):
    """An evaluation run that failed while it played (its row says why)."""


class _Cancelled(Exception):
    """Raised from the progress hook when someone cancelled the run: stops the play."""


def _validation_error(exc: EvaluationError) -> ValidationError:
    fields: dict[str, list[str]] = {}
    for e in exc.errors:
        fields.setdefault(e["field"], []).append(e["message"])
    return ValidationError(fields)


def _listed(value: str | Iterable[str]) -> list[str]:
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(n).strip() for n in items if str(n).strip()]


def evaluation_queue(spec: EvaluationSpec) -> Queue:
    """Where an evaluation runs: the gpu queue (the model lane) when any of its episodes
    calls a language model, buyer or suppliers; else the cpu queue (the rule lane)."""
    return GPU_QUEUE if llm_episodes(spec) else CPU_QUEUE


def _spec(
    *,
    policies: str | Iterable[str],
    scenarios: str | Iterable[str],
    seeds: int,
    seed_start: int,
    tiers: str | Iterable[str],
    suppliers: str | Iterable[str],
    replays: int,
    prices: Mapping[str, tuple[float, float]] | None,
    workers: int,
    name: str,
    sealed: bool,
) -> EvaluationSpec:
    """Every check, reading only (models and servers included): ValidationError."""
    errors: dict[str, list[str]] = {}
    if len(name) > NAME_LENGTH:
        errors["name"] = [f"At most {NAME_LENGTH} characters."]
    if type(workers) is not int or not 1 <= workers <= MAX_WORKERS:
        errors["workers"] = [f"A whole number from 1 to {MAX_WORKERS}."]
    stored_scenarios = {
        s.name: s.engine_config()
        for s in Scenario.objects.filter(name__in=_listed(scenarios))
        if not s.is_preset
    }
    stored_policies = {
        p.name: p.snapshot() for p in PolicyConfig.objects.filter(name__in=_listed(policies))
    }
    try:
        spec = build_spec(
            policies=policies,
            scenarios=scenarios,
            seeds=seeds,
            seed_start=seed_start,
            tiers=tiers,
            suppliers=suppliers,
            replays=replays,
            custom_scenarios=stored_scenarios,
            stored_policies=stored_policies,
            prices=prices,
            world_key=server_world_key() if sealed else None,
        )
    except EvaluationError as exc:
        for field, messages in _validation_error(exc).message_dict.items():
            errors.setdefault(field, []).extend(messages)
    if errors:
        raise ValidationError(errors)
    return spec


def start_evaluation(
    *,
    policies: str | Iterable[str],
    scenarios: str | Iterable[str],
    seeds: int,
    seed_start: int = 0,
    tiers: str | Iterable[str] = (),
    suppliers: str | Iterable[str] = (),
    replays: int = 1,
    prices: Mapping[str, tuple[float, float]] | None = None,
    workers: int = 1,
    name: str = "",
    sealed: bool = False,
    user=None,
    enqueue: bool = True,
) -> Evaluation:
    """Check everything, create the queued evaluation run and (``enqueue``) send it to
    its queue (``evaluation_queue``). The arguments mirror ``manage.py evaluate``'s
    options: comma-separated text or lists of names; ``prices``: money per million tokens
    by model, (in, out); ``sealed``: held-out worlds drawn under the server's key
    (procurement.worlds); ``user``: who starts it (a person's LLM episodes are limited:
    QuotaExceeded). ValidationError, and nothing created, when anything is wrong."""
    spec = _spec(
        policies=policies,
        scenarios=scenarios,
        seeds=seeds,
        seed_start=seed_start,
        tiers=tiers,
        suppliers=suppliers,
        replays=replays,
        prices=prices,
        workers=workers,
        name=name,
        sealed=sealed,
    )
    user = user if getattr(user, "is_authenticated", False) else None
    llm_evaluation_quota_check(user=user, llm_episodes=llm_episodes(spec))
    evaluation = Evaluation.objects.create(
        name=name,
        queue=evaluation_queue(spec),
        policies=list(spec.policies),
        scenarios=list(spec.scenarios),
        suppliers=list(spec.suppliers),
        tiers=list(spec.tiers),
        seeds=spec.seeds,
        seed_start=spec.seed_start,
        replays=spec.replays,
        prices={k: list(v) for k, v in spec.prices.items()},
        sealed=spec.sealed,
        workers=workers,
        episodes=spec.episodes,
        llm_episodes=llm_episodes(spec),
        pinned={"players": dict(spec.players), "configs": dict(spec.configs)},
        created_by=user,
    )
    if enqueue:
        dispatch.enqueue(dispatch.RUN_EVALUATION, evaluation.pk, queue=evaluation.queue)
    return evaluation


def evaluation_create(*, progress: IO[str] | None = None, **options: Any) -> Evaluation:
    """Start an evaluation and play it here, now (``manage.py evaluate``): the same run
    as start_evaluation's (``options`` are its keyword arguments), without a worker.
    ``progress`` is a stream for a progress bar (None: no bar). EvaluationFailed when the
    run fails while it plays."""
    evaluation = start_evaluation(**options, enqueue=False)
    evaluation = evaluation_execute(evaluation_id=evaluation.pk, progress=progress)
    if evaluation.status != EvaluationStatus.FINISHED:
        raise EvaluationFailed(
            f"Evaluation #{evaluation.pk} {evaluation.status}: {evaluation.error}"
        )
    return evaluation


def evaluation_cancel(*, evaluation: Evaluation) -> Evaluation:
    """Cancel a queued or running evaluation: it stops within about a second (after the
    chunk of episodes it is playing). Conflict when it is over."""
    if not cancel_run(evaluation):
        raise Conflict(f"Evaluation is {evaluation.status}; only queued or running ones cancel.")
    live.publish_evaluation_progress(evaluation)
    return evaluation


def _pinned_spec(evaluation: Evaluation) -> EvaluationSpec:
    """The spec as checked when the run was created (players and configs pinned then)."""
    return EvaluationSpec(
        policies=tuple(evaluation.policies),
        scenarios=tuple(evaluation.scenarios),
        seeds=evaluation.seeds,
        seed_start=evaluation.seed_start,
        tiers=tuple(evaluation.tiers),
        configs=evaluation.pinned.get("configs", {}),
        world_key=server_world_key() if evaluation.sealed else None,
        suppliers=tuple(evaluation.suppliers) or (AS_CONFIGURED,),
        replays=evaluation.replays,
        players=evaluation.pinned.get("players", {}),
        prices={k: (float(v[0]), float(v[1])) for k, v in evaluation.prices.items()},
    )


class _Tracker:
    """The engine's progress hook for one run: progress stored and published, and the
    cancel flag read, at most once a second (and at the end)."""

    def __init__(self, evaluation: Evaluation) -> None:
        self.evaluation = evaluation
        self.last = 0.0

    def __call__(self, done: int, total: int, cell: str) -> None:
        self.evaluation.done_episodes, self.evaluation.current_cell = done, cell[:300]
        if time.monotonic() - self.last >= FLUSH_INTERVAL_S or done == total:
            self.flush()

    def flush(self) -> None:
        self.last = time.monotonic()
        e = self.evaluation
        running = Evaluation.objects.filter(pk=e.pk, status=EvaluationStatus.RUNNING).update(
            done_episodes=e.done_episodes, current_cell=e.current_cell, heartbeat_at=timezone.now()
        )
        live.publish_evaluation_progress(e)
        if not running:  # cancelled meanwhile (or taken over): stop playing
            raise _Cancelled


def evaluation_execute(*, evaluation_id: int, progress: IO[str] | None = None) -> Evaluation:
    """Play a queued evaluation (the worker task's body, and ``manage.py evaluate``) and
    store its tables; from the start again when the reconciler restarted it. A run that
    another process plays (its heartbeat fresh) is returned as it is."""
    stale = timezone.now() - timedelta(seconds=settings.RUN_STALL_SECONDS)
    claimable = Q(status=EvaluationStatus.QUEUED) | Q(
        Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True), status=EvaluationStatus.RUNNING
    )
    now = timezone.now()
    claimed = Evaluation.objects.filter(claimable, pk=evaluation_id).update(
        status=EvaluationStatus.RUNNING,
        started_at=now,
        heartbeat_at=now,
        done_episodes=0,
        current_cell="",
        error="",
    )
    evaluation = Evaluation.objects.get(pk=evaluation_id)
    if not claimed:  # cancelled while it waited, over already, or playing elsewhere
        return evaluation
    live.publish_evaluation_progress(evaluation)
    tracker = _Tracker(evaluation)
    try:
        spec = _pinned_spec(evaluation)
        # An LLM chunk can take minutes: beat while it plays, so the reconciler restarts
        # the run only when this process is gone.
        with Heartbeat(lambda: _touch(evaluation_id)):
            result = evaluate(
                spec,
                workers=evaluation.workers,
                progress=progress,
                on_progress=tracker,
                extra_ratings=human_buyer_outcomes(spec),
                extra_suppliers=human_supplier_outcomes(spec),
            )
    except _Cancelled:
        evaluation.refresh_from_db()
        return evaluation
    except Exception as exc:
        if is_infrastructure_error(exc):
            _release(evaluation_id)
            raise  # the task retries; the run starts again
        log.exception("evaluation %s failed", evaluation_id)
        return _close(evaluation, status=EvaluationStatus.FAILED, error=describe(exc))
    outcomes = result.outcomes if len(result.outcomes) <= MAX_STORED_OUTCOMES else ()
    return _close(
        evaluation,
        status=EvaluationStatus.FINISHED,
        done_episodes=evaluation.episodes,
        current_cell="",
        seconds=round(result.seconds, 3),
        leaderboard=result.leaderboard,
        ratings=result.ratings,
        matrix=result.matrix,
        supplier_table=result.suppliers,
        outcomes=[outcome_row(o) for o in outcomes],
    )


def _close(evaluation: Evaluation, **fields: Any) -> Evaluation:
    """End a running evaluation with ``fields`` (a cancel that came first stands)."""
    fields = {**fields, "finished_at": timezone.now(), "heartbeat_at": timezone.now()}
    Evaluation.objects.filter(pk=evaluation.pk, status=EvaluationStatus.RUNNING).update(**fields)
    evaluation.refresh_from_db()
    live.publish_evaluation_progress(evaluation)
    return evaluation


def _touch(evaluation_id: int) -> None:
    Evaluation.objects.filter(pk=evaluation_id, status=EvaluationStatus.RUNNING).update(
        heartbeat_at=timezone.now()
    )


def _release(evaluation_id: int) -> None:
    """Queue the run again for the retry to take (best effort: the database may be what
    failed; then the reconciler takes it once the heartbeat is old)."""
    try:
        Evaluation.objects.filter(pk=evaluation_id, status=EvaluationStatus.RUNNING).update(
            status=EvaluationStatus.QUEUED
        )
    except Exception:
        log.warning("could not queue evaluation %s again", evaluation_id, exc_info=True)

"""Writes for evaluations: start one (check, create the queued run, send its lanes to
workers), play a lane with live progress, store what it played as it goes, cancel, and
seal the run's league tables.

An evaluation is a run like a sweep or a training run (queued, running, finished /
failed / cancelled; heartbeat; the reconciler resumes a stalled one). It plays in two
lanes (EvaluationPart): its rule episodes on the ``cpu`` queue and its episodes that call
a language model (buyer or suppliers) on ``gpu``; on the embedded default, the in-process
rule lane and model lane. The lanes play in parallel, so rule cells never wait behind a
model; the lane that ends last seals the run from every stored outcome (the tables are
those one process playing everything would compute: negotiation.evaluation.tables).
``manage.py evaluate`` creates the same run and plays its lanes at the same time in its
own process, a thread each (``evaluation_create``).

Each lane stores the outcomes of the episodes it played about once a second
(EvaluationPiece), with its progress, in one transaction: a lane played again (a worker
restart, a duplicate delivery, the reconciler) plays only the episodes no piece holds.

Every check runs before the first write: bad parameters (an unknown policy, line-up or
scenario, a model that is not there or a server that does not answer, a seed count over
the limit) raise ValidationError and create nothing. People who played a seat on the
evaluated scenarios and seeds of a sealed evaluation join its ratings: buyer seats the
buyers' pool, supplier seats the suppliers' (selectors/seat_outcomes.py); the run lists
those worlds as exposed, read under the held-out worlds' lock (services.held_out).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import timedelta
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import F, Q, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from negotiation.evaluation import (
    LANES,
    LLM_LANE,
    MAX_WORKERS,
    RULE_LANE,
    EvaluationError,
    EvaluationSpec,
    Outcome,
    build_spec,
    episode_key,
    fold_packed,
    lane_episodes,
    leaderboard,
    llm_episodes,
    pack_outcomes,
    run_outcomes,
    tables,
    unpack_outcomes,
    without_worlds,
)
from negotiation.lineups import AS_CONFIGURED
from procurement import dispatch
from procurement.dispatch import RunRef
from procurement.errors import ApplicationError, Conflict
from procurement.models import (
    Evaluation,
    EvaluationPart,
    EvaluationPiece,
    EvaluationStatus,
    PolicyConfig,
    Scenario,
)
from procurement.run_plan import CPU_QUEUE, GPU_QUEUE, Queue
from procurement.selectors.evaluations import (
    MAX_STORED_OUTCOMES,
    outcome_row,
    worlds_played_in_seats,
)
from procurement.selectors.seat_outcomes import human_buyer_outcomes, human_supplier_outcomes
from procurement.services import live
from procurement.services.faults import describe, is_infrastructure_error
from procurement.services.heartbeat import Heartbeat
from procurement.services.held_out import held_out_lock
from procurement.services.quotas import llm_evaluation_quota_check
from procurement.services.run_status import cancel_run
from procurement.worlds import server_world_key

log = logging.getLogger(__name__)

NAME_LENGTH = Evaluation._meta.get_field("name").max_length
FLUSH_INTERVAL_S = 1.0  # store outcomes and progress, and read the cancel flag, once a second
LANE_QUEUES: dict[str, Queue] = {RULE_LANE: CPU_QUEUE, LLM_LANE: GPU_QUEUE}
OPEN_STATUSES = [EvaluationStatus.QUEUED, EvaluationStatus.RUNNING]


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
    """The queue an evaluation is listed under: gpu when any of its episodes calls a
    language model, buyer or suppliers; else cpu. (Each lane goes to its own queue.)"""
    return GPU_QUEUE if llm_episodes(spec) else CPU_QUEUE


def _create_parts(evaluation: Evaluation, spec: EvaluationSpec) -> list[EvaluationPart]:
    """The run's lanes that have episodes to play, queued (those it has are kept)."""
    return EvaluationPart.objects.bulk_create(
        [
            EvaluationPart(evaluation=evaluation, lane=lane, queue=LANE_QUEUES[lane], episodes=n)
            for lane, n in lane_episodes(spec).items()
            if n
        ],
        ignore_conflicts=True,
    )


def _send_parts(evaluation_id: int, parts: Iterable[EvaluationPart]) -> None:
    for part in parts:
        dispatch.enqueue(dispatch.RUN_EVALUATION, evaluation_id, part.lane, queue=part.queue)


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
    with transaction.atomic():
        exposed = []
        if spec.sealed:  # the range becomes held out: seats' seeds checked against it race
            held_out_lock()
            exposed = worlds_played_in_seats(
                scenarios=spec.scenarios, seed_start=spec.seed_start, seeds=spec.seeds
            )
        evaluation = _create(spec, name=name, workers=workers, user=user, exposed=exposed)
        parts = _create_parts(evaluation, spec)
    if enqueue:
        _send_parts(evaluation.pk, parts)
    return evaluation


def _create(
    spec: EvaluationSpec, *, name: str, workers: int, user, exposed: list[dict[str, Any]]
) -> Evaluation:
    return Evaluation.objects.create(
        name=name,
        exposed=exposed,
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


def evaluation_create(*, progress: IO[str] | None = None, **options: Any) -> Evaluation:
    """Start an evaluation and play it here, now (``manage.py evaluate``): the same run
    as start_evaluation's (``options`` are its keyword arguments), without a worker, its
    lanes at once as the workers play them (evaluation_play_lanes).
    ``progress`` is a stream for the lanes' progress bars (None: no bar).
    EvaluationFailed when the run fails while it plays."""
    evaluation = start_evaluation(**options, enqueue=False)
    evaluation = evaluation_play_lanes(evaluation_id=evaluation.pk, progress=progress)
    if evaluation.status != EvaluationStatus.FINISHED:
        raise EvaluationFailed(
            f"Evaluation #{evaluation.pk} {evaluation.status}: {evaluation.error}"
        )
    return evaluation


def evaluation_play_lanes(*, evaluation_id: int, progress: IO[str] | None = None) -> Evaluation:
    """Play a run's open lanes here, each in its own thread, at the same time (as the
    cpu and gpu workers play them), each with its own progress bar on ``progress``;
    the last to end seals the run. The lanes share nothing but the database: the rule
    lane's episodes play while the model lane waits on its model. An error in a lane
    (the database gone, say) is raised here once both have stopped; an interrupt
    (Ctrl-C) cancels the run, and each lane stops within about a second."""
    lanes = list(
        EvaluationPart.objects.filter(evaluation_id=evaluation_id)
        .exclude(status=EvaluationStatus.FINISHED)
        .order_by("lane")
        .values_list("lane", flat=True)
    )
    if len(lanes) < 2:
        return evaluation_execute(evaluation_id=evaluation_id, progress=progress)
    errors: list[BaseException] = []

    def play(lane: str) -> None:
        try:
            evaluation_execute(
                evaluation_id=evaluation_id,
                lane=lane,
                progress=progress,
                bar_position=LANES.index(lane),
            )
        except BaseException as exc:  # told to the caller below, once both stopped
            errors.append(exc)
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=play, args=(lane,), name=f"{lane}-lane") for lane in lanes]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:
        cancel_run(Evaluation.objects.get(pk=evaluation_id))
        for thread in threads:
            thread.join()
        raise
    if errors:
        raise errors[0]
    return evaluation_seal_if_done(evaluation_id=evaluation_id)


def evaluation_cancel(*, evaluation: Evaluation) -> Evaluation:
    """Cancel a queued or running evaluation: each lane stops within about a second
    (after the rule chunk, or the LLM episodes, playing then). Conflict when it is over."""
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


class _Lane:
    """One lane's play, told by the engine: the new outcomes kept, then stored with the
    progress at most once a second (and at the end), in one transaction, and the cancel
    flag read then."""

    def __init__(self, evaluation: Evaluation, part: EvaluationPart) -> None:
        self.evaluation, self.part = evaluation, part
        self.pending: list[Outcome] = []
        self.last = 0.0
        self.counted = time.monotonic()  # play time up to here is in part.seconds

    def outcomes(self, outcomes: list[Outcome]) -> None:
        self.pending.extend(outcomes)

    def __call__(self, done: int, total: int, cell: str) -> None:
        self.part.done_episodes, self.evaluation.current_cell = done, cell[:300]
        if time.monotonic() - self.last >= FLUSH_INTERVAL_S or done == total:
            self.flush()

    def flush(self) -> None:
        self.last = time.monotonic()
        played, self.counted = self.last - self.counted, self.last
        e, part, now = self.evaluation, self.part, timezone.now()
        with transaction.atomic():
            if self.pending:
                EvaluationPiece.objects.create(
                    evaluation_id=e.pk,
                    lane=part.lane,
                    episodes=len(self.pending),
                    data=pack_outcomes(self.pending),
                )
                self.pending = []
            EvaluationPart.objects.filter(pk=part.pk).update(
                done_episodes=part.done_episodes,
                heartbeat_at=now,
                seconds=F("seconds") + played,
            )
            running = Evaluation.objects.filter(pk=e.pk, status=EvaluationStatus.RUNNING).update(
                done_episodes=_done_episodes(e.pk), current_cell=e.current_cell, heartbeat_at=now
            )
        e.refresh_from_db(fields=["status", "done_episodes"])
        live.publish_evaluation_progress(e)
        if not running:  # cancelled meanwhile, or failed in the other lane: stop playing
            raise _Cancelled


def _done_episodes(evaluation_id: int) -> int:
    return (
        EvaluationPart.objects.filter(evaluation_id=evaluation_id).aggregate(
            n=Sum("done_episodes")
        )["n"]
        or 0
    )


def _stored(evaluation_id: int, lane: str | None = None) -> list[Outcome]:
    """The outcomes a run's lanes stored (``lane``: that lane's), in storing order."""
    pieces = EvaluationPiece.objects.filter(evaluation_id=evaluation_id)
    if lane is not None:
        pieces = pieces.filter(lane=lane)
    return [
        outcome
        for data in pieces.order_by("pk").values_list("data", flat=True)
        for outcome in unpack_outcomes(data)
    ]


def _fold_pieces(evaluation_id: int, lane: str) -> None:
    """A lane that ended keeps its outcomes in one piece (one compressed block of all
    of them, not one per second), until the run is sealed."""
    with transaction.atomic():
        pieces = (
            EvaluationPiece.objects.select_for_update()
            .filter(evaluation_id=evaluation_id, lane=lane)
            .order_by("pk")
        )
        rows = list(pieces.values_list("pk", "episodes"))
        if len(rows) < 2:
            return
        ids = [pk for pk, _ in rows]
        data = fold_packed(
            EvaluationPiece.objects.filter(pk=pk).values_list("data", flat=True).get() for pk in ids
        )
        EvaluationPiece.objects.filter(pk__in=ids).delete()
        EvaluationPiece.objects.create(
            evaluation_id=evaluation_id,
            lane=lane,
            episodes=sum(n for _, n in rows),
            data=data,
        )


def _ensure_parts(evaluation: Evaluation) -> None:
    """Runs created before lanes (an older task's message) get theirs now."""
    if not EvaluationPart.objects.filter(evaluation=evaluation).exists():
        _create_parts(evaluation, _pinned_spec(evaluation))


def _start(evaluation_id: int) -> None:
    """The run starts (queued -> running) if it has not: its first lane task, or the
    first after the reconciler queued it again; ``started_at`` stays the first start,
    so its wall time counts from there whatever restarts came later."""
    now = timezone.now()
    Evaluation.objects.filter(pk=evaluation_id, status=EvaluationStatus.QUEUED).update(
        status=EvaluationStatus.RUNNING,
        started_at=Coalesce("started_at", Value(now)),
        heartbeat_at=now,
        error="",
    )


def _claim(evaluation_id: int, lane: str) -> EvaluationPart | None:
    """Take a lane of a running run to play: this call's when it is queued, or running
    with an old heartbeat (its player is gone). None when the run is over or another
    process plays the lane."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.RUN_STALL_SECONDS)
    claimable = Q(status=EvaluationStatus.QUEUED) | Q(
        Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True), status=EvaluationStatus.RUNNING
    )
    claimed = EvaluationPart.objects.filter(
        claimable,
        evaluation_id=evaluation_id,
        evaluation__status=EvaluationStatus.RUNNING,
        lane=lane,
    ).update(status=EvaluationStatus.RUNNING, heartbeat_at=now)
    if not claimed:
        return None
    return EvaluationPart.objects.get(evaluation_id=evaluation_id, lane=lane)


def evaluation_execute(
    *,
    evaluation_id: int,
    lane: str | None = None,
    progress: IO[str] | None = None,
    bar_position: int | None = None,
) -> Evaluation:
    """Play a lane of an evaluation (the worker task's body), or with ``lane`` None each
    of its lanes not yet played, in turn (an older task's message, and the reconciler's
    for a run with no lane open); then seal the run when no lane is left. Episodes a
    lane stored before are not played again. A lane that another process plays (its
    heartbeat fresh) is left to it; a run that is over is returned as it is."""
    if lane is not None and lane not in LANES:
        raise ValueError(f"lane: one of {', '.join(LANES)}")
    evaluation = Evaluation.objects.get(pk=evaluation_id)
    if evaluation.is_terminal:
        return evaluation
    _ensure_parts(evaluation)
    _start(evaluation_id)
    lanes = [lane] if lane is not None else list(
        EvaluationPart.objects.filter(evaluation_id=evaluation_id)
        .exclude(status=EvaluationStatus.FINISHED)
        .values_list("lane", flat=True)
    )  # fmt: skip
    for name in lanes:
        part = _claim(evaluation_id, name)
        if part is None:
            continue
        if not _play_lane(evaluation_id, part, progress, bar_position):
            break  # cancelled or failed: the run is over
    return evaluation_seal_if_done(evaluation_id=evaluation_id)


def _play_lane(
    evaluation_id: int,
    part: EvaluationPart,
    progress: IO[str] | None,
    bar_position: int | None = None,
) -> bool:
    """Play a claimed lane to its end; False when the run ended meanwhile (cancelled,
    or failed here or in the other lane)."""
    evaluation = Evaluation.objects.get(pk=evaluation_id)
    live.publish_evaluation_progress(evaluation)
    tracker = _Lane(evaluation, part)
    try:
        spec = _pinned_spec(evaluation)
        # An LLM lane can take minutes between stores: beat while it plays, so the
        # reconciler resumes the run only when this process is gone.
        with Heartbeat(lambda: _touch(evaluation_id, part.pk)):
            run_outcomes(
                spec,
                workers=evaluation.workers,
                progress=progress,
                on_progress=tracker,
                lane=part.lane,
                skip=[episode_key(o) for o in _stored(evaluation_id, part.lane)],
                on_outcomes=tracker.outcomes,
                bar_position=bar_position,
            )
            tracker.flush()  # the last outcomes stored, whatever the engine last told
    except _Cancelled:
        _drop_pieces_if_over(evaluation_id)
        return False
    except Exception as exc:
        if is_infrastructure_error(exc):
            _release(part.pk)
            raise  # the task retries; the lane goes on from what it stored
        log.exception("evaluation %s (%s lane) failed", evaluation_id, part.lane)
        _close(evaluation, status=EvaluationStatus.FAILED, error=describe(exc))
        _drop_pieces_if_over(evaluation_id)
        return False
    EvaluationPart.objects.filter(pk=part.pk).update(
        status=EvaluationStatus.FINISHED, heartbeat_at=timezone.now()
    )
    _fold_pieces(evaluation_id, part.lane)
    return True


def _drop_pieces_if_over(evaluation_id: int) -> None:
    """A cancelled or failed run is never resumed: what its lanes stored goes."""
    EvaluationPiece.objects.filter(
        evaluation_id=evaluation_id,
        evaluation__status__in=[EvaluationStatus.CANCELLED, EvaluationStatus.FAILED],
    ).delete()


def evaluation_seal_if_done(*, evaluation_id: int) -> Evaluation:
    """Store the league tables of a running evaluation whose lanes have all ended, from
    every stored outcome (the first of each episode, in the spec's order), and drop the
    pieces: exactly once (the close is conditional on the run still running)."""
    evaluation = Evaluation.objects.get(pk=evaluation_id)
    open_lanes = EvaluationPart.objects.filter(evaluation_id=evaluation_id).exclude(
        status=EvaluationStatus.FINISHED
    )
    if evaluation.status != EvaluationStatus.RUNNING or open_lanes.exists():
        return evaluation
    spec = _pinned_spec(evaluation)
    try:
        result = tables(
            spec,
            _stored(evaluation_id),
            seconds=(
                timezone.now() - (evaluation.started_at or evaluation.created_at)
            ).total_seconds(),
            extra_ratings=human_buyer_outcomes(spec),
            extra_suppliers=human_supplier_outcomes(spec),
        )
        if len(result.outcomes) != evaluation.episodes:
            raise EvaluationFailed(
                f"{len(result.outcomes)} of {evaluation.episodes} episodes were stored."
            )
    except Exception as exc:
        if is_infrastructure_error(exc):
            raise
        log.exception("evaluation %s could not be sealed", evaluation_id)
        return _close(evaluation, status=EvaluationStatus.FAILED, error=describe(exc))
    unexposed = _leaderboard_unexposed(evaluation, result.outcomes)
    outcomes = result.outcomes if len(result.outcomes) <= MAX_STORED_OUTCOMES else ()
    with transaction.atomic():
        evaluation = _close(
            evaluation,
            status=EvaluationStatus.FINISHED,
            done_episodes=evaluation.episodes,
            current_cell="",
            seconds=round(result.seconds, 3),
            leaderboard=result.leaderboard,
            leaderboard_unexposed=unexposed,
            ratings=result.ratings,
            matrix=result.matrix,
            supplier_table=result.suppliers,
            outcomes=[outcome_row(o) for o in outcomes],
            publish=False,
        )
        if evaluation.status == EvaluationStatus.FINISHED:
            EvaluationPiece.objects.filter(evaluation_id=evaluation_id).delete()
    live.publish_evaluation_progress(evaluation)
    return evaluation


def _leaderboard_unexposed(
    evaluation: Evaluation, outcomes: Sequence[Outcome]
) -> list[dict[str, Any]]:
    """The leaderboard recomputed without the evaluation's exposed worlds (empty when none
    is exposed, or when no seed is left)."""
    worlds = {(w["scenario"], w["seed"]) for w in evaluation.exposed or []}
    if not worlds:
        return []
    kept = without_worlds(outcomes, worlds)
    return leaderboard(kept) if kept else []


def _close(evaluation: Evaluation, *, publish: bool = True, **fields: Any) -> Evaluation:
    """End a running evaluation with ``fields`` (a cancel that came first stands)."""
    fields = {**fields, "finished_at": timezone.now(), "heartbeat_at": timezone.now()}
    Evaluation.objects.filter(pk=evaluation.pk, status=EvaluationStatus.RUNNING).update(**fields)
    evaluation.refresh_from_db()
    if publish:
        live.publish_evaluation_progress(evaluation)
    return evaluation


def _touch(evaluation_id: int, part_id: int) -> None:
    now = timezone.now()
    EvaluationPart.objects.filter(pk=part_id, status=EvaluationStatus.RUNNING).update(
        heartbeat_at=now
    )
    Evaluation.objects.filter(pk=evaluation_id, status=EvaluationStatus.RUNNING).update(
        heartbeat_at=now
    )


def _release(part_id: int) -> None:
    """Queue the lane again for the retry to take (best effort: the database may be what
    failed; then its old heartbeat lets the retry, or the reconciler, take it)."""
    try:
        EvaluationPart.objects.filter(pk=part_id, status=EvaluationStatus.RUNNING).update(
            status=EvaluationStatus.QUEUED
        )
    except Exception:
        log.warning("could not queue evaluation lane %s again", part_id, exc_info=True)


def evaluation_lanes_claim_stalled(
    *, live: Collection[RunRef], queued_grace_s: float, stall_s: float
) -> list[tuple[int, str, str]]:
    """For the reconciler: the lanes of open runs whose player is gone, each claimed
    exactly once (its heartbeat moved to now in one conditional UPDATE) and queued again,
    as (evaluation, lane, queue) to send. A lane is judged by its own heartbeat, so one
    that died is resumed while the other lane still plays: a running lane whose
    heartbeat is older than ``stall_s``, or a queued one with no sign of life for
    ``queued_grace_s`` whose run has no message on its way (``live``)."""
    now = timezone.now()
    open_lanes = EvaluationPart.objects.filter(
        evaluation__status__in=OPEN_STATUSES, status__in=OPEN_STATUSES
    ).annotate(last_sign=Coalesce("heartbeat_at", "evaluation__created_at"))
    stalled = Q(
        status=EvaluationStatus.QUEUED, last_sign__lt=now - timedelta(seconds=queued_grace_s)
    ) | Q(status=EvaluationStatus.RUNNING, last_sign__lt=now - timedelta(seconds=stall_s))
    out: list[tuple[int, str, str]] = []
    candidates = open_lanes.filter(stalled).order_by("evaluation_id", "lane")
    for pk, evaluation_id, lane, queue, status in candidates.values_list(
        "pk", "evaluation_id", "lane", "queue", "status"
    ):
        if status == EvaluationStatus.QUEUED and ("evaluation", evaluation_id) in live:
            continue  # its task may be waiting for a worker of its queue
        claimed = EvaluationPart.objects.filter(
            pk__in=open_lanes.filter(stalled, pk=pk).values("pk")
        ).update(status=EvaluationStatus.QUEUED, heartbeat_at=now)
        if claimed:
            out.append((evaluation_id, lane, queue))
    return out

"""The reconciler's pass: find runs that stopped making progress, claim each exactly once,
and send its task again (or close it), so no run is ever stuck.

The workers run it periodically (workers.reconciler, a thread in every worker and in the
embedded web process); ``manage.py reconcile`` runs it once.

A run (episode, sweep, training run or evaluation) is stalled when it is not over, the broker holds
no message for it, and its last sign of life is old: for a queued run, its creation (a committed run
whose task was never sent or was lost in the broker); for a running one, its heartbeat
(a worker died, the broker lost its messages, retries ran out during an outage).

Claiming moves the heartbeat to now in one conditional UPDATE, so two reconcilers (one
per worker) never resume the same run twice, and a resumed run gets a full stall period
to show progress before it is looked at again.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from procurement import dispatch
from procurement.dispatch import RunRef
from procurement.models import (
    ApprovalStatus,
    Episode,
    Evaluation,
    Sweep,
    SweepCell,
    TrainingRun,
)
from procurement.models.status import RunStatus
from procurement.run_plan import GPU_QUEUE, HUMAN_QUEUE
from procurement.services import approvals, human_seat, supplier_seat
from procurement.services.evaluations import evaluation_lanes_claim_stalled
from procurement.services.sweeps import OPEN_CELL_STATUSES, sweep_close_if_done

log = logging.getLogger(__name__)

OPEN_RUN = [RunStatus.QUEUED, RunStatus.RUNNING]
DISPATCH_GRACE_S = 10.0  # a queued run with no message after this was never sent, or lost


@dataclass
class Recovery:
    """What one reconciliation did."""

    episodes_resumed: list[int] = field(default_factory=list)
    seats_handed_over: list[int] = field(default_factory=list)
    approvals_timed_out: list[int] = field(default_factory=list)
    sweeps_resumed: list[int] = field(default_factory=list)
    sweeps_closed: list[int] = field(default_factory=list)
    trainings_resumed: list[int] = field(default_factory=list)
    evaluations_restarted: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[int]]:
        return {
            "episodes_resumed": self.episodes_resumed,
            "seats_handed_over": self.seats_handed_over,
            "approvals_timed_out": self.approvals_timed_out,
            "sweeps_resumed": self.sweeps_resumed,
            "sweeps_closed": self.sweeps_closed,
            "trainings_resumed": self.trainings_resumed,
            "evaluations_restarted": self.evaluations_restarted,
        }

    def __bool__(self) -> bool:
        return bool(
            self.episodes_resumed
            or self.seats_handed_over
            or self.approvals_timed_out
            or self.sweeps_resumed
            or self.sweeps_closed
            or self.trainings_resumed
            or self.evaluations_restarted
        )


def _stalled(
    queryset: models.QuerySet, *, queued_grace_s: float, stall_s: float
) -> models.QuerySet:
    now = timezone.now()
    return queryset.annotate(last_sign=Coalesce("heartbeat_at", "created_at")).filter(
        Q(status=RunStatus.QUEUED, last_sign__lt=now - timedelta(seconds=queued_grace_s))
        | Q(status=RunStatus.RUNNING, last_sign__lt=now - timedelta(seconds=stall_s))
    )


def _claim(queryset: models.QuerySet, pk: int, **grace) -> bool:
    """Take a stalled run for resumption: True for exactly one caller."""
    return bool(_stalled(queryset.filter(pk=pk), **grace).update(heartbeat_at=timezone.now()))


def stalled_episode_ids(*, live: Collection[RunRef], queued_grace_s: float, stall_s: float):
    candidates = _stalled(
        # A human seat waits for a person, not a worker: idle seats are handed over instead
        # (services.human_seat.idle_seats).
        Episode.objects.filter(status__in=OPEN_RUN, sweep__isnull=True)
        .exclude(queue=HUMAN_QUEUE)
        # ... and one waiting for an approver is answered by approvals_expire at its deadline.
        .exclude(approvals__status=ApprovalStatus.PENDING)
        # ... and one whose supplier seat has an offer to answer waits for its person.
        .exclude(supplier_seat__has_key=supplier_seat.TURN),
        queued_grace_s=queued_grace_s,
        stall_s=stall_s,
    ).values_list("pk", "queue")
    return [(pk, queue) for pk, queue in candidates if ("episode", pk) not in live]


def claim_stalled_episode(pk: int, *, queued_grace_s: float, stall_s: float) -> bool:
    return _claim(Episode.objects.all(), pk, queued_grace_s=queued_grace_s, stall_s=stall_s)


def recover_sweeps(
    *, live: Collection[RunRef], queued_grace_s: float, stall_s: float
) -> tuple[list[int], list[int]]:
    """Close stalled sweeps that have nothing left to run (and cancelled ones whose chunks
    are gone); return (claimed for resumption, closed)."""
    grace = {"queued_grace_s": queued_grace_s, "stall_s": stall_s}
    resume, closed = [], []
    stalled = _stalled(Sweep.objects.filter(status__in=OPEN_RUN), **grace).values_list("pk")
    for (pk,) in stalled:
        if ("sweep", pk) in live or not _claim(Sweep.objects.all(), pk, **grace):
            continue
        if sweep_close_if_done(sweep_id=pk):
            closed.append(pk)
        else:
            resume.append(pk)
    # Cancelled but never closed: its open cells wait for chunks that may never come.
    cancelled = Sweep.objects.filter(status=RunStatus.CANCELLED, summary={}).values_list("pk")
    for (pk,) in cancelled:
        if ("sweep", pk) in live:
            continue
        SweepCell.objects.filter(sweep_id=pk, status__in=OPEN_CELL_STATUSES).update(
            status="cancelled"
        )
        if sweep_close_if_done(sweep_id=pk):
            closed.append(pk)
    return resume, closed


def _requeue_stalled(
    model: type[models.Model],
    kind: str,
    *,
    live: Collection[RunRef],
    queued_grace_s: float,
    stall_s: float,
) -> list[int]:
    """Claim stalled runs of ``model`` (their worker died, or their task was lost) and
    queue them again: the task takes a queued run (a running one is someone's, while it
    beats)."""
    grace = {"queued_grace_s": queued_grace_s, "stall_s": stall_s}
    stalled = _stalled(model.objects.filter(status__in=OPEN_RUN), **grace)
    claimed = [
        pk
        for pk in stalled.values_list("pk", flat=True)
        if (kind, pk) not in live and _claim(model.objects.all(), pk, **grace)
    ]
    model.objects.filter(pk__in=claimed).update(status=RunStatus.QUEUED)
    return claimed


def recover_trainings(
    *, live: Collection[RunRef], queued_grace_s: float, stall_s: float
) -> list[int]:
    """Claim stalled training runs: the task sent again resumes each from its last
    checkpoint."""
    return _requeue_stalled(
        TrainingRun, "training", live=live, queued_grace_s=queued_grace_s, stall_s=stall_s
    )


def recover_evaluations(
    *, live: Collection[RunRef], queued_grace_s: float, stall_s: float
) -> list[tuple[int, str | None, str]]:
    """Claim stalled evaluations, lane by lane: each lane whose own player is gone (the
    other lane may still play), as (evaluation, lane, queue); its task sent again plays
    only the episodes it has not stored. A stalled run with no lane open (every lane
    ended but the seal did not happen, or a run from before lanes) gets one task
    without a lane, on its own queue: it plays what is left and seals. A run stays
    running while it is resumed: its first start, and so its wall time, stand."""
    grace = {"queued_grace_s": queued_grace_s, "stall_s": stall_s}
    out: list[tuple[int, str | None, str]] = list(
        evaluation_lanes_claim_stalled(live=live, **grace)
    )
    laneless = _stalled(
        Evaluation.objects.filter(status__in=OPEN_RUN).exclude(parts__status__in=OPEN_RUN),
        **grace,
    ).values_list("pk", "queue")
    for pk, queue in laneless:
        if ("evaluation", pk) not in live and _claim(Evaluation.objects.all(), pk, **grace):
            out.append((pk, None, queue))
    return out


def reconcile(*, stall_s: float | None = None) -> Recovery:
    """One pass: find stalled runs, claim each, send its task again (or close it); answer
    overdue approvals by rule and hand idle human seats (buyer or supplier) to their
    fallback.

    Runs whose task is on its way (``dispatch.runs_in_flight``) are left alone."""
    stall = settings.RUN_STALL_SECONDS if stall_s is None else stall_s
    grace = {"queued_grace_s": min(DISPATCH_GRACE_S, stall), "stall_s": stall}
    live = dispatch.runs_in_flight(taken_within_s=stall)
    done = Recovery()
    for pk, queue in stalled_episode_ids(live=live, **grace):
        if claim_stalled_episode(pk, **grace):
            dispatch.enqueue(dispatch.RUN_EPISODE, pk, queue=queue)
            done.episodes_resumed.append(pk)
    done.approvals_timed_out = approvals.approvals_expire()
    for episode in human_seat.idle_seats():
        if human_seat.seat_hand_over(episode=episode):
            dispatch.enqueue(dispatch.RUN_EPISODE, episode.pk, queue=episode.queue)
            done.seats_handed_over.append(episode.pk)
    for episode in supplier_seat.idle_turns():
        if supplier_seat.supplier_seat_hand_over(episode=episode):
            dispatch.enqueue(dispatch.RUN_EPISODE, episode.pk, queue=episode.queue)
            done.seats_handed_over.append(episode.pk)
    resume, closed = recover_sweeps(live=live, **grace)
    for pk in resume:
        dispatch.enqueue(dispatch.RUN_SWEEP, pk)
    done.sweeps_resumed, done.sweeps_closed = resume, closed
    done.trainings_resumed = recover_trainings(live=live, **grace)
    for pk in done.trainings_resumed:
        dispatch.enqueue(dispatch.RUN_TRAINING, pk, queue=GPU_QUEUE)
    for pk, lane, queue in recover_evaluations(live=live, **grace):
        args = (pk,) if lane is None else (pk, lane)
        dispatch.enqueue(dispatch.RUN_EVALUATION, *args, queue=queue)
        if pk not in done.evaluations_restarted:
            done.evaluations_restarted.append(pk)
    if done:
        log.warning("reconciler: %s", done.as_dict())
    return done

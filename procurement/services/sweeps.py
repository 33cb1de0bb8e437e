"""Writes for sweeps: create the grid of cells, record results, finish with a summary.

A sweep pins its scenarios and policies when it is created (``Sweep.pinned``); its cells
play the pinned versions, never the live rows, so results stay one version each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from procurement import dispatch
from procurement.errors import Conflict
from procurement.limits import validate_sweep_grid
from procurement.models import PolicyConfig, Scenario, Sweep, SweepCell, SweepStatus
from procurement.models.status import TERMINAL_STATUSES
from procurement.run_plan import HUMAN_POLICY, RunPlan
from procurement.selectors.sweeps import sweep_summary
from procurement.services import live
from procurement.services.quotas import llm_sweep_quota_check
from procurement.services.run_status import cancel_run

OPEN_CELL_STATUSES = ("pending", "running")


def _pin(scenarios: Sequence[Scenario], policies: Sequence[PolicyConfig]) -> dict[str, Any]:
    # JSON object keys are strings: ids are stored as str(pk).
    return {
        "scenarios": {
            str(s.pk): {"version": s.version, "config": s.engine_config()} for s in scenarios
        },
        "policies": {str(p.pk): {"version": p.version, "snapshot": p.snapshot()} for p in policies},
    }


@transaction.atomic
def sweep_create(
    *,
    scenarios: Sequence[Scenario],
    policies: Sequence[PolicyConfig],
    seeds: int,
    seed_start: int = 0,
    name: str = "",
    user=None,
    enqueue: bool = True,
) -> Sweep:
    validate_sweep_grid(
        scenarios=len(scenarios), policies=len(policies), seeds=seeds, seed_start=seed_start
    )
    if any(p.policy == HUMAN_POLICY for p in policies):
        raise ValidationError({"policies": ["A human seat plays single episodes, not sweeps."]})
    llm_sweep_quota_check(
        user=user,
        plans=(
            RunPlan.of(scenario_config=s.engine_config(), policy_snapshot=p.snapshot())
            for s in scenarios
            for p in policies
        ),
        seeds=seeds,
    )
    sweep = Sweep.objects.create(
        name=name,
        seeds=seeds,
        seed_start=seed_start,
        created_by=user,
        total_cells=len(scenarios) * len(policies) * seeds,
        pinned=_pin(scenarios, policies),
    )
    sweep.scenarios.set(scenarios)
    sweep.policies.set(policies)
    SweepCell.objects.bulk_create(
        [
            SweepCell(sweep=sweep, scenario=s, policy=p, seed=seed)
            for s in scenarios
            for p in policies
            for seed in range(seed_start, seed_start + seeds)
        ],
        batch_size=2000,
    )
    if enqueue:
        dispatch.enqueue(dispatch.RUN_SWEEP, sweep.pk)
    return sweep


def sweep_progress_refresh(*, sweep: Sweep) -> Sweep:
    """Recount finished and failed cells from the cells themselves (the truth)."""
    counts = SweepCell.objects.filter(sweep=sweep).aggregate(
        done=Count("pk", filter=Q(status="finished")),
        failed=Count("pk", filter=Q(status__in=["failed", "cancelled"])),
    )
    sweep.done_cells, sweep.failed_cells = counts["done"], counts["failed"]
    Sweep.objects.filter(pk=sweep.pk).update(
        done_cells=sweep.done_cells, failed_cells=sweep.failed_cells
    )
    return sweep


def sweep_touch(*, sweep_id: int) -> None:
    """Record progress: the reconciler leaves a sweep with a recent heartbeat alone."""
    Sweep.objects.filter(pk=sweep_id).update(heartbeat_at=timezone.now())


def sweep_finish(*, sweep: Sweep) -> Sweep:
    """Count the cells (exact: the cells are the truth), summarise, and close the sweep:
    finished when any cell finished, failed when none did, cancelled stays cancelled."""
    sweep_progress_refresh(sweep=sweep)
    sweep.summary = sweep_summary(sweep)
    if sweep.status != SweepStatus.CANCELLED:
        sweep.status = SweepStatus.FINISHED if sweep.done_cells else SweepStatus.FAILED
    sweep.error = (
        f"{sweep.failed_cells} of {sweep.total_cells} cells failed; see the cells' errors."
        if sweep.failed_cells and sweep.status != SweepStatus.CANCELLED
        else ""
    )
    sweep.finished_at = sweep.finished_at or timezone.now()
    sweep.save(update_fields=["summary", "status", "error", "finished_at"])
    return sweep


def is_closed(sweep: Sweep) -> bool:
    """Closed = terminal and summarised (a cancelled sweep is summarised once its cells are)."""
    return sweep.status in TERMINAL_STATUSES and bool(sweep.summary)


def sweep_close_if_done(*, sweep_id: int) -> Sweep | None:
    """Finish the sweep when none of its cells is open any more; exactly once.

    Every chunk calls this when it ends; the row lock makes one caller the closer and the
    others see a closed sweep. Returns the sweep when this call closed it."""
    if SweepCell.objects.filter(sweep_id=sweep_id, status__in=OPEN_CELL_STATUSES).exists():
        return None
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().get(pk=sweep_id)
        if is_closed(sweep):
            return None
        sweep_finish(sweep=sweep)
    live.publish_sweep_progress(sweep)
    return sweep


def sweep_cancel(*, sweep: Sweep) -> Sweep:
    """Cancel a queued or running sweep; its remaining chunks mark their cells cancelled.
    Conflict when the sweep is already over."""
    if not cancel_run(sweep):
        raise Conflict(f"Sweep is {sweep.status}; only queued or running ones cancel.")
    return sweep

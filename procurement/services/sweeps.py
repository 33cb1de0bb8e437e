"""Writes for sweeps: create the grid of cells, record results, finish with a summary."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from procurement.models import PolicyConfig, Scenario, Sweep, SweepCell, SweepStatus
from procurement.selectors.aggregates import leaderboard
from procurement.services.run_status import cancel_run


@transaction.atomic
def create_sweep(
    *,
    scenarios: Sequence[Scenario],
    policies: Sequence[PolicyConfig],
    seeds: int,
    seed_start: int = 0,
    name: str = "",
    user=None,
    enqueue: bool = True,
) -> Sweep:
    sweep = Sweep.objects.create(
        name=name,
        seeds=seeds,
        seed_start=seed_start,
        created_by=user,
        total_cells=len(scenarios) * len(policies) * seeds,
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
        from workers.dispatch import enqueue as dispatch
        from workers.tasks import run_sweep_task

        dispatch(run_sweep_task, sweep.pk)
    return sweep


def refresh_progress(sweep: Sweep) -> Sweep:
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


def sweep_summary(sweep: Sweep) -> dict:
    rows = (
        SweepCell.objects.filter(sweep=sweep, status="finished")
        .values_list("scenario__name", "policy__name", "score", "metrics")
        .iterator(chunk_size=2000)
    )
    return {"leaderboard": leaderboard(rows)}


def finish_sweep(sweep: Sweep) -> Sweep:
    refresh_progress(sweep)
    sweep.summary = sweep_summary(sweep)
    if sweep.status != SweepStatus.CANCELLED:
        sweep.status = SweepStatus.FINISHED if sweep.done_cells else SweepStatus.FAILED
    sweep.finished_at = timezone.now()
    sweep.save(update_fields=["summary", "status", "finished_at"])
    return sweep


def cancel_sweep(sweep: Sweep) -> bool:
    """Cancel a queued or running sweep; its remaining chunks mark their cells cancelled."""
    return cancel_run(sweep)

"""Run a sweep's cells: each cell gets exactly one episode and one result.

A chunk of cells is played in memory by the engine, then written in one transaction:
its episodes, all their decisions (one bulk INSERT) and the cells' results. A chunk
interrupted by a killed worker writes nothing, and its re-delivered task plays it again
(deterministic), skipping cells another attempt already finished: exactly one result
per cell, at a handful of queries per chunk instead of several per episode.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from negotiation import run_episode
from procurement.models import Episode, EpisodeStatus, Sweep, SweepCell, SweepStatus
from procurement.services import live, throttle
from procurement.services.decision_store import insert_decisions
from procurement.services.episode_runner import build_policy
from procurement.services.episodes import build_episode, queue_for
from procurement.services.sweeps import finish_sweep, refresh_progress

PROGRESS_INTERVAL_S = 0.25  # at most 4 progress messages a second per sweep
OPEN_CELL_STATUSES = ("pending", "running")


@dataclass(frozen=True)
class Chunk:
    queue: str  # "gpu" when the cells' buyer or suppliers use an LLM backend
    cell_ids: list[int]


def start_sweep(sweep_id: int) -> list[Chunk]:
    """Mark the sweep running and return its unfinished cells in chunks, one queue each."""
    Sweep.objects.filter(pk=sweep_id, status=SweepStatus.QUEUED).update(
        status=SweepStatus.RUNNING, started_at=timezone.now()
    )
    sweep = Sweep.objects.prefetch_related("scenarios", "policies").get(pk=sweep_id)
    queues = {
        (s.pk, p.pk): queue_for(s.engine_config(), p)
        for s in sweep.scenarios.all()
        for p in sweep.policies.all()
    }
    by_queue: dict[str, list[int]] = {}
    pending = (
        SweepCell.objects.filter(sweep_id=sweep_id, status__in=OPEN_CELL_STATUSES)
        .order_by("pk")
        .values_list("pk", "scenario_id", "policy_id")
    )
    for pk, scenario_id, policy_id in pending:
        by_queue.setdefault(queues[(scenario_id, policy_id)], []).append(pk)
    size = settings.SWEEP_CHUNK_CELLS
    return [
        Chunk(queue, ids[i : i + size])
        for queue, ids in sorted(by_queue.items())
        for i in range(0, len(ids), size)
    ]


def _is_cancelled(sweep_id: int) -> bool:
    status = Sweep.objects.filter(pk=sweep_id).values_list("status", flat=True).first()
    return status == SweepStatus.CANCELLED


def run_cells(sweep_id: int, cell_ids: list[int]) -> int:
    """Play and store the given cells; returns how many this call completed."""
    if _is_cancelled(sweep_id):
        SweepCell.objects.filter(pk__in=cell_ids, status__in=OPEN_CELL_STATUSES).update(
            status="cancelled"
        )
        return 0
    cells = list(
        SweepCell.objects.filter(pk__in=cell_ids, status__in=OPEN_CELL_STATUSES)
        .select_related("scenario", "policy", "sweep")
        .order_by("pk")
    )
    played = []
    for cell in cells:
        episode = build_episode(
            scenario=cell.scenario, policy=cell.policy, seed=cell.seed, sweep=cell.sweep
        )
        started_at, t0 = timezone.now(), time.perf_counter()
        result = run_episode(
            episode.scenario_snapshot,
            build_policy(episode.policy_snapshot, cell.seed),
            cell.seed,
        )
        wall = time.perf_counter() - t0
        episode.status, episode.score, episode.steps = (
            EpisodeStatus.FINISHED,
            result.score,
            len(result.steps),
        )
        episode.metrics = {**result.metrics, "wall_seconds": round(wall, 6)}
        episode.started_at, episode.finished_at = started_at, timezone.now()
        episode.engine_seconds, episode.attempts = wall, 1
        played.append((cell, episode, result))
    completed = _store(played)
    if completed and throttle.allow(f"sweep-progress-{sweep_id}", PROGRESS_INTERVAL_S):
        live.publish_sweep_progress(refresh_progress(Sweep.objects.get(pk=sweep_id)))
    return completed


@transaction.atomic
def _store(played: list) -> int:
    # Lock the cells; any another attempt already finished are left as they are.
    open_ids = set(
        SweepCell.objects.select_for_update()
        .filter(pk__in=[cell.pk for cell, _, _ in played], status__in=OPEN_CELL_STATUSES)
        .values_list("pk", flat=True)
    )
    played = [p for p in played if p[0].pk in open_ids]
    if not played:
        return 0
    episodes = Episode.objects.bulk_create([episode for _, episode, _ in played])
    insert_decisions(
        (
            (episode.pk, step.to_dict())
            for (_, _, result), episode in zip(played, episodes, strict=True)
            for step in result.steps
        ),
        actor="policy",
    )
    # One UPDATE links every cell to its episode (same sweep, scenario, policy and seed).
    match = Episode.objects.filter(
        sweep_id=OuterRef("sweep_id"),
        scenario_id=OuterRef("scenario_id"),
        policy_id=OuterRef("policy_id"),
        seed=OuterRef("seed"),
    )
    SweepCell.objects.filter(pk__in=[cell.pk for cell, _, _ in played]).update(
        status="finished",
        episode_id=Subquery(match.values("pk")[:1]),
        score=Subquery(match.values("score")[:1]),
        metrics=Subquery(match.values("metrics")[:1]),
    )
    return len(episodes)


def complete_sweep(sweep_id: int) -> Sweep:
    sweep = finish_sweep(Sweep.objects.get(pk=sweep_id))
    live.publish_sweep_progress(sweep)
    return sweep

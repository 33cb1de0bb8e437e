"""Run a sweep's cells: each cell gets exactly one episode and one result.

A chunk of cells is played in memory by the engine, then written in one transaction:
its episodes, all their decisions (one bulk INSERT) and the cells' results. A chunk
interrupted by a killed worker writes nothing, and its re-delivered task plays it again
(deterministic), skipping cells another attempt already finished: exactly one result
per cell, at a handful of queries per chunk instead of several per episode.

One bad cell fails alone: an error while playing or storing it marks that cell failed
with its error, and the rest of the chunk is stored. Chunks are independent tasks (no
chord, whose body a single lost chunk would block forever): whichever chunk leaves no
cell open closes the sweep, once, under a row lock; the reconciler resumes a sweep whose
chunks were lost.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from negotiation import run_episode
from negotiation.interfaces.concurrent import run_episodes_concurrently
from negotiation.llm.shared import LLMSpec, shared_batcher
from procurement.models import Episode, EpisodeStatus, Sweep, SweepCell, SweepStatus
from procurement.selectors.episodes import episode_llm_spec
from procurement.selectors.sweeps import SweepPins, sweep_pins
from procurement.services import live, throttle
from procurement.services.decision_store import insert_decisions
from procurement.services.episode_runner import policy_build
from procurement.services.episodes import episode_build
from procurement.services.faults import describe, is_infrastructure_error
from procurement.services.heartbeat import Heartbeat
from procurement.services.sweeps import (
    OPEN_CELL_STATUSES,
    sweep_close_if_done,
    sweep_progress_refresh,
    sweep_touch,
)

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.25  # at most 4 progress messages a second per sweep
HEARTBEAT_INTERVAL_S = 1.0  # rule cells: at most one heartbeat UPDATE a second


@dataclass(frozen=True)
class Chunk:
    queue: str  # "gpu" when the cells' buyer or suppliers use an LLM backend
    cell_ids: list[int]


def sweep_start(*, sweep_id: int) -> list[Chunk]:
    """Mark the sweep running and return its unfinished cells in chunks, one queue each."""
    Sweep.objects.filter(pk=sweep_id, status=SweepStatus.QUEUED).update(
        status=SweepStatus.RUNNING, started_at=timezone.now()
    )
    sweep_touch(sweep_id=sweep_id)
    queues = sweep_pins(sweep_id).queues()
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


def sweep_cells_run(*, sweep_id: int, cell_ids: list[int]) -> int:
    """Play and store the given cells, then close the sweep if none is left open.

    Returns how many cells this call finished (failed cells are not counted)."""
    if _is_cancelled(sweep_id):
        SweepCell.objects.filter(pk__in=cell_ids, status__in=OPEN_CELL_STATUSES).update(
            status="cancelled"
        )
        sweep_close_if_done(sweep_id=sweep_id)
        return 0
    cells = list(
        SweepCell.objects.filter(pk__in=cell_ids, status__in=OPEN_CELL_STATUSES)
        .select_related("scenario", "policy", "sweep")
        .defer("sweep__pinned")  # read once below, not once per cell
        .order_by("pk")
    )
    pins = sweep_pins(sweep_id)  # cells play the versions pinned at creation
    played: list[tuple[SweepCell, Episode, object]] = []
    failed: dict[int, str] = {}
    rule_cells, llm_groups = _split_by_model(cells, pins)
    last_beat = time.monotonic()
    for cell, episode in rule_cells:
        try:
            played.append(_play(cell, episode))
        except Exception as exc:
            if is_infrastructure_error(exc):
                raise
            failed[cell.pk] = describe(exc)  # this cell alone fails; the chunk goes on
        if time.monotonic() - last_beat >= HEARTBEAT_INTERVAL_S:
            sweep_touch(sweep_id=sweep_id)
            last_beat = time.monotonic()
    for spec, group in llm_groups.items():
        _play_concurrently(sweep_id, spec, group, played, failed)
    completed = _store_or_isolate(played, failed)
    sweep_touch(sweep_id=sweep_id)
    if (completed or failed) and throttle.allow(f"sweep-progress-{sweep_id}", PROGRESS_INTERVAL_S):
        live.publish_sweep_progress(sweep_progress_refresh(sweep=Sweep.objects.get(pk=sweep_id)))
    sweep_close_if_done(sweep_id=sweep_id)
    return completed


def _split_by_model(cells: list[SweepCell], pins: SweepPins):
    """The cells' episodes: rule-only ones, and LLM ones grouped by the model they use."""
    rule: list[tuple[SweepCell, Episode]] = []
    llm: dict[LLMSpec, list[tuple[SweepCell, Episode]]] = {}
    for cell in cells:
        episode = episode_build(
            scenario=cell.scenario,
            policy=cell.policy,
            seed=cell.seed,
            sweep=cell.sweep,
            pinned=pins.for_cell(cell.scenario_id, cell.policy_id),
        )
        spec = episode_llm_spec(episode)
        (rule if spec is None else llm.setdefault(spec, [])).append((cell, episode))
    return rule, llm


def _play(cell: SweepCell, episode: Episode) -> tuple[SweepCell, Episode, object]:
    started_at, t0 = timezone.now(), time.perf_counter()
    result = run_episode(
        episode.scenario_snapshot,
        policy_build(snapshot=episode.policy_snapshot, seed=cell.seed),
        cell.seed,
    )
    return _played(cell, episode, result, started_at, time.perf_counter() - t0)


def _played(cell, episode: Episode, result, started_at, wall: float):
    episode.status, episode.score, episode.steps = (
        EpisodeStatus.FINISHED,
        result.score,
        len(result.steps),
    )
    episode.metrics = {**result.metrics, "wall_seconds": round(wall, 6)}
    episode.started_at, episode.finished_at = started_at, timezone.now()
    episode.engine_seconds, episode.attempts = wall, 1
    return cell, episode, result


def _play_concurrently(sweep_id: int, spec: LLMSpec, group, played: list, failed: dict) -> None:
    """Play LLM cells at once, every round of their model calls (buyers and suppliers)
    in one batch of this process's shared backend for that model."""

    def job(cell: SweepCell, episode: Episode):
        def policy(backend):
            return policy_build(snapshot=episode.policy_snapshot, seed=cell.seed, backend=backend)

        return episode.scenario_snapshot, policy, cell.seed

    started_at, t0 = timezone.now(), time.perf_counter()
    with Heartbeat(lambda: sweep_touch(sweep_id=sweep_id)):
        results = run_episodes_concurrently(
            [job(cell, episode) for cell, episode in group],
            backend=shared_batcher(spec),
            return_exceptions=True,
        )
    wall = time.perf_counter() - t0  # concurrent: each cell took the whole group's time
    for (cell, episode), result in zip(group, results, strict=True):
        if isinstance(result, BaseException):
            if is_infrastructure_error(result):
                raise result
            failed[cell.pk] = describe(result)
        else:
            played.append(_played(cell, episode, result, started_at, wall))


def _store_or_isolate(played: list, failed: dict[int, str]) -> int:
    """Store the chunk in one transaction; if that is refused (the database, or a record
    that is not storable), store cell by cell so that only the refused cells fail."""
    try:
        return _store(played, failed)
    except Exception as exc:
        if is_infrastructure_error(exc):
            raise
        log.warning("chunk refused (%s); storing it cell by cell", describe(exc, 300))
    completed = 0
    for item in played:
        try:
            completed += _store([item], {})
        except Exception as exc:
            if is_infrastructure_error(exc):
                raise
            failed = {**failed, item[0].pk: describe(exc)}
    _store([], failed)
    return completed


@transaction.atomic
def _store(played: list, failed: dict[int, str]) -> int:
    # Lock the cells; any another attempt already closed are left as they are.
    open_ids = set(
        SweepCell.objects.select_for_update()
        .filter(
            pk__in=[cell.pk for cell, _, _ in played] + list(failed), status__in=OPEN_CELL_STATUSES
        )
        .values_list("pk", flat=True)
    )
    for pk, error in failed.items():
        if pk in open_ids:
            SweepCell.objects.filter(pk=pk).update(status="failed", error=error)
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

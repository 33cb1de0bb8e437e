"""Writes for episodes and their decisions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from procurement.models import Episode, EpisodeStatus, PolicyConfig, Scenario
from procurement.services.decision_store import insert_decisions
from procurement.services.run_status import cancel_run


def queue_for(scenario_config: dict[str, Any], policy: PolicyConfig) -> str:
    """LLM work (buyer or suppliers) goes to the gpu queue; rule policies to cpu."""
    return "gpu" if policy.uses_llm or scenario_config.get("supplier_llm") else "cpu"


def build_episode(
    *, scenario: Scenario, policy: PolicyConfig, seed: int, user=None, sweep=None
) -> Episode:
    """An unsaved Episode with snapshots of its scenario and policy."""
    config = scenario.engine_config()
    return Episode(
        scenario=scenario,
        scenario_name=scenario.name,
        scenario_version=scenario.version,
        scenario_snapshot=config,
        policy=policy,
        policy_name=policy.name,
        policy_snapshot=policy.snapshot(),
        seed=seed,
        queue=queue_for(config, policy),
        created_by=user,
        sweep=sweep,
    )


@transaction.atomic
def start_episode(
    *, scenario: Scenario, policy: PolicyConfig, seed: int, user=None, enqueue: bool = True
) -> Episode:
    """Create a queued episode and hand it to a worker once the row is committed."""
    episode = build_episode(scenario=scenario, policy=policy, seed=seed, user=user)
    episode.save()
    if enqueue:
        from workers.dispatch import enqueue as dispatch
        from workers.tasks import run_episode_task

        dispatch(run_episode_task, episode.pk, queue=episode.queue)
    return episode


def append_decisions(
    episode: Episode, records: list[dict[str, Any]], *, actor: str = "policy"
) -> int:
    """Store a batch of step records in one transaction (one COPY / bulk INSERT, the same
    writer as sweeps) and advance the episode's step counter. Returns the rows written."""
    if not records:
        return 0
    with transaction.atomic():
        written = insert_decisions(((episode.pk, r) for r in records), actor=actor)
        Episode.objects.filter(pk=episode.pk).update(steps=records[-1]["step"] + 1)
    episode.steps = records[-1]["step"] + 1
    return written


def mark_running(episode: Episode) -> bool:
    """Claim a queued (or re-delivered running) episode; False when it is already over."""
    # One UPDATE: the claim, the first start time and the attempt count (F(), so two
    # deliveries racing cannot lose an increment).
    claimed = Episode.objects.filter(
        pk=episode.pk, status__in=[EpisodeStatus.QUEUED, EpisodeStatus.RUNNING]
    ).update(
        status=EpisodeStatus.RUNNING,
        started_at=Coalesce("started_at", Value(timezone.now())),
        attempts=F("attempts") + 1,
    )
    if claimed:
        episode.refresh_from_db()
    return bool(claimed)


def finish_episode(
    episode: Episode, *, score: float, metrics: dict[str, Any], engine_seconds: float
) -> Episode:
    episode.status = EpisodeStatus.FINISHED
    episode.score = score
    episode.metrics = metrics
    episode.engine_seconds = engine_seconds
    episode.finished_at = timezone.now()
    episode.error = ""
    episode.save(
        update_fields=["status", "score", "metrics", "engine_seconds", "finished_at", "error"]
    )
    return episode


def fail_episode(episode: Episode, error: str) -> Episode:
    episode.status = EpisodeStatus.FAILED
    episode.error = error[:5000]
    episode.finished_at = timezone.now()
    episode.save(update_fields=["status", "error", "finished_at"])
    return episode


def cancel_episode(episode: Episode) -> bool:
    """Cancel a queued or running episode; the runner stops at its next batch."""
    return cancel_run(episode)


@dataclass(frozen=True)
class ReplayReport:
    episode_id: int
    steps: int
    stored_score: float | None
    replayed_score: float
    matches: bool


def replay_episode(episode: Episode) -> ReplayReport:
    """Re-run the stored actions through a fresh engine and compare the score."""
    from negotiation import ProcurementEnv, load_scenario

    env = ProcurementEnv(load_scenario(episode.scenario_snapshot))
    env.reset(seed=episode.seed)
    actions = episode.decisions.order_by("step").values_list("action", flat=True)
    steps = 0
    for action in actions.iterator(chunk_size=2000):
        env.step(action)
        steps += 1
    replayed = env.score().score
    stored = episode.score
    return ReplayReport(
        episode.pk, steps, stored, replayed, stored is not None and abs(stored - replayed) < 1e-9
    )

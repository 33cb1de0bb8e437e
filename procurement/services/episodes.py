"""Writes for episodes and their decisions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import models, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from negotiation.runner import episode_metrics
from procurement import dispatch
from procurement.errors import Conflict, Forbidden
from procurement.limits import MAX_STEP_DELAY
from procurement.models import Episode, EpisodeStatus, PolicyConfig, Scenario
from procurement.roles import may_cancel_episode
from procurement.run_plan import HUMAN_QUEUE
from procurement.selectors.episodes import Pinned, next_free_seed
from procurement.services.decision_store import insert_decisions
from procurement.services.quotas import episode_quota_check
from procurement.services.run_status import cancel_run
from procurement.worlds import REPLAY_FIELDS, replay_env, replay_step

if TYPE_CHECKING:
    from negotiation import ProcurementEnv


def episode_build(
    *,
    scenario: Scenario,
    policy: PolicyConfig,
    seed: int,
    pinned: Pinned | None = None,
    user=None,
    sweep=None,
) -> Episode:
    """An unsaved Episode that plays ``pinned`` (a sweep's snapshot), or the scenario and
    policy as they are now."""
    pinned = pinned or Pinned.now(scenario, policy)
    return Episode(
        scenario=scenario,
        scenario_name=pinned.scenario_config["name"],
        scenario_version=pinned.scenario_version,
        scenario_snapshot=pinned.scenario_config,
        policy=policy,
        policy_name=pinned.policy_snapshot["name"],
        policy_version=pinned.policy_version,
        policy_snapshot=pinned.policy_snapshot,
        seed=seed,
        queue=pinned.run_plan.queue,
        created_by=user,
        sweep=sweep,
    )


@transaction.atomic
def episode_create(
    *,
    scenario: Scenario,
    policy: PolicyConfig,
    seed: int | None = None,
    step_delay: float = 0.0,
    user=None,
    enqueue: bool = True,
) -> Episode:
    """Create a queued episode and hand it to a worker once the row is committed.

    ``seed`` None takes the next free one; ``step_delay`` seconds between decisions pace
    a live episode for people watching (0: engine speed; see episode_runner: no worker
    waits through the pause). An episode that uses a language model plays at the model's
    pace (its step_delay is 0): a paused run's continuation would ask the model again for
    every stored supplier turn, and the buyer's LLM counts live in one task. A human seat
    is sealed: the server draws its seed (a ``seed`` given for one is refused with a
    ValidationError) and its world under the server's key (procurement.worlds)."""
    if not 0 <= step_delay <= MAX_STEP_DELAY:
        raise ValueError(f"step_delay must be between 0 and {MAX_STEP_DELAY} seconds.")
    requested_seed = seed
    if seed is None:
        seed = next_free_seed(scenario=scenario, policy=policy)
    episode = episode_build(scenario=scenario, policy=policy, seed=seed, user=user)
    plan = episode.run_plan
    episode.step_delay = 0.0 if plan.uses_llm else step_delay
    if plan.queue == HUMAN_QUEUE:
        from procurement.services import human_seat

        human_seat.seat_check_allowed(plan=plan)
        human_seat.seat_seal(episode=episode, requested_seed=requested_seed)
        episode_quota_check(user=user, plan=plan)
        episode.save()
        human_seat.seat_open(episode=episode)  # no task: the analyst plays it move by move
        return episode
    episode_quota_check(user=user, plan=plan)
    episode.save()
    if enqueue:
        dispatch.enqueue(dispatch.RUN_EPISODE, episode.pk, queue=episode.queue)
    return episode


class AttemptSuperseded(Exception):
    """A newer attempt claimed the episode (or it was cancelled): this one must stop."""


def _fenced(episode: Episode, attempt: int) -> models.QuerySet:
    """The episode's row, only while ``attempt`` is still the newest claim and it runs."""
    return Episode.objects.filter(pk=episode.pk, attempts=attempt, status=EpisodeStatus.RUNNING)


def episode_decisions_append(
    *, episode: Episode, records: list[dict[str, Any]], attempt: int, actor: str | None = None
) -> int:
    """Store a batch of step records in one transaction (one COPY / bulk INSERT, the same
    writer as sweeps), advance the step counter and the heartbeat. Returns the rows written.

    Fenced: the UPDATE comes first and matches only while this attempt is the newest claim
    of a running episode, so a superseded (or cancelled) attempt writes nothing and learns
    it at once (AttemptSuperseded); its row lock also orders it against a newer claim.
    """
    if not records:
        return 0
    with transaction.atomic():
        steps = records[-1]["step"] + 1
        if not _fenced(episode, attempt).update(steps=steps, heartbeat_at=timezone.now()):
            raise AttemptSuperseded(episode.pk)
        written = insert_decisions(((episode.pk, r) for r in records), actor=actor)
    episode.steps = steps
    return written


def episode_touch(*, episode: Episode, attempt: int) -> bool:
    """Record that ``attempt`` is alive (LLM episodes, between slow decisions)."""
    return bool(_fenced(episode, attempt).update(heartbeat_at=timezone.now()))


def episode_claim(*, episode: Episode) -> int | None:
    """Claim a queued or running episode for a new attempt: its number (the fencing token
    the attempt's writes carry), or None when the episode is already over.

    Every delivery claims (newest wins): a re-delivered or re-dispatched task takes over,
    and the attempt it replaces stops at its next write (see ``episode_decisions_append``). One
    UPDATE: the claim, the first start time, the heartbeat and the attempt count (F(), so
    two deliveries racing cannot lose an increment).
    """
    now = timezone.now()
    claimed = Episode.objects.filter(
        pk=episode.pk, status__in=[EpisodeStatus.QUEUED, EpisodeStatus.RUNNING]
    ).update(
        status=EpisodeStatus.RUNNING,
        started_at=Coalesce("started_at", Value(now)),
        attempts=F("attempts") + 1,
        heartbeat_at=now,
    )
    if not claimed:
        return None
    episode.refresh_from_db()
    return episode.attempts


def episode_finish(
    *,
    episode: Episode,
    attempt: int,
    score: float,
    metrics: dict[str, Any],
    engine_seconds: float,
) -> bool:
    """Running -> finished, for the newest attempt only; False when it was superseded."""
    finished = _fenced(episode, attempt).update(
        status=EpisodeStatus.FINISHED,
        score=score,
        metrics=metrics,
        engine_seconds=engine_seconds,
        finished_at=timezone.now(),
        error="",
    )
    episode.refresh_from_db()
    return bool(finished)


def episode_store_played_step(
    *, episode: Episode, env: ProcurementEnv, payload: dict[str, Any], superseded: str
) -> None:
    """Store the step a person just played on ``env`` (a seat) under the episode's newest
    attempt, and finish the episode with its score when that step ended it. Conflict with
    ``superseded`` when that attempt is no longer the newest (cancelled, handed over)."""
    try:
        episode_decisions_append(episode=episode, records=[payload], attempt=episode.attempts)
    except AttemptSuperseded:
        raise Conflict(superseded) from None
    if env.done:
        score = env.score()
        episode_finish(
            episode=episode,
            attempt=episode.attempts,
            score=score.score,
            metrics=episode_metrics(score.metrics, None),
            engine_seconds=0.0,
        )


def episode_fail(*, episode: Episode, error: str, attempt: int) -> bool:
    """Running -> failed with the error, for the newest attempt only."""
    failed = _fenced(episode, attempt).update(
        status=EpisodeStatus.FAILED, error=error[:5000], finished_at=timezone.now()
    )
    episode.refresh_from_db()
    return bool(failed)


def episode_cancel(*, episode: Episode, user=None) -> Episode:
    """Cancel a queued or running episode; the runner stops at its next batch. ``user``
    (None: an operator's command) must be allowed to steer it (roles.may_cancel_episode).

    Raises Forbidden, or Conflict when the episode is already over."""
    from procurement.services.approvals import approvals_withdraw

    if user is not None and not may_cancel_episode(user, episode):
        raise Forbidden("Analysts cancel only the episodes they started.")
    if not cancel_run(episode):
        raise Conflict(f"Episode is {episode.status}; only queued or running ones cancel.")
    approvals_withdraw(episode=episode)
    return episode


@dataclass(frozen=True)
class ReplayReport:
    episode_id: int
    steps: int
    stored_score: float | None
    replayed_score: float
    matches: bool


def episode_replay(*, episode: Episode) -> ReplayReport:
    """Re-run the stored actions through a fresh engine and compare the score; Conflict
    unless the episode finished.

    It reads what was stored and never runs a model: an LLM buyer's actions are stored,
    and the suppliers a model played answer from the record (their stored responses,
    ``negotiation.suppliers.recorded``), so a replay is engine time, inside the request,
    whoever played. It checks the engine and the record, not the model."""
    if episode.status != EpisodeStatus.FINISHED:
        raise Conflict(f"Episode is {episode.status}; only finished ones replay.")

    env, replies = replay_env(episode)
    records = episode.decisions.order_by("step").values_list(*REPLAY_FIELDS)
    steps = 0
    for record in records.iterator(chunk_size=2000):
        replay_step(env, replies, record)
        steps += 1
    replayed = env.score().score
    stored = episode.score
    return ReplayReport(
        episode.pk, steps, stored, replayed, stored is not None and abs(stored - replayed) < 1e-9
    )

"""The human seat: an analyst plays the buyer of an episode, one move at a time.

No worker waits for the person. A move names the step it plays (the number of decisions
already stored, as the person saw it) and is played exactly once: a resent, doubled or
stale move names a step that is no longer next and is refused (Conflict, with
``next_step``) without playing anything. A move locks the episode's row, replays the stored
actions through a fresh engine (the engine is deterministic, so this rebuilds the exact
world), applies the new action and stores it as the next decision through the same
fenced writer as the runners, then publishes it. An action the engine refuses is
returned with its coded error and the field it concerns, and nothing is stored: a
person's typo costs no step. After ``idle_seconds`` without a move the reconciler hands
the seat to the policy's ``fallback``, which a worker then plays from the stored steps.
"""

from __future__ import annotations

import re
import secrets
from datetime import timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from negotiation import ProcurementEnv
from negotiation.env import SEED_BOUND
from negotiation.policies.base import DecisionMeta
from negotiation.runner import record_step
from procurement.errors import ApplicationError, Conflict, Forbidden
from procurement.models import Episode, EpisodeStatus
from procurement.run_plan import HANDED_OVER, HUMAN_QUEUE, RunPlan
from procurement.services import live
from procurement.services.episodes import episode_store_played_step
from procurement.worlds import episode_env

HUMAN_ACTOR = "human"
TEXTS = ("message", "rationale")  # an action's free text, kept on its decision

# Engine error codes -> the action field a person should fix (messages that name a
# field, "Field 'price' ...", win over this table).
FIELD_OF_CODE = {
    "unknown_supplier": "supplier_id",
    "supplier_inactive": "supplier_id",
    "supplier_rejected": "supplier_id",
    "already_rejected": "supplier_id",
    "category_mismatch": "supplier_id",
    "same_supplier": "hedge_supplier_id",
    "unknown_requirement": "requirement_id",
    "requirement_closed": "requirement_id",
    "critical_deadline": "requirement_id",
    "no_deferrals_left": "requirement_id",
    "deadline_at_horizon": "requirement_id",
    "too_many_prs": "requirement_id",
    "unknown_action_type": "action_type",
}


class RefusedMove(ApplicationError):
    """The engine refused the action (its code, and the field to fix); nothing was stored."""

    def __init__(self, code: str, message: str, field: str | None) -> None:
        super().__init__(message, {"code": code, "message": message, "field": field})


def seat_check_allowed(*, plan: RunPlan) -> None:
    """A human seat replays the world on every move: suppliers must be rules, not models."""
    if plan.suppliers_use_llm:
        message = (
            "The human seat needs rule suppliers: this scenario's suppliers are language "
            "models, whose answers a replay cannot reproduce."
        )
        raise ValidationError({"scenario": [message]})


SEAT_SEED_REFUSED = (
    "A human seat's seed is drawn by the server and shown when the episode ends: leave seed out."
)


def seat_seal(*, episode: Episode, requested_seed: int | None) -> None:
    """Seal a new (unsaved) seat: the server draws its seed, and its world is drawn under
    the server's key (procurement.worlds). A player who chose the seed could open a
    second seat on the same world and probe it there: a requested seed is refused."""
    if requested_seed is not None:
        raise ValidationError({"seed": [SEAT_SEED_REFUSED]})
    episode.seed = secrets.randbelow(SEED_BOUND)
    episode.sealed = True


def seat_open(*, episode: Episode) -> None:
    """A new human episode starts running at once (attempt 1): the seat is open."""
    now = timezone.now()
    Episode.objects.filter(pk=episode.pk).update(
        status=EpisodeStatus.RUNNING, attempts=1, started_at=now, heartbeat_at=now
    )
    episode.refresh_from_db()


def _field_of(code: str, message: str) -> str | None:
    named = re.match(r"Field '([a-z_]+)'", message)
    return named.group(1) if named else FIELD_OF_CODE.get(code)


def _meta(action: Any) -> DecisionMeta:
    """The person's own words travel on the record as a model's do, so the timeline shows
    them beside the supplier's answer."""
    words = action if isinstance(action, dict) else {}
    texts = {k: words.get(k) if isinstance(words.get(k), str) else None for k in TEXTS}
    return DecisionMeta(actor=HUMAN_ACTOR, **texts)


def _rebuild(episode: Episode) -> ProcurementEnv:
    env = episode_env(episode)
    for action in episode.decisions.order_by("step").values_list("action", flat=True):
        env.step(action)
    return env


def seat_play(*, episode_id: int, user, step: int, action: Any) -> dict[str, Any]:
    """Apply the seat holder's action as decision ``step``; returns its stored payload.

    Raises Forbidden (not yours), Conflict (not running, over, handed over, or ``step`` is
    not the next one), another ApplicationError (not a human seat) or RefusedMove (the
    engine's coded error; nothing stored). The row lock (SQLite: the write lock its
    IMMEDIATE transactions take) orders concurrent moves, so of several for one step
    exactly one is played.
    """
    with transaction.atomic():
        episode = Episode.objects.select_for_update().get(pk=episode_id)
        if not episode.run_plan.human_seat:
            raise ApplicationError("This episode is not played by a human.")
        if episode.created_by_id != user.pk:
            raise Forbidden("Only the analyst who started this episode plays its seat.")
        if episode.status != EpisodeStatus.RUNNING:
            raise Conflict(f"The episode is {episode.status}; it takes no more moves.")
        if step != episode.steps:
            raise Conflict(
                f"This move is for step {step}, but the next step is {episode.steps}: "
                "nothing was played. Look at the latest state and move again.",
                {"next_step": episode.steps},
            )
        env = _rebuild(episode)
        if env.done:
            raise Conflict("The episode is over.")
        res, record = record_step(env, action, _meta(action))
        if not record.valid:
            error = record.error or {"code": "invalid", "message": "Invalid action."}
            raise RefusedMove(error["code"], error["message"], _field_of(**error))
        payload = record.to_dict()
        episode_store_played_step(
            episode=episode,
            env=env,
            payload=payload,
            superseded="The seat was handed over or the episode cancelled.",
        )
    stored = live.record_payload(payload)
    live.publish_decisions(episode, [stored])
    if res.done:
        live.publish_episode_status(episode)
    return stored


def idle_seats(now=None) -> list[Episode]:
    """Running human episodes whose holder has been idle longer than allowed."""
    now = now or timezone.now()
    idle = []
    for episode in Episode.objects.filter(queue=HUMAN_QUEUE, status=EpisodeStatus.RUNNING):
        seconds = (episode.policy_snapshot.get("params") or {}).get("idle_seconds", 600)
        if (episode.heartbeat_at or episode.created_at) < now - timedelta(seconds=seconds):
            idle.append(episode)
    return idle


def seat_hand_over(*, episode: Episode) -> bool:
    """Give an idle seat to the fallback policy; True when this call did it (the caller
    then sends the run task to ``episode.queue``)."""
    params = episode.policy_snapshot.get("params") or {}
    fallback = params.get("fallback", "expert")
    now = timezone.now()
    # What the page tells the person (and anyone watching): who took over, when, why.
    handed_over = {
        "to": fallback,
        "at": now.isoformat(),
        "idle_seconds": params.get("idle_seconds", 600),
        "step": episode.steps,
    }
    snapshot = {
        "name": fallback,
        "policy": fallback,
        "params": {},
        "backend": "",
        "model": "",
        HANDED_OVER: handed_over,
    }
    queue = RunPlan.of(scenario_config=episode.scenario_snapshot, policy_snapshot=snapshot).queue
    changed = Episode.objects.filter(
        pk=episode.pk, queue=HUMAN_QUEUE, status=EpisodeStatus.RUNNING
    ).update(
        policy_snapshot=snapshot,
        policy_name=f"{episode.policy_name} then {fallback}",
        queue=queue,
        heartbeat_at=now,
    )
    episode.refresh_from_db()
    if changed:
        live.publish_episode_status(episode)
    return bool(changed)

"""The supplier seat: an analyst plays one supplier against any buyer policy, rule or LLM.

The buyer runs on its worker lane as in any episode (the rule lane, or the model lane
for an LLM buyer). When it makes the seat's supplier an offer, the run stops there
(``AwaitingSupplier``): the runner stores what the person is asked (``turn``: the offer,
the buyer's words, the supplier's own private facts, and the buyer's action and record,
which stay on the server) and frees its worker. The person's answer names the step it
answers and is played exactly once: under the episode's row lock the stored steps are
replayed through a fresh engine (deterministic, the person's earlier answers included),
the buyer's stored action is applied with this answer, and the step is stored through
the same fenced writer as the runners; then the run goes on from the stored steps. An
answer that breaks a price rule (below the floor, above the last counter) is refused
with the field to fix, and nothing is stored.

Timeout: an offer unanswered for ``idle_seconds`` passes the seat to the scenario's rule
supplier for the rest of the episode (the reconciler's pass); its answers are recorded
as ``timeout:rule`` and the page says when and why.

The seat is sealed like a buyer's: its world is drawn under the server's key
(procurement.worlds), so the seed, even one the analyst chose, rebuilds nothing of the
buyer's side. That key also draws sealed evaluations' worlds, so a chosen seed inside a
sealed evaluation's range on that scenario is refused: no one rehearses a held-out world.

While it runs, the episode's full record (budget, the buyer's reasons,
the other suppliers) is closed to the seat holder (``seat_hides_record``); it opens when
the episode ends.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from negotiation.env import SEED_BOUND
from negotiation.policies.base import DecisionMeta
from negotiation.runner import record_step
from negotiation.suppliers.seat import (
    HUMAN_ACTOR,
    AwaitingSupplier,
    SeatAnswer,
    answer_problem,
)
from procurement import dispatch
from procurement.errors import ApplicationError, Conflict, Forbidden
from procurement.models import Episode, EpisodeStatus, PolicyConfig, Scenario
from procurement.run_plan import HUMAN_POLICY
from procurement.selectors.evaluations import sealed_evaluation_holding
from procurement.services import live
from procurement.services.episodes import (
    episode_build,
    episode_store_played_step,
)
from procurement.services.held_out import held_out_lock
from procurement.services.quotas import episode_quota_check
from procurement.worlds import episode_env

IDLE_SECONDS = 600  # an offer waits this long for the person by default
IDLE_LIMITS = (30, 3600)
TURN = "turn"
HANDED_OVER = "handed_over"


class RefusedAnswer(ApplicationError):
    """The answer breaks a price rule (the field to fix, and why); nothing was stored."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, {"code": "refused_answer", "message": message, "field": field})


SEAT_CLOSED = (
    "You play a supplier of this episode: its full record (the buyer's side) opens when "
    "it ends. Your seat's page shows your side."
)


def _check_seed_not_held_out(scenario: str, seed: int) -> None:
    """A chosen seed may not open a sealed evaluation's world: the seat's world is drawn
    under the same key, so the person would rehearse (and, once it ends, read) a
    held-out world. ValidationError naming the evaluation's range."""
    held = sealed_evaluation_holding(scenario=scenario, seed=seed)
    if held is not None:
        end = held.seed_start + held.seeds - 1
        message = (
            f"Seed {seed} is held out: sealed evaluation #{held.pk} plays '{scenario}' on "
            f"seeds {held.seed_start}-{end}. Choose another seed, or leave it out."
        )
        raise ValidationError({"seed": [message]})


def seat_hides_record(episode: Episode, user) -> bool:
    """Whether ``user`` plays this episode's supplier seat while it runs: then its full
    record (the buyer's budget, reasons and state, the other suppliers) is not theirs to
    read; the seat page shows them their side only."""
    return (
        bool(episode.supplier_seat)
        and not episode.is_terminal
        and episode.created_by_id == getattr(user, "pk", None)
    )


def _seated_supplier(episode: Episode, supplier_id: str | None) -> str:
    """The supplier the person plays: ``supplier_id``, or the first supplier of the world
    (the bilateral seller); ValidationError for one the world does not have."""
    env = episode_env(episode)
    known = [s.id for s in env.world.suppliers]
    if supplier_id in (None, ""):
        return known[0]
    if supplier_id not in known:
        message = f"This world has no supplier '{supplier_id}'; choose one of {', '.join(known)}."
        raise ValidationError({"supplier_id": [message]})
    return supplier_id


@transaction.atomic
def supplier_seat_start(
    *,
    scenario: Scenario,
    policy: PolicyConfig,
    user,
    supplier_id: str | None = None,
    seed: int | None = None,
    idle_seconds: int = IDLE_SECONDS,
) -> Episode:
    """A new episode in which ``user`` plays ``supplier_id`` against ``policy`` (the buyer),
    sent to the buyer's lane. ValidationError (nothing stored) for a human buyer, language
    model suppliers (a replay cannot reproduce them), an unknown supplier, or an idle
    time out of range."""
    if policy.policy == HUMAN_POLICY:
        raise ValidationError({"policy": ["The buyer must be a policy, not a person's seat."]})
    if not IDLE_LIMITS[0] <= idle_seconds <= IDLE_LIMITS[1]:
        lo, hi = IDLE_LIMITS
        raise ValidationError({"idle_seconds": [f"Between {lo} and {hi} seconds."]})
    if seed is not None and not 0 <= seed < SEED_BOUND:
        raise ValidationError({"seed": [f"A seed is between 0 and {SEED_BOUND - 1}."]})
    if seed is not None:
        held_out_lock()  # to commit: a sealed evaluation created meanwhile waits, then sees it
        _check_seed_not_held_out(scenario.name, seed)
    episode = episode_build(
        scenario=scenario,
        policy=policy,
        seed=secrets.randbelow(SEED_BOUND) if seed is None else seed,
        user=user,
    )
    plan = episode.run_plan
    if plan.suppliers_use_llm:
        message = (
            "The supplier seat needs rule suppliers: this scenario's suppliers are language "
            "models, whose answers a replay cannot reproduce."
        )
        raise ValidationError({"scenario": [message]})
    episode.sealed = True  # drawn under the server's key: the seed rebuilds nothing
    seated = _seated_supplier(episode, supplier_id)
    episode.supplier_seat = {"supplier_id": seated, "idle_seconds": idle_seconds}
    episode_quota_check(user=user, plan=plan)
    episode.save()
    dispatch.enqueue(dispatch.RUN_EPISODE, episode.pk, queue=episode.queue)
    return episode


def supplier_seat_wait(*, episode: Episode, attempt: int, waiting: AwaitingSupplier) -> None:
    """The run stopped at an offer to the seat (runner): store what the person is asked,
    once per step (a resumed run meeting the same offer keeps its first asking time)."""
    with transaction.atomic():
        row = Episode.objects.select_for_update().get(pk=episode.pk)
        if row.attempts != attempt or row.status != EpisodeStatus.RUNNING:
            return
        seat = dict(row.supplier_seat or {})
        if (seat.get(TURN) or {}).get("step") == waiting.turn["step"]:
            return
        decision = waiting.decision or DecisionMeta()
        seat[TURN] = {
            **waiting.turn,
            "action": waiting.action,
            "decision": decision.to_dict(),
            "asked_at": timezone.now().isoformat(),
        }
        Episode.objects.filter(pk=row.pk).update(supplier_seat=seat, heartbeat_at=timezone.now())
    episode.supplier_seat = seat
    live.publish_episode_status(episode)  # whoever watches it may read on


@dataclass(frozen=True)
class Answer:
    step: int
    decision: str
    price: float | None = None
    message: str = ""


def supplier_seat_answer(*, episode_id: int, user, answer: Answer) -> dict[str, Any]:
    """Play the person's answer to the offer waiting at ``answer.step``; returns the stored
    step as the seat page shows it. Forbidden (not their seat), Conflict (over, handed
    over, or nothing waits at that step: ``next_step`` says what does), RefusedAnswer (a
    price rule; nothing stored)."""
    with transaction.atomic():
        episode = Episode.objects.select_for_update().get(pk=episode_id)
        seat = episode.supplier_seat
        if not seat:
            raise ApplicationError("No one plays a supplier of this episode.")
        if episode.created_by_id != user.pk:
            raise Forbidden("Only the analyst who took this supplier seat answers for it.")
        if episode.status != EpisodeStatus.RUNNING:
            raise Conflict(f"The episode is {episode.status}; it takes no more answers.")
        if seat.get(HANDED_OVER):
            raise Conflict("The seat passed to the rule supplier after an idle wait.")
        turn = seat.get(TURN)
        if turn is None or turn["step"] != answer.step:
            waiting = None if turn is None else turn["step"]
            raise Conflict(
                f"No offer waits for an answer at step {answer.step}: nothing was played. "
                "Look at the latest state and answer again.",
                {"next_step": waiting},
            )
        proposed = SeatAnswer(answer.decision, answer.price, answer.message)
        problem = answer_problem(turn, proposed)
        if problem is not None:
            raise RefusedAnswer(*problem)
        env = episode_env(episode, seat_answers={answer.step: proposed})
        for action in episode.decisions.order_by("step").values_list("action", flat=True):
            env.step(action)
        res, record = record_step(env, turn["action"], DecisionMeta(**turn["decision"]))
        if record.step != answer.step or record.supplier_actor != HUMAN_ACTOR:
            raise Conflict("The stored record no longer leads to this offer; nothing was played.")
        payload = record.to_dict()
        episode_store_played_step(
            episode=episode,
            env=env,
            payload=payload,
            superseded="The episode was cancelled or taken over.",
        )
        facts = dict(turn["private"])
        if proposed.decision == "counter":
            facts["last_counter"] = proposed.price
        rest = {**{k: v for k, v in seat.items() if k != TURN}, "facts": facts}
        Episode.objects.filter(pk=episode.pk).update(supplier_seat=rest)
        episode.supplier_seat = rest
    live.publish_decisions(episode, [live.record_payload(payload)])
    if res.done:
        live.publish_episode_status(episode)
    else:
        dispatch.enqueue(dispatch.RUN_EPISODE, episode.pk, queue=episode.queue)
    return {"step": record.step, "response": record.response, "done": res.done}


def idle_turns(now=None) -> list[Episode]:
    """Running supplier-seat episodes whose waiting offer is older than the seat allows."""
    now = now or timezone.now()
    idle = []
    waiting = Episode.objects.filter(status=EpisodeStatus.RUNNING, supplier_seat__has_key=TURN)
    for episode in waiting:
        seat = episode.supplier_seat
        asked = datetime.fromisoformat(seat[TURN]["asked_at"])
        if asked < now - timedelta(seconds=seat.get("idle_seconds", IDLE_SECONDS)):
            idle.append(episode)
    return idle


def supplier_seat_hand_over(*, episode: Episode) -> bool:
    """Pass an idle seat to the rule supplier from its waiting offer on; True when this
    call did it (the caller then sends the run on to ``episode.queue``)."""
    with transaction.atomic():
        row = Episode.objects.select_for_update().get(pk=episode.pk)
        seat = dict(row.supplier_seat or {})
        turn = seat.pop(TURN, None)
        if row.status != EpisodeStatus.RUNNING or turn is None or seat.get(HANDED_OVER):
            return False
        seat[HANDED_OVER] = {
            "to": "rule",
            "at": timezone.now().isoformat(),
            "idle_seconds": seat.get("idle_seconds", IDLE_SECONDS),
            "step": turn["step"],
        }
        Episode.objects.filter(pk=row.pk).update(supplier_seat=seat, heartbeat_at=timezone.now())
    episode.supplier_seat = seat
    live.publish_episode_status(episode)  # whoever watches it may read on
    return True

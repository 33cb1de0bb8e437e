"""The supplier seat: a person plays one supplier of an episode against any buyer.

Nothing here decides. The seat answers a buyer's offer to its supplier with what the
person answered at that step (``answers``, keyed by the step the offer was made in: a
replay gives every stored answer back, so the engine rebuilds the same world). An offer
it holds no answer for stops the step: ``AwaitingSupplier`` carries what the person is
asked (the offer, the buyer's words, the supplier's own private facts), and the caller
stores it and frees its worker; the step is played again once the person has answered.
From the step ``handed_over_at`` on (the person was idle too long) the persona's own
policy answers, recorded as ``TIMEOUT_ACTOR``.

What reaches the buyer: the person's message exactly as typed. The guard's message rules
(never restate a brief, never name a figure at or below the floor) protect a brief from
a model that was told to keep it; a person's private facts are theirs to reveal, so
their words are not screened. The price rules still hold (never below the floor, never
above the last counter): the service refuses such an answer before it is played, so the
guard never has to repair one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .brief import style_sentence
from .guard import ProposedDecision, band_floor
from .rule import RULE_POLICY, SupplierContext, SupplierPolicy

HUMAN_ACTOR = "human"
TIMEOUT_ACTOR = f"timeout:{RULE_POLICY.name}"  # the persona answered for an idle person
SEAT_ACTORS = frozenset({HUMAN_ACTOR, TIMEOUT_ACTOR})
DECISIONS = ("accept", "counter", "walk_away")


@dataclass(frozen=True, slots=True)
class SeatAnswer:
    """One answer of the person: accept (at the offer), counter at ``price``, or walk away."""

    decision: str
    price: float | None = None
    message: str = ""

    @classmethod
    def from_response(cls, response: Mapping[str, Any]) -> SeatAnswer:
        """The answer a stored step's ``response`` (the engine's info) records."""
        return cls(response["response"], response.get("price"), response.get("message") or "")


class AwaitingSupplier(Exception):
    """The buyer's offer waits for the person. ``turn`` is what they are asked; the
    runner adds the buyer's ``action`` and its ``decision`` record to store with it."""

    def __init__(self, turn: dict[str, Any]) -> None:
        super().__init__(f"step {turn['step']} waits for the supplier seat")
        self.turn = turn
        self.action: Any = None
        self.decision: Any = None


def answer_problem(turn: Mapping[str, Any], answer: SeatAnswer) -> tuple[str, str] | None:
    """(field, why) when ``answer`` breaks a hard price rule for ``turn``, else None: the
    same rules the guard would repair, said to the person instead."""
    facts = turn["private"]
    offer = turn["offer"]
    if answer.decision not in DECISIONS:
        return "decision", f"Answer one of {', '.join(DECISIONS)}."
    if answer.decision == "accept" and offer < facts["floor"]:
        return "decision", f"The offer {offer:,.2f} is below your floor {facts['floor']:,.2f}."
    if answer.decision != "counter":
        return None
    price = answer.price
    if price is None or not math.isfinite(price) or price <= 0:
        return "price", "A counter needs a unit price above zero."
    if round(price, 2) != price:
        return "price", "Give the price in cents at most (two decimals)."
    if price < facts["lowest_counter"]:
        return "price", f"The lowest counter you may make is {facts['lowest_counter']:,.2f}."
    last = facts.get("last_counter")
    if last is not None and price > last:
        return "price", f"A counter may not go above your last one, {last:,.2f}."
    if price <= offer:
        return "price", f"{price:,.2f} is at or below the offer {offer:,.2f}: accept it instead."
    return None


def seat_turn(ctx: SupplierContext, step: int) -> dict[str, Any]:
    """What the person is asked at ``step``: the buyer's offer and words, and the facts of
    their own (the supplier's) that the rule persona would decide on."""
    th, sh, req = ctx.thread, ctx.supplier, ctx.requirement
    public = ctx.public_thread
    category = req.category if req is not None else ""
    return {
        "step": step,
        "week": ctx.week,
        "supplier_id": public.supplier_id if public is not None else "",
        "requirement_id": req.id if req is not None else "",
        "item": req.name if req is not None else "",
        "quantity": req.quantity if req is not None else None,
        "round": ctx.round,
        "offer": ctx.offer,
        "buyer_message": ctx.buyer_message,
        "private": {
            "style": style_sentence(ctx.persona),
            "cost": round(th.cost, 2),
            "floor": round(th.reservation, 2),
            "lowest_counter": band_floor(th.reservation),
            "opening": round(th.anchor, 2),
            "last_counter": th.last_counter,
            "capacity": (sh.true_capacity or {}).get(category),
            "stress": round(sh.stress or 0.0, 2),
        },
    }


class SupplierSeat(SupplierPolicy):
    """The person's policy for supplier ``supplier_id``; one per engine (see env)."""

    name = HUMAN_ACTOR

    def __init__(
        self,
        supplier_id: str,
        answers: Mapping[int, SeatAnswer] | None = None,
        *,
        handed_over_at: int | None = None,
    ) -> None:
        self.supplier_id = supplier_id
        self.answers = dict(answers or {})
        self.handed_over_at = handed_over_at
        # persona -> the policy that answers when the person does not (set by the env)
        self.personas: Mapping[str, SupplierPolicy] = {}

    def respond(self, ctx: SupplierContext) -> ProposedDecision:
        answer = self.answers.get(ctx.step)
        if answer is not None:
            price = ctx.offer if answer.decision == "accept" else answer.price
            return ProposedDecision(
                answer.decision, price, answer.message, actor=HUMAN_ACTOR, screen=False
            )
        if self.handed_over_at is not None and ctx.step >= self.handed_over_at:
            decision = self.personas.get(ctx.persona, RULE_POLICY).respond(ctx)
            decision.actor = TIMEOUT_ACTOR
            return decision
        raise AwaitingSupplier(seat_turn(ctx, ctx.step))

"""Supplier personas and the supplier decision interface.

A supplier policy only *proposes* (ProposedDecision); the environment passes every
proposal through HardRuleGuard before anything becomes public. An LLM supplier later
implements the same `SupplierPolicy.respond` interface.

Concession (concession.py) mixes Faratin, Sierra & Jennings (1998) time-dependent tactics
(beta < 1 Boulware: hardball concedes late; beta > 1 Conceder: cooperative, distressed) with
relative and averaged tit-for-tat, which answer the buyer's own concessions; a buyer who
stops moving meets a frozen ask, a hardened supplier or a walk-out, and the supplier's own
quarter end or surplus stock pushes its floor toward the reservation. The floor is the
reservation plus a hidden margin (>= the guard band), so a counter never equals it.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass

from ..world.draws import WeightedPool
from ..world.entities import Requirement, SupplierHidden, Thread, ThreadHidden
from .concession import next_ask, record
from .guard import ProposedDecision

# Hidden parameter ranges per persona (uniform draws; integers for patience, tft_window and
# stall_rounds). See README "Persona parameters" and concession.py for what they do.
PERSONA_PARAMS: dict[str, dict[str, tuple[float, float] | float]] = {
    "cooperative": {
        "beta": (1.5, 3.0),
        "patience": (8, 12),
        "insult": 0.35,
        "insult_walk_prob": 0.3,
        "cost_ratio": (0.72, 0.82),
        "margin": (0.04, 0.08),
        "floor_margin": (0.03, 0.07),
        "list_factor": (1.10, 1.25),
        "reliability": (0.9, 0.98),
        "rated_bias": (-0.03, 0.03),
        "capacity_claim": (0.95, 1.0),
        "dark_prob": 0.0,
        "stress": (0.1, 0.3),
        "time_weight": (0.45, 0.7),
        "tft_window": (1, 2),
        "reciprocity": (0.9, 1.3),
        "stall_rounds": (3, 4),
        "stall_walk_prob": 0.1,
        "quarter_pressure": (0.2, 0.5),
        "overstock": (0.0, 0.15),
    },
    "hardball": {
        "beta": (0.15, 0.35),
        "patience": (6, 10),
        "insult": 0.2,
        "insult_walk_prob": 0.8,
        "cost_ratio": (0.70, 0.80),
        "margin": (0.04, 0.08),
        "floor_margin": (0.02, 0.06),
        "list_factor": (1.25, 1.45),
        "reliability": (0.9, 0.97),
        "rated_bias": (-0.03, 0.03),
        "capacity_claim": (0.95, 1.0),
        "dark_prob": 0.0,
        "stress": (0.05, 0.2),
        "time_weight": (0.5, 0.8),
        "tft_window": (2, 3),
        "reciprocity": (0.4, 0.8),
        "stall_rounds": (2, 3),
        "stall_walk_prob": 0.5,
        "quarter_pressure": (0.0, 0.3),
        "overstock": (0.0, 0.05),
    },
    "deceptive": {
        "beta": (0.4, 0.9),
        "patience": (6, 10),
        "insult": 0.28,
        "insult_walk_prob": 0.5,
        "cost_ratio": (0.68, 0.80),
        "margin": (0.03, 0.07),
        "floor_margin": (0.02, 0.06),
        "list_factor": (1.2, 1.4),
        "reliability": (0.55, 0.75),
        "rated_bias": (0.12, 0.25),  # scaled by deception level
        "capacity_claim": (1.3, 1.8),  # claimed / true capacity, scaled by deception level
        "dark_prob": 0.0,
        "stress": (0.2, 0.4),
        "time_weight": (0.4, 0.7),
        "tft_window": (1, 3),
        "reciprocity": (0.6, 1.0),
        "stall_rounds": (2, 3),
        "stall_walk_prob": 0.3,
        "quarter_pressure": (0.2, 0.6),
        "overstock": (0.0, 0.1),
    },
    "distressed": {
        "beta": (2.0, 4.0),
        "patience": (4, 7),
        "insult": 0.45,
        "insult_walk_prob": 0.25,
        "cost_ratio": (0.62, 0.72),
        "margin": (0.01, 0.04),
        "floor_margin": (0.02, 0.04),
        "list_factor": (1.05, 1.2),
        "reliability": (0.72, 0.88),
        "rated_bias": (-0.05, 0.05),
        "capacity_claim": (1.0, 1.1),
        "dark_prob": 0.05,
        "stress": (0.7, 0.95),
        "time_weight": (0.3, 0.6),
        "tft_window": (1, 2),
        "reciprocity": (1.1, 1.6),
        "stall_rounds": (3, 5),
        "stall_walk_prob": 0.05,
        "quarter_pressure": (0.5, 0.9),
        "overstock": (0.2, 0.5),
    },
}

_TEMPLATES: dict[str, dict[str, tuple[str, ...]]] = {
    "cooperative": {
        "accept": (
            "That works for us. Deal.",
            "Happy to confirm at your price.",
            "Agreed, thank you.",
        ),
        "counter": (
            "We can come down to {price} per unit.",
            "Let's meet at {price}; we value the relationship.",
            "Our best at the moment is {price}.",
        ),
        "walk_away": ("We can't make this work, sorry.", "We'll have to step back from this one."),
        "insult": ("That is far from workable for us.",),
    },
    "hardball": {
        "accept": ("Fine. Agreed.", "Accepted."),
        "counter": (
            "Our price is {price}. It reflects the quality.",
            "{price}. That's where we are.",
            "We don't discount much: {price}.",
        ),
        "walk_away": ("We're done here.", "No deal."),
        "insult": ("That offer is not serious.",),
    },
    "deceptive": {
        "accept": (
            "Agreed, but only because we value you.",
            "Deal, though another buyer wanted this lot.",
        ),
        "counter": (
            "Another buyer offered more; we can do {price} if you sign this week.",
            "Stock is nearly gone. {price} is our absolute floor.",
            "We can ship immediately at {price}; capacity is very tight.",
        ),
        "walk_away": (
            "We've sold the allocation elsewhere.",
            "Other customers are waiting; goodbye.",
        ),
        "insult": ("Others pay far more, you know.",),
    },
    "distressed": {
        "accept": ("Yes, agreed, thank you!", "Deal. We can start right away."),
        "counter": (
            "Could you do {price}? We need to close quickly.",
            "We can go to {price} if you commit soon.",
            "{price} per unit, and we can be flexible on terms.",
        ),
        "walk_away": ("We can't go that low, sorry.",),
        "insult": ("That would not cover our costs.",),
    },
}


# Messages come from ONE shared pool per response kind, drawn with persona-dependent
# weights (3 for the persona's own phrasing, 1 for everyone else's): the wording hints at
# a persona but never identifies it, like the reputation notes.
_OWN_WEIGHT, _OTHER_WEIGHT = 3.0, 1.0
# kind -> persona -> the pool with that persona's weights (cumulative weights summed once).
_POOL: dict[str, dict[str, WeightedPool[str]]] = {}
for _kind in ("accept", "counter", "walk_away", "insult"):
    _texts = [(p, t) for p, kinds in _TEMPLATES.items() for t in kinds[_kind]]
    _POOL[_kind] = {
        persona: WeightedPool(
            [t for _, t in _texts],
            [_OWN_WEIGHT if p == persona else _OTHER_WEIGHT for p, _ in _texts],
        )
        for persona in _TEMPLATES
    }


def pick_message(rng: random.Random, kind: str, persona: str) -> str:
    return _POOL[kind][persona].pick(rng)


@dataclass(slots=True)
class SupplierContext:
    """Everything a supplier policy may use to decide one response (hidden state included)."""

    persona: str
    offer: float
    round: int  # buyer offers in this thread so far, including this one
    thread: ThreadHidden
    supplier: SupplierHidden
    week: int
    buyer_message: str
    rng: random.Random
    # Public context an LLM supplier words its reply with (rule personas ignore it).
    requirement: Requirement | None = None
    public_thread: Thread | None = None
    step: int = -1  # the buyer's step this offer came in (a supplier seat keys on it)


class SupplierPolicy(ABC):
    """Interface: propose a decision; the guard clamps/redacts it afterwards."""

    name = "base"

    @abstractmethod
    def respond(self, ctx: SupplierContext) -> ProposedDecision: ...


class RulePersonaPolicy(SupplierPolicy):
    name = "rule"

    def respond(self, ctx: SupplierContext) -> ProposedDecision:
        th, sh, o, k, rng = ctx.thread, ctx.supplier, ctx.offer, ctx.round, ctx.rng
        persona = ctx.persona
        if o < th.reservation * (1.0 - sh.insult):
            # A lowball far below reservation: may end the thread; two strikes always do.
            # It is no offer to reciprocate, so tit-for-tat does not remember it.
            th.strikes += 1
            if th.strikes >= 2 or rng.random() < sh.insult_walk_prob:
                return ProposedDecision("walk_away", None, pick_message(rng, "walk_away", persona))
            price = th.last_counter if th.last_counter is not None else th.anchor
            return ProposedDecision(
                "counter", price, pick_message(rng, "insult", persona) + " {price}."
            )
        ask = next_ask(th, sh, o, k, ctx.week)
        record(th, o, ask)
        if ask.stalls == sh.stall_rounds and not th.hardened:
            # The buyer has stopped moving: walk, or harden for the rest of the thread.
            if rng.random() < sh.stall_walk_prob:
                return ProposedDecision("walk_away", None, pick_message(rng, "walk_away", persona))
            th.hardened = True
        if o >= ask.price:
            return ProposedDecision("accept", o, pick_message(rng, "accept", persona))
        if k > th.patience:
            # Patience exhausted: its ask sits at its floor and this offer is below it.
            return ProposedDecision("walk_away", None, pick_message(rng, "walk_away", persona))
        return ProposedDecision("counter", ask.price, pick_message(rng, "counter", persona))


RULE_POLICY = RulePersonaPolicy()

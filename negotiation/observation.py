"""Observation: an immutable value describing the public state after one step.

It holds tuples of immutable records (records.py) and read-only mappings, never the
engine's entities, so it stays true to its own step forever (keep as many as a replay
buffer likes), and nothing done to it can reach or change the world. Building one costs
a few microseconds: only the entities a step changed are frozen again; the rest of the
records are shared with the previous observation. Hidden state is not reachable from here.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, NamedTuple

from .world.records import (
    ContractRecord,
    Event,
    FrozenDict,
    PurchaseRequisitionRecord,
    RequirementRecord,
    SupplierRecord,
    ThreadRecord,
)

if TYPE_CHECKING:
    from .world.state import World

EVENTS_IN_OBS = 25
# Distinguishes episodes (and environments) for policies that cache per episode.
_episode_keys = itertools.count(1)


def next_episode_key() -> int:
    return next(_episode_keys)


class Observation(NamedTuple):
    step: int
    week: int
    weeks: int
    actions_per_week: int
    actions_left_this_week: int
    escalations_left: int
    budget_total: float
    budget_committed: float
    budget_remaining: float
    requirements: tuple[RequirementRecord, ...]
    suppliers: tuple[SupplierRecord, ...]
    threads: FrozenDict  # (supplier_id, requirement_id) -> ThreadRecord
    contracts: tuple[ContractRecord, ...]
    purchase_requisitions: tuple[PurchaseRequisitionRecord, ...]
    market_index: FrozenDict  # category -> index
    events: tuple[Event, ...]  # the last EVENTS_IN_OBS events
    last_action: FrozenDict  # {"valid": bool, "error": {code, message} | None}
    done: bool
    max_rounds: int | None
    seller_cost: float | None  # bilateral: the seller's unit cost, a public term of the game
    pr_threshold: float
    pr_lead_weeks: int
    pr_guardrail: float
    quote_validity_weeks: int
    max_deferrals: int
    holding_cost_rate: float  # a deferral costs this x ceiling x quantity
    # how far a management call moves a standing counter toward the floor: each call
    # draws a hidden fraction in this published range (actions.escalation_fraction)
    escalation_range: tuple[float, float]
    seed: int | None  # None in a sealed world: its player is not told the seed
    episode_key: int  # unique per reset in this process; not part of to_dict()

    # --- convenience accessors for policies ------------------------------------------
    def requirement(self, rid: str) -> RequirementRecord | None:
        return next((r for r in self.requirements if r.id == rid), None)

    def supplier(self, sid: str) -> SupplierRecord | None:
        return next((s for s in self.suppliers if s.id == sid), None)

    def thread(self, sid: str, rid: str) -> ThreadRecord | None:
        return self.threads.get((sid, rid))

    def to_dict(self) -> dict[str, Any]:
        market = self.market_index
        error = self.last_action.get("error")
        return {
            "step": self.step,
            "week": self.week,
            "weeks": self.weeks,
            "actions_per_week": self.actions_per_week,
            "actions_left_this_week": self.actions_left_this_week,
            "escalations_left": self.escalations_left,
            "budget": {
                "total": round(self.budget_total, 2),
                "committed": round(self.budget_committed, 2),
                "remaining": round(self.budget_remaining, 2),
            },
            "requirements": [r.to_dict() for r in self.requirements],
            "suppliers": [s.to_dict() for s in self.suppliers],
            "threads": [t.to_dict() for t in self.threads.values()],
            "contracts": [c.to_dict() for c in self.contracts],
            "purchase_requisitions": [p.to_dict() for p in self.purchase_requisitions],
            "market": {
                "index": round(sum(market.values()) / max(1, len(market)), 4),
                "by_category": {k: round(v, 4) for k, v in market.items()},
            },
            "events": [e.to_dict() for e in self.events],
            "last_action": {"valid": self.last_action["valid"], "error": error and dict(error)},
            "rules": {
                "pr_threshold": self.pr_threshold,
                "pr_lead_weeks": self.pr_lead_weeks,
                "pr_guardrail": self.pr_guardrail,
                "quote_validity_weeks": self.quote_validity_weeks,
                "max_deferrals": self.max_deferrals,
                "holding_cost_rate": self.holding_cost_rate,
                "escalation_fraction_range": list(self.escalation_range),
                "max_rounds": self.max_rounds,
                "seller_unit_cost": self.seller_cost,
            },
            "done": self.done,
        }


def observe(world: World, *, done: bool, last_action: FrozenDict, episode_key: int) -> Observation:
    """The current public state of ``world`` as an Observation (see the module docstring);
    the episode loop adds whether it is over, the last action's validity and its key."""
    cfg = world.cfg
    return Observation(
        world.steps_taken,
        world.week,
        cfg.weeks,
        cfg.actions_per_week,
        0 if done else cfg.actions_per_week - world.slot,
        world.escalations_left,
        world.budget_total,
        world.budget_committed,
        world.budget_total - world.budget_committed,
        tuple([r._snap or r.snapshot() for r in world.requirements]),
        tuple([s._snap or s.snapshot() for s in world.suppliers]),
        FrozenDict({k: t._snap or t.snapshot() for k, t in world.threads.items()}),
        tuple([c._snap or c.snapshot() for c in world.contracts]),
        tuple([p._snap or p.snapshot() for p in world.prs]),
        FrozenDict(world.market.index),
        tuple(world.events[-EVENTS_IN_OBS:]),
        last_action,  # already read-only (env.step builds it)
        done,
        world.max_rounds,
        world.seller_cost,
        cfg.pr_threshold,
        cfg.pr_lead_weeks,
        cfg.pr_guardrail,
        cfg.quote_validity_weeks,
        cfg.max_deferrals,
        cfg.holding_cost_rate,
        cfg.escalation_range,
        None if world.sealed else world.seed,
        episode_key,
    )

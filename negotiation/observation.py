"""Observation: a cheap, read-only view of the public state after a step.

Creating one costs a few attribute copies; `to_dict()` builds the JSON-safe dict only when
asked. The view references live public objects, so it is valid until the environment
steps again; `to_dict()` on an older view raises StaleObservationError rather than
silently describing a later state. Hidden state is not reachable from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .entities import Contract, Event, PurchaseRequisition, Requirement, Supplier, Thread

if TYPE_CHECKING:
    from .env import ProcurementEnv


class StaleObservationError(RuntimeError):
    pass


class Observation:
    __slots__ = (
        "_epoch",
        "_my_epoch",
        "_req",
        "_sup",
        "actions_left_this_week",
        "actions_per_week",
        "budget_committed",
        "budget_remaining",
        "budget_total",
        "contracts",
        "done",
        "escalations_left",
        "events",
        "last_action",
        "market_index",
        "max_deferrals",
        "max_rounds",
        "pr_guardrail",
        "pr_lead_weeks",
        "pr_threshold",
        "purchase_requisitions",
        "quote_validity_weeks",
        "requirements",
        "step",
        "suppliers",
        "threads",
        "week",
        "weeks",
    )

    def __init__(self, env: ProcurementEnv) -> None:
        cfg = env.cfg
        self.step = env.steps_taken
        self.week = env.week
        self.weeks = cfg.weeks
        self.actions_per_week = cfg.actions_per_week
        self.actions_left_this_week = cfg.actions_per_week - env.slot if not env.done else 0
        self.escalations_left = env.escalations_left
        self.budget_total = env.budget_total
        self.budget_committed = env.budget_committed
        self.budget_remaining = env.budget_total - env.budget_committed
        self.requirements: list[Requirement] = env.requirements
        self.suppliers: list[Supplier] = env.suppliers
        self.threads: dict[tuple[str, str], Thread] = env.threads
        self.contracts: list[Contract] = env.contracts
        self.purchase_requisitions: list[PurchaseRequisition] = env.prs
        self.market_index: dict[str, float] = env.market.index
        self.events: list[Event] = env.events
        self.last_action = env.last_action
        self.done = env.done
        self.max_rounds = env.max_rounds
        self.pr_threshold = cfg.pr_threshold
        self.pr_lead_weeks = cfg.pr_lead_weeks
        self.pr_guardrail = cfg.pr_guardrail
        self.quote_validity_weeks = cfg.quote_validity_weeks
        self.max_deferrals = cfg.max_deferrals
        self._req = env.req_by_id
        self._sup = env.sup_by_id
        self._epoch = env._epoch
        self._my_epoch = env._epoch[0]  # the env bumps the epoch before each new view

    # --- convenience accessors for policies ------------------------------------------
    def requirement(self, rid: str) -> Requirement | None:
        return self._req.get(rid)

    def supplier(self, sid: str) -> Supplier | None:
        return self._sup.get(sid)

    def thread(self, sid: str, rid: str) -> Thread | None:
        return self.threads.get((sid, rid))

    @property
    def is_stale(self) -> bool:
        return self._epoch[0] != self._my_epoch

    def to_dict(self) -> dict[str, Any]:
        if self.is_stale:
            raise StaleObservationError(
                "This observation describes an earlier step; call to_dict() before stepping again."
            )
        market = self.market_index
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
            "events": [e.to_dict() for e in self.events[-25:]],
            "last_action": dict(self.last_action),
            "rules": {
                "pr_threshold": self.pr_threshold,
                "pr_lead_weeks": self.pr_lead_weeks,
                "pr_guardrail": self.pr_guardrail,
                "quote_validity_weeks": self.quote_validity_weeks,
                "max_deferrals": self.max_deferrals,
                "max_rounds": self.max_rounds,
            },
            "done": self.done,
        }

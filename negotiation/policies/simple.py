"""Baseline buyer policies: do_nothing, always_accept, greedy_lowball."""

from __future__ import annotations

from typing import Any

from ..observation import Observation
from .base import Policy, candidates, has_pr, open_requirements
from .params import GreedyLowballParams


class DoNothingPolicy(Policy):
    """Defers every week (the 'wait' action): the anti-gaming floor."""

    name = "do_nothing"

    def act(self, obs: Observation) -> dict[str, Any]:
        return {"action_type": "defer"}


def _pr_or_award(obs: Observation, r, s, price: float) -> dict[str, Any]:
    qty = min(r.quantity_needed, s.capacity.get(r.category, 0))
    cost = qty * price
    if cost > obs.pr_threshold and not has_pr(obs, r.id, cost):
        if not has_pr(obs, r.id, 0.0, ("pending",)):
            amount = min(
                cost,
                obs.budget_remaining,
                obs.pr_guardrail * r.ceiling_unit_price * r.quantity_needed,
            )
            if amount >= cost:
                return {
                    "action_type": "raise_pr",
                    "requirement_id": r.id,
                    "amount": round(amount, 2),
                }
        return {"action_type": "defer"}
    return {
        "action_type": "award_contract",
        "supplier_id": s.id,
        "requirement_id": r.id,
        "quantity": qty,
    }


class AlwaysAcceptPolicy(Policy):
    """Offers each supplier's list price and takes whatever is agreed: no real negotiation."""

    name = "always_accept"

    def act(self, obs: Observation) -> dict[str, Any]:
        for r in open_requirements(obs):
            cands = candidates(obs, r)
            cands = [s for s in cands if s.capacity.get(r.category, 0) > 0]
            if not cands:
                continue
            for s in cands:
                th = obs.threads.get((s.id, r.id))
                if th is not None and th.status == "agreed" and th.valid_until_week >= obs.week:
                    return _pr_or_award(obs, r, s, th.agreed_price)
            s = cands[0]
            return {
                "action_type": "negotiate",
                "supplier_id": s.id,
                "requirement_id": r.id,
                "price": round(s.list_prices[r.id], 2),
            }
        return {"action_type": "defer"}


class GreedyLowballPolicy(Policy):
    """Offers a fixed fraction (40 %) of list price to everyone and awards only if accepted."""

    name = "greedy_lowball"
    Params = GreedyLowballParams

    def __init__(self, seed: int = 0, fraction: float = 0.4, **params: Any) -> None:
        super().__init__(seed, **params)
        self.fraction = float(fraction)

    def act(self, obs: Observation) -> dict[str, Any]:
        for r in open_requirements(obs):
            for s in candidates(obs, r):
                th = obs.threads.get((s.id, r.id))
                if th is not None and th.status == "agreed" and th.valid_until_week >= obs.week:
                    return _pr_or_award(obs, r, s, th.agreed_price)
            for s in candidates(obs, r):
                th = obs.threads.get((s.id, r.id))
                if th is None or (th.status == "open" and len(th.rounds) < 3):
                    return {
                        "action_type": "negotiate",
                        "supplier_id": s.id,
                        "requirement_id": r.id,
                        "price": round(s.list_prices[r.id] * self.fraction, 2),
                    }
        return {"action_type": "defer"}

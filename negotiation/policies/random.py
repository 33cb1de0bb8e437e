"""Random (valid-ish) buyer: picks among the seven actions with plausible arguments.

Randomness comes from random.Random((seed, step)) so resuming mid-episode reproduces the
same actions."""

from __future__ import annotations

import random
from typing import Any

from ..action_spec import ACTION_TYPES
from ..observation import Observation
from .base import Policy


class RandomPolicy(Policy):
    name = "random"

    def act(self, obs: Observation) -> dict[str, Any]:
        action = self._draw(obs)
        return self.decide(action, f"random {action['action_type']}: drawn at step {obs.step}")

    def _draw(self, obs: Observation) -> dict[str, Any]:
        rng = random.Random(self.seed * 1_000_003 + obs.step)
        at = rng.choice(ACTION_TYPES)
        reqs = obs.requirements
        sups = obs.suppliers
        r = rng.choice(reqs)
        s = rng.choice(sups)
        if at == "negotiate":
            base = s.list_prices.get(r.id, r.reference_price)
            return {
                "action_type": at,
                "supplier_id": s.id,
                "requirement_id": r.id,
                "price": round(base * rng.uniform(0.4, 1.3), 2),
            }
        if at == "award_contract":
            return {
                "action_type": at,
                "supplier_id": s.id,
                "requirement_id": r.id,
                "quantity": max(1, int(r.quantity_needed * rng.uniform(0.3, 1.0))),
            }
        if at == "raise_pr":
            amt = r.ceiling_unit_price * max(1, r.quantity_needed) * rng.uniform(0.3, 1.2)
            return {"action_type": at, "requirement_id": r.id, "amount": round(amt, 2)}
        if at == "defer":
            return (
                {"action_type": at, "requirement_id": r.id}
                if rng.random() < 0.5
                else {"action_type": at}
            )
        if at == "reject":
            return {"action_type": at, "supplier_id": s.id, "requirement_id": r.id}
        if at == "hedge":
            s2 = rng.choice(sups)
            return {
                "action_type": at,
                "requirement_id": r.id,
                "supplier_id": s.id,
                "hedge_supplier_id": s2.id,
                "split": round(rng.uniform(0.2, 0.8), 2),
            }
        return {"action_type": "escalate", "requirement_id": r.id, "supplier_id": s.id}

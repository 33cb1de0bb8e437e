"""Buyer policy interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ..observation import Observation


class Policy(ABC):
    """act(obs) -> action dict. Deterministic given the seed and the observation, so a run can
    resume from any step (replay the stored actions, then continue with the policy)."""

    name = "base"

    def __init__(self, seed: int = 0, **params: Any) -> None:
        self.seed = int(seed)
        self.params = params
        self.stats: dict[str, int] = {"llm_parse_failures": 0, "llm_fallbacks": 0}

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = int(seed)

    @abstractmethod
    def act(self, obs: Observation) -> dict[str, Any]: ...


def open_requirements(obs: Observation) -> list:
    return [r for r in obs.requirements if not r.decided and r.quantity_needed > 0]


def candidates(obs: Observation, r) -> list:
    """Suppliers that can still talk about requirement r."""
    out = []
    for s in obs.suppliers:
        if not s.active or s.rejected or r.id not in s.list_prices:
            continue
        th = obs.threads.get((s.id, r.id))
        if th is not None and th.status not in ("open", "agreed"):
            continue
        out.append(s)
    return out


def pr_needed(obs: Observation, r, cost: float) -> bool:
    return cost > obs.pr_threshold


def has_pr(
    obs: Observation, rid: str, cost: float, statuses: tuple[str, ...] = ("approved",)
) -> bool:
    for p in obs.purchase_requisitions:
        if p.requirement_id == rid and p.status in statuses and p.amount >= cost - 1e-6:
            return True
    return False

"""Buyer policy interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from ..observation import Observation
from .params import PolicyParams


@dataclass(frozen=True, slots=True)
class DecisionMeta:
    """Who made the last decision and how, for the step record: ``actor`` is "policy",
    "llm" or "fallback:<policy>"; the flags make every LLM failure visible per step."""

    actor: str = "policy"
    message: str | None = None
    rationale: str | None = None
    llm_parse_failure: bool = False
    llm_fallback: bool = False
    llm_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}


POLICY_DECISION = DecisionMeta()


class Policy(ABC):
    """act(obs) -> action dict. Deterministic given the seed and the observation, so a run can
    resume from any step (replay the stored actions, then continue with the policy)."""

    name = "base"
    # The parameters this policy accepts (validated by get_policy before __init__).
    Params: ClassVar[type[PolicyParams]] = PolicyParams
    # Set by policies whose decisions need more than "policy" on the record (LLM ones).
    last_decision: DecisionMeta | None = None

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

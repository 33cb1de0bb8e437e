"""Buyer policy interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..observation import Observation
from ..world.records import cover_by_requirement, pr_shortfall, spend_by_requirement
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
REASON_CHARS = 160  # a rule policy's reason: a few words, one line on the episode page


# A reason: its text, or a function that writes it when it is read (most runs never read
# it: a benchmark or an evaluation records no steps, so the expert formats nothing).
Why = str | Callable[[], str]


def clip(text: str, n: int = REASON_CHARS) -> str:
    """``text`` within n characters (a reason that lists ids may run long)."""
    return text if len(text) <= n else text[: n - 1] + "…"


def text(why: Why) -> str:
    """A reason's words."""
    return why if isinstance(why, str) else why()


class Policy(ABC):
    """act(obs) -> action dict. Deterministic given the seed and the observation, so a run can
    resume from any step (replay the stored actions, then continue with the policy)."""

    name = "base"
    # The parameters this policy accepts (validated by get_policy before __init__).
    Params: ClassVar[type[PolicyParams]] = PolicyParams
    _decision: DecisionMeta | None = None
    _why: Why | None = None  # decide()'s reason, not yet written into _decision

    def __init__(self, seed: int = 0, **params: Any) -> None:
        self.seed = int(seed)
        self.params = params
        self.stats: dict[str, int] = {"llm_parse_failures": 0, "llm_fallbacks": 0}

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = int(seed)

    @abstractmethod
    def act(self, obs: Observation) -> dict[str, Any]: ...

    def replayed(self, obs: Observation, action: Any) -> None:
        """``action`` was played for this policy at ``obs`` (a stored prefix: a resumed
        episode, a training rollout). A policy that keeps its own record of the episode
        (the LLM buyer's chat) takes it in here, so that its next turn reads as if it had
        played the prefix itself; rule policies read everything from ``obs``."""
        return None

    def decide(self, action: dict[str, Any], why: Why) -> dict[str, Any]:
        """``action``, with the reason for it kept for the step record (the rationale an
        analyst reads): a few words from the numbers the policy used. Rule policies call
        it on every decision; it never changes what they play. A function for ``why`` is
        called when last_decision is read, which must be before the next act()."""
        self._why = why
        return action

    @property
    def last_decision(self) -> DecisionMeta | None:
        """Who decided the last action and why: rule policies set it through decide()
        with their reason, the LLM buyer with its words and failure flags."""
        why = self._why
        if why is not None:
            self._decision = DecisionMeta("policy", None, text(why))
            self._why = None
        return self._decision

    @last_decision.setter
    def last_decision(self, decision: DecisionMeta | None) -> None:
        self._decision, self._why = decision, None


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


class Ledger:
    """Spend and PR cover per requirement for one observation's contracts and PRs
    (records.committed_spend and pr_cover, the engine's own rule). Planners ask for every
    plan on every step, so the last ledger is kept while the observation's contracts and
    PRs stay the same: each step's tuples are new, but of the same immutable records until
    one changes, so comparing them is mostly identity checks."""

    __slots__ = ("_cover", "contracts", "prs", "spend")

    def __init__(self, contracts: tuple, prs: tuple) -> None:
        self.contracts, self.prs = contracts, prs
        self.spend = spend_by_requirement(contracts)
        self._cover: dict[tuple[str, ...], dict[str, float]] = {}

    def cover(self, rid: str, statuses: tuple[str, ...] = ("approved",)) -> float:
        """What rid's PRs in these statuses authorise together (records.pr_cover)."""
        by = self._cover.get(statuses)
        if by is None:
            by = self._cover[statuses] = cover_by_requirement(self.prs, statuses)
        return by.get(rid, 0.0)

    def headroom(self, rid: str, statuses: tuple[str, ...] = ("approved",)) -> float:
        """What rid's PRs in these statuses authorise beyond its spend so far."""
        return self.cover(rid, statuses) - self.spend.get(rid, 0.0)

    def needed(self, rid: str, cost: float, threshold: float) -> bool:
        """Whether an award of this cost on rid needs PR cover: its spend, the contracts so
        far and this award, exceeds the threshold."""
        return self.spend.get(rid, 0.0) + cost > threshold

    def covers(self, rid: str, cost: float, statuses: tuple[str, ...] = ("approved",)) -> bool:
        """Whether rid's PRs in these statuses cover its spend with an award of this cost."""
        return self.headroom(rid, statuses) >= cost - 1e-6

    def missing(self, rid: str, cost: float, threshold: float) -> bool:
        """An award of this cost on rid needs PR cover, and its approved PRs do not give it
        (records.pr_shortfall, the engine's check)."""
        short = pr_shortfall(self.spend.get(rid, 0.0), cost, self.cover(rid), threshold)
        return short > 1e-6


_ledger = Ledger((), ())


def ledger(obs: Observation) -> Ledger:
    """The observation's Ledger: the last one while it still matches, else a new one. The
    local keeps it thread-safe: a policy in another thread may replace the shared one, but
    what returns was checked against, or built from, this observation."""
    global _ledger
    book = _ledger
    if book.contracts != obs.contracts or book.prs != obs.purchase_requisitions:
        book = _ledger = Ledger(obs.contracts, obs.purchase_requisitions)
    return book


def pr_needed(obs: Observation, r, cost: float) -> bool:
    """Whether an award of this cost on r needs PR cover: the requirement's spend, its
    contracts so far and this award, exceeds the threshold (records.py)."""
    return ledger(obs).needed(r.id, cost, obs.pr_threshold)


def pr_missing(obs: Observation, r, cost: float) -> bool:
    """An award of this cost on r needs PR cover, and its approved PRs do not give it."""
    return ledger(obs).missing(r.id, cost, obs.pr_threshold)


def has_pr(
    obs: Observation, rid: str, cost: float, statuses: tuple[str, ...] = ("approved",)
) -> bool:
    """Whether r's PRs in these statuses cover its spend with an award of this cost (with
    LIVE_PR: once its pending PRs are approved)."""
    return ledger(obs).covers(rid, cost, statuses)


def pr_headroom(obs: Observation, rid: str, statuses: tuple[str, ...] = ("approved",)) -> float:
    """What r's PRs in these statuses authorise beyond its spend so far."""
    return ledger(obs).headroom(rid, statuses)

"""Immutable public records: what an Observation holds.

The engine works on mutable entities (entities.py); each one freezes into one of these
records the first time a snapshot needs it after a change, and reuses it until the next
change. So an observation is a few tuples of references to records, built in a few
microseconds, and stays true to its own step forever. Dict-valued fields are read-only
mappings over private copies: nothing here reaches or changes the world.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple


class FrozenDict(dict):
    """A dict that refuses every change. Unlike a mappingproxy it pickles and deep-copies
    (replay buffers and worker processes need both), and reads run at dict speed."""

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{type(self).__name__} is read-only: an observation is a value.")

    __setitem__ = __delitem__ = __ior__ = _read_only  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _read_only  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict) -> FrozenDict:
        return self


def r2(x: float) -> float:
    return round(x, 2)


def quantity_needed(status: str, quantity: int, delivered: int, pending: int) -> int:
    """Units still to source: none once decided, else what no delivery or contract covers."""
    if status == "fulfilled" or status == "failed":
        return 0
    return max(0, quantity - delivered - pending)


# Purchase requisitions authorise a requirement's spend. Once its spend (its contracts and
# the award at hand) exceeds the PR threshold, its approved PRs together must cover all of
# it, so splitting a purchase into awards under the threshold needs approval too; its PRs
# together ask at most guardrail x ceiling x its quantity. These read engine entities and
# their records alike, so the engine and the policies apply one rule.
LIVE_PR = ("pending", "approved")  # PRs that authorise spend now or once approved


def contract_spend(c: Any) -> float:
    """What a contract holds of the budget: its whole cost while pending, its delivered units
    once closed (the undelivered ones are released, as the week does)."""
    return (c.quantity if c.status == "pending" else c.delivered_quantity) * c.unit_price


def spend_by_requirement(contracts: Iterable[Any]) -> dict[str, float]:
    """What each requirement's contracts hold of the budget, in one pass."""
    spend: dict[str, float] = {}
    for c in contracts:
        spend[c.requirement_id] = spend.get(c.requirement_id, 0.0) + contract_spend(c)
    return spend


def committed_spend(contracts: Iterable[Any], requirement_id: str) -> float:
    """What a requirement's contracts hold of the budget."""
    return spend_by_requirement(contracts).get(requirement_id, 0.0)


def cover_by_requirement(
    prs: Iterable[Any], statuses: tuple[str, ...] = ("approved",)
) -> dict[str, float]:
    """The spend each requirement's PRs in these statuses authorise together, in one pass."""
    cover: dict[str, float] = {}
    for p in prs:
        if p.status in statuses:
            cover[p.requirement_id] = cover.get(p.requirement_id, 0.0) + p.amount
    return cover


def pr_cover(
    prs: Iterable[Any], requirement_id: str, statuses: tuple[str, ...] = ("approved",)
) -> float:
    """The spend a requirement's PRs in these statuses authorise together."""
    return cover_by_requirement(prs, statuses).get(requirement_id, 0.0)


def pr_shortfall(spent: float, cost: float, cover: float, threshold: float) -> float:
    """The approved PR cover an award of this cost still lacks: none while the requirement's
    spend with it (spent + cost) stays within the threshold, else what cover falls short of
    that spend."""
    total = spent + cost
    return 0.0 if total <= threshold else max(0.0, total - cover)


def pr_room(guardrail: float, r: Any, prs: Iterable[Any]) -> float:
    """The most a new PR for requirement r may ask: guardrail x ceiling x its quantity, less
    what its live PRs ask already."""
    return guardrail * r.ceiling_unit_price * max(1, r.quantity) - pr_cover(prs, r.id, LIVE_PR)


def awardable_price(
    status: str,
    agreed_price: float | None,
    valid_until_week: int | None,
    counter_price: float | None,
    counter_valid_until: int | None,
    week: int,
) -> float | None:
    """The price an award would use now, or None (rule 4: never a buyer-named price)."""
    if status == "agreed" and valid_until_week is not None:
        return agreed_price if week <= valid_until_week else None
    if (
        status == "open"
        and counter_price is not None
        and counter_valid_until is not None
        and week <= counter_valid_until
    ):
        return counter_price
    return None


class Round(NamedTuple):
    """One buyer offer and the supplier's answer; created once, never changed."""

    round: int
    week: int
    buyer_offer: float | None
    response: str  # accept | counter | walk_away | escalation
    supplier_price: float | None
    message: str
    tells: FrozenDict

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "week": self.week,
            "buyer_offer": None if self.buyer_offer is None else r2(self.buyer_offer),
            "response": self.response,
            "supplier_price": None if self.supplier_price is None else r2(self.supplier_price),
            "message": self.message,
            "tells": dict(self.tells),
        }


class Event(NamedTuple):
    week: int
    kind: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"week": self.week, "kind": self.kind, "text": self.text}


class RequirementRecord(NamedTuple):
    id: str
    name: str
    item_key: str
    category: str
    unit: str
    quantity: int
    deadline_week: int
    critical: bool
    ceiling_unit_price: float
    reference_price: float
    status: str
    delivered: int
    pending: int
    deferrals_used: int
    added_week: int
    # Derived once when frozen: policies read these on every step.
    quantity_needed: int
    decided: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "item": self.item_key,
            "category": self.category,
            "unit": self.unit,
            "quantity": self.quantity,
            "quantity_needed": self.quantity_needed,
            "delivered_quantity": self.delivered,
            "deadline_week": self.deadline_week,
            "critical": self.critical,
            "ceiling_unit_price": r2(self.ceiling_unit_price),
            "reference_unit_price": r2(self.reference_price),
            "status": self.status,
            "deferrals_used": self.deferrals_used,
        }


class SupplierRecord(NamedTuple):
    id: str
    name: str
    categories: tuple[str, ...]
    list_prices: FrozenDict  # requirement_id -> current list unit price
    lead_time_weeks: int
    rated_reliability: float
    capacity: FrozenDict  # category -> claimed capacity still available
    active: bool
    notes: tuple[str, ...]
    rejected: bool  # the buyer rejected this supplier entirely

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "categories": list(self.categories),
            "list_prices": {k: r2(v) for k, v in self.list_prices.items()},
            "lead_time_weeks": self.lead_time_weeks,
            "rated_reliability": round(self.rated_reliability, 3),
            "capacity": dict(self.capacity),
            "active": self.active,
            "notes": list(self.notes),
            "rejected_by_buyer": self.rejected,
        }


class ThreadRecord(NamedTuple):
    supplier_id: str
    requirement_id: str
    status: str  # open | agreed | awarded | walked_away | rejected
    agreed_price: float | None
    valid_until_week: int | None
    counter_price: float | None  # the supplier's standing counter offer
    counter_valid_until: int | None
    rounds: tuple[Round, ...]
    offers: int  # buyer offers made (the supplier's time t)

    def awardable_price(self, week: int) -> float | None:
        return awardable_price(
            self.status,
            self.agreed_price,
            self.valid_until_week,
            self.counter_price,
            self.counter_valid_until,
            week,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "supplier_id": self.supplier_id,
            "requirement_id": self.requirement_id,
            "status": self.status,
            "agreed_price": None if self.agreed_price is None else r2(self.agreed_price),
            "valid_until_week": self.valid_until_week,
            "standing_counter": None if self.counter_price is None else r2(self.counter_price),
            "counter_valid_until_week": self.counter_valid_until,
            "rounds": [r.to_dict() for r in self.rounds],
        }


class ContractRecord(NamedTuple):
    id: str
    supplier_id: str
    requirement_id: str
    quantity: int
    unit_price: float
    awarded_week: int
    due_week: int
    status: str  # pending | delivered | partial | defaulted | cancelled
    delivered_quantity: int
    market_price: float
    slips: int
    hedge: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "supplier_id": self.supplier_id,
            "requirement_id": self.requirement_id,
            "quantity": self.quantity,
            "unit_price": r2(self.unit_price),
            "awarded_week": self.awarded_week,
            "due_week": self.due_week,
            "status": self.status,
            "delivered_quantity": self.delivered_quantity,
            "late": self.slips > 0,
            "hedge": self.hedge,
        }


class PurchaseRequisitionRecord(NamedTuple):
    id: str
    requirement_id: str
    amount: float
    status: str  # pending | approved | rejected (approved ones authorise spend, not consumed)
    raised_week: int
    matures_week: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "requirement_id": self.requirement_id,
            "amount": r2(self.amount),
            "status": self.status,
            "raised_week": self.raised_week,
            "matures_week": self.matures_week,
        }

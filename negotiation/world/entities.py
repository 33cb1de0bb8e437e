"""World entities. Public objects (what the buyer may see) and hidden objects are separate
classes. The engine mutates the public ones; an Observation never holds them, only their
immutable records (records.py), so nothing a policy holds reaches the world or goes stale.
Plain __slots__ classes: they are created and read on the hot path.

Each public entity caches its record in ``_snap``; any attribute assignment clears it
(``__setattr__``), and code that changes a nested dict or list in place calls ``touch()``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from .records import (
    ContractRecord,
    Event,
    FrozenDict,
    PurchaseRequisitionRecord,
    RequirementRecord,
    Round,
    SupplierRecord,
    ThreadRecord,
    awardable_price,
    quantity_needed,
)

__all__ = [
    "TELL_NAMES",
    "Contract",
    "Event",
    "PurchaseRequisition",
    "Requirement",
    "Round",
    "Supplier",
    "SupplierHidden",
    "Thread",
    "ThreadHidden",
]

TELL_NAMES: tuple[str, ...] = (
    "urgency",
    "confidence",
    "concession_size",
    "response_delay",
    "competing_offers_claim",
    "low_stock_claim",
    "price_rounding",
    "repetition",
    "flexibility",
    "warmth",
)


# Sets a slot without clearing the cached record. Each entity's __init__ uses it: a fresh
# entity has no record to clear, and entities are created on the hot path (every reset
# builds a world's worth), where Tracked.__setattr__ would double the cost.
_set = object.__setattr__


class Tracked(ABC):
    """A public entity whose immutable record is rebuilt only after it changes."""

    __slots__ = ("_snap",)

    def __setattr__(self, name: str, value: Any) -> None:
        _set(self, name, value)
        _set(self, "_snap", None)

    def touch(self) -> None:
        """Call after changing one of this entity's dicts or lists in place."""
        _set(self, "_snap", None)

    def snapshot(self) -> Any:
        snap = self._snap
        if snap is None:
            snap = self._freeze()
            _set(self, "_snap", snap)
        return snap

    @abstractmethod
    def _freeze(self) -> Any:
        """The entity's immutable record (records.py) as it is now."""

    def to_dict(self) -> dict[str, Any]:
        return self.snapshot().to_dict()


class Requirement(Tracked):
    __slots__ = (
        "added_week",
        "category",
        "ceiling_unit_price",
        "critical",
        "deadline_week",
        "deferrals_used",
        "delivered",
        "id",
        "item_key",
        "name",
        "pending",
        "quantity",
        "reference_price",
        "status",
        "unit",
    )

    def __init__(
        self,
        id: str,
        name: str,
        item_key: str,
        category: str,
        unit: str,
        quantity: int,
        deadline_week: int,
        critical: bool,
        ceiling_unit_price: float,
        reference_price: float,
        added_week: int = 0,
    ) -> None:
        _set(self, "_snap", None)  # fresh: no record yet (see _set above)
        _set(self, "id", id)
        _set(self, "name", name)
        _set(self, "item_key", item_key)
        _set(self, "category", category)
        _set(self, "unit", unit)
        _set(self, "quantity", quantity)
        _set(self, "deadline_week", deadline_week)
        _set(self, "critical", critical)
        _set(self, "ceiling_unit_price", ceiling_unit_price)
        # Public market reference price at creation; the value-captured floor uses it.
        _set(self, "reference_price", reference_price)
        _set(self, "status", "open")  # open | contracted | fulfilled | failed
        _set(self, "delivered", 0)
        _set(self, "pending", 0)  # quantity in pending contracts
        _set(self, "deferrals_used", 0)
        _set(self, "added_week", added_week)

    @property
    def quantity_needed(self) -> int:
        return quantity_needed(self.status, self.quantity, self.delivered, self.pending)

    @property
    def decided(self) -> bool:
        return self.status in ("fulfilled", "failed")

    def _freeze(self) -> RequirementRecord:
        status = self.status
        return RequirementRecord(
            self.id,
            self.name,
            self.item_key,
            self.category,
            self.unit,
            self.quantity,
            self.deadline_week,
            self.critical,
            self.ceiling_unit_price,
            self.reference_price,
            self.status,
            self.delivered,
            self.pending,
            self.deferrals_used,
            self.added_week,
            quantity_needed(status, self.quantity, self.delivered, self.pending),
            status == "fulfilled" or status == "failed",
        )


class Supplier(Tracked):
    """Public facts about a supplier (the engine's copy)."""

    __slots__ = (
        "active",
        "capacity",
        "categories",
        "id",
        "lead_time_weeks",
        "list_prices",
        "name",
        "notes",
        "rated_reliability",
        "rejected",
    )

    def __init__(
        self,
        id: str,
        name: str,
        categories: tuple[str, ...],
        lead_time_weeks: int,
        rated_reliability: float,
        notes: list[str],
    ) -> None:
        _set(self, "_snap", None)  # fresh: no record yet (see _set above)
        _set(self, "id", id)
        _set(self, "name", name)
        _set(self, "categories", categories)
        _set(self, "list_prices", {})  # requirement_id -> current list unit price
        _set(self, "lead_time_weeks", lead_time_weeks)
        _set(self, "rated_reliability", rated_reliability)
        _set(self, "capacity", {})  # category -> claimed capacity still available
        _set(self, "active", True)
        _set(self, "notes", notes)
        _set(self, "rejected", False)  # the buyer rejected this supplier entirely

    def _freeze(self) -> SupplierRecord:
        return SupplierRecord(
            self.id,
            self.name,
            tuple(self.categories),
            FrozenDict(self.list_prices),
            self.lead_time_weeks,
            self.rated_reliability,
            FrozenDict(self.capacity),
            self.active,
            tuple(self.notes),
            self.rejected,
        )


class SupplierHidden:
    """Hidden truth about a supplier: never referenced from an Observation."""

    __slots__ = (
        "beta",
        "capacity_claim_factor",
        "cost_ratio",
        "dark_prob",
        "dark_until",
        "floor_margin",
        "insult",
        "insult_walk_prob",
        "list_factor",
        "margin",
        "overstock",
        "patience",
        "persona",
        "quarter_end",
        "quarter_pressure",
        "reciprocity",
        "rival_push",
        "stall_rounds",
        "stall_walk_prob",
        "stress",
        "tft_window",
        "time_weight",
        "true_capacity",
        "true_reliability",
    )

    # Every field is a keyword, None when not given (a planner builds partial ones, e.g.
    # expert/beliefs.py); a misspelt one is a TypeError. Spelled out rather than a loop
    # over __slots__: worldgen builds one per supplier on every reset, 3x faster so.
    def __init__(
        self,
        *,
        beta: float | None = None,
        capacity_claim_factor: float | None = None,
        cost_ratio: dict[str, float] | None = None,
        dark_prob: float | None = None,
        dark_until: int | None = None,
        floor_margin: float | None = None,
        insult: float | None = None,
        insult_walk_prob: float | None = None,
        list_factor: float | None = None,
        margin: float | None = None,
        overstock: float | None = None,
        patience: int | None = None,
        persona: str | None = None,
        quarter_end: int | None = None,
        quarter_pressure: float | None = None,
        reciprocity: float | None = None,
        rival_push: float | None = None,
        stall_rounds: int | None = None,
        stall_walk_prob: float | None = None,
        stress: float | None = None,
        tft_window: int | None = None,
        time_weight: float | None = None,
        true_capacity: dict[str, int] | None = None,
        true_reliability: float | None = None,
    ) -> None:
        self.beta = beta
        self.capacity_claim_factor = capacity_claim_factor
        self.cost_ratio = cost_ratio
        self.dark_prob = dark_prob
        self.dark_until = dark_until
        self.floor_margin = floor_margin
        self.insult = insult
        self.insult_walk_prob = insult_walk_prob
        self.list_factor = list_factor
        self.margin = margin
        self.overstock = overstock
        self.patience = patience
        self.persona = persona
        self.quarter_end = quarter_end
        self.quarter_pressure = quarter_pressure
        self.reciprocity = reciprocity
        self.rival_push = rival_push
        self.stall_rounds = stall_rounds
        self.stall_walk_prob = stall_walk_prob
        self.stress = stress
        self.tft_window = tft_window
        self.time_weight = time_weight
        self.true_capacity = true_capacity
        self.true_reliability = true_reliability


class Thread(Tracked):
    """Public negotiation thread for one (supplier, requirement)."""

    __slots__ = (
        "agreed_price",
        "counter_price",
        "counter_valid_until",
        "offers",
        "requirement_id",
        "rounds",
        "status",
        "supplier_id",
        "valid_until_week",
    )

    def __init__(self, supplier_id: str, requirement_id: str) -> None:
        _set(self, "_snap", None)  # fresh: no record yet (see _set above)
        _set(self, "supplier_id", supplier_id)
        _set(self, "requirement_id", requirement_id)
        # open | agreed | awarded | walked_away | rejected
        _set(self, "status", "open")
        _set(self, "agreed_price", None)
        _set(self, "valid_until_week", None)
        # The supplier's standing counter offer: the buyer may accept it by awarding.
        _set(self, "counter_price", None)
        _set(self, "counter_valid_until", None)
        _set(self, "rounds", [])
        _set(self, "offers", 0)  # buyer offers made (the supplier's time t)

    def add_round(self, rnd: Round) -> None:
        self.rounds.append(rnd)
        _set(self, "_snap", None)

    def awardable_price(self, week: int) -> float | None:
        return awardable_price(
            self.status,
            self.agreed_price,
            self.valid_until_week,
            self.counter_price,
            self.counter_valid_until,
            week,
        )

    def _freeze(self) -> ThreadRecord:
        return ThreadRecord(
            self.supplier_id,
            self.requirement_id,
            self.status,
            self.agreed_price,
            self.valid_until_week,
            self.counter_price,
            self.counter_valid_until,
            tuple(self.rounds),
            self.offers,
        )


class ThreadHidden:
    """Per-thread hidden pricing: fixed when the thread opens, plus the history the
    supplier's tit-for-tat reads (concession.py)."""

    __slots__ = (
        "anchor",
        "asks",
        "beta",
        "cost",
        "floor",
        "hardened",
        "last_counter",
        "offers",
        "patience",
        "reservation",
        "stalls",
        "strikes",
    )

    def __init__(
        self,
        reservation: float,
        cost: float,
        floor: float,
        anchor: float,
        beta: float,
        patience: int,
    ) -> None:
        self.reservation = reservation
        self.cost = cost
        self.floor = floor  # lowest counter the persona plans to make (>= guard band)
        self.anchor = anchor
        self.beta = beta
        self.patience = patience
        self.strikes = 0
        self.last_counter: float | None = None
        self.offers: list[float] = []  # buyer's standing offer after each answered one (no insults)
        self.asks: list[float] = []  # the supplier's ask after each of them
        self.stalls = 0  # consecutive offers in which the buyer did not move
        self.hardened = False  # a stubborn buyer lost the last-chance deal at reservation


class Contract(Tracked):
    __slots__ = (
        "awarded_week",
        "delivered_quantity",
        "due_week",
        "hedge",
        "id",
        "market_price",
        "quantity",
        "requirement_id",
        "slips",
        "status",
        "supplier_id",
        "unit_price",
    )

    def __init__(
        self,
        id: str,
        supplier_id: str,
        requirement_id: str,
        quantity: int,
        unit_price: float,
        awarded_week: int,
        due_week: int,
        market_price: float,
        hedge: bool = False,
    ) -> None:
        _set(self, "_snap", None)  # fresh: no record yet (see _set above)
        _set(self, "id", id)
        _set(self, "supplier_id", supplier_id)
        _set(self, "requirement_id", requirement_id)
        _set(self, "quantity", quantity)
        _set(self, "unit_price", unit_price)
        _set(self, "awarded_week", awarded_week)
        _set(self, "due_week", due_week)
        # pending | delivered | partial | defaulted | cancelled
        _set(self, "status", "pending")
        _set(self, "delivered_quantity", 0)
        _set(self, "market_price", market_price)
        _set(self, "slips", 0)
        _set(self, "hedge", hedge)

    def _freeze(self) -> ContractRecord:
        return ContractRecord(
            self.id,
            self.supplier_id,
            self.requirement_id,
            self.quantity,
            self.unit_price,
            self.awarded_week,
            self.due_week,
            self.status,
            self.delivered_quantity,
            self.market_price,
            self.slips,
            self.hedge,
        )


class PurchaseRequisition(Tracked):
    __slots__ = ("amount", "id", "matures_week", "raised_week", "requirement_id", "status")

    def __init__(
        self, id: str, requirement_id: str, amount: float, raised_week: int, matures_week: int
    ):
        _set(self, "_snap", None)  # fresh: no record yet (see _set above)
        _set(self, "id", id)
        _set(self, "requirement_id", requirement_id)
        _set(self, "amount", amount)
        _set(self, "status", "pending")  # pending | approved | rejected
        _set(self, "raised_week", raised_week)
        _set(self, "matures_week", matures_week)

    def _freeze(self) -> PurchaseRequisitionRecord:
        return PurchaseRequisitionRecord(
            self.id,
            self.requirement_id,
            self.amount,
            self.status,
            self.raised_week,
            self.matures_week,
        )

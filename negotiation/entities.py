"""World entities. Public objects (what the buyer may see) and hidden objects are separate
classes, so an Observation can hand out references to public objects without ever
reaching hidden state. Plain __slots__ classes: they are created and read on the hot path.
"""

from __future__ import annotations

from typing import Any

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


def r2(x: float) -> float:
    return round(x, 2)


class Requirement:
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
        self.id = id
        self.name = name
        self.item_key = item_key
        self.category = category
        self.unit = unit
        self.quantity = quantity
        self.deadline_week = deadline_week
        self.critical = critical
        self.ceiling_unit_price = ceiling_unit_price
        # Public market reference price at creation; the value-captured floor uses it.
        self.reference_price = reference_price
        self.status = "open"  # open | contracted | fulfilled | failed
        self.delivered = 0
        self.pending = 0  # quantity in pending contracts
        self.deferrals_used = 0
        self.added_week = added_week

    @property
    def quantity_needed(self) -> int:
        if self.status in ("fulfilled", "failed"):
            return 0
        return max(0, self.quantity - self.delivered - self.pending)

    @property
    def decided(self) -> bool:
        return self.status in ("fulfilled", "failed")

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


class Supplier:
    """Public view of a supplier."""

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
        self.id = id
        self.name = name
        self.categories = categories
        self.list_prices: dict[str, float] = {}  # requirement_id -> current list unit price
        self.lead_time_weeks = lead_time_weeks
        self.rated_reliability = rated_reliability
        self.capacity: dict[str, int] = {}  # category -> claimed capacity still available
        self.active = True
        self.notes = notes
        self.rejected = False  # the buyer rejected this supplier entirely

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
        "patience",
        "persona",
        "rival_push",
        "stress",
        "true_capacity",
        "true_reliability",
    )

    def __init__(self, **kw: Any) -> None:
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


class Round:
    __slots__ = ("buyer_offer", "message", "response", "round", "supplier_price", "tells", "week")

    def __init__(
        self,
        round: int,
        week: int,
        buyer_offer: float | None,
        response: str,
        supplier_price: float | None,
        message: str,
        tells: dict[str, float],
    ) -> None:
        self.round = round
        self.week = week
        self.buyer_offer = buyer_offer
        self.response = response  # accept | counter | walk_away | escalation
        self.supplier_price = supplier_price
        self.message = message
        self.tells = tells

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


class Thread:
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
        self.supplier_id = supplier_id
        self.requirement_id = requirement_id
        # open | agreed | awarded | walked_away | rejected
        self.status = "open"
        self.agreed_price: float | None = None
        self.valid_until_week: int | None = None
        # The supplier's standing counter offer: the buyer may accept it by awarding.
        self.counter_price: float | None = None
        self.counter_valid_until: int | None = None
        self.rounds: list[Round] = []
        self.offers = 0  # buyer offers made (the supplier's time t)

    def awardable_price(self, week: int) -> float | None:
        """The price an award would use now, or None (rule 4: never a buyer-named price)."""
        if self.status == "agreed" and self.valid_until_week is not None:
            return self.agreed_price if week <= self.valid_until_week else None
        if (
            self.status == "open"
            and self.counter_price is not None
            and self.counter_valid_until is not None
            and week <= self.counter_valid_until
        ):
            return self.counter_price
        return None

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


class ThreadHidden:
    """Per-thread hidden pricing snapshot, fixed when the thread opens."""

    __slots__ = (
        "anchor",
        "beta",
        "cost",
        "floor",
        "last_counter",
        "patience",
        "reservation",
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


class Contract:
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
        self.id = id
        self.supplier_id = supplier_id
        self.requirement_id = requirement_id
        self.quantity = quantity
        self.unit_price = unit_price
        self.awarded_week = awarded_week
        self.due_week = due_week
        # pending | delivered | partial | defaulted | cancelled
        self.status = "pending"
        self.delivered_quantity = 0
        self.market_price = market_price
        self.slips = 0
        self.hedge = hedge

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


class PurchaseRequisition:
    __slots__ = ("amount", "id", "matures_week", "raised_week", "requirement_id", "status")

    def __init__(
        self, id: str, requirement_id: str, amount: float, raised_week: int, matures_week: int
    ):
        self.id = id
        self.requirement_id = requirement_id
        self.amount = amount
        self.status = "pending"  # pending | approved | rejected | used
        self.raised_week = raised_week
        self.matures_week = matures_week

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "requirement_id": self.requirement_id,
            "amount": r2(self.amount),
            "status": self.status,
            "raised_week": self.raised_week,
            "matures_week": self.matures_week,
        }


class Event:
    __slots__ = ("kind", "text", "week")

    def __init__(self, week: int, kind: str, text: str) -> None:
        self.week = week
        self.kind = kind
        self.text = text

    def to_dict(self) -> dict[str, Any]:
        return {"week": self.week, "kind": self.kind, "text": self.text}

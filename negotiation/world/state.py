"""The World: everything one episode's suppliers, requirements and market are, public and
hidden, apart from the environment that steps it.

``World.generate(cfg, seed)`` builds a fresh world (the seed decides everything; with a
``world_key`` the seed and the key do, see seeding.py);
``actions``, ``week``, ``scoring``, ``metrics`` and ``observation`` read and change it, and
``ProcurementEnv`` only adds the episode loop around it (reset / step / score / observe).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from ..config import ScenarioConfig
from .catalogue import Catalogue
from .draws import Span
from .entities import (
    Contract,
    Event,
    PurchaseRequisition,
    Requirement,
    Supplier,
    SupplierHidden,
    Thread,
    ThreadHidden,
)
from .market import Market
from .seeding import world_root

if TYPE_CHECKING:
    from ..suppliers.rule import SupplierPolicy

# A supplier's list price per requirement around its list factor (rng.uniform's floats).
_LIST_JITTER = Span(0.97, 1.03)


@dataclass(slots=True)
class Counters:
    """What happened in the episode, counted as it happens (metrics report each one)."""

    deferrals: int = 0
    escalations: int = 0
    hedges: int = 0
    invalid_actions: int = 0
    malformed_actions: int = 0
    total_invalid_penalty: float = 0.0
    # repairs the hard-rule guard made to supplier decisions: one per broken rule per
    # decision (a price rule, or each reason a message was refused), see suppliers/guard.py
    guard_interventions: int = 0
    walk_aways: int = 0
    late_deliveries: int = 0
    partial_deliveries: int = 0
    defaults: int = 0
    rival_bookings: int = 0
    disruptions: int = 0
    negotiation_rounds: int = 0
    prs_raised: int = 0
    rejections: int = 0
    holding_costs: float = 0.0
    supplier_llm_decisions: int = 0
    supplier_llm_parse_failures: int = 0
    supplier_llm_fallbacks: int = 0

    def as_dict(self) -> dict[str, int | float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class World:
    """One episode's state. Not thread-safe; one world per episode."""

    __slots__ = (
        "_item_price",
        "budget_committed",
        "budget_initial",
        "budget_total",
        "catalogue",
        "cfg",
        "contract_cap",
        "contracts",
        "contracts_by_req",
        "counters",
        "dirty",
        "escalations_left",
        "events",
        "hidden",
        "list_base",
        "market",
        "max_rounds",
        "prs",
        "req_by_id",
        "requirements",
        "rng",
        "root",
        "sealed",
        "seed",
        "seller_cost",
        "slot",
        "step_events",
        "step_guard_repairs",
        "step_supplier_actor",
        "steps_taken",
        "style",
        "sup_by_id",
        "supplier_policies",
        "suppliers",
        "th_hidden",
        "threads",
        "true_cap_initial",
        "week",
        "zopa",
    )

    def __init__(
        self,
        cfg: ScenarioConfig,
        seed: int,
        catalogue: Catalogue,
        supplier_policies: dict[str, SupplierPolicy],
        world_key: bytes | None = None,
    ) -> None:
        """An empty world at week 0; ``generate`` fills it."""
        self.cfg = cfg
        self.seed = seed
        # what every draw derives from: the seed, or the seed under the key (seeding.py)
        self.root = world_root(seed, world_key)
        self.sealed = world_key is not None
        self.catalogue = catalogue
        # persona -> who answers for it where it is not its rule persona (suppliers.cast)
        self.supplier_policies = supplier_policies
        self.rng = random.Random(self.root)
        self.week = 0
        self.slot = 0
        self.steps_taken = 0
        self.budget_total = 0.0
        self.budget_committed = 0.0
        self.budget_initial = 0.0
        self.requirements: list[Requirement] = []
        self.req_by_id: dict[str, Requirement] = {}
        self.suppliers: list[Supplier] = []
        self.sup_by_id: dict[str, Supplier] = {}
        self.hidden: dict[str, SupplierHidden] = {}
        self.style: dict[str, tuple[float, ...]] = {}
        self.true_cap_initial: dict[str, dict[str, int]] = {}
        self.list_base: dict[tuple[str, str], float] = {}
        self.threads: dict[tuple[str, str], Thread] = {}
        self.th_hidden: dict[tuple[str, str], ThreadHidden] = {}
        self.contracts: list[Contract] = []
        self.contracts_by_req: dict[str, list[Contract]] = {}
        self.contract_cap: dict[str, int] = {}
        self.prs: list[PurchaseRequisition] = []
        self.events: list[Event] = []
        self.step_events: list[Event] = []
        # who answered for a supplier this step where it was not a rule persona, and why
        # the guard repaired that answer (analyst record only: guard.py's reasons)
        self.step_supplier_actor: str | None = None
        self.step_guard_repairs: list[str] = []
        self.zopa: dict[str, bool] = {}
        self._item_price: dict[str, float] = {}
        self.market = Market([], cfg.market_volatility, cfg.market_seasonality, cfg.weeks)
        self.escalations_left = cfg.escalations
        self.counters = Counters()
        self.max_rounds: int | None = cfg.bilateral_max_rounds if cfg.mode == "bilateral" else None
        self.seller_cost: float | None = None  # bilateral: set by generate_bilateral
        self.dirty = True  # the running score must be recomputed

    @classmethod
    def generate(
        cls,
        cfg: ScenarioConfig,
        seed: int,
        *,
        world_key: bytes | None = None,
        catalogue: Catalogue | None = None,
        supplier_policies: dict[str, SupplierPolicy] | None = None,
    ) -> World:
        """The world of ``cfg`` that ``seed`` draws: the same seed, the same world. With a
        ``world_key`` the hidden draws come from the seed under the key: the same seed and
        key, the same world; without the key, the seed rebuilds nothing (seeding.py)."""
        from .catalogue import catalogue_for
        from .worldgen import generate_arena, generate_bilateral

        world = cls(
            cfg, seed, catalogue or catalogue_for(cfg.items), supplier_policies or {}, world_key
        )
        if cfg.mode == "bilateral":
            generate_bilateral(world)
        else:
            generate_arena(world)
        world.refresh_zopa()
        world.budget_initial = world.budget_total
        world.emit(
            "start",
            f"Episode start: {len(world.requirements)} requirements, "
            f"{len(world.suppliers)} suppliers, {cfg.weeks} weeks.",
        )
        return world

    # ------------------------------------------------------------------ generation
    def add_requirement(self, r: Requirement) -> None:
        self.requirements.append(r)
        self.req_by_id[r.id] = r
        self.contracts_by_req[r.id] = []
        self.market.add_category(r.category)
        for sup in self.suppliers:
            if r.category in sup.categories:
                self._add_list_price(sup, r)
        self.zopa[r.id] = self._zopa_exists(r)

    def add_supplier(self, sup: Supplier, hidden: SupplierHidden, style: tuple[float, ...]) -> None:
        self.suppliers.append(sup)
        self.sup_by_id[sup.id] = sup
        self.hidden[sup.id] = hidden
        self.style[sup.id] = style
        self.true_cap_initial[sup.id] = dict(hidden.true_capacity)
        for r in self.requirements:
            if r.category in sup.categories:
                self._add_list_price(sup, r)

    def refresh_zopa(self) -> None:
        for r in self.requirements:
            self.zopa[r.id] = self._zopa_exists(r)

    def _add_list_price(self, sup: Supplier, r: Requirement) -> None:
        h = self.hidden[sup.id]
        jitter = 1.0 if self.cfg.mode == "bilateral" else _LIST_JITTER.draw(self.rng)
        item_price = self.item_price(r)
        self.list_base[(sup.id, r.id)] = item_price * h.list_factor * jitter
        sup.list_prices[r.id] = self.list_price(sup.id, r)
        sup.touch()

    # ------------------------------------------------------------------ prices
    def item_price(self, r: Requirement) -> float:
        p = self._item_price.get(r.item_key)
        if p is None:
            p = self._item_price[r.item_key] = self.catalogue.by_key[r.item_key].typical_unit_price
        return p

    def list_price(self, sid: str, r: Requirement) -> float:
        h = self.hidden[sid]
        return self.list_base[(sid, r.id)] * self.market.index[r.category] * h.rival_push

    def refresh_list_prices(self) -> None:
        """Every supplier's list prices at this week's market (the weekly close)."""
        req_by_id = self.req_by_id
        for sup in self.suppliers:
            prices = sup.list_prices
            for rid in prices:
                prices[rid] = self.list_price(sup.id, req_by_id[rid])
            sup.touch()

    def reservation_now(self, sid: str, r: Requirement) -> tuple[float, float]:
        """(cost, reservation) the supplier would use for a thread opened now."""
        h = self.hidden[sid]
        cost = self.item_price(r) * h.cost_ratio[r.category] * self.market.index[r.category]
        return cost, cost * (1.0 + h.margin) * h.rival_push

    def _zopa_exists(self, r: Requirement) -> bool:
        for sup in self.suppliers:
            if (
                r.category in sup.categories
                and self.reservation_now(sup.id, r)[1] <= r.ceiling_unit_price
            ):
                return True
        return False

    # ------------------------------------------------------------------ threads, events
    def hidden_thread_now(self, sid: str, r: Requirement) -> ThreadHidden:
        """The hidden pricing a thread opened now would get (nothing is opened)."""
        h = self.hidden[sid]
        cost, res = self.reservation_now(sid, r)
        floor = res * (1.0 + h.floor_margin)
        anchor = max(self.list_price(sid, r), floor * 1.05)
        return ThreadHidden(res, cost, floor, anchor, h.beta, h.patience)

    def open_thread(self, sid: str, r: Requirement) -> Thread:
        th = Thread(sid, r.id)
        self.threads[(sid, r.id)] = th
        self.th_hidden[(sid, r.id)] = self.hidden_thread_now(sid, r)
        return th

    def emit(self, kind: str, text: str, week: int | None = None) -> None:
        ev = Event(self.week if week is None else week, kind, text)
        self.events.append(ev)
        self.step_events.append(ev)

    def mark_dirty(self) -> None:
        self.dirty = True

    @property
    def budget_remaining(self) -> float:
        return self.budget_total - self.budget_committed

    def all_decided(self) -> bool:
        # A plain loop: all() over a generator takes twice as long, on every step.
        for r in self.requirements:  # noqa: SIM110
            if not r.decided:
                return False
        return True

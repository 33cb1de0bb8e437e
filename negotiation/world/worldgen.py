"""Seeded generation of one episode's world (requirements, suppliers, hidden truth)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from ..config import FIELD_PERSONAS, PERSONAS
from ..suppliers.concession import QUARTER_WEEKS
from ..suppliers.field import base_persona
from .catalogue import CatalogueItem
from .draws import Span, WeightedPool, randint, uniforms
from .entities import TELL_NAMES, Requirement, Supplier, SupplierHidden

if TYPE_CHECKING:
    from .state import World

_NAME_A = (
    "Northwind",
    "Bluewater",
    "Ironbridge",
    "Summit",
    "Crescent",
    "Redwood",
    "Harbor",
    "Granite",
    "Silverline",
    "Oakfield",
    "Meridian",
    "Pioneer",
    "Keystone",
    "Lakeshore",
    "Evergreen",
    "Highpoint",
    "Copperleaf",
    "Westgate",
    "Brightstone",
    "Falcon",
    "Cedar",
    "Atlas",
    "Riverbend",
    "Sterling",
    "Beacon",
)
_NAME_B = (
    "Supply Co.",
    "Industrial",
    "Trading",
    "Distribution",
    "Partners",
    "Wholesale",
    "Group",
    "Sourcing",
)

# Reputation notes are drawn with persona-dependent weights from ONE shared pool, so a note
# hints but never identifies a persona.
_NOTES: tuple[tuple[str, dict[str, float]], ...] = (
    (
        "Long-standing vendor with several references.",
        {"cooperative": 3, "hardball": 2, "deceptive": 2, "distressed": 1},
    ),
    ("Known for firm pricing.", {"cooperative": 1, "hardball": 3, "deceptive": 2, "distressed": 1}),
    ("Aggressive sales team.", {"cooperative": 1, "hardball": 2, "deceptive": 3, "distressed": 1}),
    (
        "Recently expanded capacity (self-reported).",
        {"cooperative": 1, "hardball": 1, "deceptive": 3, "distressed": 2},
    ),
    (
        "Flexible on payment terms.",
        {"cooperative": 2, "hardball": 1, "deceptive": 1, "distressed": 3},
    ),
    ("Mixed delivery reviews.", {"cooperative": 1, "hardball": 1, "deceptive": 2, "distressed": 2}),
    ("ISO 9001 certified.", {"cooperative": 2, "hardball": 2, "deceptive": 2, "distressed": 1}),
    ("Fast quote turnaround.", {"cooperative": 2, "hardball": 1, "deceptive": 2, "distressed": 2}),
    (
        "Regional player, growing.",
        {"cooperative": 2, "hardball": 1, "deceptive": 1, "distressed": 2},
    ),
)


# Uniform ranges of the world's draws (draws.Span: the same floats as rng.uniform).
_CEILING = Span(1.0, 1.15)  # a requirement's ceiling over the market reference
_DEADLINE = Span(0.35, 1.0)  # where in the allowed span a deadline falls
_COST_JITTER = Span(0.97, 1.03)  # a supplier's cost ratio per category, around its persona's
_CAPACITY = Span(0.7, 1.8)  # a supplier's true capacity over the category's demand
_STYLE = (Span(-0.15, 0.15),) * len(TELL_NAMES)  # its hidden offset per tell


def nice_quantity(q: int) -> int:
    if q >= 1000:
        return round(q, -2)
    if q >= 100:
        return round(q, -1)
    return max(1, q)


def persona_counts(mix: dict[str, float], n: int) -> list[str]:
    """Largest-remainder split of n suppliers by the mix (stable difficulty across seeds).
    Field personas come after the rule ones, so a rule-only mix splits as it always has."""
    order = PERSONAS + FIELD_PERSONAS
    total = sum(w for w in mix.values() if w > 0)
    items = [(p, mix.get(p, 0.0) / total * n) for p in order if mix.get(p, 0.0) > 0]
    counts = {p: int(x) for p, x in items}
    rest = n - sum(counts.values())
    for p, _ in sorted(items, key=lambda t: t[1] - int(t[1]), reverse=True)[:rest]:
        counts[p] += 1
    out: list[str] = []
    for p in order:
        out.extend([p] * counts.get(p, 0))
    return out


@dataclass(frozen=True, slots=True)
class _PersonaDraws:
    """A base persona's PERSONA_PARAMS digested once, in the order make_hidden draws them
    (uniform spans in runs between the integer draws): every supplier of every reset
    draws from these."""

    first: tuple[Span, ...]  # rated_bias, capacity_claim, margin, floor_margin, list_factor, beta
    patience: tuple[int, int]
    second: tuple[Span, ...]  # reliability, stress, time_weight
    tft_window: tuple[int, int]
    reciprocity: Span
    stall_rounds: tuple[int, int]
    last: tuple[Span, ...]  # quarter_pressure, overstock
    cost_ratio: Span
    insult: float
    insult_walk_prob: float
    dark_prob: float
    stall_walk_prob: float
    notes: WeightedPool[str]  # reputation notes, with this persona's weights


@cache
def _persona_draws(base: str) -> _PersonaDraws:
    from ..suppliers.rule import PERSONA_PARAMS

    pp = PERSONA_PARAMS[base]

    def spans(*names: str) -> tuple[Span, ...]:
        return tuple(Span(*pp[n]) for n in names)  # type: ignore[misc]

    def ints(name: str) -> tuple[int, int]:
        lo, hi = pp[name]  # type: ignore[misc]
        return int(lo), int(hi)

    return _PersonaDraws(
        first=spans(
            "rated_bias", "capacity_claim", "margin", "floor_margin", "list_factor", "beta"
        ),
        patience=ints("patience"),
        second=spans("reliability", "stress", "time_weight"),
        tft_window=ints("tft_window"),
        reciprocity=Span(*pp["reciprocity"]),  # type: ignore[misc]
        stall_rounds=ints("stall_rounds"),
        last=spans("quarter_pressure", "overstock"),
        cost_ratio=Span(*pp["cost_ratio"]),  # type: ignore[misc]
        insult=float(pp["insult"]),  # type: ignore[arg-type]
        insult_walk_prob=float(pp["insult_walk_prob"]),  # type: ignore[arg-type]
        dark_prob=float(pp["dark_prob"]),  # type: ignore[arg-type]
        stall_walk_prob=float(pp["stall_walk_prob"]),  # type: ignore[arg-type]
        notes=WeightedPool([text for text, _ in _NOTES], [w.get(base, 1) for _, w in _NOTES]),
    )


def make_hidden(rng: random.Random, persona: str, deception: float) -> SupplierHidden:
    """A supplier's hidden numbers, drawn from its (base) persona's ranges; ``persona`` stays
    the name the scenario gave (a field persona keeps its field name)."""
    base = base_persona(persona)
    d = _persona_draws(base)
    bias, claim, margin, floor_margin, list_factor, beta = uniforms(rng, d.first)
    patience = randint(rng, *d.patience)
    reliability, stress, time_weight = uniforms(rng, d.second)
    tft_window = randint(rng, *d.tft_window)
    reciprocity = d.reciprocity.draw(rng)
    stall_rounds = randint(rng, *d.stall_rounds)
    quarter_end = randint(rng, 1, QUARTER_WEEKS)
    quarter_pressure, overstock = uniforms(rng, d.last)
    if base == "deceptive":
        bias *= deception
        claim = 1.0 + (claim - 1.0) * deception
    return SupplierHidden(
        persona=persona,
        cost_ratio={},
        margin=margin,
        floor_margin=floor_margin,
        list_factor=list_factor,
        beta=beta,
        patience=patience,
        insult=d.insult,
        insult_walk_prob=d.insult_walk_prob,
        true_reliability=reliability,
        true_capacity={},
        stress=stress,
        rival_push=1.0,
        dark_until=None,
        dark_prob=d.dark_prob,
        capacity_claim_factor=claim,
        time_weight=time_weight,
        tft_window=tft_window,
        reciprocity=reciprocity,
        stall_rounds=stall_rounds,
        stall_walk_prob=d.stall_walk_prob,
        quarter_end=quarter_end,
        quarter_pressure=quarter_pressure,
        overstock=overstock,
    ), bias


def make_requirement(
    world: World, rid: str, item: CatalogueItem, deadline: int, critical: bool, week: int
) -> Requirement:
    rng = world.rng
    qty = nice_quantity(randint(rng, item.order_qty_min, item.order_qty_max))
    ref = item.typical_unit_price * world.market.index.get(item.category, 1.0)
    ceiling = ref * _CEILING.draw(rng)
    return Requirement(
        rid,
        item.name,
        item.key,
        item.category,
        item.unit,
        qty,
        deadline,
        critical,
        ceiling,
        ref,
        week,
    )


def generate_arena(world: World) -> None:
    cfg, rng = world.cfg, world.rng
    cat = world.catalogue
    cats = list(cat.categories)
    rng.shuffle(cats)
    # Requirements: distinct categories first, then repeats.
    req_items: list[CatalogueItem] = []
    for i in range(cfg.n_requirements):
        c = cats[i % len(cats)]
        req_items.append(rng.choice(cat.in_category(c)))
    for c in sorted({i.category for i in req_items}):  # sorted: set order varies by process
        world.market.add_category(c)
    lo = min(cfg.weeks - 1, 2)
    hi = cfg.weeks - 1
    for i, item in enumerate(req_items):
        span = (hi - lo) * (1.0 - cfg.deadline_tightness)
        deadline = lo + round(span * _DEADLINE.draw(rng))
        critical = rng.random() < cfg.critical_fraction
        world.add_requirement(
            make_requirement(world, f"R{i + 1:02d}", item, min(hi, deadline), critical, 0)
        )

    req_cats = sorted({r.category for r in world.requirements})
    demand = demand_by_category(world.requirements)
    roster = cfg.supplier_roster  # named suppliers first (from the scenario's profiles)
    for i, spec in enumerate(roster):
        add_supplier(
            world,
            f"S{i + 1:02d}",
            spec.name,
            spec.persona,
            tuple(spec.categories),
            spec.lead_time_weeks,
            demand=demand,
        )
    n_generated = cfg.n_suppliers - len(roster)
    personas = persona_counts(cfg.persona_mix, n_generated) if n_generated else []
    rng.shuffle(personas)
    names = rng.sample(_NAME_A, k=min(len(_NAME_A), n_generated))
    for i, persona in enumerate(personas):
        primary = req_cats[i % len(req_cats)]
        cats_i = [primary]
        if rng.random() < 0.5 and len(req_cats) > 1:
            other = rng.choice(req_cats)
            if other != primary:
                cats_i.append(other)
        name = f"{names[i % len(names)]} {rng.choice(_NAME_B)}" + (
            "" if i < len(names) else f" {i}"
        )
        add_supplier(
            world,
            f"S{len(roster) + i + 1:02d}",
            name,
            persona,
            tuple(cats_i),
            randint(rng, 1, 2 if base_persona(persona) == "distressed" else 3),
            demand=demand,
        )
    world.budget_total = sum(r.ceiling_unit_price * r.quantity for r in world.requirements) * (
        1.4 - 0.6 * cfg.budget_tightness
    )


def demand_by_category(requirements: list[Requirement]) -> dict[str, int]:
    """Units required per category: what a supplier's capacity in it is drawn around."""
    demand: dict[str, int] = {}
    for r in requirements:
        demand[r.category] = demand.get(r.category, 0) + r.quantity
    return demand


def add_supplier(
    world: World,
    sid: str,
    name: str,
    persona: str,
    categories: tuple[str, ...],
    lead: int,
    reliability: float | None = None,
    *,
    demand: dict[str, int] | None = None,
) -> None:
    """``demand``: demand_by_category(world.requirements), passed in when the caller adds many
    suppliers to one set of requirements."""
    rng = world.rng
    d = _persona_draws(base_persona(persona))
    hidden, bias = make_hidden(rng, persona, world.cfg.deception_level)
    if reliability is not None:
        hidden.true_reliability = reliability
        bias = 0.0
    rated = min(0.99, max(0.3, hidden.true_reliability + bias + rng.gauss(0.0, 0.03)))
    if reliability is not None:
        rated = reliability
    notes = []
    for _ in range(2):
        n = d.notes.pick(rng)
        if n not in notes:
            notes.append(n)
    sup = Supplier(sid, name, categories, lead, rated, notes)
    if demand is None:
        demand = demand_by_category(world.requirements)
    for c in categories:
        hidden.cost_ratio[c] = d.cost_ratio.draw(rng) * _COST_JITTER.draw(rng)
        true_cap = max(1, int((demand.get(c) or 100) * _CAPACITY.draw(rng)))
        hidden.true_capacity[c] = true_cap
        sup.capacity[c] = int(true_cap * hidden.capacity_claim_factor)
    style = tuple(uniforms(rng, _STYLE))
    world.add_supplier(sup, hidden, style)


def generate_bilateral(world: World) -> None:
    """One supplier, one item: buyer budget, seller cost, asking price, max rounds, persona."""
    cfg, rng = world.cfg, world.rng
    cat = world.catalogue
    item = (
        rng.choice(cat.items) if cfg.bilateral_item == "random" else cat.by_key[cfg.bilateral_item]
    )
    world.market.add_category(item.category)
    price = item.typical_unit_price
    qty = nice_quantity(rng.randint(item.order_qty_min, item.order_qty_max))
    deadline = cfg.weeks - 1
    req = Requirement(
        "R01",
        item.name,
        item.key,
        item.category,
        item.unit,
        qty,
        deadline,
        True,
        price * cfg.bilateral_budget_factor,
        price,
        0,
    )
    world.add_requirement(req)
    persona = cfg.bilateral_persona
    hidden, _ = make_hidden(rng, persona, cfg.deception_level)
    hidden.true_reliability = 1.0  # pure bargaining: no delivery risk
    hidden.patience = cfg.bilateral_max_rounds  # the seller's deadline is the public round limit
    hidden.list_factor = cfg.bilateral_ask_factor
    hidden.cost_ratio[item.category] = cfg.bilateral_cost_factor
    hidden.true_capacity[item.category] = qty * 2
    hidden.dark_prob = 0.0
    sup = Supplier(
        "S01", f"{rng.choice(_NAME_A)} {rng.choice(_NAME_B)}", (item.category,), 0, 0.95, []
    )
    sup.capacity[item.category] = qty * 2
    style = tuple(uniforms(rng, _STYLE))
    world.add_supplier(sup, hidden, style)
    world.budget_total = req.ceiling_unit_price * qty
    # The game's terms are public, as in the bargaining literature (the preset's description
    # states them): budget, asking price, round limit and the seller's unit cost.
    world.seller_cost = world.reservation_now(sup.id, req)[0]

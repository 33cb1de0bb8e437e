"""Seeded generation of one episode's world (requirements, suppliers, hidden truth)."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from .catalogue import CatalogueItem
from .concession import QUARTER_WEEKS
from .config import FIELD_PERSONAS, PERSONAS
from .entities import TELL_NAMES, Requirement, Supplier, SupplierHidden
from .field import base_persona

if TYPE_CHECKING:
    from .env import ProcurementEnv

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


def _u(rng: random.Random, rng_pair: tuple[float, float] | float) -> float:
    if isinstance(rng_pair, tuple):
        return rng.uniform(rng_pair[0], rng_pair[1])
    return float(rng_pair)


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


def make_hidden(rng: random.Random, persona: str, deception: float) -> SupplierHidden:
    """A supplier's hidden numbers, drawn from its (base) persona's ranges; ``persona`` stays
    the name the scenario gave (a field persona keeps its field name)."""
    from .suppliers import PERSONA_PARAMS

    base = base_persona(persona)
    pp = PERSONA_PARAMS[base]
    bias = _u(rng, pp["rated_bias"])
    claim = _u(rng, pp["capacity_claim"])
    if base == "deceptive":
        bias *= deception
        claim = 1.0 + (claim - 1.0) * deception
    return SupplierHidden(
        persona=persona,
        cost_ratio={},
        margin=_u(rng, pp["margin"]),
        floor_margin=_u(rng, pp["floor_margin"]),
        list_factor=_u(rng, pp["list_factor"]),
        beta=_u(rng, pp["beta"]),
        patience=_randint(rng, pp["patience"]),
        insult=float(pp["insult"]),  # type: ignore[arg-type]
        insult_walk_prob=float(pp["insult_walk_prob"]),  # type: ignore[arg-type]
        true_reliability=_u(rng, pp["reliability"]),
        true_capacity={},
        stress=_u(rng, pp["stress"]),
        rival_push=1.0,
        dark_until=None,
        dark_prob=float(pp["dark_prob"]),  # type: ignore[arg-type]
        capacity_claim_factor=claim,
        time_weight=_u(rng, pp["time_weight"]),
        tft_window=_randint(rng, pp["tft_window"]),
        reciprocity=_u(rng, pp["reciprocity"]),
        stall_rounds=_randint(rng, pp["stall_rounds"]),
        stall_walk_prob=float(pp["stall_walk_prob"]),  # type: ignore[arg-type]
        quarter_end=rng.randint(1, QUARTER_WEEKS),
        quarter_pressure=_u(rng, pp["quarter_pressure"]),
        overstock=_u(rng, pp["overstock"]),
    ), bias


def _randint(rng: random.Random, bounds: tuple[float, float] | float) -> int:
    lo, hi = bounds  # type: ignore[misc]
    return rng.randint(int(lo), int(hi))


def make_requirement(
    env: ProcurementEnv, rid: str, item: CatalogueItem, deadline: int, critical: bool, week: int
) -> Requirement:
    rng = env.rng
    qty = nice_quantity(rng.randint(item.order_qty_min, item.order_qty_max))
    ref = item.typical_unit_price * env.market.index.get(item.category, 1.0)
    ceiling = ref * rng.uniform(1.0, 1.15)
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


def generate_arena(env: ProcurementEnv) -> None:
    cfg, rng = env.cfg, env.rng
    cat = env.catalogue
    cats = list(cat.categories)
    rng.shuffle(cats)
    # Requirements: distinct categories first, then repeats.
    req_items: list[CatalogueItem] = []
    for i in range(cfg.n_requirements):
        c = cats[i % len(cats)]
        req_items.append(rng.choice(cat.in_category(c)))
    for c in sorted({i.category for i in req_items}):  # sorted: set order varies by process
        env.market.add_category(c)
    lo = min(cfg.weeks - 1, 2)
    hi = cfg.weeks - 1
    for i, item in enumerate(req_items):
        span = (hi - lo) * (1.0 - cfg.deadline_tightness)
        deadline = lo + round(span * rng.uniform(0.35, 1.0))
        critical = rng.random() < cfg.critical_fraction
        env.add_requirement(
            make_requirement(env, f"R{i + 1:02d}", item, min(hi, deadline), critical, 0)
        )

    req_cats = sorted({r.category for r in env.requirements})
    roster = cfg.supplier_roster  # named suppliers first (from the scenario's profiles)
    for i, spec in enumerate(roster):
        add_supplier(
            env,
            f"S{i + 1:02d}",
            spec.name,
            spec.persona,
            tuple(spec.categories),
            spec.lead_time_weeks,
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
            env,
            f"S{len(roster) + i + 1:02d}",
            name,
            persona,
            tuple(cats_i),
            rng.randint(1, 2 if base_persona(persona) == "distressed" else 3),
        )
    env.budget_total = sum(r.ceiling_unit_price * r.quantity for r in env.requirements) * (
        1.4 - 0.6 * cfg.budget_tightness
    )


def add_supplier(
    env: ProcurementEnv,
    sid: str,
    name: str,
    persona: str,
    categories: tuple[str, ...],
    lead: int,
    reliability: float | None = None,
) -> None:
    rng = env.rng
    hidden, bias = make_hidden(rng, persona, env.cfg.deception_level)
    if reliability is not None:
        hidden.true_reliability = reliability
        bias = 0.0
    rated = min(0.99, max(0.3, hidden.true_reliability + bias + rng.gauss(0.0, 0.03)))
    if reliability is not None:
        rated = reliability
    weights = [w.get(base_persona(persona), 1) for _, w in _NOTES]
    notes = []
    for _ in range(2):
        n = rng.choices(_NOTES, weights=weights)[0][0]
        if n not in notes:
            notes.append(n)
    sup = Supplier(sid, name, categories, lead, rated, notes)
    for c in categories:
        hidden.cost_ratio[c] = _u(rng, _cost_ratio(persona)) * rng.uniform(0.97, 1.03)
        demand = sum(r.quantity for r in env.requirements if r.category == c) or 100
        true_cap = max(1, int(demand * rng.uniform(0.7, 1.8)))
        hidden.true_capacity[c] = true_cap
        sup.capacity[c] = int(true_cap * hidden.capacity_claim_factor)
    style = tuple(rng.uniform(-0.15, 0.15) for _ in TELL_NAMES)
    env.add_supplier(sup, hidden, style)


def _cost_ratio(persona: str) -> tuple[float, float]:
    from .suppliers import PERSONA_PARAMS

    return PERSONA_PARAMS[base_persona(persona)]["cost_ratio"]  # type: ignore[return-value]


def generate_bilateral(env: ProcurementEnv) -> None:
    """One supplier, one item: buyer budget, seller cost, asking price, max rounds, persona."""
    cfg, rng = env.cfg, env.rng
    cat = env.catalogue
    item = (
        rng.choice(cat.items) if cfg.bilateral_item == "random" else cat.by_key[cfg.bilateral_item]
    )
    env.market.add_category(item.category)
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
    env.add_requirement(req)
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
    style = tuple(rng.uniform(-0.15, 0.15) for _ in TELL_NAMES)
    env.add_supplier(sup, hidden, style)
    env.budget_total = req.ceiling_unit_price * qty
    # The game's terms are public, as in the bargaining literature (the preset's description
    # states them): budget, asking price, round limit and the seller's unit cost.
    env.seller_cost = env.reservation_now(sup.id, req)[0]

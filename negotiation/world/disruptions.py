"""Disruptions: scheduled ones from the scenario plus random ones at `disruption_rate` per
week; distressed suppliers may also go dark on their own (financial stress)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import DisruptionSpec

if TYPE_CHECKING:
    from .state import World

_RANDOM_KINDS = ("supplier_dark", "budget_cut", "price_spike", "demand_spike", "quality_scandal")


def fire_disruptions(world: World, new_week: int) -> None:
    """Called at a week close; effects are visible at the start of `new_week`."""
    rng = world.rng
    # Suppliers coming back from a temporary dark spell.
    for sup in world.suppliers:
        h = world.hidden[sup.id]
        if not sup.active and h.dark_until is not None and h.dark_until <= new_week:
            sup.active = True
            h.dark_until = None
            world.emit("supplier_back", f"{sup.id} is responding again.", new_week)
    if new_week >= world.cfg.weeks:
        return
    for spec in world.cfg.disruptions:
        if spec.week == new_week:
            apply(world, spec, new_week)
    if world.cfg.disruption_rate > 0 and rng.random() < world.cfg.disruption_rate:
        kind = rng.choice(_RANDOM_KINDS)
        apply(
            world,
            DisruptionSpec(week=new_week, kind=kind, magnitude=rng.uniform(0.1, 0.3)),
            new_week,
        )
    for sup in world.suppliers:
        h = world.hidden[sup.id]
        if sup.active and h.dark_prob > 0 and rng.random() < h.dark_prob * h.stress:
            _go_dark(world, sup.id, rng.choice((0, 2, 3)), new_week, "stopped responding")


def _go_dark(world: World, sid: str, duration: int, week: int, why: str) -> None:
    sup = world.sup_by_id[sid]
    sup.active = False
    world.hidden[sid].dark_until = week + duration if duration > 0 else None
    world.counters.disruptions += 1
    world.emit("supplier_dark", f"{sid} ({sup.name}) {why}.", week)


def apply(world: World, spec: DisruptionSpec, week: int) -> None:
    rng = world.rng
    kind = spec.kind
    if kind == "supplier_dark":
        cands = [s.id for s in world.suppliers if s.active]
        sid = (
            spec.target
            if spec.target in world.sup_by_id
            else (rng.choice(cands) if cands else None)
        )
        if sid is None or not world.sup_by_id[sid].active:
            return
        _go_dark(world, sid, spec.duration, week, "went dark (operations halted)")
    elif kind == "budget_cut":
        cut = spec.magnitude * max(0.0, world.budget_total - world.budget_committed)
        world.budget_total -= cut
        world.counters.disruptions += 1
        world.emit("budget_cut", f"Finance cut the budget by {cut:,.2f}.", week)
    elif kind == "price_spike":
        cats = sorted({r.category for r in world.requirements})
        cat = spec.target if spec.target in world.market.index else rng.choice(cats)
        world.market.apply_spike(cat, max(0.05, spec.magnitude))
        world.counters.disruptions += 1
        world.emit(
            "price_spike", f"Price spike in {cat}: market up about {spec.magnitude:.0%}.", week
        )
    elif kind == "demand_spike":
        _demand_spike(world, spec, week)
    elif kind == "quality_scandal":
        cands = [s.id for s in world.suppliers]
        sid = spec.target if spec.target in world.sup_by_id else rng.choice(cands)
        sup = world.sup_by_id[sid]
        h = world.hidden[sid]
        drop = max(0.15, spec.magnitude)
        h.true_reliability *= 1.0 - drop
        sup.rated_reliability = max(0.05, sup.rated_reliability - drop * 0.8)
        sup.notes.append(f"Quality scandal reported in week {week}.")
        sup.touch()
        world.counters.disruptions += 1
        world.emit("quality_scandal", f"Quality scandal at {sid} ({sup.name}).", week)


def _demand_spike(world: World, spec: DisruptionSpec, week: int) -> None:
    from .worldgen import make_requirement

    rng = world.rng
    deadline = week + 2
    if deadline > world.cfg.weeks - 1:
        return
    served = sorted({c for s in world.suppliers for c in s.categories})
    cat = spec.target if spec.target in served else rng.choice(served)
    item = rng.choice(world.catalogue.in_category(cat))
    rid = f"R{len(world.requirements) + 1:02d}"
    r = make_requirement(world, rid, item, deadline, True, week)
    r.quantity = max(1, r.quantity // 2)
    world.add_requirement(r)
    world.budget_total += r.ceiling_unit_price * r.quantity  # urgent demand comes with funding
    world.counters.disruptions += 1
    world.emit(
        "demand_spike",
        f"Urgent new requirement {rid}: {r.quantity} x {r.name} by week {deadline}.",
        week,
    )

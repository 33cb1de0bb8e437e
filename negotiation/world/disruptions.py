"""Disruptions: scheduled ones from the scenario plus random ones at `disruption_rate` per
week; distressed suppliers may also go dark on their own (financial stress)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import DisruptionSpec

if TYPE_CHECKING:
    from ..env import ProcurementEnv

_RANDOM_KINDS = ("supplier_dark", "budget_cut", "price_spike", "demand_spike", "quality_scandal")


def fire_disruptions(env: ProcurementEnv, new_week: int) -> None:
    """Called at a week close; effects are visible at the start of `new_week`."""
    rng = env.rng
    # Suppliers coming back from a temporary dark spell.
    for sup in env.suppliers:
        h = env.hidden[sup.id]
        if not sup.active and h.dark_until is not None and h.dark_until <= new_week:
            sup.active = True
            h.dark_until = None
            env.emit("supplier_back", f"{sup.id} is responding again.", new_week)
    if new_week >= env.cfg.weeks:
        return
    for spec in env.cfg.disruptions:
        if spec.week == new_week:
            apply(env, spec, new_week)
    if env.cfg.disruption_rate > 0 and rng.random() < env.cfg.disruption_rate:
        kind = rng.choice(_RANDOM_KINDS)
        apply(
            env, DisruptionSpec(week=new_week, kind=kind, magnitude=rng.uniform(0.1, 0.3)), new_week
        )
    for sup in env.suppliers:
        h = env.hidden[sup.id]
        if sup.active and h.dark_prob > 0 and rng.random() < h.dark_prob * h.stress:
            _go_dark(env, sup.id, rng.choice((0, 2, 3)), new_week, "stopped responding")


def _go_dark(env: ProcurementEnv, sid: str, duration: int, week: int, why: str) -> None:
    sup = env.sup_by_id[sid]
    sup.active = False
    env.hidden[sid].dark_until = week + duration if duration > 0 else None
    env.counters["disruptions"] += 1
    env.emit("supplier_dark", f"{sid} ({sup.name}) {why}.", week)


def apply(env: ProcurementEnv, spec: DisruptionSpec, week: int) -> None:
    rng = env.rng
    kind = spec.kind
    if kind == "supplier_dark":
        cands = [s.id for s in env.suppliers if s.active]
        sid = (
            spec.target if spec.target in env.sup_by_id else (rng.choice(cands) if cands else None)
        )
        if sid is None or not env.sup_by_id[sid].active:
            return
        _go_dark(env, sid, spec.duration, week, "went dark (operations halted)")
    elif kind == "budget_cut":
        cut = spec.magnitude * max(0.0, env.budget_total - env.budget_committed)
        env.budget_total -= cut
        env.counters["disruptions"] += 1
        env.emit("budget_cut", f"Finance cut the budget by {cut:,.2f}.", week)
    elif kind == "price_spike":
        cats = sorted({r.category for r in env.requirements})
        cat = spec.target if spec.target in env.market.index else rng.choice(cats)
        env.market.apply_spike(cat, max(0.05, spec.magnitude))
        env.counters["disruptions"] += 1
        env.emit(
            "price_spike", f"Price spike in {cat}: market up about {spec.magnitude:.0%}.", week
        )
    elif kind == "demand_spike":
        _demand_spike(env, spec, week)
    elif kind == "quality_scandal":
        cands = [s.id for s in env.suppliers]
        sid = spec.target if spec.target in env.sup_by_id else rng.choice(cands)
        sup = env.sup_by_id[sid]
        h = env.hidden[sid]
        drop = max(0.15, spec.magnitude)
        h.true_reliability *= 1.0 - drop
        sup.rated_reliability = max(0.05, sup.rated_reliability - drop * 0.8)
        sup.notes.append(f"Quality scandal reported in week {week}.")
        sup.touch()
        env.counters["disruptions"] += 1
        env.emit("quality_scandal", f"Quality scandal at {sid} ({sup.name}).", week)


def _demand_spike(env: ProcurementEnv, spec: DisruptionSpec, week: int) -> None:
    from .worldgen import make_requirement

    rng = env.rng
    deadline = week + 2
    if deadline > env.cfg.weeks - 1:
        return
    served = sorted({c for s in env.suppliers for c in s.categories})
    cat = spec.target if spec.target in served else rng.choice(served)
    item = rng.choice(env.catalogue.in_category(cat))
    rid = f"R{len(env.requirements) + 1:02d}"
    r = make_requirement(env, rid, item, deadline, True, week)
    r.quantity = max(1, r.quantity // 2)
    env.add_requirement(r)
    env.budget_total += r.ceiling_unit_price * r.quantity  # urgent demand comes with funding
    env.counters["disruptions"] += 1
    env.emit(
        "demand_spike",
        f"Urgent new requirement {rid}: {r.quantity} x {r.name} by week {deadline}.",
        week,
    )

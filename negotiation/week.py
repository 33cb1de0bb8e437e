"""The weekly cycle, in the documented order: deliveries, failed deadlines, PRs, market,
disruptions, rival buyer, quote expiry; then the next week starts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .world.disruptions import fire_disruptions
from .world.rival import rival_acts

if TYPE_CHECKING:
    from .env import ProcurementEnv


def close_week(env: ProcurementEnv) -> None:
    w = env.week
    _deliveries(env, w)
    _deadlines(env, w)
    _prs(env, w)
    env.market.step(env.rng, w)
    fire_disruptions(env, w + 1)
    rival_acts(env, w)
    _expire_quotes(env, w + 1)
    env.refresh_list_prices()
    env.week = w + 1
    env.slot = 0
    env.mark_dirty()
    if env.week < env.cfg.weeks:
        env.emit("week_start", f"Week {env.week} begins.", env.week)


def _release(env: ProcurementEnv, c, units: int) -> None:
    env.budget_committed -= units * c.unit_price


def _deliveries(env: ProcurementEnv, w: int) -> None:
    rng = env.rng
    for c in env.contracts:
        if c.status != "pending" or c.due_week > w:
            continue
        r = env.req_by_id[c.requirement_id]
        sup = env.sup_by_id[c.supplier_id]
        h = env.hidden[c.supplier_id]
        cap = env.contract_cap[c.id]
        if not sup.active:
            delivered = 0
            c.status = "defaulted"
            env.counters["defaults"] += 1
            env.emit("default", f"{c.id} from {sup.id} was not delivered: supplier unreachable.")
        elif rng.random() < h.true_reliability:
            delivered = cap
            c.status = "delivered" if cap >= c.quantity else "partial"
        elif c.slips < 2 and rng.random() < 0.5:
            c.slips += 1
            c.due_week += 1
            env.counters["late_deliveries"] += 1
            env.emit("late_delivery", f"{c.id} from {sup.id} slipped to week {c.due_week}.")
            continue
        else:
            delivered = min(cap, int(c.quantity * rng.uniform(0.3, 0.9)))
            c.status = "partial"
        if c.status == "partial":
            env.counters["partial_deliveries"] += 1
            env.emit(
                "partial_delivery", f"{c.id} from {sup.id}: {delivered} of {c.quantity} delivered."
            )
        elif c.status == "delivered":
            env.emit("delivery", f"{c.id} delivered in full ({c.quantity} x {r.name}).")
        c.delivered_quantity = delivered
        r.pending -= c.quantity
        r.delivered += delivered
        _release(env, c, c.quantity - delivered)
        if not r.decided:
            if r.delivered >= r.quantity:
                r.status = "fulfilled"
                env.emit("fulfilled", f"{r.id} ({r.name}) fulfilled on time.")
            else:
                r.status = "contracted" if r.quantity_needed == 0 else "open"


def _deadlines(env: ProcurementEnv, w: int) -> None:
    for r in env.requirements:
        if r.decided or r.deadline_week > w:
            continue
        r.status = "failed"
        env.emit("failed", f"{r.id} ({r.name}) missed its deadline (week {r.deadline_week}).")
        for c in env.contracts_by_req[r.id]:
            if c.status == "pending":
                c.status = "cancelled"
                r.pending -= c.quantity
                _release(env, c, c.quantity)
                env.hidden[c.supplier_id].true_capacity[r.category] += c.quantity
        for pr in env.prs:
            if pr.requirement_id == r.id and pr.status in ("pending", "approved"):
                pr.status = "rejected"


def _prs(env: ProcurementEnv, w: int) -> None:
    for pr in env.prs:
        if pr.status != "pending" or pr.matures_week > w:
            continue
        if pr.amount <= env.budget_remaining + 1e-6:
            pr.status = "approved"
            env.emit("pr_approved", f"{pr.id} approved ({pr.amount:,.2f}).")
        else:
            pr.status = "rejected"
            env.emit("pr_rejected", f"{pr.id} rejected: exceeds the remaining budget.")


def _expire_quotes(env: ProcurementEnv, new_week: int) -> None:
    for th in env.threads.values():
        if (
            th.status == "agreed"
            and th.valid_until_week is not None
            and th.valid_until_week < new_week
        ):
            th.status = "open"
            th.agreed_price = None
            th.valid_until_week = None
            env.emit(
                "quote_expired", f"Agreement {th.supplier_id}/{th.requirement_id} expired unused."
            )
        elif th.counter_valid_until is not None and th.counter_valid_until < new_week:
            th.counter_price = None
            th.counter_valid_until = None

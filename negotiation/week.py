"""The weekly cycle, in the documented order: deliveries, failed deadlines, PRs, market,
disruptions, rival buyer, quote expiry; then the next week starts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .world.disruptions import fire_disruptions
from .world.rival import rival_acts

if TYPE_CHECKING:
    from .world.state import World


def close_week(world: World) -> None:
    w = world.week
    _deliveries(world, w)
    _deadlines(world, w)
    _prs(world, w)
    world.market.step(world.rng, w)
    fire_disruptions(world, w + 1)
    rival_acts(world, w)
    _expire_quotes(world, w + 1)
    world.refresh_list_prices()
    world.week = w + 1
    world.slot = 0
    world.mark_dirty()
    if world.week < world.cfg.weeks:
        world.emit("week_start", f"Week {world.week} begins.", world.week)


def _release(world: World, c, units: int) -> None:
    world.budget_committed -= units * c.unit_price


def _deliveries(world: World, w: int) -> None:
    rng = world.rng
    for c in world.contracts:
        if c.status != "pending" or c.due_week > w:
            continue
        r = world.req_by_id[c.requirement_id]
        sup = world.sup_by_id[c.supplier_id]
        h = world.hidden[c.supplier_id]
        cap = world.contract_cap[c.id]
        if not sup.active:
            delivered = 0
            c.status = "defaulted"
            world.counters.defaults += 1
            world.emit("default", f"{c.id} from {sup.id} was not delivered: supplier unreachable.")
        elif rng.random() < h.true_reliability:
            delivered = cap
            c.status = "delivered" if cap >= c.quantity else "partial"
        elif c.slips < 2 and rng.random() < 0.5:
            c.slips += 1
            c.due_week += 1
            world.counters.late_deliveries += 1
            world.emit("late_delivery", f"{c.id} from {sup.id} slipped to week {c.due_week}.")
            continue
        else:
            delivered = min(cap, int(c.quantity * rng.uniform(0.3, 0.9)))
            c.status = "partial"
        if c.status == "partial":
            world.counters.partial_deliveries += 1
            world.emit(
                "partial_delivery", f"{c.id} from {sup.id}: {delivered} of {c.quantity} delivered."
            )
        elif c.status == "delivered":
            world.emit("delivery", f"{c.id} delivered in full ({c.quantity} x {r.name}).")
        c.delivered_quantity = delivered
        r.pending -= c.quantity
        r.delivered += delivered
        _release(world, c, c.quantity - delivered)
        if not r.decided:
            if r.delivered >= r.quantity:
                r.status = "fulfilled"
                world.emit("fulfilled", f"{r.id} ({r.name}) fulfilled on time.")
            else:
                r.status = "contracted" if r.quantity_needed == 0 else "open"


def _deadlines(world: World, w: int) -> None:
    for r in world.requirements:
        if r.decided or r.deadline_week > w:
            continue
        r.status = "failed"
        world.emit("failed", f"{r.id} ({r.name}) missed its deadline (week {r.deadline_week}).")
        for c in world.contracts_by_req[r.id]:
            if c.status == "pending":
                c.status = "cancelled"
                r.pending -= c.quantity
                _release(world, c, c.quantity)
                world.hidden[c.supplier_id].true_capacity[r.category] += c.quantity
        for pr in world.prs:
            if pr.requirement_id == r.id and pr.status in ("pending", "approved"):
                pr.status = "rejected"


def _prs(world: World, w: int) -> None:
    for pr in world.prs:
        if pr.status != "pending" or pr.matures_week > w:
            continue
        if pr.amount <= world.budget_remaining + 1e-6:
            pr.status = "approved"
            world.emit("pr_approved", f"{pr.id} approved ({pr.amount:,.2f}).")
        else:
            pr.status = "rejected"
            world.emit("pr_rejected", f"{pr.id} rejected: exceeds the remaining budget.")


def _expire_quotes(world: World, new_week: int) -> None:
    for th in world.threads.values():
        if (
            th.status == "agreed"
            and th.valid_until_week is not None
            and th.valid_until_week < new_week
        ):
            th.status = "open"
            th.agreed_price = None
            th.valid_until_week = None
            world.emit(
                "quote_expired", f"Agreement {th.supplier_id}/{th.requirement_id} expired unused."
            )
        elif th.counter_valid_until is not None and th.counter_valid_until < new_week:
            th.counter_price = None
            th.counter_valid_until = None

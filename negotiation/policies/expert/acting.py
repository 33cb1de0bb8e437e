"""The expert's actions: offers, awards and hedges, purchase requisitions, escalations.

Every builder returns a valid action for the observation it is given, or None when the
move must wait (a PR pending, the budget held for other requirements); the planned moves
come with the reason for them, from the numbers that decided them: (action, why)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...observation import Observation
from ...world.records import LIVE_PR, pr_room
from ..base import Why, has_pr, ledger, pr_headroom, pr_missing

if TYPE_CHECKING:
    from .planning import Plan

DEFER: dict[str, Any] = {"action_type": "defer"}
Move = tuple[dict[str, Any], Why]  # an action and why


def negotiate(sid: str, rid: str, price: float) -> dict[str, Any]:
    return {"action_type": "negotiate", "supplier_id": sid, "requirement_id": rid, "price": price}


def award(sid: str, rid: str, qty: int) -> dict[str, Any]:
    return {"action_type": "award_contract", "supplier_id": sid, "requirement_id": rid,
            "quantity": qty}  # fmt: skip


def pending_count(obs: Observation, rid: str) -> int:
    return sum(
        1 for p in obs.purchase_requisitions if p.requirement_id == rid and p.status == "pending"
    )


def escalatable(obs: Observation, rid: str) -> bool:
    """Escalation approves the requirement's oldest pending PR, which must still fit the
    remaining budget (else the action is invalid)."""
    for p in obs.purchase_requisitions:
        if p.requirement_id == rid and p.status == "pending":
            return p.amount <= obs.budget_remaining
    return False


def _pr_amount(obs: Observation, r) -> float:
    """The largest PR the guardrail still allows (a cent under it), within the budget; not
    positive when none can be raised."""
    room = pr_room(obs.pr_guardrail * 0.999, r, obs.purchase_requisitions)
    return round(round(min(room, obs.budget_remaining), 2) - 0.01, 2)


def raise_prs(obs: Observation, reqs) -> Move | None:
    """Purchase requisitions ahead of time for every requirement that may need one: where
    its PRs, once the pending ones are approved, would not cover 80 % of its cost at the
    ceiling, and the guardrail leaves room for that."""
    book, thr = ledger(obs), obs.pr_threshold
    for r in reqs:
        est = r.ceiling_unit_price * r.quantity_needed
        if not book.needed(r.id, est, thr):
            continue
        live = book.headroom(r.id, LIVE_PR)
        if live >= 0.8 * est:
            continue
        amount = _pr_amount(obs, r)
        if amount > 0.0 and live + amount >= 0.8 * est and pending_count(obs, r.id) < 2:
            why = f"PR {amount:.2f} ahead for {r.id}: up to {est:.2f} at the ceiling > {thr:.2f} "
            why += f"threshold; PR cover {max(0.0, live):.2f} < 80 %"
            return {"action_type": "raise_pr", "requirement_id": r.id, "amount": amount}, why
    return None


def escalate_or_defer(obs: Observation, reqs, idle: str) -> Move:
    """Escalate a pending PR whose deadline is two weeks away or less, else defer
    (``idle``: why there is nothing else to do)."""
    for r in reqs:
        if obs.escalations_left > 0 and escalatable(obs, r.id) and r.deadline_week - obs.week <= 2:
            why = f"escalate {r.id}'s pending PR: deadline week {r.deadline_week}, "
            why += f"{obs.escalations_left} escalation(s) left"
            return {"action_type": "escalate", "requirement_id": r.id}, why
    return DEFER, idle


def close(obs: Observation, p: Plan, others: float) -> Move | None:
    """Award the plan's quote (as a hedge with its partner when both are ready; escalating
    or raising the PR it needs), or None. ``others``: budget held for the other plans."""
    r, s = p.r, p.s
    week = obs.week
    qty = min(r.quantity_needed, s.capacity.get(r.category, 0))
    if p.eff_cap < qty and p.second:
        qty = max(1, p.eff_cap)
    if qty <= 0 or p.ap is None:
        return None
    cost = qty * p.ap
    if cost > obs.budget_remaining:
        qty = int(obs.budget_remaining / p.ap)
        if qty <= 0:
            return None
        cost = qty * p.ap
    urgent = p.target <= week
    if cost > obs.budget_remaining - 0.6 * others and not urgent and not r.critical:
        return None
    hedge = _hedge(obs, p, qty, cost)
    if hedge is not None:
        why = f"hedge {r.id}: {qty} from {s.id} at {p.ap:.2f}, the rest from "
        why += f"{p.partner.s.id} at {p.partner.ap:.2f} (credible capacity {p.eff_cap} "
        why += f"< {r.quantity_needed})"
        return hedge, why
    if pr_missing(obs, r, cost):
        last = r.deadline_week - s.lead_time_weeks
        if (
            has_pr(obs, r.id, cost, LIVE_PR)
            and escalatable(obs, r.id)
            and obs.escalations_left > 0
            and last <= week + 1
        ):
            why = f"escalate {r.id}'s pending PR: award {qty} x {p.ap:.2f} needs it, "
            why += f"last award week {last}"
            return {"action_type": "escalate", "requirement_id": r.id}, why
        amount = _pr_amount(obs, r)
        if pr_headroom(obs, r.id, LIVE_PR) + max(0.0, amount) >= cost:
            if not has_pr(obs, r.id, cost, LIVE_PR) and pending_count(obs, r.id) < 2:
                why = f"raise PR {amount:.2f} on {r.id}: award {qty} x {p.ap:.2f} = {cost:.2f} "
                why += "needs PR cover"
                return {"action_type": "raise_pr", "requirement_id": r.id, "amount": amount}, why
            return None
        # No PR cover can reach the whole award at this price (the guardrail caps a
        # requirement's PRs at 1.1 x ceiling x quantity). Until the award week the price may
        # still fall; then buy what the approved PRs cover rather than let it fail.
        covered = int(pr_headroom(obs, r.id) / p.ap) if urgent else 0
        if covered < 1:
            return None
        why = f"award {covered} of {qty} x {p.ap:.2f} from {s.id}: approved PRs cover no more"
        return award(s.id, r.id, covered), why
    ap = p.ap
    return award(s.id, r.id, qty), lambda: f"award {qty} x {ap:.2f} from {s.id} for {r.id}"


def _hedge(obs: Observation, p: Plan, qty: int, cost: float) -> dict[str, Any] | None:
    """Both parts of a split requirement ready: one hedge places both contracts (one slot)."""
    q, r = p.partner, p.r
    if q is None or q.ap is None:
        return None
    if not (q.agreed or q.budget < 1 or q.want < 1 or q.target <= obs.week):
        return None
    need = r.quantity_needed
    q2 = need - qty
    split = round(qty / need, 6)
    cost2 = cost + q2 * q.ap
    if (
        1 <= q2 <= q.s.capacity.get(r.category, 0)
        and round(need * split) == qty
        and cost2 <= obs.budget_remaining
        and not pr_missing(obs, r, cost2)
    ):
        return {"action_type": "hedge", "requirement_id": r.id, "supplier_id": p.s.id,
                "hedge_supplier_id": q.s.id, "split": split}  # fmt: skip
    return None

"""Baseline buyer policies: do_nothing, always_accept, greedy_lowball.

The naive baselines must behave as their names say and never make a move they cannot pay
for, so a leaderboard shows what naive play really earns (not a pile of invalid actions):
every award respects the requirement's ceiling price, the remaining budget, the supplier's
capacity and the purchase-requisition rule (an approved PR covering the cost above the
threshold). Awards always use the engine's price: the agreed price, or the supplier's
standing counter, which an award accepts (DESIGN.md, rule 4).
"""

from __future__ import annotations

import math
from typing import Any

from ..observation import Observation
from ..world.records import LIVE_PR, pr_room
from .base import Policy, candidates, clip, has_pr, open_requirements, pr_headroom, pr_missing
from .params import GreedyLowballParams

_EPS = 1e-6  # the engine's own tolerance on budget and PR amounts


class DoNothingPolicy(Policy):
    """Defers every week (the 'wait' action): the anti-gaming floor."""

    name = "do_nothing"

    def act(self, obs: Observation) -> dict[str, Any]:
        return self.decide({"action_type": "defer"}, "never acts: the do-nothing baseline")


def _floor_cents(x: float) -> float:
    return math.floor(x * 100 + 1e-9) / 100


def affordable_qty(obs: Observation, r, s, price: float) -> int:
    """Units of r the buyer can pay for at ``price`` from s: none above its ceiling, within
    the supplier's capacity and the remaining budget."""
    if price <= 0 or price > r.ceiling_unit_price + 1e-9:
        return 0
    qty = min(r.quantity_needed, s.capacity.get(r.category, 0))
    return max(0, min(qty, int((obs.budget_remaining + _EPS) / price)))


def best_quote(obs: Observation, r, suppliers) -> tuple[float, Any, int] | None:
    """The cheapest price on the table for r that the buyer can afford: (price, supplier,
    quantity), from agreed prices and unexpired standing counters."""
    best = None
    for s in suppliers:
        th = obs.threads.get((s.id, r.id))
        price = None if th is None else th.awardable_price(obs.week)
        if price is None:
            continue
        qty = affordable_qty(obs, r, s, price)
        if qty > 0 and (best is None or price < best[0]):
            best = (price, s, qty)
    return best


def _close_best_quote(obs: Observation, r) -> tuple[bool, dict[str, Any] | None, str]:
    """(an affordable quote is on the table, the action that takes it, why): the action is
    None while the award waits for a PR, and the caller serves other requirements
    meanwhile."""
    sups = [s for s in candidates(obs, r) if s.capacity.get(r.category, 0) > 0]
    best = best_quote(obs, r, sups)
    if best is None:
        return False, None, ""
    price, s, qty = best
    action = close_quote(obs, r, s, price, qty)
    return True, action, close_reason(r, s, price, qty, action, "cheapest affordable quote")


def _pending_prs(obs: Observation, rid: str) -> int:
    return sum(
        1 for p in obs.purchase_requisitions if p.requirement_id == rid and p.status == "pending"
    )


def close_quote(obs: Observation, r, s, price: float, qty: int) -> dict[str, Any] | None:
    """Award qty at the engine's price, or raise the PR the award needs; None while a PR is
    pending (or none can be raised), so the caller moves on to other work."""
    cost = qty * price
    if not pr_missing(obs, r, cost):
        return {
            "action_type": "award_contract",
            "supplier_id": s.id,
            "requirement_id": r.id,
            "quantity": qty,
        }
    if has_pr(obs, r.id, cost, LIVE_PR) or _pending_prs(obs, r.id) >= 2:
        return None
    # The largest PR the rules allow, so it still covers a later (lower or equal) quote.
    room = pr_room(obs.pr_guardrail, r, obs.purchase_requisitions)
    amount = _floor_cents(min(room, obs.budget_remaining))
    if amount <= 0.0 or pr_headroom(obs, r.id, LIVE_PR) + amount < cost:
        return None
    return {"action_type": "raise_pr", "requirement_id": r.id, "amount": amount}


def close_reason(r, s, price: float, qty: int, action: dict[str, Any] | None, why: str) -> str:
    """Why close_quote chose its action for this quote (``why``: why the quote is taken)."""
    if action is None:
        return ""
    if action["action_type"] == "raise_pr":
        return (
            f"raise PR {action['amount']:.2f} on {r.id}: award {qty} x {price:.2f} "
            f"= {qty * price:.2f} needs PR cover"
        )
    return f"award {qty} x {price:.2f} from {s.id} for {r.id}: {why}"


def negotiate(s, r, price: float) -> dict[str, Any]:
    return {
        "action_type": "negotiate",
        "supplier_id": s.id,
        "requirement_id": r.id,
        "price": price,
    }


def _talkable(obs: Observation, r) -> list:
    """Suppliers with capacity for r whose thread is new or open (an agreed thread cannot be
    renegotiated), cheapest list price first."""
    out = []
    for s in candidates(obs, r):
        th = obs.threads.get((s.id, r.id))
        if s.capacity.get(r.category, 0) > 0 and (th is None or th.status == "open"):
            out.append(s)
    return sorted(out, key=lambda s: (s.list_prices[r.id], s.id))


class AlwaysAcceptPolicy(Policy):
    """Takes the supplier's price whenever it can pay it: awards the cheapest affordable
    agreed price or standing counter at once; otherwise offers what it can afford (the list
    price, capped at its ceiling and budget) to the cheapest supplier. No bargaining."""

    name = "always_accept"

    def act(self, obs: Observation) -> dict[str, Any]:
        waiting = []
        for r in open_requirements(obs):
            quoted, action, why = _close_best_quote(obs, r)
            if quoted:
                if action is not None:
                    return self.decide(action, why)
                waiting.append(r.id)
                continue  # waiting for a PR: serve the other requirements meanwhile
            for s in _talkable(obs, r):
                qty = min(r.quantity_needed, s.capacity.get(r.category, 0))
                list_price = s.list_prices[r.id]
                offer = _floor_cents(
                    min(list_price, r.ceiling_unit_price, obs.budget_remaining / qty)
                )
                if offer > 0:
                    if offer == _floor_cents(list_price):
                        bound = f"its list price {list_price:.2f}"
                    elif offer == _floor_cents(r.ceiling_unit_price):
                        bound = f"list {list_price:.2f} capped at the ceiling"
                    else:
                        bound = f"list {list_price:.2f} capped by the budget"
                    return self.decide(
                        negotiate(s, r, offer), f"offer {offer:.2f} to {s.id} for {r.id}: {bound}"
                    )
        return self.decide({"action_type": "defer"}, _idle_reason(waiting))


class GreedyLowballPolicy(Policy):
    """Offers every supplier a fixed fraction of its list price; once each has answered,
    awards the best affordable quote (agreed or standing counter). While none is
    affordable it repeats the lowball to the supplier with the lowest counter, whose
    time-dependent ask keeps falling."""

    name = "greedy_lowball"
    Params = GreedyLowballParams

    def __init__(
        self, seed: int = 0, fraction: float = GreedyLowballParams().fraction, **params: Any
    ) -> None:
        super().__init__(seed, **params)
        self.fraction = float(fraction)

    def act(self, obs: Observation) -> dict[str, Any]:
        waiting = []
        for r in open_requirements(obs):
            talk = _talkable(obs, r)
            unasked = [s for s in talk if (s.id, r.id) not in obs.threads]
            if unasked:
                return self._lowball(unasked[0], r, "first offer to each supplier")
            quoted, action, why = _close_best_quote(obs, r)
            if quoted:
                if action is not None:
                    return self.decide(action, why)
                waiting.append(r.id)
                continue
            if talk:
                s = min(talk, key=lambda s: _standing(obs, s, r))
                counter = _standing(obs, s, r)[0]
                why = f"no affordable quote; lowest counter {counter:.2f}"
                return self._lowball(s, r, why if counter < math.inf else "no affordable quote")
        return self.decide({"action_type": "defer"}, _idle_reason(waiting))

    def _lowball(self, s, r, why: str) -> dict[str, Any]:
        lp = s.list_prices[r.id]
        price = _floor_cents(lp * self.fraction)
        return self.decide(
            negotiate(s, r, price),
            f"lowball {price:.2f} = {self.fraction:g} x list {lp:.2f}: {why}",
        )


def _idle_reason(waiting: list[str]) -> str:
    """Why a baseline defers: awards waiting for their PRs, or nothing left to do."""
    if waiting:
        return clip("awards need PR cover not yet approved: " + ", ".join(waiting))
    return "nothing to do: no quote to take, no supplier left to ask"


def _standing(obs: Observation, s, r) -> tuple[float, str]:
    th = obs.threads.get((s.id, r.id))
    price = None if th is None else th.counter_price
    return (math.inf if price is None else price, s.id)

"""Scripted buyers: short, readable negotiation scripts that serve as honest baselines.

They read the public observation only (never the environment) and keep no state between
calls: everything a script needs (its own past offers, the supplier's counters) is in the
thread's public rounds, so a run can resume from any step. They play bilateral and arena
scenarios alike: per open requirement (earliest deadline first, critical first on a tie) a
script talks to ``max_suppliers`` suppliers at once (default one: the cheapest list price,
the next when it walks away), makes one offer per action, and awards with the baselines'
helpers (simple.py), which respect the ceiling, the budget, the capacity and the
purchase-requisition rule.

- ``script_lowball_award``: "lowball and wait", the strategy the rule suppliers' stall
  rule (concession.py) is meant to defeat: offer ``opening`` (0.61) x reference price and
  repeat that same lowball every round while the standing counter is unaffordable (above
  the ceiling or the budget); award the best affordable standing counter (or agreed
  price) as soon as there is one. When time runs out on a still unaffordable counter it
  stops offering and makes no award; a supplier may walk away from it first.
- ``script_lowball_final``: the same, plus one final offer at the lowest affordable
  standing counter / 1.02 before awarding (none once the thread's time is up).
- ``script_concede_<n>pct``: open at 0.6 x reference, raise by ``rate`` x reference each
  round; award once a counter is at or below the next offer, or when time runs out.
- ``script_tit_for_tat``: open at 0.6 x reference, then concede the same relative amount
  the supplier conceded in its last counter; award once the gap is under 1 % or time
  runs out.

"Time runs out" on a thread when the supplier's public round limit is reached (bilateral:
``obs.max_rounds``), or in the arena when the week is the last one that still lets the
supplier deliver by the deadline (deadline - lead time, minus the PR lead time when the
award will need a purchase requisition). Offers never go above the requirement's ceiling,
since an agreement the buyer cannot pay for is worth nothing.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, create_model

from ..observation import Observation
from .base import Policy, candidates, clip, open_requirements, pr_missing
from .params import (
    ConcedeParams,
    LowballAwardParams,
    LowballFinalParams,
    ScriptParams,
    TitForTatParams,
)
from .simple import affordable_qty, best_quote, close_quote, close_reason, negotiate

DEFER = {"action_type": "defer"}


def _cents(x: float) -> float:
    return round(x + 1e-9, 2)


def _offers(th) -> list[float]:
    """The buyer's own offers in a thread, oldest first."""
    return [rd.buyer_offer for rd in th.rounds if rd.buyer_offer is not None]


def _counters(th) -> list[float]:
    """The supplier's counter prices in a thread, oldest first."""
    return [rd.supplier_price for rd in th.rounds if rd.response == "counter" and rd.supplier_price]


class ScriptPolicy(Policy):
    """Per-thread mechanics shared by the scripts. A subclass says what a thread's next
    offer is (``next_offer``) and when its standing counter is good enough to award
    (``ready``); the base opens threads, awards the best ready quote and otherwise makes
    the next offer on the thread with the fewest offers so far."""

    name = "script"
    Params = ScriptParams

    def __init__(self, seed: int = 0, **params: Any) -> None:
        super().__init__(seed, **params)
        self.cfg = self.Params.model_validate(params)

    # --- what a script decides ---------------------------------------------------------
    def opening_offer(self, obs: Observation, r) -> float:
        return _cents(min(self.cfg.opening * r.reference_price, r.ceiling_unit_price))

    def next_offer(self, obs: Observation, r, s, th) -> float | None:
        """The next offer on an open thread with a standing counter; None: make none."""
        return None

    def offer_reason(self, obs: Observation, r, s, th, offer: float) -> str:
        """Why next_offer made ``offer`` on this thread."""
        return f"offer {offer:.2f} to {s.id}; counter {th.counter_price:.2f}"

    def ready(self, obs: Observation, r, s, th, counter: float) -> bool:
        """Whether the standing counter ``counter`` of an open thread may be awarded."""
        return True

    def ready_reason(self, obs: Observation, r, s, th, counter: float) -> str:
        """Why the quote ``counter`` was ready to award (ready() said so)."""
        return "cheapest affordable counter"

    def close(self, obs: Observation, r, quotes: list) -> tuple[bool, dict[str, Any] | None, str]:
        """(closing, action, why) for the ready suppliers ``quotes``: award the best
        affordable quote, the action None while its PR is pending; closing False when none
        is affordable, and the script bargains on."""
        best = best_quote(obs, r, quotes)
        if best is None:
            return False, None, ""
        price, s, qty = best
        action = close_quote(obs, r, s, price, qty)
        th = obs.threads[(s.id, r.id)]
        ready = "agreed" if th.status == "agreed" else self.ready_reason(obs, r, s, th, price)
        return True, action, close_reason(r, s, price, qty, action, ready)

    # --- the shared loop ---------------------------------------------------------------
    def act(self, obs: Observation) -> dict[str, Any]:
        reqs = sorted(open_requirements(obs), key=lambda r: (r.deadline_week, not r.critical))
        idle = []
        for r in reqs:
            action, why = self._serve(obs, r)
            if action is not None:
                return self.decide(action, why)
            idle.append(why)
        if not idle:
            return self.decide(DEFER, "every requirement is decided")
        return self.decide(DEFER, clip("nothing to do: " + "; ".join(idle)))

    def _serve(self, obs: Observation, r) -> tuple[dict[str, Any] | None, str]:
        """(the next action on r, why); the action None with why r waits."""
        sups = sorted(
            (s for s in candidates(obs, r) if s.capacity.get(r.category, 0) > 0),
            key=lambda s: (s.list_prices[r.id], s.id),
        )
        live = [s for s in sups if (s.id, r.id) in obs.threads]
        new = [s for s in sups if (s.id, r.id) not in obs.threads]
        if new and len(live) < self.cfg.max_suppliers:
            offer = self.opening_offer(obs, r)
            why = f"opening offer {offer:.2f} to {new[0].id} for {r.id}: "
            why += f"{self.cfg.opening:g} x ref {r.reference_price:.2f}"
            if offer < _cents(self.cfg.opening * r.reference_price):
                why += ", capped at the ceiling"
            return negotiate(new[0], r, offer), why
        quotes, pushes = [], []
        for s in live:
            th = obs.threads[(s.id, r.id)]
            price = th.awardable_price(obs.week)
            if th.status == "open" and th.counter_price is not None:
                pushes.append(s)  # (an expired counter is asked again)
            if price is not None and (th.status == "agreed" or self.ready(obs, r, s, th, price)):
                quotes.append(s)
        if quotes:
            closing, action, why = self.close(obs, r, quotes)
            if closing:
                return action, why or f"{r.id}: award needs PR cover not yet approved"
        for s in sorted(pushes, key=lambda s: obs.threads[(s.id, r.id)].offers):
            th = obs.threads[(s.id, r.id)]
            offer = self.next_offer(obs, r, s, th)
            if offer is not None:
                return negotiate(s, r, offer), self.offer_reason(obs, r, s, th, offer)
        if not sups:
            return None, f"{r.id}: no supplier left"
        return None, f"{r.id}: no offer to make"

    def time_out(self, obs: Observation, r, s, th) -> bool:
        """The thread's time is up: award now or lose the chance (see module docstring)."""
        if obs.max_rounds is not None:
            return th.offers >= obs.max_rounds
        price = th.counter_price or 0.0
        cost = price * min(r.quantity_needed, s.capacity.get(r.category, 0))
        pr_wait = 0
        if pr_missing(obs, r, cost):
            pr_wait = obs.pr_lead_weeks
        return obs.week >= r.deadline_week - s.lead_time_weeks - pr_wait


class LowballAwardPolicy(ScriptPolicy):
    """Lowball and wait: offer 0.61 x reference and repeat that same offer while the
    standing counter is unaffordable; award the best affordable counter at once."""

    name = "script_lowball_award"
    Params = LowballAwardParams

    def next_offer(self, obs: Observation, r, s, th) -> float | None:
        if self.time_out(obs, r, s, th):
            return None  # too late to wait any longer: no offer, and no award it can pay
        return self.opening_offer(obs, r)

    def offer_reason(self, obs: Observation, r, s, th, offer: float) -> str:
        return (
            f"repeat lowball {offer:.2f} to {s.id} for {r.id}: "
            f"no affordable counter yet ({th.counter_price:.2f})"
        )


class LowballFinalPolicy(LowballAwardPolicy):
    """The lowball-and-wait script plus one final offer (lowest affordable standing counter
    / 1.02, in cents) to that supplier before awarding the best affordable quote."""

    name = "script_lowball_final"
    Params = LowballFinalParams

    def close(self, obs: Observation, r, quotes: list) -> tuple[bool, dict[str, Any] | None, str]:
        best = best_quote(obs, r, quotes)
        if best is None:
            return False, None, ""
        s = best[1]
        th = obs.threads[(s.id, r.id)]
        lowball = self.opening_offer(obs, r)
        made_final = any(o != lowball for o in _offers(th))
        if th.status == "open" and not made_final and not self.time_out(obs, r, s, th):
            final = _cents(th.counter_price / self.cfg.final_divisor)
            if affordable_qty(obs, r, s, final) > 0:
                why = f"final offer {final:.2f} to {s.id} = lowest affordable counter "
                why += f"{th.counter_price:.2f} / {self.cfg.final_divisor:g}, then award"
                return True, negotiate(s, r, final), why
        return super().close(obs, r, quotes)


class ConcedePolicy(ScriptPolicy):
    """Fixed-rate concession: offer k is (opening + k x rate) x reference price (capped at
    the ceiling); award a counter at or below the next offer, or when time runs out."""

    name = "script_concede"
    Params = ConcedeParams

    def next_offer(self, obs: Observation, r, s, th) -> float | None:
        raw = (self.cfg.opening + th.offers * self.cfg.rate) * r.reference_price
        return _cents(min(raw, r.ceiling_unit_price))

    def offer_reason(self, obs: Observation, r, s, th, offer: float) -> str:
        cfg = self.cfg
        why = f"concede to {offer:.2f} = ({cfg.opening:g} + {th.offers} x {cfg.rate:g}) x ref "
        why += f"{r.reference_price:.2f}"
        if offer == _cents(r.ceiling_unit_price):
            why += ", capped at the ceiling"
        return f"{why}; counter {th.counter_price:.2f}"

    def ready(self, obs: Observation, r, s, th, counter: float) -> bool:
        return counter <= self.next_offer(obs, r, s, th) or self.time_out(obs, r, s, th)

    def ready_reason(self, obs: Observation, r, s, th, counter: float) -> str:
        nxt = self.next_offer(obs, r, s, th)
        if counter <= nxt:
            return f"counter {counter:.2f} <= next offer {nxt:.2f}"
        return f"time runs out (counter {counter:.2f} > next offer {nxt:.2f})"


def concede_policy(rate: float) -> type[ConcedePolicy]:
    """A registered variant of ConcedePolicy whose default ``rate`` is ``rate``."""
    pct = round(rate * 100)
    params = create_model(
        f"Concede{pct}pctParams",
        __base__=ConcedeParams,
        rate=(
            float,
            Field(
                default=rate,
                gt=0.0,
                le=1.0,
                description=ConcedeParams.model_fields["rate"].description,
            ),
        ),
    )
    return type(
        f"Concede{pct}pctPolicy",
        (ConcedePolicy,),
        {"name": f"script_concede_{pct}pct", "Params": params, "__doc__": ConcedePolicy.__doc__},
    )


class TitForTatPolicy(ScriptPolicy):
    """Relative tit-for-tat: after opening at 0.6 x reference, each offer raises the last
    one by the share the supplier's last counter came down (from its previous counter, or
    from the list price after its first), never above the counter or the ceiling. Awards
    when the counter is within 1 % of the next offer, or when time runs out."""

    name = "script_tit_for_tat"
    Params = TitForTatParams

    def next_offer(self, obs: Observation, r, s, th) -> float | None:
        mirrored = self._mirror(r, s, th)
        return None if mirrored is None else mirrored[0]

    def _mirror(self, r, s, th) -> tuple[float, float] | None:
        """(next offer, the supplier's last concession it mirrors); None before both sides
        have moved."""
        offers, counters = _offers(th), _counters(th)
        if not offers or not counters:
            return None
        before = counters[-2] if len(counters) > 1 else s.list_prices[r.id]
        conceded = max(0.0, (before - counters[-1]) / before)
        raw = min(offers[-1] * (1.0 + conceded), th.counter_price, r.ceiling_unit_price)
        return _cents(max(offers[-1], raw)), conceded

    def offer_reason(self, obs: Observation, r, s, th, offer: float) -> str:
        conceded = self._mirror(r, s, th)[1]
        return (
            f"mirror {s.id}'s last concession {conceded:.1%}: offer {offer:.2f} for {r.id}; "
            f"counter {th.counter_price:.2f}"
        )

    def ready(self, obs: Observation, r, s, th, counter: float) -> bool:
        nxt = self.next_offer(obs, r, s, th)
        gap = 1.0 if nxt is None else (counter - nxt) / counter
        return gap < self.cfg.award_gap or self.time_out(obs, r, s, th)

    def ready_reason(self, obs: Observation, r, s, th, counter: float) -> str:
        nxt = self.next_offer(obs, r, s, th)
        gap = 1.0 if nxt is None else (counter - nxt) / counter
        if gap < self.cfg.award_gap:
            return f"counter {counter:.2f} within {gap:.1%} of next offer {nxt:.2f}"
        return f"time runs out (counter {counter:.2f})"


ConcedeSlowPolicy = concede_policy(0.02)
ConcedeMidPolicy = concede_policy(0.05)
ConcedeFastPolicy = concede_policy(0.10)

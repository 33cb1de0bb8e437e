"""The expert's planning across requirements and action slots.

- Supplier choice per requirement by expected score contribution: P(on time) x (FULFIL +
  VALUE x value of the expected price), the score's own weights, for the rounds the
  requirement can afford; claimed capacity is discounted (more for deceptive-looking
  suppliers) and a second supplier covers the rest when the best one is short.
- Slot economy: each plan has an award week (last feasible week = deadline - lead time, one
  week earlier for suppliers below BUFFER_REL reliability so a slip still arrives in time).
  The largest common round budget is found such that, for every award week, all awards and
  rounds due by then fit in the action slots left until then (earliest deadline first);
  spare slots go to the earliest plans.

What the planner believes (reliability, capacity, prices, rounds a thread wants) comes from
a Judge: the expert's judge reads the public observation; the oracle's reads the truth.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Protocol

from ...observation import Observation
from ...scoring import FLOOR_REF, FULFIL, VALUE
from ..base import ledger
from .beliefs import SupplierView

STICKY = 0.08  # preference for a thread already under way (its rounds are sunk)
BUFFER_REL = 0.88  # plan a week's slip buffer for suppliers less reliable than this


class Judge(Protocol):
    def view(self, s) -> SupplierView: ...

    def usable_capacity(self, s, category: str, view: SupplierView) -> int: ...

    def price(self, obs: Observation, r, s, th, rounds: int) -> float:
        """The unit price expected from s on r after ``rounds`` more offers."""
        ...

    def rounds_wanted(self, obs: Observation, r, s, th) -> int:
        """Offers the thread still wants before its deal is closed."""
        ...


@dataclass(slots=True, eq=False)  # compared by identity: a memo hit returns the same one
class Candidate:
    utility: float
    s: object
    th: object
    reliability: float
    eff_cap: int
    target: int  # award week


@dataclass(slots=True, eq=False)
class Plan:
    """The chosen supplier for one requirement and the state of its negotiation."""

    r: object
    s: object
    th: object
    reliability: float
    eff_cap: int
    target: int
    ap: float | None = None  # the price an award would take now (agreed or counter)
    agreed: bool = False
    k: int = 0  # offers made on the thread
    want: int = 0  # offers it still wants
    budget: int = 0  # rounds granted by the slot economy
    reserve: float = 0.0  # budget held for it
    second: bool = False  # the best supplier is short; a partner covers the rest
    partner: Plan | None = field(default=None, repr=False)


class Planner:
    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self._memo: dict[tuple[str, str], tuple] = {}
        self._plans: dict[str, tuple[list[Candidate], list[Plan]]] = {}
        self._serves: dict[str, list[tuple[int, tuple[str, str]]]] = {}
        self._serves_n = -1

    def reset(self) -> None:
        self._memo = {}
        self._plans = {}
        self._serves_n = -1

    def plans(self, obs: Observation, reqs) -> list[Plan]:
        """One plan per open requirement (two where capacity is short), sorted by award
        week, with round budgets set."""
        if self._serves_n != len(obs.requirements):
            # Which suppliers serve a requirement (by position: suppliers only ever append),
            # with the key of their thread on it.
            self._serves_n = len(obs.requirements)
            self._serves = {}
            for i, s in enumerate(obs.suppliers):
                for rid in s.list_prices:
                    self._serves.setdefault(rid, []).append((i, (s.id, rid)))
        week, apw, left = obs.week, obs.actions_per_week, obs.actions_left_this_week
        deadlines = sorted(r.deadline_week for r in reqs)
        out: list[Plan] = []
        for r in reqs:
            # Rough rounds per requirement: its share of the slots until two weeks before
            # its deadline.
            n_le = bisect.bisect_right(deadlines, r.deadline_week)
            supply = left + max(0, r.deadline_week - 2 - week) * apw
            rounds = max(1, int(supply / n_le) - 1)
            out.extend(self._plan(obs, r, self._serves.get(r.id, ()), rounds))
        book, thr = ledger(obs), obs.pr_threshold
        # Earliest award week first; within a week critical requirements, then those that
        # need the fewest slots (a quote already, no PR to wait for).
        out.sort(
            key=lambda p: (
                p.target,
                not p.r.critical,
                (p.ap is None) + book.missing(p.r.id, p.reserve, thr),
                p.r.id,
            )
        )
        round_budgets(obs, out)
        return out

    def _candidates(self, obs: Observation, r, serves, rounds: int) -> list[Candidate]:
        """The candidates among r's suppliers, memoised per thread key on the records they
        read (by identity), the week, the rounds, the market and the supplier's view."""
        suppliers, threads, view, memo = obs.suppliers, obs.threads, self.judge.view, self._memo
        stamp = (obs.week, rounds, obs.market_index.get(r.category, 1.0))
        cands = []
        for i, key in serves:
            s = suppliers[i]
            if not s.active or s.rejected:
                continue
            th = threads.get(key)
            v = view(s)
            hit = memo.get(key)
            if (
                hit is not None
                and hit[0] is s
                and hit[1] is th
                and hit[2] is r
                and hit[3] == stamp
                and hit[4] == v
            ):
                c = hit[5]
            else:
                c = self._score(obs, r, s, th, v, rounds)
                memo[key] = (s, th, r, stamp, v, c)
            if c is not None:
                cands.append(c)
        return cands

    def _score(self, obs: Observation, r, s, th, view: SupplierView, rounds: int):
        week = obs.week
        cap = s.capacity.get(r.category, 0)
        last = r.deadline_week - s.lead_time_weeks
        if cap <= 0 or last < week:
            return None
        if th is not None and th.status != "open" and th.status != "agreed":
            return None
        est = self.judge.price(obs, r, s, th, rounds)
        if th is not None:
            ap = th.awardable_price(week)
            if ap is not None:
                est = ap if th.status == "agreed" else min(est, ap)
        rel = view.reliability
        eff_cap = self.judge.usable_capacity(s, r.category, view)
        buffered = last - 1 >= week
        ps = rel + (1.0 - rel) * 0.5 if buffered else rel
        span = max(1e-9, r.ceiling_unit_price - FLOOR_REF * r.reference_price)
        v = max(-1.0, min(1.0, (r.ceiling_unit_price - est) / span))
        u = ps * (FULFIL + VALUE * v) - (1.0 - ps) * 0.1
        if eff_cap < r.quantity_needed:
            u -= 0.2 * (1.0 - eff_cap / r.quantity_needed)
        if th is not None and th.rounds:
            u += STICKY
        target = last - 1 if buffered and rel < BUFFER_REL else last
        return Candidate(u, s, th, rel, eff_cap, target)

    def _plan(self, obs: Observation, r, serves, rounds: int) -> list[Plan]:
        """The requirement's plans from its suppliers' candidates."""
        cands = self._candidates(obs, r, serves, rounds)
        if not cands:
            return []
        # The same candidates (memo hits: same records, week, rounds, market and views)
        # make the same plans; only their budgets change, and round_budgets resets those.
        memo = self._plans.get(r.id)
        if memo is not None and memo[0] == cands:
            return memo[1]
        plans = self._choose(obs, r, cands)
        self._plans[r.id] = (cands, plans)
        return plans

    def _choose(self, obs: Observation, r, cands: list[Candidate]) -> list[Plan]:
        """The plan for the best supplier (and a second one when the best cannot cover
        the whole need)."""
        cands = sorted(cands, key=lambda c: (-c.utility, c.s.id))
        best = self._make(obs, r, cands[0])
        best.reserve = 0.85 * r.reference_price * obs.market_index.get(r.category, 1.0)
        best.reserve *= r.quantity_needed
        if best.eff_cap >= r.quantity_needed or len(cands) < 2:
            return [best]
        # Not enough (credible) capacity: source the rest from the next best supplier now,
        # so both awards fit before the deadline.
        rest = r.quantity_needed - best.eff_cap
        second = self._make(obs, r, next((c for c in cands[1:] if c.eff_cap >= rest), cands[1]))
        best.target = second.target = min(best.target, second.target)
        best.second = True
        best.partner = second
        return [best, second]

    def _make(self, obs: Observation, r, c: Candidate) -> Plan:
        p = Plan(r, c.s, c.th, c.reliability, c.eff_cap, c.target)
        th = c.th
        if th is not None:
            p.k = th.offers
            p.ap = th.awardable_price(obs.week)
            p.agreed = th.status == "agreed" and p.ap is not None
        p.want = 0 if p.agreed else self.judge.rounds_wanted(obs, r, c.s, th)
        return p


def round_budgets(obs: Observation, plans: list[Plan]) -> None:
    """Negotiation rounds per plan (plans sorted by award week): the largest common cap
    such that, for every award week w, the awards and rounds due by w fit in the slots
    left until the end of w; spare slots then go to the earliest plans first.

    Runs on every step, so its loops compare ints inline: a min() or max() call costs
    more than the arithmetic around it."""
    week, left, apw = obs.week, obs.actions_left_this_week, obs.actions_per_week
    n = len(plans)
    base = []  # slots a plan needs besides rounds: its award, and a first quote if none
    want = []  # rounds it wants after that quote
    ends = []  # (index, slots until the end of its award week) of each week's last plan
    top = 0
    for i, p in enumerate(plans):
        b = 1 if p.ap is not None else 2
        w = p.want + 1 - b
        if w < 0:
            w = 0
        elif w > top:
            top = w
        base.append(b)
        want.append(w)
        if i == n - 1 or plans[i + 1].target != p.target:
            ends.append((i, left + (p.target - week) * apw))
    # The slots used only grow with the cap, so raise it while it fits (mostly it stays 0:
    # one check, where a bisection takes two).
    cap = 0
    while cap < top and min(_spare(base, want, ends, cap + 1)) >= 0:
        cap += 1
    for i, p in enumerate(plans):
        w = want[i]
        p.budget = base[i] - 1 + (w if w < cap else cap)
    if cap < top:
        _share_spare(plans, base, want, ends, cap)


def _spare(base: list[int], want: list[int], ends: list[tuple[int, int]], cap: int) -> list[int]:
    """Slots spare at the end of each award week with every plan's rounds capped at cap."""
    spare, used, j = [], 0, 0
    for i, supply in ends:
        while j <= i:
            w = want[j]
            used += base[j] + (w if w < cap else cap)
            j += 1
        spare.append(supply - used)
    return spare


def _share_spare(
    plans: list[Plan], base: list[int], want: list[int], ends: list[tuple[int, int]], cap: int
) -> None:
    """Rounds beyond the cap, earliest plan first: a plan may take what is spare in its
    own award week and in every later one (their least), less what earlier plans took."""
    room = [1 << 30] * len(plans)
    spare = _spare(base, want, ends, cap)
    for k, (i, _) in enumerate(ends):
        room[i] = spare[k]
    for i in range(len(plans) - 2, -1, -1):
        if room[i + 1] < room[i]:
            room[i] = room[i + 1]
    given = 0
    for i, p in enumerate(plans):
        give = min(want[i] - cap, room[i] - given)
        if give > 0:
            p.budget += give
            given += give

"""The expert buyer: a rule policy that plans, infers and squeezes within the rules.

How it works (every belief is derived from the public Observation, so a fresh instance
resumes from any step with the same decisions; memos only cache pure functions of it):
- Purchase requisitions on the first steps for every requirement whose cost can exceed the
  PR threshold; a pending PR is escalated when an award due now or next week needs it.
- Concession inference (expert_curve.py): three or more counters fit the Faratin curve
  c_t = A - E * t**(1/beta) exactly (anchor, exponent); the persona bands of floor/anchor
  bound the supplier's patience T from below. Probing offers (0.64 x anchor, above every
  insult threshold) continue while the next offer is provably within T, so Boulware sellers
  are walked down to the end of their curve; after that only offers >= last counter / 1.02
  (>= reservation by the guard band) are made, so no thread is ever lost to patience.
- Supplier choice per requirement by expected score contribution: P(on time) x (0.6 + 0.4 x
  value of the expected price), with the expected price from the fitted curve (or, before
  it, from the list price: list <= 1.22 x reference hints at an early conceder) for the
  rounds the requirement can afford; reliability = public rating discounted by deceptive
  tells (competing-offer / low-stock claims, a deceptive-looking concession exponent),
  scandals and bad deliveries; claimed capacity is discounted (more for deceptive-looking
  suppliers) and a second supplier covers the rest when the best one is short.
- Slot economy: each plan has an award week (last feasible week = deadline - lead time, one
  week earlier for suppliers below 0.88 reliability so a slip still arrives in time). The
  largest common round budget is found such that, for every award week, all awards and
  rounds due by then fit in the action slots left until then (earliest deadline first);
  spare slots go to the earliest plans. Deals are awarded as soon as agreed or when their
  round budget is spent; the last slots of a week go to the awards due that week. After a
  partial delivery or a default the requirement re-opens and is re-sourced at once.
- Bilateral mode (public round limit T): stays low until the seller's final counter at
  round T, then offers final/1.02 at round T+1 (>= reservation by the guard band), and awards.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

from ..observation import Observation
from .base import Policy, has_pr
from .expert_curve import MIN_PATIENCE, min_patience

SUSPICION = 0.38  # mean competing-offer / low-stock claim above which a supplier looks deceptive
DECEPTIVE_G = (1.0, 2.7)  # concession exponents 1/beta only the deceptive persona shows
DECEPTIVE_REL = 0.66  # delivery reliability assumed for a supplier that looks deceptive
OVERCLAIM = 1.5  # capacity discount for a supplier that looks deceptive
CONCEDER_LIST = 1.22  # list / reference at or below which a supplier likely concedes early
LOW_OFFER = 0.64  # probing offers: x anchor, above every persona's insult threshold
DESCENT_ROUNDS = 4  # provably safe offers after the patience bound
STICKY = 0.08  # preference for a thread already under way (its rounds are sunk)
CLAIM_MARGIN = 1.06  # claimed capacity may exceed the true one (rounding, rival bookings)
BUFFER_REL = 0.88  # plan a week's slip buffer for suppliers less reliable than this


def _ceil2(x: float) -> float:
    return math.ceil(x * 100.0 - 1e-9) / 100.0


class ExpertPolicy(Policy):
    name = "expert"

    def __init__(self, seed: int = 0, **params: Any) -> None:
        super().__init__(seed, **params)
        self._tells_owner: object = None
        self._tells_seen: dict = {}
        self._claims: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        self._bad: dict[str, int] = {}
        self._th_memo: dict[tuple[str, str], tuple[int, tuple]] = {}
        # (supplier, requirement) -> the inputs and result of its last scoring; records
        # are immutable, so identical inputs (by identity) give the identical candidate.
        self._cand_memo: dict[tuple[str, str], tuple] = {}
        self._rel_memo: dict[str, tuple] = {}
        self._serves: dict[str, list] = {}
        self._serves_n = -1

    # ------------------------------------------------------------------ helpers
    def _reliability_map(self, obs: Observation) -> None:
        """Aggregates the evidence per supplier: claims in tells, rounds, bad deliveries."""
        # Incremental tell aggregation (rounds only ever append); keyed on the episode so a
        # reused or resumed policy recomputes from scratch.
        if self._tells_owner != obs.episode_key:
            self._tells_owner = obs.episode_key
            self._tells_seen = {}
            self._th_memo = {}
            self._cand_memo = {}
            self._rel_memo = {}
            self._serves_n = -1
        seen = self._tells_seen
        claims: dict[str, float] = {}
        counts: dict[str, int] = {}
        for key, th in obs.threads.items():
            n0, acc = seen.get(key, (0, 0.0))
            rounds = th.rounds
            if n0 < len(rounds):
                for rd in rounds[n0:]:
                    t = rd.tells
                    acc += t["competing_offers_claim"] + t["low_stock_claim"]
                seen[key] = (len(rounds), acc)
            sid = key[0]
            claims[sid] = claims.get(sid, 0.0) + acc
            counts[sid] = counts.get(sid, 0) + 2 * len(rounds)
        bad: dict[str, int] = {}
        for c in obs.contracts:
            if c.status in ("partial", "defaulted") or c.slips:
                bad[c.supplier_id] = bad.get(c.supplier_id, 0) + 1
        self._claims, self._counts, self._bad = claims, counts, bad

    @staticmethod
    def _reliability(s, claims: float, n: int, bad: int) -> float:
        rel = s.rated_reliability
        if n >= 2:
            susp = claims / n
            if susp > SUSPICION:
                rel -= 1.5 * (susp - SUSPICION)
        rel -= 0.2 * bad
        if any("scandal" in note for note in s.notes):
            rel -= 0.1
        return max(0.05, min(1.0, rel))

    # ------------------------------------------------------------------ main
    def act(self, obs: Observation) -> dict[str, Any]:
        if obs.done:
            return {"action_type": "defer"}
        if obs.max_rounds is not None:
            return self._bilateral(obs)
        return self._arena(obs)

    def _bilateral(self, obs: Observation) -> dict[str, Any]:
        r = obs.requirements[0]
        if r.decided or r.quantity_needed <= 0:
            return {"action_type": "defer"}
        s = obs.suppliers[0]
        th = obs.threads.get((s.id, r.id))
        T = obs.max_rounds or 1
        qty = min(r.quantity_needed, s.capacity.get(r.category, 0))
        if th is not None:
            if th.status == "agreed":
                return _award(s.id, r.id, qty)
            if th.status != "open":
                return {"action_type": "defer"}
            k = th.offers
            last = th.counter_price
            if k >= T + 1:
                if last is not None:
                    return _award(s.id, r.id, qty)
                return {"action_type": "defer"}
            if k == T and last is not None:
                offer = min(_ceil2(last / 1.02), r.ceiling_unit_price)
                return _negotiate(s.id, r.id, offer)
        lp = s.list_prices[r.id]
        offer = max(0.6 * lp, 0.75 * r.reference_price)
        if th is not None and th.counter_price is not None:
            offer = min(offer, th.counter_price * 0.9)
        return _negotiate(s.id, r.id, round(offer, 2))

    # ------------------------------------------------------------------ arena
    def _arena(self, obs: Observation) -> dict[str, Any]:
        week = obs.week
        reqs = [r for r in obs.requirements if not r.decided and r.quantity_needed > 0]
        if not reqs:
            return {"action_type": "defer"}
        act = _raise_prs(obs, reqs)
        if act is not None:
            return act
        self._reliability_map(obs)
        if self._serves_n != len(obs.requirements):
            # Which suppliers serve a requirement, by position: the records themselves are
            # of one step, the positions hold for the episode (suppliers only ever append).
            self._serves_n = len(obs.requirements)
            self._serves = {}
            for i, s in enumerate(obs.suppliers):
                for rid in s.list_prices:
                    self._serves.setdefault(rid, []).append(i)
        suppliers = obs.suppliers
        rel_of: dict[str, tuple[float, bool]] = {}
        plans = []
        # Rough negotiation rounds per requirement (its share of the slots until about two
        # weeks before its deadline), to value suppliers that concede early or late.
        apw, left = obs.actions_per_week, obs.actions_left_this_week
        dl = sorted(r.deadline_week for r in reqs)
        for r in reqs:
            n_le = bisect.bisect_right(dl, r.deadline_week)
            supply = left + max(0, r.deadline_week - 2 - week) * apw
            rb = max(1, int(supply / n_le) - 1)
            sups = [suppliers[i] for i in self._serves.get(r.id, ())]
            plans.extend(self._plan(obs, r, sups, rel_of, rb))
        if not plans:
            return _escalate_or_defer(obs, reqs)
        # Earliest award week first; within a week critical requirements, then those that
        # need the fewest slots (a quote already, no PR to wait for).
        thr = obs.pr_threshold
        plans.sort(
            key=lambda p: (
                p.target,
                not p.r.critical,
                (p.ap is None) + (p.reserve > thr and not has_pr(obs, p.r.id, p.reserve)),
                p.r.id,
            )
        )
        _round_budgets(obs, plans)
        reserve_total = sum(p.reserve for p in plans)
        left = obs.actions_left_this_week
        due = [p for p in plans if p.target <= week]
        if due and left <= sum(1 if p.ap is not None else 2 for p in due):
            # The week's last slots go to the awards due now (a quote first where needed).
            for p in due:
                if p.ap is not None:
                    act = self._close(obs, p, reserve_total - p.reserve)
                    if act is not None:
                        return act
            for p in due:
                if p.ap is None:
                    return self._offer(obs, p)

        # 1. Close: agreed deals and negotiations that are done or out of rounds.
        for p in plans:
            if p.ap is not None and (p.agreed or p.budget < 1 or p.want < 1):
                act = self._close(obs, p, reserve_total - p.reserve)
                if act is not None:
                    return act
        # 2. One negotiation round: the earliest award week first.
        for p in plans:
            if p.budget >= 1 and p.want >= 1 and not p.agreed:
                return self._offer(obs, p)
        # 3. Nothing to negotiate: close whatever is due, else wait.
        for p in plans:
            if p.ap is not None and p.target <= week:
                act = self._close(obs, p, reserve_total - p.reserve)
                if act is not None:
                    return act
        return _escalate_or_defer(obs, reqs)

    def _supplier_view(self, s) -> tuple[float, bool]:
        """(estimated reliability, looks deceptive from its claims) for a supplier."""
        n = self._counts.get(s.id, 0)
        b = self._bad.get(s.id, 0)
        hit = self._rel_memo.get(s.id)
        if (
            hit is not None
            and hit[0] == n
            and hit[1] == b
            and hit[2] == s.rated_reliability
            and hit[3] == len(s.notes)
        ):
            return hit[4]
        c = self._claims.get(s.id, 0.0)
        view = (self._reliability(s, c, n, b), n >= 2 and c / n > SUSPICION)
        self._rel_memo[s.id] = (n, b, s.rated_reliability, len(s.notes), view)
        return view

    def _plan(self, obs: Observation, r, sups, rel_of: dict, rb: int) -> list[_Plan]:
        """Ranks the feasible suppliers for a requirement by expected score contribution
        and returns the plan for the best one (and a second one when the best cannot cover
        the whole need)."""
        week = obs.week
        cat = r.category
        rid = r.id
        need = r.quantity_needed
        ceil = r.ceiling_unit_price
        deadline = r.deadline_week
        span = max(1e-9, ceil - 0.7 * r.reference_price)
        mkt = obs.market_index.get(cat, 1.0)
        conceder_list = CONCEDER_LIST * r.reference_price * mkt
        threads = obs.threads
        th_memo = self._th_memo
        cand_memo = self._cand_memo
        f_early = f_late = 0.0
        cands: list[tuple] = []
        for s in sups:
            if not s.active or s.rejected:
                continue
            view = rel_of.get(s.id)
            if view is None:
                view = rel_of[s.id] = self._supplier_view(s)
            key = (s.id, rid)
            th = threads.get(key)
            memo = cand_memo.get(key)
            if (
                memo is not None
                and memo[0] is s
                and memo[1] is th
                and memo[2] is r
                and memo[3] == (week, rb, mkt, view)
            ):
                if memo[4] is not None:
                    cands.append(memo[4])
                continue
            if not f_early:
                f_early, f_late = _expect(1.0, rb, True), _expect(1.0, rb, False)
            cand_memo[key] = (s, th, r, (week, rb, mkt, view), None)
            rel, deceptive = view
            lp = s.list_prices[rid]
            cap = s.capacity.get(cat, 0)
            last = deadline - s.lead_time_weeks
            if cap <= 0 or last < week:
                continue
            if th is None:
                info = None
                est = lp * (f_early if lp <= conceder_list else f_late)
            else:
                if th.status != "open" and th.status != "agreed":
                    continue
                hit = th_memo.get(key)
                info = hit[1] if hit is not None and hit[0] == len(th.rounds) else None
                if info is None:
                    info = self._thread_info(th)
                cs, tmin, fit, looks_deceptive, irregular = info
                deceptive = deceptive or looks_deceptive
                k = th.offers
                if fit is not None:
                    a, e, g = fit
                    t = min(k + rb, tmin)
                    est = min(cs[-1], a - e * t**g)
                    if k + rb > tmin:
                        est /= 1.02
                elif irregular:
                    est = cs[-1] / 1.02 if cs else lp
                elif cs:
                    a = max(lp, cs[0])
                    est = min(cs[-1], _expect(a, k + rb, (a - cs[-1]) / a > 0.04))
                else:
                    est = lp * (f_early if lp <= conceder_list else f_late)
                ap = th.awardable_price(week)
                if ap is not None:
                    est = ap if th.status == "agreed" else min(est, ap)
            if deceptive:
                rel = min(rel, DECEPTIVE_REL)
                eff_cap = int(cap / OVERCLAIM)
            else:
                eff_cap = int(cap / CLAIM_MARGIN)
            buffered = last - 1 >= week
            ps = rel + (1.0 - rel) * 0.5 if buffered else rel
            v = (ceil - est) / span
            v = -1.0 if v < -1.0 else 1.0 if v > 1.0 else v
            u = ps * (0.6 + 0.4 * v) - (1.0 - ps) * 0.1
            if eff_cap < need:
                u -= 0.2 * (1.0 - eff_cap / need)
            if th is not None and th.rounds:
                u += STICKY
            target = last - 1 if buffered and rel < BUFFER_REL else last
            cand = (-u, s.id, s, th, info, rel, eff_cap, target)
            cand_memo[key] = (s, th, r, (week, rb, mkt, view), cand)
            cands.append(cand)
        if not cands:
            return []
        if len(cands) > 1:
            cands.sort(key=_first_two)
        best = _make_plan(obs, r, cands[0])
        best.reserve = 0.85 * r.reference_price * obs.market_index.get(cat, 1.0) * need
        if best.eff_cap >= need or len(cands) < 2:
            return [best]
        # Not enough (credible) capacity: source the rest from the next best supplier now,
        # so both awards fit before the deadline.
        rest = need - best.eff_cap
        second = _make_plan(obs, r, next((c for c in cands[1:] if c[6] >= rest), cands[1]))
        best.target = second.target = min(best.target, second.target)
        best.second = True
        best.partner = second
        return [best, second]

    def _thread_info(self, th) -> tuple:
        """(counters, patience lower bound, fitted curve (A, E, g) or None, concedes like a
        deceptive supplier, irregular history) from a thread's rounds; memoised per round
        count."""
        key = (th.supplier_id, th.requirement_id)
        n = len(th.rounds)
        hit = self._th_memo.get(key)
        if hit is not None and hit[0] == n:
            return hit[1]
        cs, regular = _counter_curve(th)
        if regular and len(cs) >= 3:
            tmin, a, e, g = min_patience(cs)
            info = (cs, tmin, (a, e, g), DECEPTIVE_G[0] <= g <= DECEPTIVE_G[1], False)
        elif regular:
            info = (cs, MIN_PATIENCE, None, False, False)
        else:  # irregular history: only provably safe offers from here
            info = (cs, th.offers, None, False, True)
        self._th_memo[key] = (n, info)
        return info

    def _offer(self, obs: Observation, p: _Plan) -> dict[str, Any]:
        r, s = p.r, p.s
        cs = p.cs
        if p.k + 1 <= p.tmin or not cs:
            base = max(p.lp, cs[0] if cs else 0.0, p.anchor)
            offer = round(LOW_OFFER * base, 2)
            if cs:
                offer = min(offer, _ceil2(cs[-1] / 1.02))
        else:
            offer = _ceil2(cs[-1] / 1.02)
        return _negotiate(s.id, r.id, offer)

    def _close(self, obs: Observation, p: _Plan, others: float) -> dict[str, Any] | None:
        """Award the plan's quote (escalating or raising the PR it needs), or None."""
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
        q = p.partner
        if (
            q is not None
            and q.ap is not None
            and (q.agreed or q.budget < 1 or q.want < 1 or q.target <= week)
        ):
            # Both parts are ready: one hedge action places both contracts (one slot).
            need = r.quantity_needed
            q2 = need - qty
            split = round(qty / need, 6)
            cost2 = cost + q2 * q.ap
            if (
                1 <= q2 <= q.s.capacity.get(r.category, 0)
                and round(need * split) == qty
                and cost2 <= obs.budget_remaining
                and (cost2 <= obs.pr_threshold or has_pr(obs, r.id, cost2))
            ):
                return {
                    "action_type": "hedge",
                    "requirement_id": r.id,
                    "supplier_id": s.id,
                    "hedge_supplier_id": q.s.id,
                    "split": split,
                }
        if cost > obs.pr_threshold and not has_pr(obs, r.id, cost):
            last = r.deadline_week - s.lead_time_weeks
            if (
                _pr_covering(obs, r.id, cost, ("pending",))
                and _escalatable(obs, r.id)
                and obs.escalations_left > 0
                and last <= week + 1
            ):
                return {"action_type": "escalate", "requirement_id": r.id}
            if not _pr_covering(obs, r.id, cost) and _pending_count(obs, r.id) < 2:
                amount = min(
                    obs.pr_guardrail * 0.999 * r.ceiling_unit_price * r.quantity_needed,
                    obs.budget_remaining,
                )
                if amount >= cost:
                    return {
                        "action_type": "raise_pr",
                        "requirement_id": r.id,
                        "amount": round(round(amount, 2) - 0.01, 2),
                    }
            return None
        return _award(s.id, r.id, qty)


class _Plan:
    """The chosen supplier for one requirement and the state of its negotiation."""

    __slots__ = (
        "agreed",
        "anchor",
        "ap",
        "budget",
        "cs",
        "eff_cap",
        "k",
        "lp",
        "partner",
        "r",
        "rel",
        "reserve",
        "s",
        "second",
        "target",
        "th",
        "tmin",
        "want",
    )

    def __init__(self, r, s, th) -> None:
        self.r, self.s, self.th = r, s, th
        self.agreed = False
        self.anchor = 0.0
        self.ap: float | None = None
        self.budget = 0
        self.cs: tuple[float, ...] = ()
        self.eff_cap = 0
        self.k = 0
        self.lp = 0.0
        self.partner: _Plan | None = None
        self.rel = 1.0
        self.reserve = 0.0
        self.second = False
        self.target = 0
        self.tmin = MIN_PATIENCE
        self.want = 0


def _first_two(t: tuple) -> tuple:
    return t[0], t[1]


def _make_plan(obs: Observation, r, cand: tuple) -> _Plan:
    _u, _sid, s, th, info, rel, eff_cap, target = cand
    p = _Plan(r, s, th)
    p.lp = s.list_prices[r.id]
    p.rel, p.eff_cap, p.target = rel, eff_cap, target
    if th is not None:
        cs, tmin, fit, _dec, _irr = info
        p.k = th.offers
        p.ap = th.awardable_price(obs.week)
        p.agreed = th.status == "agreed" and p.ap is not None
        p.cs, p.tmin = cs, tmin
        if fit is not None:
            p.anchor = fit[0]
    # rounds this thread still wants: probing up to the patience bound, then a few
    # provably safe offers
    if p.agreed:
        p.want = 0
    elif p.k < p.tmin:
        p.want = p.tmin - p.k + 2
    else:
        p.want = 1 if p.k < p.tmin + DESCENT_ROUNDS else 0
    return p


def _expect(anchor: float, rounds: int, conceder: bool) -> float:
    """Rough price after `rounds` offers before the curve is known: early conceders
    (cooperative, distressed) give most of ~30 % early; the others ~38 %, mostly late."""
    if conceder:
        return anchor * (1.0 - 0.30 * min(1.0, (rounds / 8.0) ** 0.5))
    return anchor * (1.0 - 0.38 * min(1.0, (rounds / 8.0) ** 2.5))


def _counter_curve(th) -> tuple[tuple[float, ...], bool]:
    """The supplier's counters after each buyer offer, and whether the history is a plain
    offer/counter sequence (no escalation, no repeated counter after a low offer)."""
    cs = []
    regular = True
    for rd in th.rounds:
        if rd.response == "counter" and rd.supplier_price is not None:
            cs.append(rd.supplier_price)
        elif rd.response != "accept":
            regular = False
    return tuple(cs), regular and len(cs) == th.offers


def _round_budgets(obs: Observation, plans: list[_Plan]) -> None:
    """Negotiation rounds per plan (plans sorted by award week): the largest common cap
    such that, for every award week w, the awards and rounds due by w fit in the slots
    left until the end of w; spare slots then go to the earliest plans first."""
    week, left, apw = obs.week, obs.actions_left_this_week, obs.actions_per_week
    n = len(plans)
    # a plan without a quote needs one round before it can be awarded
    base = []
    want = []
    supply = []  # slots until the end of the plan's award week; None inside a group
    top = 0
    for i, p in enumerate(plans):
        first = 1 if p.ap is None else 0
        base.append(1 + first)
        w = p.want - first
        w = w if w > 0 else 0
        want.append(w)
        if w > top:
            top = w
        end = i == n - 1 or plans[i + 1].target != p.target
        supply.append(left + (p.target - week) * apw if end else None)

    def feasible(cap: int) -> bool:
        cum = 0
        for i in range(n):
            w = want[i]
            cum += base[i] + (w if w < cap else cap)
            sup = supply[i]
            if sup is not None and cum > sup:
                return False
        return True

    lo, hi = 0, top
    if feasible(hi):
        lo = hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if feasible(mid):
            lo = mid
        else:
            hi = mid - 1
    cap = lo
    slack = []
    cum = 0
    for i, p in enumerate(plans):
        w = want[i] if want[i] < cap else cap
        p.budget = base[i] - 1 + w
        cum += base[i] + w
        sup = supply[i]
        slack.append(sup - cum if sup is not None else 1 << 30)
    if cap >= top:
        return
    for i, p in enumerate(plans):
        extra = want[i] - (p.budget - base[i] + 1)
        if extra <= 0:
            continue
        room = min(slack[i:])
        give = extra if extra < room else room
        if give > 0:
            p.budget += give
            for j in range(i, n):
                slack[j] -= give


def _raise_prs(obs: Observation, reqs) -> dict[str, Any] | None:
    """Purchase requisitions ahead of time for every requirement that may need one."""
    for r in reqs:
        est = r.ceiling_unit_price * r.quantity_needed
        if est > obs.pr_threshold and not _pr_covering(obs, r.id, est):
            amount = min(
                obs.pr_guardrail * 0.999 * r.ceiling_unit_price * r.quantity_needed,
                obs.budget_remaining,
            )
            if (
                amount >= 0.8 * est
                and _pending_count(obs, r.id) < 2
                and not _pr_covering(obs, r.id, 0.8 * est, ("pending",))
            ):
                return {
                    "action_type": "raise_pr",
                    "requirement_id": r.id,
                    "amount": round(round(amount, 2) - 0.01, 2),  # a cent under the cap
                }
    return None


def _escalate_or_defer(obs: Observation, reqs) -> dict[str, Any]:
    for r in reqs:
        if obs.escalations_left > 0 and _escalatable(obs, r.id) and r.deadline_week - obs.week <= 2:
            return {"action_type": "escalate", "requirement_id": r.id}
    return {"action_type": "defer"}


def _negotiate(sid: str, rid: str, price: float) -> dict[str, Any]:
    return {"action_type": "negotiate", "supplier_id": sid, "requirement_id": rid, "price": price}


def _award(sid: str, rid: str, qty: int) -> dict[str, Any]:
    return {
        "action_type": "award_contract",
        "supplier_id": sid,
        "requirement_id": rid,
        "quantity": qty,
    }


def _pr_covering(
    obs: Observation, rid: str, amount: float, statuses=("approved", "pending")
) -> bool:
    for p in obs.purchase_requisitions:
        if p.requirement_id == rid and p.status in statuses and p.amount >= amount - 1e-6:
            return True
    return False


def _pending_count(obs: Observation, rid: str) -> int:
    return sum(
        1 for p in obs.purchase_requisitions if p.requirement_id == rid and p.status == "pending"
    )


def _escalatable(obs: Observation, rid: str) -> bool:
    """Escalation approves the requirement's oldest pending PR, which must still fit the
    remaining budget (else the action is invalid)."""
    for p in obs.purchase_requisitions:
        if p.requirement_id == rid and p.status == "pending":
            return p.amount <= obs.budget_remaining
    return False

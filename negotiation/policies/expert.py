"""The expert buyer: a rule policy that plans, infers and squeezes within the rules.

How it works (all from the public Observation, so it can resume from any step):
- Raises purchase requisitions on the first step for every requirement whose cost can
  exceed the PR threshold, and escalates a pending PR when a deadline would otherwise slip.
- Ranks suppliers per requirement by expected landed value: list price, lead time vs.
  deadline, and an *estimated* reliability = public rating, discounted by deception
  suspicion inferred from tells (persistent competing-offer / low-stock claims with high
  confidence), by scandal notes and by this supplier's delivery history in the episode.
- Negotiates with the best two candidates. Rounds 1-4 (inside every persona's patience):
  low anchored offers that never insult, to read the concession curve. From round 5 on it
  only makes "safe" offers: last counter / 1.02 (rounded up), which is provably at or above
  the reservation (counters keep a 2 % band above it), so patience running out yields a
  grudging accept instead of a walk-away.
- Estimates the supplier's floor from the Faratin curve: the concession ratio between
  rounds gives beta (log-log slope); it awards at the standing counter when the predicted
  remaining concession is small, the price is already good, or the deadline requires it.
- Hedges (splits the order) when the best supplier's estimated reliability is low and a
  second awardable quote is within 12 %.
- Bilateral mode (public round limit T): stays low until the seller's final counter at
  round T, then offers final/1.02 at round T+1 (>= reservation by the guard band), and awards.
"""

from __future__ import annotations

import math
from typing import Any

from ..observation import Observation
from .base import Policy, has_pr

SAFE_ROUND = 5  # every persona's patience is >= 4 rounds


def _ceil2(x: float) -> float:
    return math.ceil(x * 100.0 - 1e-9) / 100.0


class ExpertPolicy(Policy):
    name = "expert"

    def __init__(self, seed: int = 0, max_threads: int = 2, **params: Any) -> None:
        super().__init__(seed, **params)
        self.max_threads = int(max_threads)
        self._tells_owner: object = None
        self._tells_seen: dict = {}
        self._claims: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        self._bad: dict[str, int] = {}

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _offers(th) -> int:
        return th.offers

    @staticmethod
    def _counters(th) -> list[float]:
        return [rd.supplier_price for rd in th.rounds if rd.response in ("counter", "escalation")]

    def _reliability_map(self, obs: Observation) -> dict[str, float]:
        """Aggregates the evidence; returns an empty memo filled lazily per supplier."""
        # Incremental tell aggregation (rounds only ever append); keyed on the episode's
        # thread dict so a reused or resumed policy recomputes from scratch.
        if self._tells_owner is not obs.threads:
            self._tells_owner = obs.threads
            self._tells_seen = {}
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
        return {}

    @staticmethod
    def _reliability(s, claims: float, n: int, bad: int) -> float:
        rel = s.rated_reliability
        if n >= 2:
            susp = claims / n
            if susp > 0.38:
                rel -= 1.5 * (susp - 0.38)
        rel -= 0.2 * bad
        if any("scandal" in note for note in s.notes):
            rel -= 0.1
        return max(0.05, min(1.0, rel))

    @staticmethod
    def _floor_estimate(th, list_price: float) -> tuple[float, float]:
        """(estimated floor, estimated fraction of concession still to come)."""
        cs = [p for p in (rd.supplier_price for rd in th.rounds if rd.response == "counter")]
        if not cs:
            return list_price * 0.75, 1.0
        a = max(list_price, cs[0])
        k = len(cs)
        if k < 2:
            return cs[-1] * 0.85, 0.6
        d1 = max(1e-9, a - cs[-2])
        d2 = max(1e-9, a - cs[-1])
        ratio = d2 / d1
        # ratio = (k/(k-1))^(1/beta)  ->  inverse beta
        inv_beta = math.log(max(1.0000001, ratio)) / math.log(k / (k - 1))
        inv_beta = min(max(inv_beta, 0.2), 8.0)
        # Assume patience T >= k; with typical T in [k, k+4], the remaining concession share
        # at T = k + 2 gives a conservative estimate.
        t_guess = k + 2
        done = (k / t_guess) ** inv_beta
        total = d2 / max(1e-9, done)
        floor = a - total
        return max(floor, cs[-1] * 0.6), 1.0 - done

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

    def _arena(self, obs: Observation) -> dict[str, Any]:
        week = obs.week
        reqs = [r for r in obs.requirements if not r.decided and r.quantity_needed > 0]
        if not reqs:
            return {"action_type": "defer"}

        # Earliest possible delivery lead per open requirement (one pass over suppliers).
        min_lead: dict[str, int] = {}
        open_ids = {r.id for r in reqs}
        for s in obs.suppliers:
            if not s.active or s.rejected:
                continue
            lt = s.lead_time_weeks
            for rid in s.list_prices:
                if rid in open_ids and lt < min_lead.get(rid, 1 << 30):
                    min_lead[rid] = lt

        def _slack(r) -> int:
            return r.deadline_week - week - min_lead.get(r.id, 0)

        reqs.sort(key=lambda r: (_slack(r), not r.critical, r.id))
        # Budget reserve: what the other open requirements will need at a reasonable price.
        reserve_unit = {
            r.id: 0.85 * r.reference_price * obs.market_index.get(r.category, 1.0) for r in reqs
        }

        # 1. Purchase requisitions ahead of time.
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

        best_neg: tuple[float, dict[str, Any]] | None = None
        rels = self._reliability_map(obs)
        reserve_total = sum(reserve_unit[o.id] * o.quantity_needed for o in reqs)
        n_must = sum(1 for o in reqs if _slack(o) <= 1)
        for r in reqs:
            cat = r.category
            idx = obs.market_index.get(cat, 1.0)
            ref = r.reference_price * idx
            cands = []
            for s in obs.suppliers:
                if not s.active or s.rejected or r.id not in s.list_prices:
                    continue
                th = obs.threads.get((s.id, r.id))
                if th is not None and th.status not in ("open", "agreed"):
                    continue
                if s.capacity.get(cat, 0) <= 0:
                    continue
                if week + s.lead_time_weeks > r.deadline_week:
                    continue
                rel = rels.get(s.id)
                if rel is None:
                    rel = rels[s.id] = self._reliability(
                        s,
                        self._claims.get(s.id, 0.0),
                        self._counts.get(s.id, 0),
                        self._bad.get(s.id, 0),
                    )
                lp = s.list_prices[r.id]
                price_guess = lp
                if th is not None:
                    ap = th.awardable_price(week)
                    if ap is not None:
                        price_guess = ap
                # Expected cost per unit of fulfilment: unreliable suppliers cost more, and
                # a supplier that cannot cover the whole need forces a second sourcing round.
                value = price_guess / max(0.3, rel) ** 1.5
                if s.capacity.get(cat, 0) < r.quantity_needed:
                    value *= 1.3
                if week + s.lead_time_weeks == r.deadline_week:
                    value *= 1.1  # no buffer for a slip
                cands.append((value, s, th, rel))
            if not cands:
                continue
            cands.sort(key=lambda t: (t[0], t[1].id))
            slack = r.deadline_week - week - min(c[1].lead_time_weeks for c in cands)
            others = reserve_total - reserve_unit[r.id] * r.quantity_needed
            budget_for_r = obs.budget_remaining - 0.6 * others

            # 2. Award: collect awardable quotes.
            quotes = []
            for _value, s, th, rel in cands:
                if th is None:
                    continue
                ap = th.awardable_price(week)
                if ap is None:
                    continue
                quotes.append((ap / max(0.3, rel) ** 1.5, ap, s, th, rel))
            quotes.sort(key=lambda t: (t[0], t[2].id))
            if quotes:
                _, ap, s, th, rel = quotes[0]
                qty = min(r.quantity_needed, s.capacity.get(cat, 0))
                floor, remaining = self._floor_estimate(th, s.list_prices[r.id])
                agreed = th.status == "agreed"
                good = ap <= 0.86 * ref
                stalled = (
                    th.offers >= SAFE_ROUND + 2 or remaining < 0.15 or (ap - floor) < 0.04 * ref
                )
                # Must this be awarded this week? Keep negotiating while slots allow, but
                # leave one slot per requirement that has to be awarded this week.
                must_now = slack <= 1 or week >= obs.weeks - 2
                urgent = must_now and (th.offers >= 3 or obs.actions_left_this_week <= n_must + 1)
                if agreed or good or stalled or urgent:
                    cost = qty * ap
                    if cost <= obs.budget_remaining and (
                        cost <= budget_for_r or urgent or r.critical
                    ):
                        if cost > obs.pr_threshold and not has_pr(obs, r.id, cost):
                            if (
                                _pr_covering(obs, r.id, cost, ("pending",))
                                and _escalatable(obs, r.id)
                                and obs.escalations_left > 0
                                and slack <= 1
                            ):
                                return {"action_type": "escalate", "requirement_id": r.id}
                        else:
                            # Hedge when the chosen supplier looks unreliable.
                            if rel < 0.8 and len(quotes) > 1 and r.quantity_needed >= 2:
                                _, ap2, s2, _th2, _rel2 = quotes[1]
                                half = r.quantity_needed - r.quantity_needed // 2
                                if (
                                    ap2 <= 1.12 * ap
                                    and s.capacity.get(cat, 0) >= half
                                    and s2.capacity.get(cat, 0) >= r.quantity_needed - half
                                    and (r.quantity_needed // 2) >= 1
                                ):
                                    cost2 = half * ap + (r.quantity_needed - half) * ap2
                                    if cost2 <= obs.budget_remaining and (
                                        cost2 <= obs.pr_threshold or has_pr(obs, r.id, cost2)
                                    ):
                                        return {
                                            "action_type": "hedge",
                                            "requirement_id": r.id,
                                            "supplier_id": s.id,
                                            "hedge_supplier_id": s2.id,
                                            "split": round(half / r.quantity_needed, 4),
                                        }
                            return _award(s.id, r.id, qty)

            # 3. Negotiate with the best candidates (at most max_threads active ones).
            active = 0
            for _value, s, th, _rel in cands:
                if active >= self.max_threads:
                    break
                if th is not None and th.status == "agreed":
                    active += 1
                    continue
                active += 1
                k = th.offers if th is not None else 0
                if th is not None and k >= SAFE_ROUND + 3:
                    continue
                lp = s.list_prices[r.id]
                last = th.counter_price if th is not None else None
                if last is None and th is not None:
                    cs = self._counters(th)
                    last = cs[-1] if cs else None
                if k + 1 < SAFE_ROUND:
                    offer = max(0.6 * lp, 0.74 * ref) * (1.0 + 0.02 * k)
                    if last is not None:
                        offer = min(offer, last * 0.93)
                else:
                    if last is None:
                        continue
                    offer = _ceil2(last / 1.02)
                offer = min(offer, r.ceiling_unit_price * 1.2)
                prio = (slack, -int(r.critical), k)
                act = _negotiate(s.id, r.id, round(offer, 2))
                key = prio
                if best_neg is None or key < best_neg[0]:
                    best_neg = (key, act)
                break  # one negotiation candidate per requirement per step
        if best_neg is not None:
            return best_neg[1]
        # 4. Escalate a pending PR if it blocks an urgent requirement.
        for r in reqs:
            if obs.escalations_left > 0 and _escalatable(obs, r.id) and r.deadline_week - week <= 2:
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

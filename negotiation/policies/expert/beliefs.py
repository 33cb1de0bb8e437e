"""What the expert believes about suppliers, from the public observation only.

- Reliability: the public rating, discounted by deceptive tells (claims of competing offers
  and low stock above SUSPICION), scandals and bad deliveries.
- Safe prices: the lowest opening no rule persona takes as an insult, derived from the
  documented persona parameter ranges (suppliers.PERSONA_PARAMS), not re-typed.
- A thread's history (offers and counters) as the buyer saw it; what the counters say
  about a bilateral seller's concession tactic is posterior.py's, and, for a seller that
  model does not explain, what the trend of its concessions says (trend_offer).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import NamedTuple

from ...observation import Observation
from ...suppliers.concession import HARDEN_MARGIN, STALL_MOVE
from ...suppliers.guard import BAND
from ...suppliers.rule import PERSONA_PARAMS

SUSPICION = 0.38  # mean competing-offer / low-stock claim above which a supplier looks deceptive
DECEPTIVE_REL = 0.66  # delivery reliability assumed for a supplier that looks deceptive
OVERCLAIM = 1.5  # capacity discount for a supplier that looks deceptive
CLAIM_MARGIN = 1.06  # claimed capacity may exceed the true one (rounding, rival bookings)


def _hi(name: str, persona: str) -> float:
    v = PERSONA_PARAMS[persona][name]
    return float(v[1] if isinstance(v, tuple) else v)


def _lo(name: str, persona: str) -> float:
    v = PERSONA_PARAMS[persona][name]
    return float(v[0] if isinstance(v, tuple) else v)


# The highest insult line any persona can have, reservation x (1 - insult), with
# reservation = reference x cost_ratio x (1 + margin) x market (x the rival's push), as a
# fraction of the list price (list = reference x list_factor x market x push) and of the
# reference price x market: an opening at or above the lower bound insults nobody.
def _line(p: str) -> float:
    return _hi("cost_ratio", p) * (1.0 + _hi("margin", p)) * (1.0 - _lo("insult", p))


SAFE_OPEN_LIST = 1.01 * max(_line(p) / _lo("list_factor", p) for p in PERSONA_PARAMS)
SAFE_OPEN_REF = 1.01 * max(_line(p) for p in PERSONA_PARAMS)
# Bilateral games make the seller's cost public: the highest insult line of any persona at
# that cost, and the lowest floor any persona can have there (reservation x the guard band).
SAFE_OPEN_COST = 1.005 * max(
    (1.0 + _hi("margin", p)) * (1.0 - _lo("insult", p)) for p in PERSONA_PARAMS
)
LOWEST_FLOOR_COST = min(1.0 + _lo("margin", p) for p in PERSONA_PARAMS) * (1.0 + BAND)
# And the highest: reservation x (1 + floor margin) at the top of every range, before a
# stalled buyer hardens it (concession.HARDEN_MARGIN); pressure only lowers it.
HIGHEST_FLOOR_COST = max(
    (1.0 + _hi("margin", p)) * (1.0 + _hi("floor_margin", p)) for p in PERSONA_PARAMS
)
# Offers the expert may make on a thread of unknown patience: none walks before its patience.
SAFE_ROUNDS = min(int(_lo("patience", p)) for p in PERSONA_PARAMS)


@dataclass(frozen=True, slots=True)
class SupplierView:
    reliability: float
    deceptive: bool


class Evidence:
    """Claims in tells, rounds and bad deliveries per supplier, and the view they give of
    it. Read incrementally, as a thread's rounds only ever append: only a thread whose
    record changed is read, and only a supplier whose evidence or record changed is
    viewed anew (the planner views every candidate supplier on every step). Recomputed
    from scratch for a new episode."""

    def __init__(self) -> None:
        self.episode: object = None
        self._clear()

    def _clear(self) -> None:
        # Per thread: the record read last, its rounds and the claims in them.
        self._threads: dict[tuple[str, str], tuple[object, int, float]] = {}
        self._keys: dict[str, list[tuple[str, str]]] = {}  # a supplier's threads, in order
        self._views: dict[str, tuple] = {}  # supplier id -> (record, view)
        self._contracts: tuple = ()  # the contracts bad was counted on
        self.claims: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.bad: dict[str, int] = {}

    def update(self, obs: Observation) -> bool:
        """Reads the step's evidence; True when this is a new episode."""
        fresh = self.episode != obs.episode_key
        if fresh:
            self.episode = obs.episode_key
            self._clear()
        seen = self._threads
        for key, th in obs.threads.items():
            last = seen.get(key)
            if last is None:
                self._keys.setdefault(key[0], []).append(key)
                n0, acc = 0, 0.0
            elif last[0] is th:
                continue
            else:
                n0, acc = last[1], last[2]
            rounds = th.rounds
            for rd in rounds[n0:]:
                t = rd.tells
                acc += t["competing_offers_claim"] + t["low_stock_claim"]
            seen[key] = (th, len(rounds), acc)
            if last is None or n0 < len(rounds):
                self._tally(key[0])
        if obs.contracts != self._contracts:  # the same records: the same count
            self._contracts = obs.contracts
            self._count_bad(obs.contracts)
        return fresh

    def _count_bad(self, contracts) -> None:
        bad: dict[str, int] = {}
        for c in contracts:
            if c.status in ("partial", "defaulted") or c.slips:
                bad[c.supplier_id] = bad.get(c.supplier_id, 0) + 1
        for sid in bad.keys() | self.bad.keys():
            if bad.get(sid) != self.bad.get(sid):
                self._views.pop(sid, None)
        self.bad = bad

    def _tally(self, sid: str) -> None:
        """A supplier's claims and counts over its threads (summed in the observation's
        order, so the floats stay those of a fresh read)."""
        claims, counts = 0.0, 0
        for key in self._keys[sid]:
            _, n, acc = self._threads[key]
            claims += acc
            counts += 2 * n
        self.claims[sid], self.counts[sid] = claims, counts
        self._views.pop(sid, None)

    def view(self, s) -> SupplierView:
        hit = self._views.get(s.id)
        if hit is not None:
            if hit[0] is s:
                return hit[1]
            # A new record (weekly list prices, capacity): the same view unless what it
            # reads changed.
            if hit[0].rated_reliability == s.rated_reliability and hit[0].notes == s.notes:
                self._views[s.id] = (s, hit[1])
                return hit[1]
        view = self._view(s)
        self._views[s.id] = (s, view)
        return view

    def _view(self, s) -> SupplierView:
        n = self.counts.get(s.id, 0)
        b = self.bad.get(s.id, 0)
        c = self.claims.get(s.id, 0.0)
        rel = s.rated_reliability
        deceptive = n >= 2 and c / n > SUSPICION
        if deceptive:
            rel -= 1.5 * (c / n - SUSPICION)
        rel -= 0.2 * b
        if any("scandal" in note for note in s.notes):
            rel -= 0.1
        rel = max(0.05, min(1.0, rel))
        if deceptive and rel > DECEPTIVE_REL:
            rel = DECEPTIVE_REL
        return SupplierView(rel, deceptive)


class History(NamedTuple):
    """A thread as the buyer saw it: its answered offers and the supplier's counters."""

    offers: tuple[float, ...]
    counters: tuple[float, ...]
    regular: bool  # a plain offer/counter sequence (no escalation, no walk-out)

    @property
    def stalled(self) -> bool:
        """Some offer did not move STALL_MOVE above the buyer's best before it: the seller
        may have hardened (concession.py)."""
        bests = self.bests
        return any(o < b * (1.0 + STALL_MOVE) for o, b in zip(self.offers[1:], bests, strict=False))

    @property
    def bests(self) -> tuple[float, ...]:
        """The buyer's best offer so far after each offer: what tit-for-tat measures the
        next offer from (concession.py)."""
        return tuple(itertools.accumulate(self.offers, max))


def history(th) -> History:
    offers, counters = [], []
    regular = True
    for rd in th.rounds:
        if rd.response == "counter" and rd.buyer_offer is not None:
            offers.append(rd.buyer_offer)
            counters.append(rd.supplier_price)
        elif rd.response != "accept":
            regular = False
    return History(tuple(offers), tuple(counters), regular)


# A seller the model does not explain whose last TREND_STEPS concessions each grew (by a
# cent or more) concedes like a clock that has not yet run out; the buyer's final offer
# claims TREND_SHARE of its last concession. Chosen from principle, not tuned: the next
# concession of a growing series is at least the last, so claiming all of it asks for no
# more than the clock's next ask (the even split 0.5 left half of a Boulware seller's
# next concession on the table: mean share 0.175 on the field family's tuning seeds,
# 0.286 with the whole concession, no deal lost).
TREND_STEPS = 4
TREND_SHARE = 1.0


def trend_offer(counters: tuple[float, ...]) -> float | None:
    """The final offer to a seller the model does not explain, from the trend of its own
    concessions: its last counter less TREND_SHARE of its last concession, when each of its
    last TREND_STEPS concessions (in cents) was larger than the one before; None otherwise
    (a seller that slows down, stalls or answers the buyer rather than the clock)."""
    if len(counters) < TREND_STEPS + 2:
        return None
    tail = counters[-TREND_STEPS - 2 :]
    steps = [round(a - b, 2) for a, b in itertools.pairwise(tail)]
    if steps[0] <= 0.0 or any(b <= a for a, b in itertools.pairwise(steps)):
        return None
    return counters[-1] - TREND_SHARE * steps[-1]


class Floors(NamedTuple):
    """The floors a bilateral seller can have: least <= floor < most."""

    least: float
    most: float = math.inf


def floor_range(cost: float | None, h: History) -> Floors:
    """The lowest and highest floor a rule seller can have at its public unit cost; the
    highest raised by HARDEN_MARGIN once the buyer has stalled. Unbounded without a public
    cost (only bilateral games publish it)."""
    if cost is None:
        return Floors(0.0)
    most = cost * HIGHEST_FLOOR_COST
    if h.stalled:
        most *= 1.0 + HARDEN_MARGIN
    return Floors(cost * LOWEST_FLOOR_COST, most)


def expected_price(anchor: float, rounds: int) -> float:
    """Rough price after ``rounds`` offers of a steady creep, before any counter is seen:
    a share of ~30 % of the list price, most of it toward the supplier's patience."""
    return anchor * (1.0 - 0.30 * min(1.0, rounds / 8.0) ** 1.5)

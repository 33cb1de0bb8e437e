"""What the expert believes about suppliers, from the public observation only.

- Reliability: the public rating, discounted by deceptive tells (claims of competing offers
  and low stock above SUSPICION), scandals and bad deliveries.
- Safe prices: the lowest opening no rule persona takes as an insult, derived from the
  documented persona parameter ranges (suppliers.PERSONA_PARAMS), not re-typed.
- Concession: a thread's counters are fitted to the documented supplier model (time plus
  tit-for-tat, concession.py) over a grid of its hidden parameters; the fits that explain
  the counters predict the lowest final offer the supplier accepts. A supplier the model
  does not explain (an LLM, a field agent) gets no prediction, and the expert plays safe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from ...concession import TFT_STEP_CAP
from ...observation import Observation
from ...suppliers import PERSONA_PARAMS

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
# Offers the expert may make on a thread of unknown patience: none walks before its patience.
SAFE_ROUNDS = min(int(_lo("patience", p)) for p in PERSONA_PARAMS)


@dataclass(frozen=True, slots=True)
class SupplierView:
    reliability: float
    deceptive: bool


class Evidence:
    """Claims in tells, rounds and bad deliveries per supplier, aggregated incrementally
    (rounds only ever append); recomputed from scratch for a new episode."""

    def __init__(self) -> None:
        self.episode: object = None
        self._seen: dict[tuple[str, str], tuple[int, float]] = {}
        self._views: dict[str, tuple] = {}
        self.claims: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.bad: dict[str, int] = {}

    def update(self, obs: Observation) -> bool:
        """Reads the step's evidence; True when this is a new episode."""
        fresh = self.episode != obs.episode_key
        if fresh:
            self.episode = obs.episode_key
            self._seen, self._views = {}, {}
        seen = self._seen
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
        self.claims, self.counts, self.bad = claims, counts, bad
        return fresh

    def view(self, s) -> SupplierView:
        n = self.counts.get(s.id, 0)
        b = self.bad.get(s.id, 0)
        key = (n, b, s.rated_reliability, len(s.notes))
        hit = self._views.get(s.id)
        if hit is not None and hit[0] == key:
            return hit[1]
        c = self.claims.get(s.id, 0.0)
        rel = s.rated_reliability
        if n >= 2 and c / n > SUSPICION:
            rel -= 1.5 * (c / n - SUSPICION)
        rel -= 0.2 * b
        if any("scandal" in note for note in s.notes):
            rel -= 0.1
        view = SupplierView(max(0.05, min(1.0, rel)), n >= 2 and c / n > SUSPICION)
        self._views[s.id] = (key, view)
        return view


class History(NamedTuple):
    """A thread as the buyer saw it: its answered offers and the supplier's counters."""

    offers: tuple[float, ...]
    counters: tuple[float, ...]
    regular: bool  # a plain offer/counter sequence (no escalation, no walk-out)


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


def expected_price(anchor: float, rounds: int) -> float:
    """Rough price after ``rounds`` offers of a steady creep, before any counter is seen:
    a share of ~30 % of the list price, most of it toward the supplier's patience."""
    return anchor * (1.0 - 0.30 * min(1.0, rounds / 8.0) ** 1.5)


# ---------------------------------------------------------------- the concession model fit
_BETAS = tuple(math.exp(math.log(0.15) + i * math.log(4.0 / 0.15) / 13) for i in range(14))
_WEIGHTS = tuple(0.25 + 0.05 * i for i in range(13))  # 0.25 .. 0.85
_RECIPROCITY = tuple(0.35 + 0.15 * i for i in range(10))  # 0.35 .. 1.7
_WINDOWS = (1, 2, 3)
FIT_TOLERANCE = 0.004  # rms misfit (x anchor) under which a parameter set explains a thread
KEEP_TOLERANCE = 0.012  # misfit under which a parameter set is kept as a candidate
CLOSE_MARGIN = 0.004  # above the highest predicted acceptance line, for rounding and grid
MAX_GAMBLE = 0.03  # a final offer never goes further below the last counter than this


class Fit(NamedTuple):
    floor: float
    beta: float
    weight: float
    reciprocity: float
    window: int
    misfit: float


def _tft(h: History, anchor: float, k: int, offer: float, d: int, rec: float) -> float:
    """The tit-for-tat ask for the buyer's k-th offer (1-based), from the seen counters."""
    n = k - 1  # answered offers before this one
    dd = min(d, n)
    if not dd:
        return anchor
    ratio = min(offer / h.offers[n - dd], (1.0 + TFT_STEP_CAP) ** dd)
    return h.counters[n - dd] / max(1.0, ratio) ** rec


_GRID = tuple(
    (beta, d, rec, w) for beta in _BETAS for d in _WINDOWS for rec in _RECIPROCITY for w in _WEIGHTS
)


def fit_concession(h: History, anchor: float, patience: int) -> list[Fit]:
    """Parameter sets of the supplier model that explain the counters, best first."""
    n = len(h.counters)
    fits: list[Fit] = []
    fr_of: dict[float, list[float]] = {}
    tft_of: dict[tuple[int, float], list[float]] = {}
    for beta, d, rec, w in _GRID:
        fr = fr_of.get(beta)
        if fr is None:
            fr = fr_of[beta] = [
                (min(k, patience) / patience) ** (1.0 / beta) for k in range(1, n + 1)
            ]
        tft = tft_of.get((d, rec))
        if tft is None:
            tft = tft_of[(d, rec)] = [
                _tft(h, anchor, k, h.offers[k - 1], d, rec) for k in range(1, n + 1)
            ]
            # counter_k = w (F f_k + A (1 - f_k)) + (1 - w) tft_k: affine in F.
            a = [w * f for f in fr]
            b = [w * anchor * (1.0 - f) + (1.0 - w) * t for f, t in zip(fr, tft, strict=True)]
            saa = sum(x * x for x in a)
            if saa <= 0.0:
                continue
            floor = sum(x * (c - y) for x, c, y in zip(a, h.counters, b, strict=True)) / saa
            if not 0.3 * anchor < floor < anchor:
                continue
            prev, sse = anchor, 0.0
            for x, y, c in zip(a, b, h.counters, strict=True):
                pred = min(prev, max(floor, x * floor + y))
                sse += (pred - c) ** 2
                prev = c
            misfit = math.sqrt(sse / n) / anchor
            if misfit <= KEEP_TOLERANCE:
                fits.append(Fit(floor, beta, w, rec, d, misfit))
    fits.sort(key=lambda f: f.misfit)
    return fits


def closing_offer(h: History, anchor: float, fits: list[Fit]) -> float | None:
    """The lowest final offer (after the supplier's patience) every plausible fit accepts,
    or None when no fit explains the thread."""
    if not fits or fits[0].misfit > FIT_TOLERANCE:
        return None
    bound = max(FIT_TOLERANCE, 2.0 * fits[0].misfit)
    k = len(h.counters) + 1
    last = h.counters[-1]
    need = 0.0
    for f in fits:
        if f.misfit > bound:
            break
        lo, hi = f.floor, last
        for _ in range(30):  # offer - ask(offer) rises with the offer
            mid = (lo + hi) / 2
            tft = _tft(h, anchor, k, mid, f.window, f.reciprocity)
            ask = min(last, max(f.floor, f.weight * f.floor + (1.0 - f.weight) * tft))
            if mid >= ask:
                hi = mid
            else:
                lo = mid
        need = max(need, hi)
    need = max(need * (1.0 + CLOSE_MARGIN), last * (1.0 - MAX_GAMBLE))
    return math.ceil(need * 100.0) / 100.0

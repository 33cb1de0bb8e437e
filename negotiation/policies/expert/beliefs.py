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
from ...entities import SupplierHidden, ThreadHidden
from ...guard import BAND
from ...observation import Observation
from ...suppliers import PERSONA_PARAMS
from ..lookahead import lowest_accepted

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
# The grid spans wider ranges than any persona's: an unknown seller may lie outside them.
_WINDOWS = (1, 2, 3, 4)
_RECIPROCITY = tuple(0.15 + 0.05 * i for i in range(38))  # 0.15 .. 2.0
_BETAS = tuple(math.exp(math.log(0.1) + i * math.log(60.0) / 47) for i in range(48))  # 0.1 .. 6
FIT_TOLERANCE = 0.002  # rms misfit (x anchor) under which a parameter set explains a thread
PLAUSIBLE = 3.0  # fits within this factor of the best one's misfit stay plausible
CLOSE_MARGIN = 0.005  # a final offer sits this far above the highest predicted acceptance line


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


def _solve(f, g, y, rows) -> tuple[float, float] | None:
    """Least squares of y = u f + w g over ``rows``: (u, w), or None when singular."""
    sff = sum(f[i] * f[i] for i in rows)
    sgg = sum(g[i] * g[i] for i in rows)
    sfg = sum(f[i] * g[i] for i in rows)
    sfy = sum(f[i] * y[i] for i in rows)
    sgy = sum(g[i] * y[i] for i in rows)
    det = sff * sgg - sfg * sfg
    if abs(det) < 1e-12 * max(1e-12, sff * sgg):
        return None
    return (sfy * sgg - sgy * sfg) / det, (sgy * sff - sfy * sfg) / det


def _fit_one(
    h: History,
    anchor: float,
    patience: int,
    min_floor: float,
    d: int,
    rec: float,
    beta: float,
    t: list[float],
) -> Fit | None:
    """The best (F, w) for one (window, reciprocity, beta): F and w are solved exactly,
    since a counter not clamped by the floor or the previous counter is affine in (w F, w):
    c_k = w F f_k + w (A (1 - f_k) - tft_k) + tft_k, with f_k = (k / T) ** (1 / beta) and
    tft_k the tit-for-tat asks ``t`` of (d, rec)."""
    n = len(h.counters)
    c = h.counters
    f = [(min(k, patience) / patience) ** (1.0 / beta) for k in range(1, n + 1)]
    y = [ck - tk for ck, tk in zip(c, t, strict=True)]
    g = [anchor * (1.0 - fk) - tk for fk, tk in zip(f, t, strict=True)]
    rows: range | list[int] = range(n)
    fit = None
    for _ in range(2):  # refit once without the rounds the clamps decided
        uw = _solve(f, g, y, rows)
        if uw is None or not 0.0 < uw[1] <= 1.0:
            break
        w = uw[1]
        floor = uw[0] / w
        if not max(min_floor, 0.3 * anchor) < floor < anchor:
            break
        prev, sse, free = anchor, 0.0, []
        for i in range(n):
            mix = w * (floor * f[i] + anchor * (1.0 - f[i])) + (1.0 - w) * t[i]
            if floor <= mix <= prev:
                free.append(i)
            sse += (min(prev, max(floor, mix)) - c[i]) ** 2
            prev = c[i]
        fit = Fit(floor, beta, w, rec, d, math.sqrt(sse / n) / anchor)
        if len(free) == n or len(free) < 2:
            break
        rows = free
    return fit


def fit_concession(h: History, anchor: float, patience: int, min_floor: float = 0.0) -> list[Fit]:
    """Parameter sets of the supplier model (concession.py) that explain the counters, best
    first, over a grid of (window, reciprocity, beta) wider than any persona's ranges. A
    floor under ``min_floor`` (a seller never sells below its cost) explains nothing."""
    n = len(h.counters)
    if n < 3:
        return []
    fits: list[Fit] = []
    for d in _WINDOWS:
        for rec in _RECIPROCITY:
            t = [_tft(h, anchor, k, h.offers[k - 1], d, rec) for k in range(1, n + 1)]
            for beta in _BETAS:
                fit = _fit_one(h, anchor, patience, min_floor, d, rec, beta, t)
                if fit is not None and fit.misfit <= 2.0 * FIT_TOLERANCE:
                    fits.append(fit)
    fits.sort(key=lambda fi: fi.misfit)
    return fits


def _model(h: History, anchor: float, patience: int, fit: Fit):
    """A fitted seller as the engine's own hidden records, for concession.next_ask."""
    th = ThreadHidden(fit.floor / (1.0 + BAND), 0.0, fit.floor, anchor, fit.beta, patience)
    th.offers, th.asks = list(h.offers), list(h.counters)
    th.last_counter = h.counters[-1]
    sh = SupplierHidden(
        time_weight=fit.weight,
        reciprocity=fit.reciprocity,
        tft_window=fit.window,
        stall_rounds=len(h.offers) + 2,
        quarter_end=0,
        quarter_pressure=0.0,  # the fitted floor is the floor of the moment
        overstock=0.0,
    )
    return th, sh


def closing_offer(h: History, anchor: float, patience: int, fits: list[Fit]) -> float | None:
    """The lowest next offer every plausible fit accepts (CLOSE_MARGIN above it), or None
    when no fit explains the thread or none accepts less than the last counter."""
    if not fits or fits[0].misfit > FIT_TOLERANCE:
        return None
    bound = max(FIT_TOLERANCE, PLAUSIBLE * fits[0].misfit)
    last = h.counters[-1]
    k = len(h.counters) + 1
    need = 0.0
    for f in fits:
        if f.misfit > bound:
            break
        th, sh = _model(h, anchor, patience, f)
        low = lowest_accepted(th, sh, k, 0, last)
        if low is None:
            return None
        need = max(need, low)
    need = math.ceil(need * (1.0 + CLOSE_MARGIN) * 100.0) / 100.0
    return need if need < last else None

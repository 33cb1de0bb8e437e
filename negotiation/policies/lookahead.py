"""Search over a thread's offer paths against the documented supplier model.

Given a supplier's true hidden pricing (the oracle reads it), it simulates the rule
supplier's answer to offers (concession.py) on a copy of the thread and finds the cheapest
path the thread allows within a number of offers: a rising schedule that never stalls nor
insults, closed by the lowest offer the supplier accepts or by awarding its standing
counter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..suppliers.concession import next_ask, record
from ..world.entities import SupplierHidden, ThreadHidden

GROWTH = (1.006, 1.01, 1.02, 1.035, 1.05, 1.075, 1.1)  # per-round raises it tries
STARTS = (0.0, 0.25, 0.5, 0.75, 1.0)  # openings: between the insult line and the floor


def _clone(th: ThreadHidden) -> ThreadHidden:
    """A copy of a hidden thread that simulation may change; the real one stays as it is."""
    c = ThreadHidden(th.reservation, th.cost, th.floor, th.anchor, th.beta, th.patience)
    c.offers, c.asks = list(th.offers), list(th.asks)
    c.stalls, c.hardened = th.stalls, th.hardened
    c.strikes, c.last_counter = th.strikes, th.last_counter
    return c


@dataclass(frozen=True, slots=True)
class Path:
    """The cheapest way found to close a thread: the offers to make, then the deal."""

    price: float  # what the deal costs per unit
    offers: tuple[float, ...]  # offers to make first; the last one is accepted unless award
    award: bool  # after the offers, award the standing counter


def _ceil_cents(x: float) -> float:
    return math.ceil(x * 100.0 - 1e-9) / 100.0


def lowest_accepted(
    th: ThreadHidden, sh: SupplierHidden, k: int, week: int, cap: float
) -> float | None:
    """The lowest offer (in cents, <= cap) the supplier accepts as offer number k."""
    lo = th.reservation
    if k > th.patience + 1 or next_ask(th, sh, cap, k, week).price > cap:
        return None
    hi = cap
    for _ in range(24):  # offer - ask(offer) rises with the offer: bisect its root
        mid = (lo + hi) / 2
        if mid >= next_ask(th, sh, mid, k, week).price:
            hi = mid
        else:
            lo = mid
    price = _ceil_cents(hi)
    return price if price <= cap and price >= next_ask(th, sh, price, k, week).price else None


def best_path(
    th: ThreadHidden,
    sh: SupplierHidden,
    k0: int,
    week: int,
    cap: float,
    rounds: int,
    lowest_first: float = 0.0,
) -> Path | None:
    """The cheapest deal within ``rounds`` more offers, from a thread after k0 offers; no
    first offer goes under ``lowest_first``."""
    base = th
    best: Path | None = None
    if base.last_counter is not None and base.last_counter <= cap:
        best = Path(base.last_counter, (), True)
    insult = th.reservation * (1.0 - sh.insult) * 1.001
    floor = th.floor * 1.2
    last_offer = base.offers[-1] if base.offers else None
    for start in STARTS:
        first = max(insult + (floor - insult) * start, lowest_first)
        if last_offer is not None:
            first = max(first, last_offer * GROWTH[0])
        for g in GROWTH:
            sim = _clone(base)
            offers: list[float] = []
            o = first
            for j in range(rounds):
                k = k0 + j + 1
                close = lowest_accepted(sim, sh, k, week, cap)
                if close is not None and (best is None or close < best.price - 1e-9):
                    best = Path(close, (*offers, close), False)
                if k > th.patience:
                    break
                o = _ceil_cents(o)
                a = next_ask(sim, sh, o, k, week)
                if o >= a.price or a.stalls >= sh.stall_rounds:
                    break  # accepted higher than planned, or a stall: not this path
                record(sim, o, a)
                sim.last_counter = round(min(sim.last_counter or a.price, a.price), 2)
                offers.append(o)
                if sim.last_counter <= cap and (best is None or sim.last_counter < best.price):
                    best = Path(sim.last_counter, tuple(offers), True)
                o *= g
    return best

"""How a rule supplier's ask moves: time, the buyer's own concessions, and its own pressure.

A pure function of the thread's hidden history, so the rule personas, the LLM supplier's
prompt (its "planned ask") and the measurement oracle all read the same numbers. The
supplier's ask after the buyer's k-th offer mixes two Faratin, Sierra & Jennings (1998)
tactics with a per-supplier weight w:

- time-dependent: ``floor + (anchor - floor) * (1 - (k/T) ** (1/beta))``;
- tit-for-tat over a window of d offers (d = 1 relative, d > 1 averaged): the ask d offers
  ago, divided by the buyer's own relative concession since then raised to the supplier's
  reciprocity, ``ask[-d] / (offer / best[-d]) ** reciprocity``; one round mirrors at most
  TFT_STEP_CAP, so a buyer cannot buy a large concession with one jump from a lowball.

Tit-for-tat measures each offer from the buyer's best offer d offers back (its standing
offer then), never from a retreat: an offer under the buyer's best so far is no concession
(and a stall when under the floor), and the raise after it counts only above that best.
(Raises measured from a retreat would pay a buyer who alternates down and up for
concessions it never made; Faratin's supplier would retreat in turn, which hard rule 3
forbids here.) The mix never rises above the last counter (hard rule 3) nor falls below the
floor of the moment. A buyer who offers below that floor without moving STALL_MOVE above
its best offer for the supplier's ``stall_rounds`` offers in a row meets a frozen ask; a
firm offer within the supplier's planned range is waited out on the clock. On the first
stall the supplier walks (``stall_walk_prob``) or hardens for the rest of the thread: its
floor rises by HARDEN_MARGIN. When its patience runs out (offer k > T) the time tactic sits
at the floor: it accepts an offer at or above its ask and walks away from anything less.

The floor of the moment sinks toward the reservation (never into the guard's no-reveal
band) under the supplier's own pressure: its quarter end approaching (QUARTER_WEEKS long,
felt PRESSURE_WINDOW weeks ahead) or surplus stock it would rather move. Tells hint at it.
"""

from __future__ import annotations

from typing import NamedTuple

from ..world.entities import SupplierHidden, ThreadHidden
from .guard import BAND

STALL_MOVE = 0.005  # a buyer offer at least this much (relative) above its last one is a move
HARDEN_MARGIN = 0.05  # how far a hardened supplier's floor rises
TFT_STEP_CAP = 0.10  # the largest relative buyer concession one tit-for-tat round mirrors
QUARTER_WEEKS = 13
PRESSURE_WINDOW = 4  # weeks before its quarter end in which a supplier feels the deadline


class Ask(NamedTuple):
    """The supplier's reading of one buyer offer (nothing is changed by computing it)."""

    price: float  # its ask now: it accepts an offer at or above it, otherwise counters it
    stalls: int  # consecutive offers in which the buyer has not moved, this one included
    pressure: float  # 0..1, its own deadline or stock pressure this week


def pressure(sh: SupplierHidden, week: int) -> float:
    """How hard the supplier's own quarter end or surplus stock pushes it to close now."""
    to_go = (sh.quarter_end - week) % QUARTER_WEEKS
    quarter = sh.quarter_pressure * max(0.0, 1.0 - to_go / PRESSURE_WINDOW)
    return max(quarter, sh.overstock)


def floor_now(th: ThreadHidden, p: float) -> float:
    """The planned floor (raised once hardened), sunk by pressure p toward the guard's
    band above the reservation."""
    floor = th.floor * (1.0 + HARDEN_MARGIN) if th.hardened else th.floor
    lowest = th.reservation * (1.0 + BAND)
    return floor - max(0.0, floor - lowest) * p


def time_ask(th: ThreadHidden, k: int, floor: float) -> float:
    """Faratin's time-dependent ask after k buyer offers."""
    frac = (min(k, th.patience) / th.patience) ** (1.0 / th.beta)
    return floor + (th.anchor - floor) * (1.0 - frac)


def next_ask(th: ThreadHidden, sh: SupplierHidden, offer: float, k: int, week: int) -> Ask:
    """The supplier's ask after the buyer's k-th offer ``offer`` in this thread."""
    p = pressure(sh, week)
    floor = floor_now(th, p)
    prev = th.last_counter if th.last_counter is not None else th.anchor
    offers = th.offers  # the buyer's standing offers (its best so far after each)
    if offers and offer < floor and offer < offers[-1] * (1.0 + STALL_MOVE):
        stalls = th.stalls + 1
    else:
        stalls = 0
    if stalls >= sh.stall_rounds:
        return Ask(prev, stalls, p)
    d = min(sh.tft_window, len(offers))
    if d:
        ratio = min(offer / offers[-d], (1.0 + TFT_STEP_CAP) ** d)
        tft = th.asks[-d] / max(1.0, ratio) ** sh.reciprocity
    else:
        tft = prev
    w = sh.time_weight
    mixed = w * time_ask(th, k, floor) + (1.0 - w) * tft
    return Ask(min(prev, max(floor, mixed)), stalls, p)


def record(th: ThreadHidden, offer: float, ask: Ask) -> None:
    """Remember one answered offer as the buyer's standing offer (its best so far): the
    history the next tit-for-tat round reads."""
    th.offers.append(max(offer, th.offers[-1]) if th.offers else offer)
    th.asks.append(ask.price)
    th.stalls = ask.stalls

"""Bilateral closing moves for a seller whose ask stays above what the buyer can pay.

Two rules for sellers the documented model does not explain, found against the field
family's sellers (suppliers/field.py; tuned on seeds from 100000, never on 0-999):

- An echoed counter is taken. A counter at or under the buyer's own last offer is the
  seller agreeing (AgentK proposes the best offer it was made once its target falls
  under it, the grid rounding it a cent down): any further offer under it only risks a
  seller whose acceptance is a draw. It applies on every thread: a rule seller accepts
  such an offer instead, so it never fires on the documented model.
- At the seller's patience (offer T), without a posterior, where its ask is still above
  the buyer's cap and moved over its last CLOCK_ANSWERS answers, but not as a steady
  clock (concessions each larger than the one before by much the same factor, as a
  time-dependent seller's curve gives, which the final offer's trend rule follows;
  AgentK's moves are draws and can grow too, but by factors that differ more than
  CLOCK_SPREAD): the deal is possible only near the cap, and the buyer offers NEAR_CAP
  of the way from its last offer to the cap, keeping the final offer (the cap) as a
  second chance. The final offer that claims the trend of a seller's concessions
  (beliefs.trend_offer) is made only to a steady clock (on_clock): a seller that mirrored
  the buyer's jump at its patience concedes more than any clock's pace, and would walk
  from a final offer that claims that concession again. A midway offer
  there lost about half such deals (AgentK: a late jump that leaves the cap out of reach
  raises the spread of the buyer's offers, and its acceptance draw falls with it; a
  near-cap offer it proposes back). A seller whose ask did not move over those answers
  answers the buyer, not the clock (a tit-for-tat waiting for the buyer to cross its
  reservation, which takes the midway offer): the plan's offer stays.
"""

from __future__ import annotations

import itertools
import math

CLOCK_ANSWERS = 3  # the concessions the clock's pace is read from
CLOCK_SPREAD = 1.5  # a steady clock's growth factors differ by less than this factor
NEAR_CAP = 0.97  # offer T's share of the way from the buyer's last offer to its cap


def echoed(counter: float, last_offer: float | None, cap: float) -> bool:
    """The counter is at or under the buyer's own last offer, and affordable."""
    return last_offer is not None and counter <= min(last_offer, cap) + 1e-9


def steady_clock(steps: list[float]) -> bool:
    """Concessions (in cents, oldest first) that each grew by much the same factor."""
    if steps[0] <= 0.0 or any(b < a for a, b in itertools.pairwise(steps)):
        return False
    growth = [b / a for a, b in itertools.pairwise(steps)]
    return max(growth) < CLOCK_SPREAD * min(growth)


def on_clock(counters: tuple[float, ...]) -> bool:
    """The seller's last CLOCK_ANSWERS concessions form a steady clock (steady_clock): its
    last one was its clock's, not an answer to the buyer's jump at its patience (a seller
    that mirrors a jump concedes far more than its pace said)."""
    if len(counters) < CLOCK_ANSWERS + 1:
        return False
    tail = counters[-CLOCK_ANSWERS - 1 :]
    return steady_clock([round(a - b, 2) for a, b in itertools.pairwise(tail)])


def patience_offer(counters: tuple[float, ...], last_offer: float, cap: float) -> float | None:
    """Offer T to a seller whose clock will not bring its ask to ``cap`` (see the module);
    None where the plan's offer stands (its ask at or under the cap, stalled, or a steady
    clock)."""
    if len(counters) < CLOCK_ANSWERS + 1 or counters[-1] <= cap or last_offer >= cap:
        return None
    tail = counters[-CLOCK_ANSWERS - 1 :]
    steps = [round(a - b, 2) for a, b in itertools.pairwise(tail)]
    if max(steps) <= 0.0:  # stalled: it answers the buyer, not the clock
        return None
    if steady_clock(steps):
        return None  # the plan's midway and trend offers follow it
    return min(cap, math.ceil((last_offer + NEAR_CAP * (cap - last_offer)) * 100.0 - 1e-9) / 100.0)

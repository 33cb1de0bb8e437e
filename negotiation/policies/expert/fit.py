"""Whether the documented supplier model still explains a bilateral thread: from its
public counters alone on every offer (assess: no posterior is computed), and, where a
stall raises the question, from the posterior's residuals (residual_misfit).

The rule seller's ask (suppliers/concession.py) never stands still while the buyer keeps
moving before its patience, except where a clamp holds it: far above its floor, its last
counter (a tit-for-tat base leaving the window), or its floor. So a counter repeated to
the cent after the buyer raised by STALL_MOVE or more is either a rule seller at its
floor, where meeting it costs nothing the model could save, or a seller outside the model
(one that stops at its floor and walks, a fixed price, a random walk). On the four
bilateral rule personas, with their tactics as drawn and re-drawn (bench/quality.py's rule
and mixed families, seeds 0-199: 1,600 threads), safe.py acted on such a stall once (a
distressed seller, buyer share 0.873 instead of 0.907) until the residual test below
withdrew it (its counters fit the model: a clamp); held-out sellers show it within a few
answers.

The residual test asks the posterior (posterior.thread_fits) for the parameter sets of the
documented model that reproduce every counter within the model's noise (COUNTER_TOL: the
cent rounding): the true set of a rule seller always passes, so a thread none passes is
outside the model. It needs MIN_FIT_COUNTERS counters and costs a posterior search, so it
runs only where a stall has already raised the question (safe.py).
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from ...suppliers.concession import STALL_MOVE
from .beliefs import Floors, History

SAME_CENTS = 0.005  # two counters closer than half a cent are the same counter


class Fit(NamedTuple):
    """What a thread's counters say of the documented model."""

    explained: bool  # False: the last answer stalled while the buyer moved (a regular thread)
    stalls: int  # trailing answers that stalled so
    moved: float  # share of answers (after the first) whose counter fell
    recovered: int  # earlier stalls after which the counter fell again


def _stalled(h: History, i: int) -> bool:
    """Answer i repeats answer i-1 although offer i moved STALL_MOVE above the buyer's best
    before it."""
    return (
        abs(h.counters[i] - h.counters[i - 1]) < SAME_CENTS
        and h.offers[i] >= h.bests[i - 1] * (1.0 + STALL_MOVE) - 1e-9
    )


def assess(h: History) -> Fit:
    """The thread's Fit: unexplained once its last answer stalled."""
    n = len(h.counters)
    stalls = 0
    for i in range(n - 1, 0, -1):
        if not _stalled(h, i):
            break
        stalls += 1
    fell = [b < a - SAME_CENTS for a, b in itertools.pairwise(h.counters)]
    moved = sum(fell) / (n - 1) if n > 1 else 1.0
    recovered = sum(1 for i in range(1, n - 1 - stalls) if _stalled(h, i) and any(fell[i : n - 1]))
    return Fit(stalls == 0 or not h.regular, stalls, moved, recovered)


def residual_misfit(h: History, anchor: float, patience: int, floors: Floors) -> bool:
    """True when no parameter set of the documented model reproduces the thread's counters
    within the model's noise (the posterior finds none): the seller is outside the model.
    The posterior is imported here, as policy.py does (numpy's import is paid on use)."""
    from .posterior import thread_fits

    return not len(thread_fits(h, anchor, patience, floors))

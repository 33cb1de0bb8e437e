"""What a bilateral seller's counters say about its concession tactic, and what it accepts.

The rule seller's ask is a deterministic function of its hidden parameters and the
buyer's offers (concession.py), and the buyer sees every ask rounded to cents. So the
parameter sets a buyer cannot rule out are exactly those whose asks, replayed on the
thread's own history, land within COUNTER_TOL of every counter seen: a consistent set,
not a best fit. The true parameters always pass that test, wherever they lie in the wide
prior box (an unknown seller may be off every persona's range); the search keeps the
lattice points that pass, which sit around the truth rather than on it. When no parameter
set is consistent, the seller does not follow the model (an LLM, a field agent) and the
buyer gets no prediction.

Search: the floor F and time weight w enter a counter that neither clamp decides
affinely, ``c_k = w F f_k + w (A (1 - f_k) - tft_k) + tft_k`` with f_k = (k / T) **
(1 / beta), so they are solved exactly by least squares for each (window, reciprocity,
beta); those two are scanned on a log lattice that is refined around the cells whose
residual could still fall under the tolerance, deeper while no point is consistent (a
costly item's cent is a tiny share of its price). The floor's box runs from the lowest to
the highest floor any persona can have at the seller's public cost (the documented margin
ranges; the tactics, which the held-out mixed family re-draws, do not enter it), and stays
under the anchor. A solution off the box (0 < w <= 1, least <= F < top) is projected onto
it, so that a seller whose parameters lie on its edge is still found. Each set's fit is one
compiled pass (columns.py), its powers numpy's (numpow.py), and a window's whole search,
level after level, one compiled call (lattice.py); one posterior is computed once per
bilateral thread.

One thread, one search (thread_fits): the lattice is searched at the expert's first
planned offer, shallowly (it only ranks a few raises), and refined until it holds enough
consistent sets; at most CARRY of them are carried from decision to decision, each new
counter re-testing them (a set that explains more counters explains fewer too), refined
locally where few still fit. The kept cells of each refinement are half the nearest, half
spread evenly, so that a thin ridge of consistent sets is followed along its whole length.

The closing offer is the highest of the consistent sets' lowest accepted offers plus a
margin (with_margin): CLOSE_MARGIN of the price for the truth lying between lattice points,
and CLOSE_CENTS for the cent the counters are known to, which is most of a cheap item's
miss; tests/negotiation/policies/test_expert.py checks it against what the true seller accepts on
240 threads, a third with the personas' tactics. Before it, the sets climb towards higher
lines (closing_fits): the lattice at least CLOSE_REFINEMENTS deep around the sets with the
highest lines, until the highest line stops rising; a Boulware seller's consistent sets
can lie on a thin ridge that a coarser lattice samples only in part, and the highest line
must not fall short of the truth. Each set's line is solved in closed form (_lines).

The patience offer (offer T, one before the closing offer) is chosen from T-1 counters
among candidates by its mean price over the consistent sets: each set either meets it or
answers with a counter, after which the buyer makes the closing offer of the sets that
predict that counter. A refused patience offer is countered, never walked from, so this
choice needs no safety margin; it is weighed over SAMPLE of the carried sets.

The offers before it (T-2 and T-1) are chosen the same way, among a creep and a few raises,
each set then making its own best offers up to offer T and meeting its own final offer
(ahead_offer): optimistic for every candidate alike, it only ranks them. The final offer is
mirrored against the seller's answer a window back (offer T-1 for a window of 2, T-2 for
3), so a raise there lowers the base it is priced from.
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np

from ...suppliers.concession import TFT_STEP_CAP
from . import lattice
from .beliefs import Floors, History
from .columns import lines_flat, residuals_at
from .paths import best_paths, patience_prices

# |model - counter| the true parameters can show: the counter's rounding to cents (0.005)
# plus the model reading the rounded counters where the seller reads its exact asks.
COUNTER_TOL = 0.0101
WINDOWS = (1, 2, 3, 4)  # tit-for-tat windows scanned (personas use 1-3)
RECIPROCITY = (0.1, 2.4)  # scanned range, wider than any persona's (0.4-1.6)
BETA = (0.08, 8.0)  # scanned range, wider than any persona's (0.15-4.0)
COARSE = 48  # lattice points per axis before refinement
REFINEMENTS = 3  # each refinement divides the lattice step by 4; at least this many
# for the closing offer, which must cover the truth: a Boulware seller's consistent sets lie
# on a thin ridge in (reciprocity, beta) that three refinements can sample only in part, so
# the highest line fell short (held-out mixed seller, seed 240, after a 3 % probe: 0.2 %)
CLOSE_REFINEMENTS = 4
DEEPEST = 7  # and more, up to this many, while none is consistent (costly items: a cent
# is a tiny share of their price, so the lattice must be finer to land within one)
KEEP = 3000  # candidate cells carried into a refinement (consistent_fits' default)
CHUNK = 4096  # (reciprocity, beta) pairs whose residuals are computed at once
# Refits without the clamped rounds. One left a held-out seller unexplained (mixed family,
# seed 85: a Boulware clock whose three clamped counters bent the first fit, so the second
# still counted one of them; its own parameters missed by 16 cents, 0.3 cents after this).
REFITS = 2
W_MIN = 1e-3  # the lowest time weight a set may have (the box is 0 < w <= 1)
SLACK = 0.02  # x anchor: residual a coarse cell may show and still hold a consistent point
# The closing offer's margin over the highest predicted line. Without one, on the 1,647
# final offers of 3,200 episodes (4 personas x 400 seeds, with and without tactics
# redrawn), the line was under the truth by at most 0.063 % of the price on items over 20,
# and by up to 0.83 cents on cheaper ones (0.27 % of a 2.71 item: a cent-blind 0.3 %
# barely covered it).
CLOSE_MARGIN = 0.0015
CLOSE_CENTS = 0.01
# The patience offer only weighs offers (one the seller refuses is countered, not walked
# from), so fewer sets serve it.
SAMPLE = 1000  # consistent sets it is weighed over, evenly spread
# The offers before it (ahead_offer) only rank a few raises, each set playing its own best
# path, so fewer sets serve them.
PRE_KEEP = 300  # a shallow search's cells per refinement (tests read the sets it finds)
PRE_SAMPLE = 400
PRE_RAISES = (1.006, 1.03, 1.06, 1.1, 1.15, 1.21, 1.3, 1.45)  # offer T over offer T-1
MID_RAISES = (1.006, 1.05, 1.1)  # an offer before T-1 over the one before it
# A thread's sets are searched once, CARRY_FROM counters before the seller's patience (the
# expert's first planned offer), on a shallow lattice (FIRST_KEEP cells into
# FIRST_REFINEMENTS refinements: it ranks a few raises and seeds the carry), and at most
# CARRY of them, evenly spread, are carried: each later decision re-tests them against its
# new counter and, where fewer than CARRY_MIN of a window's sets still fit, refines around
# its CARRY_KEEP nearest, at most RETEST_DEEPER levels deeper (thread_fits).
CARRY_FROM = 3
FIRST_KEEP = 100
FIRST_REFINEMENTS = 1
CARRY = 2000
CARRY_MIN = 64
CARRY_KEEP = 100
RETEST_DEEPER = 1
WIDE_KEEP = 300  # cells per refinement where the shallow search finds no set
# The closing offer climbs from the carried sets towards higher lines, around the
# CLOSE_TOP highest, until the highest line stops rising (CLOSE_CLIMBS at most;
# closing_fits): the highest line is what the offer must cover.
CLOSE_TOP = 64
CLOSE_CLIMBS = 12
NEWTON = 6  # Newton steps for a line inside the tit-for-tat band (_lines)


@dataclass(frozen=True, slots=True)
class Consistent:
    """Parameter sets of the supplier model that reproduce a thread's counters."""

    window: np.ndarray
    reciprocity: np.ndarray
    beta: np.ndarray
    weight: np.ndarray
    floor: np.ndarray

    def __len__(self) -> int:
        return len(self.window)

    def take(self, idx: np.ndarray) -> Consistent:
        return Consistent(*(getattr(self, f.name)[idx] for f in fields(self)))


def _fit_inputs(h: History, anchor: float, patience: int, box: Floors, d: int) -> tuple:
    """The thread's figures the compiled fit reads (lattice.fit_at's ``fit``)."""
    n = len(h.counters)
    frac = np.minimum(np.arange(1, n + 1), patience) / patience
    base, ratio = _tft_rows(h, anchor, d)
    counters = np.asarray(h.counters, dtype=float)
    least, top = box
    return (counters, float(anchor), frac, base, ratio, float(least), float(top), REFITS, W_MIN)


def _residuals(h: History, anchor: float, patience: int, box: Floors, d: int, rec, beta, at=None):
    """(floor, weight, max |model - counter|) per (rec, beta) pair; inf where the solved
    floor or weight is impossible (``box``: its ``most`` is under the anchor): the fit at
    any parameter sets (the search reads lattice points through lattice.fit_at). With ``at``,
    the pairs are (rec, beta[at]): each distinct beta once (its powers are the costliest
    figures of the fit, and a lattice repeats every beta on each reciprocity row). Computed
    CHUNK pairs at a time: every pair is independent, and small temporaries stay in cache
    instead of faulting in fresh pages."""
    if at is None:
        at = np.arange(len(rec))
    if len(rec) <= CHUNK:
        return _residuals_of(h, anchor, patience, box, d, rec, beta, at)
    parts = [
        _residuals_of(h, anchor, patience, box, d, rec[i : i + CHUNK], beta, at[i : i + CHUNK])
        for i in range(0, len(rec), CHUNK)
    ]
    return tuple(np.concatenate(col) for col in zip(*parts, strict=True))


def _residuals_of(h: History, anchor: float, patience: int, box: Floors, d: int, rec, beta, at):
    counters, anchor, frac, base, ratio, least, top, refits, w_min = _fit_inputs(
        h, anchor, patience, box, d
    )
    rec, beta = np.ascontiguousarray(rec, dtype=float), np.ascontiguousarray(beta, dtype=float)
    return residuals_at(
        counters, anchor, frac, base, ratio, rec, beta, np.ascontiguousarray(at), least, top,
        refits, w_min,
    )  # fmt: skip


def _tft_rows(h: History, anchor: float, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Per answered offer, the tit-for-tat ask's base (the counter d answers back) and the
    ratio its reciprocity powers (the offer over the buyer's best d offers back, capped);
    the anchor and a ratio of 0 where there is no offer to mirror yet (the first)."""
    counters, bests = h.counters, h.bests
    base, ratio = np.empty(len(counters)), np.empty(len(counters))
    for i in range(len(counters)):
        dd = min(d, i)
        if not dd:
            base[i], ratio[i] = anchor, 0.0
            continue
        r = min(h.offers[i] / bests[i - dd], (1.0 + TFT_STEP_CAP) ** dd)
        base[i], ratio[i] = counters[i - dd], max(1.0, r)
    return base, ratio


FINE = 4**DEEPEST  # the lattice as integers at the finest step: exact de-duplication
R0, B0 = math.log(RECIPROCITY[0]), math.log(BETA[0])
SR = (math.log(RECIPROCITY[1]) - R0) / ((COARSE - 1) * FINE)
SB = (math.log(BETA[1]) - B0) / ((COARSE - 1) * FINE)
PAD = 2 * FINE  # lattice keys: (i, j) shifted clear of any refinement's offsets
SPAN = (COARSE + 4) * FINE


@dataclass(frozen=True, slots=True)
class Found:
    """Consistent sets with their lattice points: integers (i, j) at the finest step, and
    the step each was found at (a refinement around it divides it by 4)."""

    fits: Consistent
    i: np.ndarray
    j: np.ndarray
    step: np.ndarray

    def __len__(self) -> int:
        return len(self.i)

    def take(self, idx: np.ndarray) -> Found:
        return Found(self.fits.take(idx), self.i[idx], self.j[idx], self.step[idx])


@functools.cache
def lattice_tables() -> tuple[np.ndarray, np.ndarray, int]:
    """(reciprocity, beta, lo): numpy's exp of every lattice coordinate a search can
    reach, from -PAD (index 0) up to SPAN - PAD, for the compiled search (lattice.py) to
    read, so each figure is numpy's (the compiled exp's last bit can differ)."""
    k = np.arange(-PAD, SPAN - PAD)
    return np.exp(R0 + k * SR), np.exp(B0 + k * SB), -PAD


def _found(rows: list[tuple]) -> Found:
    """A Found from (window, i, j, step, weight, floor) rows of arrays."""
    if not rows:
        e = np.empty(0)
        return Found(Consistent(e.astype(int), e, e, e, e), e.astype(np.int64), e, e)
    d, i, j, step, w, floor = (np.concatenate(c) for c in zip(*rows, strict=True))
    fits = Consistent(d.astype(int), np.exp(R0 + i * SR), np.exp(B0 + j * SB), w, floor)
    return Found(fits, i, j, step)


def _level(step: int) -> int:
    """The refinement a lattice step belongs to (0: the coarse lattice)."""
    return DEEPEST - (int(step).bit_length() - 1) // 2


def _refine(
    h: History,
    anchor: float,
    patience: int,
    box: Floors,
    d: int,
    points: tuple[np.ndarray, np.ndarray, int],
    keep: int,
    refinements: int,
    deepest: int = DEEPEST,
    enough: int = 1,
) -> tuple | None:
    """From lattice points (i, j, step) of window d, the consistent points of the first
    level from ``refinements`` on that holds ``enough`` (``deepest`` at most): each level is the
    lattice around the ``keep`` cells of the one before with the lowest residuals, among
    those within COUNTER_TOL + SLACK x anchor / 4 ** level (a cell so near may still hold
    a consistent point), half the nearest and half spread evenly (lattice.keep_cells), so
    that the refinement follows the whole length of a thin ridge of consistent sets (the
    closing offer's highest line lies at one of its ends). Compiled (lattice.refine). A
    (window, i, j, step, weight, floor) row, or None where it finds none."""
    i, j, step = points
    level = _level(step)
    i, j, step, w, floor = lattice.refine(
        _fit_inputs(h, anchor, patience, box, d), lattice_tables(), PAD, SPAN,
        np.ascontiguousarray(i, dtype=np.int64), np.ascontiguousarray(j, dtype=np.int64),
        int(step), level, keep, refinements, deepest, enough, COUNTER_TOL,
        SLACK * anchor / 4**level,
    )  # fmt: skip
    n = len(i)
    if not n:
        return None
    return (np.full(n, d), i, j, np.full(n, step), w, floor)


def search(
    h: History,
    anchor: float,
    patience: int,
    floors: Floors,
    keep: int = KEEP,
    refinements: int = REFINEMENTS,
    enough: int = 1,
) -> Found:
    """consistent_fits with the lattice points the sets were found at; a window's search
    stops at the first level from ``refinements`` on with ``enough`` consistent points."""
    box = Floors(floors.least, min(anchor, floors.most))
    grid = np.arange(COARSE) * FINE
    i0, j0 = (a.ravel() for a in np.meshgrid(grid, grid, indexing="ij"))
    rows = [
        _refine(h, anchor, patience, box, d, (i0, j0, FINE), keep, refinements, DEEPEST, enough)
        for d in WINDOWS
    ]
    return _found([r for r in rows if r is not None])


def consistent_fits(
    h: History,
    anchor: float,
    patience: int,
    floors: Floors,
    keep: int = KEEP,
    refinements: int = REFINEMENTS,
) -> Consistent:
    """Every lattice point of the model that reproduces the counters within COUNTER_TOL.
    ``floors``: the floors the seller can have (beliefs.floor_range: from its public cost;
    the floor is also under the anchor); ``keep``: candidate cells carried into each
    refinement; ``refinements``: the least refinements before the search stops at the first
    level that holds a consistent point."""
    return search(h, anchor, patience, floors, keep, refinements).fits


def retest(found: Found, h: History, anchor: float, patience: int, floors: Floors) -> Found:
    """The sets of ``found`` that still reproduce every counter of ``h`` (one or more
    counters longer than the thread they were found on), their floor and weight re-solved;
    for a window none of whose sets does, the consistent points of up to RETEST_DEEPER
    refinements around its CARRY_KEEP nearest (the new counter can leave only a sliver of
    a set's cell consistent)."""
    box = Floors(floors.least, min(anchor, floors.most))
    rows = []
    for d in WINDOWS:
        at = np.flatnonzero(found.fits.window == d)
        if not len(at):
            continue
        step = int(found.step[at].min())
        level = _level(step)
        points = (found.i[at], found.j[at], step)
        row = _refine(
            h, anchor, patience, box, d, points, CARRY_KEEP, level, level + RETEST_DEEPER, CARRY_MIN
        )
        if row is not None:
            rows.append(row)
    return _found(rows)


_THREADS: OrderedDict[tuple, Found] = OrderedDict()
THREAD_MEMO = 256  # threads' sets remembered (a pure function of its arguments)


def thread_fits(h: History, anchor: float, patience: int, floors: Floors) -> Found:
    """The consistent sets the expert plans with. Up to CARRY_FROM counters before the
    seller's patience, a shallow search (FIRST_KEEP, FIRST_REFINEMENTS), or where that
    finds none a wide one (WIDE_KEEP), CARRY of its sets kept; after that, the sets of the same
    thread one counter shorter re-tested against the new counter (retest: the sets that
    explain more counters are among those that explain fewer), searched afresh only when
    none passes. A pure function of its arguments (a fresh buyer resuming mid-thread
    recomputes the same chain), remembered per thread."""
    key = (h.offers, h.counters, anchor, patience, floors)
    hit = _THREADS.get(key)
    if hit is not None:
        _THREADS.move_to_end(key)
        return hit
    n = len(h.counters)
    found = None
    if n > max(1, patience - CARRY_FROM):
        shorter = History(h.offers[:-1], h.counters[:-1], h.regular)
        found = retest(thread_fits(shorter, anchor, patience, floors), h, anchor, patience, floors)
    if found is None or not len(found):
        found = search(h, anchor, patience, floors, FIRST_KEEP, FIRST_REFINEMENTS, CARRY_MIN)
        if not len(found):  # a thin region the shallow search missed: search it widely
            found = search(h, anchor, patience, floors, WIDE_KEEP, REFINEMENTS)
        found = _sample_found(found, CARRY)
    _THREADS[key] = found
    if len(_THREADS) > THREAD_MEMO:
        _THREADS.popitem(last=False)
    return found


def _sample_found(found: Found, n: int) -> Found:
    """At most n of found's sets, evenly spread."""
    if len(found) <= n:
        return found
    return found.take(np.linspace(0, len(found) - 1, n).astype(int))


def closing_fits(h: History, anchor: float, patience: int, floors: Floors) -> Consistent:
    """thread_fits' sets and those found by climbing towards higher lines: the closing offer
    must cover the truth, which can lie past the highest carried set on a thin ridge of
    consistent sets. Each climb evaluates the lattice (at least CLOSE_REFINEMENTS deep,
    one step finer than the carried sets) within two steps of the CLOSE_TOP consistent sets
    with the highest lines, and stops when the highest line no longer rises (CLOSE_CLIMBS
    at most), or once a set accepts nothing under the last counter (then there is no
    closing offer anyway)."""
    found = thread_fits(h, anchor, patience, floors)
    if not len(found):
        return found.fits
    box = Floors(floors.least, min(anchor, floors.most))
    cap = h.counters[-1]
    step = max(1, min(int(found.step.min()) // 4, FINE // 4**CLOSE_REFINEMENTS))
    edge, lines = found, lowest_accepted_next(h, found.fits, cap)
    top_line = lines.max()
    for _ in range(CLOSE_CLIMBS):
        if np.isnan(top_line):
            break
        top = edge.take(np.argsort(-lines, kind="stable")[:CLOSE_TOP])
        rows = []
        for d in np.unique(top.fits.window):
            at = top.fits.window == d
            points = (*lattice.around(top.i[at], top.j[at], step, PAD, SPAN), step)
            # deepest 0: the points' own consistent sets, no refinement
            row = _refine(h, anchor, patience, box, int(d), points, 0, 0, 0)
            if row is not None:
                rows.append(row)
        edge = _found(rows)
        if not len(edge):
            break
        found = _join(found, edge)
        lines = lowest_accepted_next(h, edge.fits, cap)
        if not lines.max() > top_line:  # nan (none accepted) or no higher: done
            break
        top_line = lines.max()
    return found.fits


def _join(a: Found, b: Found) -> Found:
    """Both Founds' sets, in one."""
    fits = Consistent(
        *(
            np.concatenate([getattr(a.fits, f.name), getattr(b.fits, f.name)])
            for f in fields(Consistent)
        )
    )
    return Found(
        fits,
        np.concatenate([a.i, b.i]),
        np.concatenate([a.j, b.j]),
        np.concatenate([a.step, b.step]),
    )


def _model_ask(fits: Consistent, offer, d, base_offer, base_ask, prev, time_ask=None) -> np.ndarray:
    """Per consistent set, its ask for ``offer`` with its time tactic at the floor (offer T
    or later) or, before that, at ``time_ask``, given its tit-for-tat base (the offer and
    ask d answers back: its window, or all there are) and its last ask ``prev``."""
    ratio = np.minimum(offer / base_offer, (1.0 + TFT_STEP_CAP) ** d)
    tft = base_ask / np.maximum(1.0, ratio) ** fits.reciprocity
    w, floor = fits.weight, fits.floor
    time = floor if time_ask is None else time_ask
    return np.minimum(prev, np.maximum(floor, w * time + (1.0 - w) * tft))


def _lines(fits: Consistent, d, base_offer, base_ask, prev, cap: float) -> np.ndarray:
    """Per consistent set (the last axis; the others broadcast from the bases), the lowest
    offer its seller accepts once the time tactic sits at the floor (see _model_ask); nan
    where it accepts none <= cap.

    In closed form: the ask's unclamped part g(o) = w F + (1 - w) tft(o) falls as the offer
    o rises, so the lowest accepted offer is min(prev, max(F, o*)), o* the offer that meets
    g (never under F: an offer under the floor is refused). g is flat below the tit-for-tat
    base (nothing to mirror) and above base x (1 + TFT_STEP_CAP) ** d (the mirror's cap);
    between them o - g(o) is concave and rising, so Newton's method from the base
    converges from below, quadratically.

    Compiled (columns.lines_flat) over the shape of the bases and sets (no wider: a base
    several answers back runs its Newton steps once for every later offer), then clamped
    by the last ask, each figure the one numpy gives."""
    parts = (base_offer, base_ask, fits.weight, fits.floor, fits.reciprocity, d)
    shape = np.broadcast_shapes(*(np.shape(x) for x in parts))
    flat = [np.broadcast_to(np.asarray(x, dtype=float), shape).ravel() for x in parts]
    meet, at_cap = lines_flat(*flat, 1.0 + TFT_STEP_CAP, float(cap), NEWTON)
    meet, at_cap = meet.reshape(shape), at_cap.reshape(shape)
    floor = fits.floor
    line = np.maximum(floor, np.minimum(prev, meet))
    took = np.minimum(prev, np.maximum(floor, at_cap)) <= cap
    return np.where(took, line, np.nan)


def _next_bases(h: History, fits: Consistent):
    """Per consistent set, the tit-for-tat bases of the next offer (the buyer's best and the
    counter its window back, or all there are) and that window."""
    n = len(h.counters)
    d = np.minimum(fits.window, n).astype(int)
    bests, counters = np.asarray(h.bests), np.asarray(h.counters)
    return d, bests[n - d], counters[n - d]


def lowest_accepted_next(h: History, fits: Consistent, cap: float) -> np.ndarray:
    """Per consistent set, the lowest next offer the seller accepts once its time tactic
    sits at the floor (offer T or later); nan where it accepts none <= cap."""
    d, base_offer, base_ask = _next_bases(h, fits)
    return _lines(fits, d, base_offer, base_ask, h.counters[-1], cap)


def highest_accepted_next(h: History, fits: Consistent, cap: float) -> float:
    """The highest of lowest_accepted_next's lines (nan where one is nan)."""
    return float(lowest_accepted_next(h, fits, cap).max()) if len(fits) else math.nan


def _ceil_cents(x):
    return np.ceil(np.asarray(x) * 100.0 - 1e-9) / 100.0


def with_margin(lines):
    """The offer, in cents, that covers a predicted line (scalar or array)."""
    return _ceil_cents(np.asarray(lines) * (1.0 + CLOSE_MARGIN) + CLOSE_CENTS)


class Closing(NamedTuple):
    """What the posterior says of the offer after the seller's patience."""

    explained: bool  # some parameter set of the model reproduces the counters
    offer: float | None  # the lowest offer every consistent set accepts (None: no such offer)


def closing_offer(h: History, anchor: float, patience: int, floors: Floors) -> Closing:
    """The lowest offer every consistent parameter set accepts next (with_margin of the
    highest); no offer when no set is consistent, or one accepts nothing under the last
    counter, or the offer would not be under it."""
    fits = closing_fits(h, anchor, patience, floors)
    if not len(fits):
        return Closing(False, None)
    return _closing_at(highest_accepted_next(h, fits, h.counters[-1]), h.counters[-1])


def closing_lines(h: History, anchor: float, patience: int, floors: Floors) -> np.ndarray | None:
    """Per consistent parameter set, the lowest next offer it accepts under the last
    counter (nan: none); None when no set is consistent."""
    fits = closing_fits(h, anchor, patience, floors)
    if not len(fits):
        return None
    return lowest_accepted_next(h, fits, h.counters[-1])


def closing_from(lines: np.ndarray | None, last: float) -> Closing:
    """The Closing that closing_lines' ``lines`` give under the last counter ``last``."""
    if lines is None:
        return Closing(False, None)
    return _closing_at(math.nan if np.isnan(lines).any() else lines.max(), last)


def _closing_at(top: float, last: float) -> Closing:
    """The Closing of an explained thread whose highest line is ``top`` (nan: some set
    accepts nothing under the last counter ``last``)."""
    if math.isnan(top):
        return Closing(True, None)
    offer = float(with_margin(top))
    return Closing(True, offer if offer < last else None)


def patience_offer(
    h: History, anchor: float, patience: int, floors: Floors, candidates: list[float]
) -> float | None:
    """The offer at the seller's patience (offer T) among ``candidates`` with the lowest
    mean price over the consistent sets: a set whose ask it meets accepts it; for the others
    the buyer sees its counter and then makes closing_offer's final offer among the sets
    that predict that counter, never under the candidate itself (the buyer never retracts
    an offer), or awards the counter. None: no set is consistent."""
    fits = thread_fits(h, anchor, patience, floors).fits
    if not len(fits):
        return None
    now = highest_accepted_next(h, fits, h.counters[-1])
    if not math.isnan(now):  # closing at once: every set accepts it
        candidates = [*candidates, float(with_margin(now))]
    fits = _sample(fits)
    means = patience_prices(
        np.asarray(h.bests, dtype=float), np.asarray(h.counters, dtype=float),
        np.asarray(candidates, dtype=float), fits.window.astype(np.int64), fits.reciprocity,
        fits.weight, fits.floor, 1.0 + TFT_STEP_CAP, CLOSE_MARGIN, CLOSE_CENTS, NEWTON,
    )  # fmt: skip
    best, best_price = None, math.inf
    for offer, price in zip(candidates, means, strict=True):
        if price < best_price - 1e-12:
            best, best_price = offer, float(price)
    return best


def _sample(fits: Consistent, n: int = SAMPLE) -> Consistent:
    """At most n consistent sets, evenly spread."""
    if len(fits) <= n:
        return fits
    return fits.take(np.linspace(0, len(fits) - 1, n).astype(int))


def _back(seq: list, k: int, d) -> np.ndarray:
    """Per set, the entry of ``seq`` (one per answer, the first at index 0) d answers before
    answer k, d being each set's own (1 to max(WINDOWS))."""
    out = seq[k - 2]
    for j in range(2, max(WINDOWS) + 1):
        if k - 1 - j >= 0:
            out = np.where(d == j, seq[k - 1 - j], out)
    return out


def _lines_back(fits: Consistent, k: int, offers: list, counters: list, prev, cap: float):
    """_lines for answer k, each set's tit-for-tat bases its window back (_back), computed
    one window at a time at the shape of that window's bases: a base several answers back
    does not vary along the later offers' axes, so its Newton steps run once per distinct
    base. Each figure is the one a single call on _back's bases gives."""
    d = np.minimum(fits.window, k - 1)
    out = np.empty(np.broadcast_shapes(np.shape(prev), d.shape))
    prev = np.broadcast_to(prev, out.shape)
    for dv in np.unique(d):
        at = np.flatnonzero(d == dv)
        base_offer, base_ask = (_of_sets(seq[k - 1 - dv], at) for seq in (offers, counters))
        out[..., at] = _lines(fits.take(at), d[at], base_offer, base_ask, prev[..., at], cap)
    return out


def _of_sets(x, at: np.ndarray):
    """The sets ``at`` of a planned figure whose last axis is one per set; a figure the
    same for every set (a scalar, or a last axis of one) as it is."""
    return x[..., at] if np.ndim(x) and np.shape(x)[-1] != 1 else x


def ahead_offer(
    h: History, anchor: float, patience: int, floors: Floors, candidates: list[float]
) -> float | None:
    """The next offer before the seller's patience among ``candidates`` with the lowest mean
    price over the consistent sets, each set then meeting its own best offers up to offer T
    (MID_RAISES, then PRE_RAISES over the offer before; each under its counter) and its
    own final offer. The final offer is mirrored against the seller's answer a window
    back (offer T-1 for a window of 2, T-2 for 3), so a raise there lowers the base it is
    priced from. None: no set is consistent."""
    fits = thread_fits(h, anchor, patience, floors).fits
    if not len(fits):
        return None
    fits = _sample(fits, PRE_SAMPLE)
    means = best_paths(
        np.asarray(h.bests, dtype=float), np.asarray(h.counters, dtype=float), float(anchor),
        patience, np.asarray(candidates, dtype=float), np.asarray(MID_RAISES),
        np.asarray(PRE_RAISES), fits.window.astype(np.int64), fits.reciprocity, fits.beta,
        fits.weight, fits.floor, 1.0 + TFT_STEP_CAP, CLOSE_MARGIN, CLOSE_CENTS, NEWTON,
    )  # fmt: skip
    return candidates[int(np.argmin(means))]

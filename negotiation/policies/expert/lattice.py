"""The posterior's lattice search compiled: one call refines a window's lattice points
level by level (posterior._refine's loop: fit, keep the near cells, refine around them)
without returning to Python between levels.

Every figure is the one the numpy form gives, bit for bit (tests/negotiation/policies/
posterior_reference.search keeps that form): the fit is columns.residuals_at; the
lattice's reciprocities and betas are read from tables of numpy's ``exp`` of each
lattice coordinate (posterior.lattice_tables), not computed with the compiled ``exp``,
whose last bit can differ from numpy's; the cells kept, the points around them and their
order are integer arithmetic and sorts, and the evenly spread picks reproduce
``np.linspace``'s arithmetic.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .columns import residuals_at

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}


@njit(**_JIT)
def _from_table(table: np.ndarray, at: np.ndarray, lo: int) -> np.ndarray:
    """table[at - lo], refusing a coordinate off the table (no silent out-of-bounds read)."""
    out = np.empty(len(at))
    for p in range(len(at)):
        k = at[p] - lo
        if k < 0 or k >= len(table):
            raise IndexError("lattice coordinate off the posterior's tables")
        out[p] = table[k]
    return out


@njit(**_JIT)
def fit_at(fit, tables, i: np.ndarray, j: np.ndarray):
    """(floor, weight, max |model - counter|) at lattice points (i, j): residuals_at with
    each distinct j's beta once. ``fit``: the thread's (counters, anchor, frac, tft base,
    tft ratio, least, top, refits, w_min); ``tables``: (reciprocity, beta, lo)."""
    counters, anchor, frac, base, ratio, least, top, refits, w_min = fit
    rec_of, beta_of, lo = tables
    js = np.unique(j)
    return residuals_at(
        counters, anchor, frac, base, ratio, _from_table(rec_of, i, lo),
        _from_table(beta_of, js, lo), np.searchsorted(js, j), least, top, refits, w_min,
    )  # fmt: skip


@njit(**_JIT)
def around(i: np.ndarray, j: np.ndarray, step: int, pad: int, span: int):
    """The lattice points within two steps of each (i, j), each once, sorted by i then j
    (keys (i + pad) * span + j + pad: ``pad`` keeps them non-negative)."""
    keys = np.empty(len(i) * 25, dtype=np.int64)
    q = 0
    for p in range(len(i)):
        for a in range(-2, 3):
            row = (i[p] + a * step + pad) * span
            for b in range(-2, 3):
                keys[q] = row + j[p] + b * step + pad
                q += 1
    keys = np.unique(keys)
    return keys // span - pad, keys % span - pad


@njit(**_JIT)
def lowest(x: np.ndarray, k: int) -> np.ndarray:
    """The indices of x's k lowest values (no nan), ties to the lower index: the first k
    of a stable argsort, as a set (unordered)."""
    if k >= len(x):
        return np.arange(len(x))
    cut = np.partition(x, k - 1)[k - 1]
    below = np.flatnonzero(x < cut)
    return np.concatenate((below, np.flatnonzero(x == cut)[: k - len(below)]))


@njit(**_JIT)
def keep_cells(i: np.ndarray, j: np.ndarray, err: np.ndarray, keep: int):
    """``keep`` of the cells (i, j) (sorted by i, then j): half those with the lowest
    residuals, and half spread evenly over the rest in order, ends included
    (``np.linspace(0, n - 1, num).astype(int)``'s picks: k * step, the last n - 1)."""
    num = keep - keep // 2
    n = len(i)
    picks = np.zeros(num, dtype=np.int64)  # one pick: linspace's start alone
    if num > 1:
        step = float(n - 1) / (num - 1)
        for k in range(num - 1):
            picks[k] = np.int64(k * step + 0.0)
        picks[num - 1] = n - 1
    pick = np.unique(np.concatenate((lowest(err, keep // 2), picks)))
    return i[pick], j[pick]


@njit(**_JIT)
def refine(fit, tables, pad, span, i, j, step, level, keep, refinements, deepest, enough, tol,
           slack):  # fmt: skip
    """posterior._refine's loop from lattice points (i, j) of ``step`` at ``level``:
    (i, j, step, weight, floor) of the consistent points of the first level from
    ``refinements`` on that holds ``enough`` (``deepest`` at most); none where a level
    has no cell within ``tol + slack`` (the slack divided by 4 each level)."""
    while True:
        floor, w, err = fit_at(fit, tables, i, j)
        hit = np.flatnonzero(err <= tol)
        if level >= deepest or (level >= refinements and len(hit) >= enough):
            return i[hit], j[hit], step, w[hit], floor[hit]
        near = np.flatnonzero(err <= tol + slack)
        if not len(near):
            return i[:0], j[:0], step, w[:0], floor[:0]
        i, j, err = i[near], j[near], err[near]
        if len(i) > keep:
            i, j = keep_cells(i, j, err, keep)
        step //= 4
        i, j = around(i, j, step, pad, span)
        slack /= 4
        level += 1

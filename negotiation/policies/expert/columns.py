"""The posterior's per-set fit (posterior._residuals), one compiled pass per set.

Each column of the inputs is one parameter set (reciprocity, beta) of a window, each row
one answered offer. Every figure is the one posterior.py's numpy layout computed, bit for
bit: the same IEEE operations in the same order (sums over the rounds in numpy's
pairwise order for a contiguous row, see pairwise_sum; no fused multiply-adds, no
reassociation), so the expert's play does not change. The powers (the time tactic's
``f`` and tit-for-tat's mirror) stay with numpy, whose vectorised ``pow`` rounds
differently from the C library's; they come in as arrays.

Compiled with numba (cache=True: the machine code is kept next to this file's bytecode,
so a new process loads it instead of compiling it again). A column's scratch rows are
allocated once per call, not per set.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# numba's defaults except for division: IEEE results (inf, nan) instead of exceptions, as
# numpy gives under np.errstate(divide="ignore", invalid="ignore").
_JIT = {"cache": True, "error_model": "numpy", "nogil": True}
_INLINE = {**_JIT, "inline": "always"}


@njit(**_INLINE)
def pairwise_sum(a: np.ndarray) -> float:
    """The sum of a short 1-d array in the order numpy's ``sum`` adds one contiguous row:
    one by one under 8 terms; else 8 running sums (terms k, k + 8, k + 16, ...) over the
    largest multiple of 8, joined as ((0+1)+(2+3))+((4+5)+(6+7)), then the rest one by one.
    Numpy's order for rows over its block of 128 terms differs (a thread has far fewer)."""
    n = len(a)
    if n < 8:
        total = a[0]
        for k in range(1, n):
            total += a[k]
        return total
    last = n - n % 8
    r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
    for k in range(8, last, 8):
        r0 += a[k]
        r1 += a[k + 1]
        r2 += a[k + 2]
        r3 += a[k + 3]
        r4 += a[k + 4]
        r5 += a[k + 5]
        r6 += a[k + 6]
        r7 += a[k + 7]
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for k in range(last, n):
        total += a[k]
    return total


@njit(**_INLINE)
def _clip(x: float, lo: float, hi: float) -> float:
    """np.clip of one number: nan stays nan."""
    if x != x:
        return x
    return min(max(x, lo), hi)


@njit(**_INLINE)
def _wsum(wts, a, b, tmp) -> float:
    """pairwise_sum of (wts * a) * b, in ``tmp``."""
    for k in range(len(a)):
        tmp[k] = (wts[k] * a[k]) * b[k]
    return pairwise_sum(tmp)


@njit(**_INLINE)
def _solve(f, g, y, wts, tmp) -> tuple[float, float]:
    """Weighted least squares of y = u f + w g over one column's rounds: (u, w). Weights
    of one give numpy's unweighted sums exactly (1.0 * x == x)."""
    sff, sgg, sfg = _wsum(wts, f, f, tmp), _wsum(wts, g, g, tmp), _wsum(wts, f, g, tmp)
    sfy, sgy = _wsum(wts, f, y, tmp), _wsum(wts, g, y, tmp)
    det = sff * sgg - sfg * sfg
    return (sfy * sgg - sgy * sfg) / det, (sgy * sff - sfy * sfg) / det


@njit(**_INLINE)
def _onto_box(f, g, y, w, floor, least, top, w_min, ones, tmp) -> tuple[float, float]:
    """(w, floor) of one column moved onto the box: w clipped to [w_min, 1] with the floor
    re-solved for it, then the floor clipped to [least, top) with w re-solved for it (and
    clipped again); posterior._onto_box's rule."""
    w_in = _clip(w, w_min, 1.0)
    if w_in != w:
        for k in range(len(f)):
            tmp[k] = f[k] * (y[k] - w_in * g[k])
        floor = pairwise_sum(tmp) / _wsum(ones, f, f, tmp) / w_in
    f_in = _clip(floor, least, top * (1.0 - 1e-9))
    if f_in != floor:
        for k in range(len(f)):
            tmp[k] = (f_in * f[k] + g[k]) * y[k]
        num = pairwise_sum(tmp)
        for k in range(len(f)):
            edge = f_in * f[k] + g[k]
            tmp[k] = edge * edge
        w_in = num / pairwise_sum(tmp)
    return _clip(w_in, w_min, 1.0), f_in


@njit(**_INLINE)
def _mixed(w, floor, f, time_part, tft, out) -> None:
    """The model's asks before its clamps, one per round, into ``out``."""
    for k in range(len(f)):
        out[k] = w * (floor * f[k] + time_part[k]) + (1.0 - w) * tft[k]


@njit(**_INLINE)
def _free(mix, floor, prev, out) -> int:
    """Marks (1.0) the rounds whose ask no clamp decided; their count."""
    n_free = 0
    for k in range(len(mix)):
        free = mix[k] >= floor and mix[k] <= prev[k]
        out[k] = 1.0 if free else 0.0
        n_free += free
    return n_free


@njit(**_INLINE)
def _residual(mix, floor, prev, counters) -> float:
    """max |clamped ask - counter| over the rounds; inf where it is not finite."""
    err = 0.0
    for k in range(len(mix)):
        ask = mix[k]
        if floor != floor or ask != ask:  # np.maximum's nan
            return math.inf
        err = max(err, abs(min(prev[k], max(floor, ask)) - counters[k]))
    return err if math.isfinite(err) else math.inf


@njit(**_JIT)
def fit_columns(counters, anchor, f, tft, least, top, refits, w_min):
    """Per column of ``f`` and ``tft`` (rounds x sets): (floor, weight, max |model -
    counter|). posterior._residuals' rule: floor and weight solved by least squares,
    refitted up to ``refits`` times without the rounds a clamp decided (where that leaves
    at least three), projected onto the box (w_min <= w <= 1, least <= floor < top) when
    off it."""
    n, m = f.shape
    prev = np.empty(n)
    prev[0] = anchor
    prev[1:] = counters[:-1]
    ones = np.ones(n)
    fc, tc, time_part, g, y = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    mix, free, tmp = np.empty(n), np.empty(n), np.empty(n)
    floors, weights, errs = np.empty(m), np.empty(m), np.empty(m)
    for c in range(m):
        for k in range(n):
            fc[k], tc[k] = f[k, c], tft[k, c]
            time_part[k] = anchor * (1.0 - fc[k])
            g[k], y[k] = time_part[k] - tc[k], counters[k] - tc[k]
        u, w = _solve(fc, g, y, ones, tmp)
        floor = u / w
        for _ in range(refits):
            _mixed(w, floor, fc, time_part, tc, mix)
            n_free = _free(mix, floor, prev, free)
            if n_free < 3 or n_free == n:
                break
            u, w = _solve(fc, g, y, free, tmp)
            floor = u / w
        if not (w > 0.0 and w <= 1.0 and floor >= least and floor < top):
            w, floor = _onto_box(fc, g, y, w, floor, least, top, w_min, ones, tmp)
        _mixed(w, floor, fc, time_part, tc, mix)
        floors[c], weights[c], errs[c] = floor, w, _residual(mix, floor, prev, counters)
    return floors, weights, errs

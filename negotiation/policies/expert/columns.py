"""The posterior's compiled loops: the per-set fit (posterior._residuals, residuals_at) and
the lines' Newton method (posterior._lines, lines_flat).

Each column of the inputs is one parameter set (reciprocity, beta) of a window, each row
one answered offer. Every figure is the one numpy computed for posterior.py, bit for
bit: the same IEEE operations in the same order (each column's sum over the rounds in
numpy's pairwise order for a contiguous row, see _sums_into; no fused multiply-adds, no
reassociation), so the expert's play does not change. The powers (the time tactic's
``f``, tit-for-tat's mirror, the Newton steps') call the function numpy's ``power`` calls
(numpow.py: numpy's vectorised ``pow`` rounds differently from the C library's).

The loops run along a row (one set per element), BLOCK sets at a time: the compiler
vectorises them across sets and a block's rows stay in cache. A fit every set of a block
does not need (a refit, the box) is computed for the whole block and kept where needed:
each column's figures depend on that column alone.

Compiled with numba (cache=True: the machine code is kept next to this file's bytecode,
so a new process loads it instead of compiling it again).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .numpow import pow_into, pow_row

# numba's defaults except for division: IEEE results (inf, nan) instead of exceptions, as
# numpy gives under np.errstate(divide="ignore", invalid="ignore").
_JIT = {"cache": True, "error_model": "numpy", "nogil": True}
BLOCK = 256  # sets per block: a block's dozen rows of scratch stay in the core's cache


@njit(**_JIT)
def column_sums(a: np.ndarray) -> np.ndarray:
    """Per column of ``a`` (rounds x sets), its sum over the rounds in the order numpy's
    ``sum`` adds one contiguous row (see _sums_into)."""
    out = np.empty(a.shape[1])
    _sums_into(a, out)
    return out


@njit(**_JIT)
def _sums_into(a: np.ndarray, out: np.ndarray) -> None:
    """Per column of ``a``, into ``out``, its sum over the rounds in numpy's order for one
    contiguous row: one by one under 8 rounds; else 8 running sums (rounds r, r + 8,
    r + 16, ...) over the largest multiple of 8, joined as ((0+1)+(2+3))+((4+5)+(6+7)),
    then the rest one by one. (Numpy's order for rows over its block of 128 terms
    differs; a thread has far fewer rounds.)"""
    n, m = a.shape
    if n < 8:
        for c in range(m):
            out[c] = a[0, c]
        for k in range(1, n):
            for c in range(m):
                out[c] += a[k, c]
        return
    last = n - n % 8
    runs = a[:8].copy()
    for k in range(8, last):
        for c in range(m):
            runs[k % 8, c] += a[k, c]
    for c in range(m):
        out[c] = ((runs[0, c] + runs[1, c]) + (runs[2, c] + runs[3, c])) + (
            (runs[4, c] + runs[5, c]) + (runs[6, c] + runs[7, c])
        )
    for k in range(last, n):
        for c in range(m):
            out[c] += a[k, c]


@njit(**_JIT)
def _clip(x: float, lo: float, hi: float) -> float:
    """np.clip of one number: nan stays nan."""
    if x != x:
        return x
    return min(max(x, lo), hi)


@njit(**_JIT)
def _weighted_sum(wts, a, b, tmp, out) -> None:
    """Per column, the sum over the rounds of (wts * a) * b (into ``out``; ``tmp``: scratch
    of a's shape)."""
    n, m = a.shape
    for k in range(n):
        for c in range(m):
            tmp[k, c] = (wts[k, c] * a[k, c]) * b[k, c]
    _sums_into(tmp, out)


@njit(**_JIT)
def _solve(f, g, y, wts, tmp, sums, u, w) -> None:
    """Weighted least squares of y = u f + w g per column, into ``u`` and ``w``. Weights of
    one give numpy's unweighted sums exactly (1.0 * x == x)."""
    sff, sgg, sfg, sfy, sgy = sums[0], sums[1], sums[2], sums[3], sums[4]
    _weighted_sum(wts, f, f, tmp, sff)
    _weighted_sum(wts, g, g, tmp, sgg)
    _weighted_sum(wts, f, g, tmp, sfg)
    _weighted_sum(wts, f, y, tmp, sfy)
    _weighted_sum(wts, g, y, tmp, sgy)
    for c in range(len(u)):
        det = sff[c] * sgg[c] - sfg[c] * sfg[c]
        u[c] = (sfy[c] * sgg[c] - sgy[c] * sfg[c]) / det
        w[c] = (sgy[c] * sff[c] - sfy[c] * sfg[c]) / det


@njit(**_JIT)
def _mixed(w, floor, f, time_part, tft, out) -> None:
    """The model's asks before its clamps, per round and column, into ``out``."""
    n, m = f.shape
    for k in range(n):
        for c in range(m):
            out[k, c] = w[c] * (floor[c] * f[k, c] + time_part[k, c]) + (1.0 - w[c]) * tft[k, c]


@njit(**_JIT)
def _onto_box(f, g, y, w, floor, least, top, w_min, tmp, sums) -> None:
    """(w, floor) of each column off the box moved onto it, in place: w clipped to
    [w_min, 1] with the floor re-solved for it, then the floor clipped to [least, top) with
    w re-solved for it (and clipped again); posterior._onto_box's rule as first written.
    Columns on the box are left as they are."""
    n, m = f.shape
    w_in, f_in = sums[0], sums[1]
    for c in range(m):
        w_in[c] = _clip(w[c], w_min, 1.0)
    for k in range(n):
        for c in range(m):
            tmp[k, c] = f[k, c] * (y[k, c] - w_in[c] * g[k, c])
    _sums_into(tmp, sums[2])
    for k in range(n):
        for c in range(m):
            tmp[k, c] = f[k, c] * f[k, c]
    _sums_into(tmp, sums[3])
    for c in range(m):
        floor_c = sums[2, c] / sums[3, c] / w_in[c] if w_in[c] != w[c] else floor[c]
        f_in[c] = _clip(floor_c, least, top * (1.0 - 1e-9))
        sums[4, c] = floor_c  # the floor before its clip
    for k in range(n):
        for c in range(m):
            edge = f_in[c] * f[k, c] + g[k, c]
            tmp[k, c] = edge * y[k, c]
    _sums_into(tmp, sums[2])
    for k in range(n):
        for c in range(m):
            edge = f_in[c] * f[k, c] + g[k, c]
            tmp[k, c] = edge * edge
    _sums_into(tmp, sums[3])
    for c in range(m):
        if not (w[c] > 0.0 and w[c] <= 1.0 and floor[c] >= least and floor[c] < top):
            wc = sums[2, c] / sums[3, c] if f_in[c] != sums[4, c] else w_in[c]
            w[c], floor[c] = _clip(wc, w_min, 1.0), f_in[c]


@njit(**_JIT)
def _residual(mix, floor, prev, counters, out) -> None:
    """Per column, max |clamped ask - counter| over the rounds, into ``out``; inf where it
    is not finite (np.maximum's and np.max's nan included)."""
    n, m = mix.shape
    for c in range(m):
        err = 0.0
        for k in range(n):
            ask = mix[k, c]
            if floor[c] != floor[c] or ask != ask:
                err = np.inf
                break
            err = max(err, abs(min(prev[k], max(floor[c], ask)) - counters[k]))
        out[c] = err if np.isfinite(err) else np.inf


@njit(**_JIT)
def _fit_block(counters, prev, anchor, f, tft, least, top, refits, w_min, floor, w, err):
    """fit_columns for one block of sets (rounds x sets), into floor, w and err."""
    n, m = f.shape
    time_part, g, y = np.empty((n, m)), np.empty((n, m)), np.empty((n, m))
    tmp, mix, free = np.empty((n, m)), np.empty((n, m)), np.empty((n, m))
    sums, u, u_re, w_re = np.empty((5, m)), np.empty(m), np.empty(m), np.empty(m)
    for k in range(n):
        for c in range(m):
            time_part[k, c] = anchor * (1.0 - f[k, c])
            g[k, c] = time_part[k, c] - tft[k, c]
            y[k, c] = counters[k] - tft[k, c]
            free[k, c] = 1.0
    _solve(f, g, y, free, tmp, sums, u, w)
    for c in range(m):
        floor[c] = u[c] / w[c]
    redo = np.empty(m, dtype=np.bool_)
    for _ in range(refits):
        _mixed(w, floor, f, time_part, tft, mix)
        n_free = np.zeros(m, dtype=np.int64)
        for k in range(n):
            for c in range(m):
                is_free = mix[k, c] >= floor[c] and mix[k, c] <= prev[k]
                free[k, c] = 1.0 if is_free else 0.0
                n_free[c] += is_free
        any_redo = False
        for c in range(m):
            redo[c] = n_free[c] >= 3 and n_free[c] < n
            any_redo |= redo[c]
        if not any_redo:
            break
        _solve(f, g, y, free, tmp, sums, u_re, w_re)
        for c in range(m):
            if redo[c]:
                u[c], w[c] = u_re[c], w_re[c]
                floor[c] = u[c] / w[c]
    _onto_box(f, g, y, w, floor, least, top, w_min, tmp, sums)
    _mixed(w, floor, f, time_part, tft, mix)
    _residual(mix, floor, prev, counters, err)


@njit(**_JIT)
def fit_columns(counters, anchor, f, tft, least, top, refits, w_min):
    """Per column of ``f`` and ``tft`` (rounds x sets): (floor, weight, max |model -
    counter|, inf where not finite). posterior._residuals' rule: floor and weight solved
    by least squares, refitted up to ``refits`` times without the rounds a clamp decided
    (where that leaves at least three), projected onto the box (w_min <= w <= 1,
    least <= floor < top) when off it."""
    n, m = f.shape
    prev = np.empty(n)
    prev[0] = anchor
    prev[1:] = counters[:-1]
    floors, weights, errs = np.empty(m), np.empty(m), np.empty(m)
    for c0 in range(0, m, BLOCK):
        c1 = min(c0 + BLOCK, m)
        fb, tb = np.ascontiguousarray(f[:, c0:c1]), np.ascontiguousarray(tft[:, c0:c1])
        _fit_block(
            counters, prev, anchor, fb, tb, least, top, refits, w_min,
            floors[c0:c1], weights[c0:c1], errs[c0:c1],
        )  # fmt: skip
    return floors, weights, errs


@njit(**_JIT)
def residuals_at(
    counters, anchor, frac, tft_base, tft_ratio, rec, betas, beta_at, least, top, refits, w_min
):  # fmt: skip
    """fit_columns for the sets (rec, betas[beta_at]) of one window (1-d, contiguous),
    their powers computed here as numpy computes them (numpow): per round k, the time
    tactic's ``f = frac[k] ** (1 / beta)`` and the tit-for-tat ask ``tft_base[k] /
    tft_ratio[k] ** rec`` (``tft_base[k]`` itself where ``tft_ratio[k]`` is 0: no offer to
    mirror yet). ``betas`` holds each distinct beta once (a lattice repeats each beta on
    every reciprocity row), so its powers, the kernel's costliest figures, are computed
    once per beta and round and gathered by ``beta_at``."""
    n, m = len(counters), len(rec)
    prev = np.empty(n)
    prev[0] = anchor
    prev[1:] = counters[:-1]
    inv = 1.0 / betas
    f_of = np.empty((n, len(betas)))
    for k in range(n):
        pow_row(frac[k], inv, f_of[k])
    floors, weights, errs = np.empty(m), np.empty(m), np.empty(m)
    for c0 in range(0, m, BLOCK):
        c1 = min(c0 + BLOCK, m)
        fb, tb = np.empty((n, c1 - c0)), np.empty((n, c1 - c0))
        # The lattice lists its points row by row: a run of equal reciprocities shares
        # its tit-for-tat powers, computed once.
        distinct, run = np.empty(c1 - c0), np.empty(c1 - c0, dtype=np.int64)
        nd = 0
        for c in range(c0, c1):
            if c == c0 or rec[c] != rec[c - 1]:
                distinct[nd] = rec[c]
                nd += 1
            run[c - c0] = nd - 1
        powers = np.empty(nd)
        for k in range(n):
            for c in range(c1 - c0):
                fb[k, c] = f_of[k, beta_at[c0 + c]]
            if tft_ratio[k] == 0.0:
                tb[k, :] = tft_base[k]
            else:
                pow_row(tft_ratio[k], distinct[:nd], powers)
                for c in range(c1 - c0):
                    tb[k, c] = tft_base[k] / powers[run[c]]
        _fit_block(
            counters, prev, anchor, fb, tb, least, top, refits, w_min,
            floors[c0:c1], weights[c0:c1], errs[c0:c1],
        )  # fmt: skip
    return floors, weights, errs


@njit(**_JIT)
def np_max(a: float, b: float) -> float:
    """np.maximum of two numbers: nan if either is nan."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


@njit(**_JIT)
def np_min(a: float, b: float) -> float:
    """np.minimum of two numbers: nan if either is nan."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


@njit(**_JIT)
def lines_flat(b_o, b_a, w, floor, rec, d, step, cap, newton):
    """posterior._lines before its clamps by the last ask, per element of equal-length 1-d
    arrays (the bases, each set's weight, floor, reciprocity and window as a float): the
    offer that meets the ask's unclamped part, and that part at an offer of ``cap``
    (meet_into, BLOCK elements at a time)."""
    n = len(b_o)
    meet, at_cap = np.empty(n), np.empty(n)
    for c0 in range(0, n, BLOCK):
        c1 = min(n, c0 + BLOCK)
        meet_into(
            b_o[c0:c1], b_a[c0:c1], w[c0:c1], floor[c0:c1], rec[c0:c1], d[c0:c1],
            step, cap, newton, meet[c0:c1], at_cap[c0:c1],
        )  # fmt: skip
    return meet, at_cap


@njit(**_JIT)
def meet_into(b_o, b_a, w, floor, rec, d, step, cap, newton, meet, at_cap) -> None:
    """lines_flat for one run of elements, into ``meet`` and ``at_cap``. Every figure
    numpy's: the band ``step ** d`` and every power numpy's pow (numpow); ``newton``
    Newton steps, each element's stopped once a step leaves it unchanged (every later step
    would too: a step is a function of the element's own figures) and never taken where
    the ask is flat at the meeting point (its figure is then the flat part's), so each
    figure is the one all ``newton`` steps give."""
    m = len(b_o)
    band, hb, o = np.empty(m), np.empty(m), np.empty(m)
    x, y, pw, steps = np.empty(m), np.empty(m), np.empty(m), np.full(m, step)
    for i in range(m):
        x[i] = d[i]
        y[i] = -rec[i]
        o[i] = b_o[i]
    pow_into(steps, x, band)  # step ** d
    pow_into(band, y, hb)  # band ** -rec
    flat_low, flat_high = np.empty(m), np.empty(m)
    active = np.empty(m, dtype=np.int64)
    na = 0
    for i in range(m):
        k = (1.0 - w[i]) * b_a[i]
        wf = w[i] * floor[i]
        flat_low[i], flat_high[i] = wf + k, wf + k * hb[i]
        if not (flat_low[i] <= b_o[i] or flat_high[i] >= b_o[i] * band[i]):
            active[na] = i
            na += 1
    xa, ya, pa = np.empty(m), np.empty(m), np.empty(m)
    for _ in range(newton):
        if na == 0:
            break
        ones = True
        for q in range(na):
            i = active[q]
            xa[q] = o[i] / b_o[i]
            ya[q] = -rec[i]
            ones &= xa[q] == 1.0
        if ones:  # the first step starts from o = base: 1 ** y is 1 (IEEE pow)
            pa[:na] = 1.0
        else:
            pow_into(xa[:na], ya[:na], pa[:na])  # (o / base) ** -rec
        moved = 0
        for q in range(na):
            i = active[q]
            t = ((1.0 - w[i]) * b_a[i]) * pa[q]
            stepped = o[i] - (o[i] - w[i] * floor[i] - t) / (1.0 + rec[i] * t / o[i])
            if stepped != o[i] or stepped != stepped:
                o[i] = stepped
                active[moved] = i
                moved += 1
        na = moved
    for i in range(m):  # the ratio the ask at ``cap`` mirrors, capped by the band
        x[i] = np_max(1.0, np_min(cap / b_o[i], band[i]))
        y[i] = rec[i]
    pow_into(x, y, pw)
    for i in range(m):
        if flat_low[i] <= b_o[i]:
            meet[i] = flat_low[i]
        elif flat_high[i] >= b_o[i] * band[i]:
            meet[i] = flat_high[i]
        else:
            meet[i] = o[i]
        at_cap[i] = w[i] * floor[i] + (1.0 - w[i]) * (b_a[i] / pw[i])

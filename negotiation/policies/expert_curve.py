"""Concession-curve inference for the expert buyer (public data only).

Suppliers concede along a Faratin time-dependent curve (README): the counter after the
buyer's t-th offer is ask(t) = floor + (anchor - floor) * (1 - (t/T) ** (1/beta)), i.e.
c_t = A - E * t**g with A the anchor, g = 1/beta and E = (A - floor) / T**g. Three or more
counters identify A, E and g (least squares over g, linear in A and E). T and the floor are
confounded on the curve (floor = A - E * T**g), but the floor/anchor ratio of every
persona lies in a documented band, which bounds T from below: a patience shorter than
`min_patience` would put the floor above what any persona quotes. The buyer can make low
(probing) offers while its next offer is provably within the supplier's patience, and
must make offers at or above the reservation after that.
"""

from __future__ import annotations

import math

# (g = 1/beta range, patience range, max floor/anchor) per persona class; README table:
# floor = reservation * (1 + floor_margin), anchor = list price at thread start.
PERSONA_CLASSES: tuple[tuple[float, float, int, int, float], ...] = (
    (2.8, 7.0, 6, 10, 0.765),  # hardball (Boulware)
    (1.05, 2.6, 6, 10, 0.785),  # deceptive
    (0.3, 0.7, 8, 12, 0.875),  # cooperative
    (0.2, 0.55, 4, 7, 0.775),  # distressed
)
G_MARGIN = 1.1  # safety margin on the fitted exponent when extrapolating
MIN_PATIENCE = 4  # the shortest patience of any persona

_G_STEP = math.log(60.0) / 7  # log-spaced exponents 0.15 .. 9
_G_GRID = tuple(math.exp(math.log(0.15) + i * _G_STEP) for i in range(8))
_PHI = 0.6180339887498949
_memo: dict[tuple[float, ...], tuple[float, float, float, float]] = {}
_grid_tables: dict[tuple[int, int], tuple[list[float], float]] = {}


def _lsq(ts: tuple[int, ...], dc: list[float], syy: float, g: float) -> tuple[float, float, float]:
    """Least squares of the centred counters dc on t**g: (slope -E, mean x, residual SS)."""
    xs = [t**g for t in ts]
    mx = sum(xs) / len(xs)
    sxx = sxy = 0.0
    for x, d in zip(xs, dc, strict=True):
        x -= mx
        sxx += x * x
        sxy += x * d
    if sxx <= 0.0:
        return 0.0, mx, syy
    return sxy / sxx, mx, max(0.0, syy - sxy * sxy / sxx)


def fit_curve(cs: tuple[float, ...]) -> tuple[float, float, float, float]:
    """(A, E, g, rms residual) for counters c_1..c_k (k >= 3) after offers 1..k."""
    hit = _memo.get(cs)
    if hit is not None:
        return hit
    ts = tuple(range(1, len(cs) + 1))
    my = sum(cs) / len(cs)
    dc = [c - my for c in cs]
    syy = sum(d * d for d in dc)
    best_g, best_sse = 1.0, None
    k = len(cs)
    for i, g in enumerate(_G_GRID):
        tab = _grid_tables.get((i, k))
        if tab is None:  # centred t**g and its sum of squares depend only on (g, k)
            xs = [t**g for t in ts]
            mx = sum(xs) / k
            tab = _grid_tables[(i, k)] = ([x - mx for x in xs], sum((x - mx) ** 2 for x in xs))
        cx, sxx = tab
        sxy = 0.0
        for x, d in zip(cx, dc, strict=True):
            sxy += x * d
        if sxy > 0.0 or sxx <= 0.0:
            continue  # counters never rise
        sse = syy - sxy * sxy / sxx
        if best_sse is None or sse < best_sse - 1e-12:
            best_g, best_sse = g, sse
    if best_sse is not None:
        # refine log(g) by golden-section search between the neighbouring grid points
        lo, hi = math.log(best_g) - _G_STEP, math.log(best_g) + _G_STEP
        x1 = hi - _PHI * (hi - lo)
        x2 = lo + _PHI * (hi - lo)
        f1 = _lsq(ts, dc, syy, math.exp(x1))[2]
        f2 = _lsq(ts, dc, syy, math.exp(x2))[2]
        for _ in range(6):
            if f1 <= f2:
                hi, x2, f2 = x2, x1, f1
                x1 = hi - _PHI * (hi - lo)
                f1 = _lsq(ts, dc, syy, math.exp(x1))[2]
            else:
                lo, x1, f1 = x1, x2, f2
                x2 = lo + _PHI * (hi - lo)
                f2 = _lsq(ts, dc, syy, math.exp(x2))[2]
        g2 = math.exp(0.5 * (lo + hi))
        slope, _mx, sse2 = _lsq(ts, dc, syy, g2)
        if slope <= 0.0 and sse2 <= best_sse:
            best_g, best_sse = g2, sse2
    g = best_g
    slope, mx, sse = _lsq(ts, dc, syy, g)
    if slope > 0.0:
        slope, sse = 0.0, syy
    e = -slope
    out = (my + e * mx, e, g, math.sqrt(sse / len(cs)))
    if len(_memo) > 50_000:
        _memo.clear()
    _memo[cs] = out
    return out


def min_patience(cs: tuple[float, ...], tick: float = 0.01) -> tuple[int, float, float, float]:
    """(lower bound on the supplier's patience T, A, E, g) from counters c_1..c_k.

    The bound is the smallest T >= k, over the persona classes whose concession exponent
    fits, with A - E_hi * T**g <= rho * A (E_hi: E with a margin for cent rounding)."""
    k = len(cs)
    if k < 3:
        return max(k, MIN_PATIENCE), cs[0] if cs else 0.0, 0.0, 1.0
    a, e, g, rms = fit_curve(cs)
    moved = cs[0] - cs[-1]
    coarse = moved < 30.0 * tick  # a few cents of movement: the exponent is unreliable
    if moved < 3.0 * tick:
        g = max(g, 3.0)  # flat so far: only a Boulware curve stays flat for 3 rounds
    best = None
    for g_lo, g_hi, t_lo, t_hi, rho in PERSONA_CLASSES:
        if not (g_lo * 0.85 <= g <= g_hi * 1.15):
            continue
        # a steeper exponent extrapolates a lower floor, i.e. a shorter patience: be safe
        gs = g_hi * 1.15 if coarse else min(g * G_MARGIN, g_hi * 1.15)
        e_hi = (moved + 2.0 * tick + 2.0 * rms) / max(1e-9, k**gs - 1.0)
        for t in range(max(t_lo, k), t_hi + 1):
            if cs[0] + e_hi - e_hi * t**gs <= rho * a:
                if best is None or t < best:
                    best = t
                break
    if best is None:
        best = k
    return max(best, MIN_PATIENCE), a, e, g

"""The posterior's residuals as first written, one row per parameter set (numpy's own sums
along each row): the reference that posterior.py's column-per-set layout must reproduce
bit for bit (test_expert_posterior.py), so that the expert's play is unchanged."""

from __future__ import annotations

import numpy as np

from negotiation.policies.expert.beliefs import Floors, History
from negotiation.policies.expert.posterior import REFITS, W_MIN
from negotiation.suppliers.concession import TFT_STEP_CAP


def _tft(offers, bests, counters: np.ndarray, anchor: float, d: int, rec: np.ndarray):
    out = np.empty((len(rec), len(counters)))
    for i in range(len(counters)):
        dd = min(d, i)
        if not dd:
            out[:, i] = anchor
            continue
        ratio = min(offers[i] / bests[i - dd], (1.0 + TFT_STEP_CAP) ** dd)
        out[:, i] = counters[i - dd] / max(1.0, ratio) ** rec
    return out


def _solve(f, g, y, weights=None):
    wf, wg = (f, g) if weights is None else (weights * f, weights * g)
    sff, sgg, sfg = (wf * f).sum(-1), (wg * g).sum(-1), (wf * g).sum(-1)
    sfy, sgy = (wf * y).sum(-1), (wg * y).sum(-1)
    det = sff * sgg - sfg * sfg
    with np.errstate(divide="ignore", invalid="ignore"):
        return (sfy * sgg - sgy * sfg) / det, (sgy * sff - sfy * sfg) / det


def _onto_box(f, g, y, w, floor, box: Floors):
    least, top = box
    with np.errstate(divide="ignore", invalid="ignore"):
        w_in = np.clip(w, W_MIN, 1.0)
        wy = y - w_in[:, None] * g
        floor = np.where(w_in != w, (f * wy).sum(-1) / (f * f).sum(-1) / w_in, floor)
        f_in = np.clip(floor, least, top * (1.0 - 1e-9))
        edge = f_in[:, None] * f + g
        w_in = np.where(f_in != floor, (edge * y).sum(-1) / (edge * edge).sum(-1), w_in)
    return np.clip(w_in, W_MIN, 1.0), f_in


def residuals(h: History, anchor: float, patience: int, box: Floors, d: int, rec, beta, at=None):
    """posterior._residuals, one row per (rec, beta) pair (beta[at] with ``at``)."""
    if at is not None:
        beta = beta[at]
    counters = np.asarray(h.counters)
    k = np.arange(1, len(counters) + 1)
    tft = _tft(h.offers, h.bests, counters, anchor, d, rec)
    f = (np.minimum(k, patience)[None, :] / patience) ** (1.0 / beta[:, None])
    time_part = anchor * (1.0 - f)
    g, y = time_part - tft, counters[None, :] - tft
    prev = np.concatenate([[anchor], counters[:-1]])[None, :]

    def fit(u, w):
        with np.errstate(divide="ignore", invalid="ignore"):
            floor = u / w
            return floor, w[:, None] * (floor[:, None] * f + time_part) + (1.0 - w[:, None]) * tft

    u, w = _solve(f, g, y)
    floor, mix = fit(u, w)
    for _ in range(REFITS):
        free = (mix >= floor[:, None]) & (mix <= prev)
        n_free = free.sum(-1)
        redo = (n_free >= 3) & (n_free < free.shape[1])
        if not redo.any():
            break
        u[redo], w[redo] = _solve(f[redo], g[redo], y[redo], free[redo].astype(float))
        floor, mix = fit(u, w)
    least, top = box
    with np.errstate(invalid="ignore"):
        off = ~((w > 0.0) & (w <= 1.0) & (floor >= least) & (floor < top))
    if off.any():
        w[off], floor[off] = _onto_box(f[off], g[off], y[off], w[off], floor[off], box)
        wo = w[off][:, None]
        mix[off] = wo * (floor[off][:, None] * f[off] + time_part[off]) + (1.0 - wo) * tft[off]
    with np.errstate(invalid="ignore"):
        err = np.abs(np.minimum(prev, np.maximum(floor[:, None], mix)) - counters).max(-1)
    return floor, w, np.where(np.isfinite(err), err, np.inf)


def lines(fits, d, base_offer, base_ask, prev, cap: float, steps: int = 60) -> np.ndarray:
    """posterior._lines as first written: each set's lowest accepted offer by bisection
    (offer - ask(offer) rises with the offer), the reference for its closed form."""
    from negotiation.policies.expert.posterior import _model_ask

    shape = np.broadcast_shapes(
        np.shape(base_offer), np.shape(base_ask), np.shape(prev), (len(fits),)
    )
    lo, hi = np.broadcast_to(fits.floor, shape).copy(), np.full(shape, cap)
    for _ in range(steps):
        mid = (lo + hi) / 2
        yes = mid >= _model_ask(fits, mid, d, base_offer, base_ask, prev)
        hi, lo = np.where(yes, mid, hi), np.where(yes, lo, mid)
    took = _model_ask(fits, np.full(shape, cap), d, base_offer, base_ask, prev) <= cap
    return np.where(took, hi, np.nan)


def lines_numpy(fits, d, base_offer, base_ask, prev, cap: float) -> np.ndarray:
    """posterior._lines in numpy (as it was before it was compiled): Newton's method on the
    bases' shape, then the clamps by the last ask; the figures the compiled form must give
    bit for bit."""
    from negotiation.policies.expert.posterior import NEWTON, _model_ask

    w, floor, rec = fits.weight, fits.floor, fits.reciprocity
    band = (1.0 + TFT_STEP_CAP) ** d
    k = (1.0 - w) * base_ask
    wf = w * floor
    flat_low, flat_high = wf + k, wf + k * band**-rec
    shape = np.broadcast_shapes(np.shape(base_offer), flat_low.shape)
    b_o, k_o, wf_o, rec_o = (np.broadcast_to(x, shape).ravel() for x in (base_offer, k, wf, rec))
    o, rec_neg = b_o, -rec_o
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(NEWTON):
            t = k_o * (o / b_o) ** rec_neg
            o = o - (o - wf_o - t) / (1.0 + rec_o * t / o)
    o = o.reshape(shape)
    meet = np.where(
        flat_low <= base_offer, flat_low, np.where(flat_high >= base_offer * band, flat_high, o)
    )
    line = np.maximum(floor, np.minimum(prev, meet))
    took = _model_ask(fits, cap, d, base_offer, base_ask, prev) <= cap
    return np.where(took, line, np.nan)


def ahead_prices(h, anchor: float, patience: int, fits, candidates) -> np.ndarray:
    """posterior.ahead_offer's mean price per candidate in numpy (as it was before it was
    compiled, paths.py): one array axis per planned offer, the sets last."""
    from negotiation.policies.expert.posterior import (
        MID_RAISES,
        PRE_RAISES,
        _back,
        _lines_back,
        _model_ask,
        with_margin,
    )

    n = len(h.counters)
    steps = patience - n
    offers, counters = list(h.bests), list(h.counters)
    asks = []

    def along(values, axis: int) -> np.ndarray:
        shape = [1] * (steps + 1)
        shape[axis] = len(values)
        return np.asarray(values, dtype=float).reshape(shape)

    for i in range(steps):
        k = n + 1 + i
        if i == 0:
            o = along(candidates, 0)
        else:
            raises = along(PRE_RAISES if k == patience else MID_RAISES, i)
            o = np.maximum(offers[-1] * raises, offers[-1] + 0.01)
        d = np.minimum(fits.window, k - 1)
        time_ask = None
        if k < patience:
            f = (k / patience) ** (1.0 / fits.beta)
            time_ask = fits.floor * f + anchor * (1.0 - f)
        a = _model_ask(fits, o, d, _back(offers, k, d), _back(counters, k, d), counters[-1],
                       time_ask)  # fmt: skip
        offers.append(o)
        counters.append(np.round(a, 2))
        asks.append(a)
    k = patience + 1
    last = counters[-1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lines = _lines_back(fits, k, offers, counters, last, float(h.counters[-1]))
    price = np.where(np.isnan(lines), last, np.minimum(last, with_margin(lines)))
    for i in range(steps - 1, -1, -1):
        o = offers[n + i]
        price = np.where(o >= asks[i], o, price)
        if i:
            price = np.where(o > counters[n + i - 1] - 0.005, np.inf, price)
            price = price.min(axis=i, keepdims=True)
    price = price.reshape(len(candidates), -1)
    price = np.where(np.isfinite(price), price, counters[n].reshape(len(candidates), -1))
    return price.mean(axis=1)


def patience_prices(h, fits, candidates) -> np.ndarray:
    """posterior.patience_offer's mean price per candidate in numpy (before it was
    compiled, paths.patience_prices): one row per candidate, one column per set."""
    from negotiation.policies.expert.posterior import _lines, _model_ask, with_margin

    n = len(h.counters)
    bests, counters = np.asarray(h.bests), np.asarray(h.counters)
    last = counters[-1]
    d = np.minimum(fits.window, n).astype(int)
    d1 = np.minimum(fits.window, n + 1).astype(int)
    from_t = d1 == 1
    back1 = np.where(from_t, 0, n + 1 - d1)
    o = np.asarray(candidates, dtype=float)[:, None]
    ask = _model_ask(fits, o, d, bests[n - d], counters[n - d], last)
    took = o >= ask
    c = np.round(ask, 2)
    b_off = np.where(from_t, np.maximum(o, bests[-1]), bests[back1])
    b_ask = np.where(from_t, c, counters[back1])
    lines = _lines(fits, d1, b_off, b_ask, c, float(last))
    key = np.rint(c * 100.0).astype(np.int64) + 1
    key += np.arange(len(o))[:, None] * (key.max() + 2)
    keys, inv = np.unique(key.ravel(), return_inverse=True)
    top_line = np.full(len(keys), -np.inf)
    np.maximum.at(top_line, inv, np.where(took, -np.inf, lines).ravel())
    near = top_line.copy()
    for shift in (-1, 1):
        j = np.minimum(np.searchsorted(keys, keys + shift), len(keys) - 1)
        near = np.where(keys[j] == keys + shift, np.maximum(near, top_line[j]), near)
    final = np.maximum(with_margin(near[inv]).reshape(c.shape), o)
    after = np.where(np.isnan(final) | (final >= c), c, final)
    prices = np.where(took, o, after)
    return prices.mean(axis=1)


# The lattice search as first written, in numpy (posterior._refine's loop before it was
# compiled, lattice.py): the consistent sets the compiled search must find, bit for bit.


def _at(h: History, anchor: float, patience: int, box: Floors, d: int, i, j, fit):
    from negotiation.policies.expert.posterior import B0, R0, SB, SR

    return fit(h, anchor, patience, box, d, np.exp(R0 + i * SR), np.exp(B0 + j * SB))


def _around(i: np.ndarray, j: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    from negotiation.policies.expert.posterior import PAD, SPAN

    offs = np.arange(-2, 3) * step
    keys = (i[:, None, None] + offs[:, None] + PAD) * SPAN + (j[:, None, None] + offs + PAD)
    keys = np.unique(keys.ravel())
    return keys // SPAN - PAD, keys % SPAN - PAD


def lowest(x: np.ndarray, k: int) -> np.ndarray:
    """The first k of a stable argsort, as a set."""
    return np.argsort(x, kind="stable")[:k]


def _keep(i: np.ndarray, j: np.ndarray, err: np.ndarray, keep: int):
    best = lowest(err, keep // 2)
    spread = np.linspace(0, len(i) - 1, keep - keep // 2).astype(int)
    pick = np.union1d(best, spread)
    return i[pick], j[pick]


def _refine(h, anchor, patience, box, d, points, keep, refinements, deepest, enough, fit):
    from negotiation.policies.expert.posterior import COUNTER_TOL, SLACK, _level

    i, j, step = points
    level = _level(step)
    slack = SLACK * anchor / 4**level
    while True:
        floor, w, err = _at(h, anchor, patience, box, d, i, j, fit)
        hit = err <= COUNTER_TOL
        if level >= deepest or (level >= refinements and hit.sum() >= enough):
            n = hit.sum()
            return (np.full(n, d), i[hit], j[hit], np.full(n, step), w[hit], floor[hit])
        near = err <= COUNTER_TOL + slack
        if not near.any():
            return None
        i, j, err = i[near], j[near], err[near]
        if len(i) > keep:
            i, j = _keep(i, j, err, keep)
        step //= 4
        i, j = _around(i, j, step)
        slack /= 4
        level += 1


def search(h: History, anchor: float, patience: int, floors: Floors, keep: int, fit=None):
    """posterior.search (REFINEMENTS, enough 1) in numpy, the fit ``fit`` (default: the
    reference's one row per set)."""
    from negotiation.policies.expert import posterior as p

    box = Floors(floors.least, min(anchor, floors.most))
    grid = np.arange(p.COARSE) * p.FINE
    i0, j0 = (a.ravel() for a in np.meshgrid(grid, grid, indexing="ij"))
    start, fit = (i0, j0, p.FINE), fit or residuals
    rows = [
        _refine(h, anchor, patience, box, d, start, keep, p.REFINEMENTS, p.DEEPEST, 1, fit)
        for d in p.WINDOWS
    ]
    return p._found([r for r in rows if r is not None and len(r[1])])

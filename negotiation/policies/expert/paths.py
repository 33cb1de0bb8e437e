"""The posterior's offer pricing compiled: posterior.ahead_offer's (each consistent set's
best path of planned offers, walked depth first: best_paths) and patience_offer's (each
candidate offer T, one at a time: patience_prices).

posterior.ahead_offer first priced every path at once, one array axis per planned offer
and the sets last; this walks the same tree, one path prefix at a time, with the sets as
a vector, and gives the same figures bit for bit: every figure is an elementwise function
of its path and set computed with the same IEEE operations in the same order (powers with
numpy's pow, numpow.py; rounding to cents as np.round does: rint(x * 100) / 100), the
minimum over a node's children is order-free, and each candidate's mean over the sets
adds them in numpy's pairwise order (_pairwise). A line's Newton steps run where its
tit-for-tat base is known (the node of the offer its window looks back to, or once where
that is in the thread's past), as the array form ran them at that base's shape.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .columns import meet_into, np_max, np_min
from .numpow import pow_into, pow_row

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}


@njit(**_JIT)
def _pairwise(a: np.ndarray) -> float:
    """The sum of a contiguous row in numpy's pairwise order (add.reduce of float64)."""
    n = len(a)
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        r = a[:8].copy()
        i = 8
        while i < n - n % 8:
            for j in range(8):
                r[j] += a[i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += a[i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise(a[:n2]) + _pairwise(a[n2:])


@njit(**_JIT)
def _cents(x: float) -> float:
    """np.round(x, 2)."""
    return np.rint(x * 100.0) / 100.0


@njit(**_JIT)
def _margin(line: float, close_margin: float, close_cents: float) -> float:
    """posterior.with_margin of one line."""
    return np.ceil((line * (1.0 + close_margin) + close_cents) * 100.0 - 1e-9) / 100.0


@njit(**_JIT)
def best_paths(
    bests, counters, anchor, patience, candidates, mid, pre,
    window, rec, beta, w, floor, step, close_margin, close_cents, newton,
):  # fmt: skip
    """Per candidate (the first planned offer), its mean price over the sets (posterior
    .ahead_offer's rule): ``bests``/``counters`` the thread's (n answers), ``mid``/``pre``
    the raises of the later planned offers (``pre`` for offer T), the sets' parameters,
    ``step`` 1 + TFT_STEP_CAP, with_margin's constants and the lines' Newton steps."""
    n, S, T = len(counters), len(window), patience
    steps = T - n
    last_seen = counters[n - 1]
    cap = last_seen
    sizes = np.empty(steps, dtype=np.int64)
    for i in range(steps):
        k = n + 1 + i
        sizes[i] = len(candidates) if i == 0 else (len(pre) if k == T else len(mid))
    # Per depth: each set's window, its band step ** d and its time-tactic ask.
    dd = np.empty((steps, S))
    band = np.empty((steps, S))
    time = np.empty((steps, S))
    steps_v = np.full(S, step)
    inv = 1.0 / beta
    for i in range(steps):
        k = n + 1 + i
        for s in range(S):
            dd[i, s] = min(window[s], k - 1)
        pow_into(steps_v, dd[i], band[i])
        if k < T:
            pow_row(k / T, inv, time[i])  # f = (k / T) ** (1 / beta)
            for s in range(S):
                f = time[i, s]
                time[i, s] = floor[s] * f + anchor * (1.0 - f)
        else:
            time[i] = floor
    # The final offer's window per set, and where its base lies (depth, or -1: the past).
    d_fin = np.empty(S)
    base_depth = np.empty(S, dtype=np.int64)
    for s in range(S):
        d_fin[s] = min(window[s], n + steps)
        base_depth[s] = max(-1, steps - int(d_fin[s]))
    meet, at_cap = np.empty(S), np.empty(S)
    _meets(base_depth, -1, 0.0, bests, counters, n, steps, counters[:0].reshape(0, S),
           w, floor, rec, d_fin, step, cap, newton, meet, at_cap)  # fmt: skip
    offer = np.empty(steps)
    ask = np.empty((steps, S))
    cnt = np.empty((steps, S))
    acc = np.empty((steps + 1, S))
    val = np.empty(S)
    x, pw = np.empty(S), np.empty(S)
    means = np.empty(len(candidates))
    choice = np.zeros(steps, dtype=np.int64)
    i = 0
    while True:
        # Enter node (i, choice[i]): its offer, each set's ask and counter.
        if i == 0:
            o = candidates[choice[0]]
        else:
            r = pre[choice[i]] if n + 1 + i == T else mid[choice[i]]
            o = np_max(offer[i - 1] * r, offer[i - 1] + 0.01)
        offer[i] = o
        k = n + 1 + i
        for s in range(S):
            j = k - 1 - int(dd[i, s])  # the base: that many answers back
            if j >= n:
                b_o, b_a = offer[j - n], cnt[j - n, s]
            else:
                b_o, b_a = bests[j], counters[j]
            x[s] = np_max(1.0, np_min(o / b_o, band[i, s]))
            val[s] = b_a
        pow_into(x, rec, pw)
        for s in range(S):
            tft = val[s] / pw[s]
            prev = cnt[i - 1, s] if i else last_seen
            a = np_min(prev, np_max(floor[s], w[s] * time[i, s] + (1.0 - w[s]) * tft))
            ask[i, s] = a
            cnt[i, s] = _cents(a)
        _meets(base_depth, i, o, bests, counters, n, steps, cnt,
               w, floor, rec, d_fin, step, cap, newton, meet, at_cap)  # fmt: skip
        if i < steps - 1:
            i += 1
            choice[i] = 0
            continue
        # A leaf: each set's final offer at its own line, else it awards its last counter.
        for s in range(S):
            last = cnt[steps - 1, s]
            line = np_max(floor[s], np_min(last, meet[s]))
            took = np_min(last, np_max(floor[s], at_cap[s])) <= cap
            if took and not np.isnan(line):
                val[s] = np_min(last, _margin(line, close_margin, close_cents))
            else:
                val[s] = last
        # Back up the tree: each node meets its own ask or takes its best child's price.
        while True:
            o = offer[i]
            for s in range(S):
                if o >= ask[i, s]:
                    val[s] = o
                if i and o > cnt[i - 1, s] - 0.005:
                    val[s] = np.inf
            if i == 0:
                for s in range(S):
                    if not np.isfinite(val[s]):
                        val[s] = cnt[0, s]
                means[choice[0]] = _pairwise(val) / S
                break
            if choice[i] == 0:
                acc[i] = val
            else:
                for s in range(S):
                    acc[i, s] = np_min(acc[i, s], val[s])
            choice[i] += 1
            if choice[i] < sizes[i]:
                break
            i -= 1
            val[:] = acc[i + 1]
        if i == 0:
            choice[0] += 1
            if choice[0] == sizes[0]:
                return means
    return means


@njit(**_JIT)
def _meets(base_depth, depth, o, bests, counters, n, steps, cnt,
           w, floor, rec, d_fin, step, cap, newton, meet, at_cap):  # fmt: skip
    """The final lines' meet and at_cap (columns.meet_into) of the sets whose final base
    lies at ``depth`` (the offer ``o`` and its counters ``cnt[depth]``; -1: the thread's
    past, bases from ``bests`` and ``counters``)."""
    at = np.flatnonzero(base_depth == depth)
    m = len(at)
    if not m:
        return
    b_o, b_a = np.empty(m), np.empty(m)
    for q in range(m):
        s = at[q]
        if depth >= 0:
            b_o[q], b_a[q] = o, cnt[depth, s]
        else:
            j = n + steps - int(d_fin[s])
            b_o[q], b_a[q] = bests[j], counters[j]
    me, ac = np.empty(m), np.empty(m)
    meet_into(b_o, b_a, w[at], floor[at], rec[at], d_fin[at], step, cap, newton, me, ac)
    for q in range(m):
        meet[at[q]], at_cap[at[q]] = me[q], ac[q]


@njit(**_JIT)
def patience_prices(
    bests, counters, candidates, window, rec, w, floor, step, margin, cents, newton
):
    """posterior.patience_offer's mean price per candidate offer T (over the sets, numpy's
    pairwise sum): each set meets the candidate or counters it, and then the buyer makes
    the final offer of the sets (of that row) predicting that counter or one a cent away,
    never under the candidate, or awards it. The same figures as the numpy form, bit for
    bit (see the module's docstring); the counters are grouped by cent in a table per row."""
    n, S, C = len(counters), len(window), len(candidates)
    last = counters[n - 1]
    d, d1 = np.empty(S), np.empty(S)
    for s in range(S):
        d[s] = min(window[s], n)
        d1[s] = min(window[s], n + 1)
    band = np.empty(S)
    pow_into(np.full(S, step), d, band)
    x, pw = np.empty(S), np.empty(S)
    ask, cc, took = np.empty(S), np.empty(S), np.empty(S, dtype=np.bool_)
    b_off, b_ask = np.empty(S), np.empty(S)
    meet, at_cap, line = np.empty(S), np.empty(S), np.empty(S)
    key = np.empty(S, dtype=np.int64)
    price = np.empty(S)
    means = np.empty(C)
    for r in range(C):
        o = candidates[r]
        for s in range(S):
            j = n - int(d[s])
            x[s] = np_max(1.0, np_min(o / bests[j], band[s]))
        pow_into(x, rec, pw)
        for s in range(S):
            j = n - int(d[s])
            tft = counters[j] / pw[s]
            a = np_min(last, np_max(floor[s], w[s] * floor[s] + (1.0 - w[s]) * tft))
            ask[s] = a
            took[s] = o >= a
            cc[s] = np.rint(a * 100.0) / 100.0
            if d1[s] == 1.0:
                b_off[s], b_ask[s] = np_max(o, bests[n - 1]), cc[s]
            else:
                j1 = n + 1 - int(d1[s])
                b_off[s], b_ask[s] = bests[j1], counters[j1]
        meet_into(b_off, b_ask, w, floor, rec, d1, step, last, newton, meet, at_cap)
        for s in range(S):
            ln = np_max(floor[s], np_min(cc[s], meet[s]))
            ok = np_min(cc[s], np_max(floor[s], at_cap[s])) <= last
            line[s] = ln if ok else np.nan
            key[s] = np.int64(np.rint(cc[s] * 100.0))
        lo, hi = key.min(), key.max()
        # The highest line (nan-propagating max) per cent among the sets the candidate
        # does not meet, then its neighbours' a cent away.
        size = hi - lo + 3
        top = np.full(size, -np.inf)
        seen = np.zeros(size, dtype=np.bool_)
        for s in range(S):
            q = key[s] - lo + 1
            seen[q] = True
            if not took[s]:
                top[q] = np_max(top[q], line[s])
        for s in range(S):
            q = key[s] - lo + 1
            near = top[q]
            if seen[q - 1]:
                near = np_max(near, top[q - 1])
            if seen[q + 1]:
                near = np_max(near, top[q + 1])
            final = np.ceil((near * (1.0 + margin) + cents) * 100.0 - 1e-9) / 100.0
            final = np_max(final, o)  # never under the buyer's own offer T
            after = cc[s] if (np.isnan(final) or final >= cc[s]) else final
            price[s] = o if took[s] else after
        means[r] = _pairwise(price) / S
    return means

"""Random draws on the hot path, each consuming the generator exactly as the
``random.Random`` method it replaces (same calls, same order, same floats), so every seeded
episode stays bit-identical. They skip the methods' argument checks and per-call setup,
which the engine pays tens of thousands of times per second.
tests/negotiation/world/test_draws.py holds each one to its ``random.Random`` original.
"""

from __future__ import annotations

import random
from bisect import bisect
from collections.abc import Sequence
from itertools import accumulate
from math import cos, log, sin, sqrt, tau
from typing import Generic, TypeVar

T = TypeVar("T")


class Span:
    """A uniform range digested once: ``draw`` is ``rng.uniform(low, high)``, which CPython
    computes as ``low + (high - low) * rng.random()``."""

    __slots__ = ("low", "span")

    def __init__(self, low: float, high: float) -> None:
        self.low = low
        self.span = high - low

    def draw(self, rng: random.Random) -> float:
        return self.low + self.span * rng.random()


def randint(rng: random.Random, low: int, high: int) -> int:
    """``rng.randint(low, high)`` for ints ``low <= high``: CPython 3.11's randint is
    randrange(low, high + 1), which after its argument checks returns exactly this."""
    if high < low:  # _randbelow(0) would never return
        raise ValueError(f"empty range in randint({low}, {high})")
    return low + rng._randbelow(high - low + 1)  # type: ignore[attr-defined]


def uniforms(rng: random.Random, spans: Sequence[Span]) -> list[float]:
    """``[rng.uniform(lo, hi) for each span]`` in order: one draw per span."""
    rand = rng.random
    return [s.low + s.span * rand() for s in spans]


class WeightedPool(Generic[T]):
    """``rng.choices(items, weights=weights)[0]`` with the cumulative weights summed once
    (``choices`` accumulates them on every call; the draw is the same)."""

    __slots__ = ("cum", "hi", "items", "total")

    def __init__(self, items: Sequence[T], weights: Sequence[float]) -> None:
        if len(items) != len(weights) or not items:
            raise ValueError("a weighted pool needs one weight per item, and an item")
        self.items = tuple(items)
        self.cum = list(accumulate(weights))
        self.total = self.cum[-1] + 0.0
        if not self.total > 0.0:
            raise ValueError("a weighted pool needs a positive total weight")
        self.hi = len(self.items) - 1

    def pick(self, rng: random.Random) -> T:
        return self.items[bisect(self.cum, rng.random() * self.total, 0, self.hi)]


def gauss_noise(rng: random.Random, n: int, sigma: float) -> list[float]:
    """``[rng.gauss(0.0, sigma) for _ in range(n)]``: the same values, and the same spare
    normal left in ``rng.gauss_next`` for the next ``gauss`` call (CPython 3.11's
    Box-Muller pairs, which ``random.Random.gauss`` caches one at a time)."""
    rand = rng.random
    out: list[float] = []
    z = rng.gauss_next
    rng.gauss_next = None
    if z is not None and n > 0:
        out.append(0.0 + z * sigma)
    elif z is not None:  # n == 0: nothing drawn, the spare stays
        rng.gauss_next = z
    while len(out) < n:
        x2pi = rand() * tau
        g2rad = sqrt(-2.0 * log(1.0 - rand()))
        out.append(0.0 + (cos(x2pi) * g2rad) * sigma)
        spare = sin(x2pi) * g2rad
        if len(out) < n:
            out.append(0.0 + spare * sigma)
        else:
            rng.gauss_next = spare
    return out

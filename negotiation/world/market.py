"""Market index per category: a seeded, mean-reverting log random walk with optional
seasonality and decaying price spikes. Moves list prices and the reservations of threads
opened afterwards."""

from __future__ import annotations

import math
import random

from .draws import gauss_noise


class Market:
    __slots__ = ("index", "seasonality", "spike", "volatility", "weeks")

    def __init__(self, categories: list[str], volatility: float, seasonality: float, weeks: int):
        self.index: dict[str, float] = {c: 1.0 for c in categories}
        self.spike: dict[str, float] = {c: 0.0 for c in categories}  # log-jump still applied
        self.volatility = volatility
        self.seasonality = seasonality
        self.weeks = max(1, weeks)

    def add_category(self, category: str) -> None:
        if category not in self.index:
            self.index[category] = 1.0
            self.spike[category] = 0.0

    def overall(self) -> float:
        return sum(self.index.values()) / max(1, len(self.index))

    def step(self, rng: random.Random, week: int) -> None:
        season = self.seasonality * math.sin(2.0 * math.pi * week / max(4, self.weeks))
        # One rng.gauss(0.0, volatility) per category, in the index's order.
        noise = gauss_noise(rng, len(self.index), self.volatility)
        for (c, x), z in zip(self.index.items(), noise, strict=True):
            # log index reverts 20%/week to 0, plus noise, seasonality and a decaying spike
            base = math.log(x) - self.spike[c]
            base = 0.8 * base + z + 0.2 * season
            self.spike[c] *= 0.7
            self.index[c] = math.exp(base + self.spike[c])

    def apply_spike(self, category: str, magnitude: float) -> None:
        jump = math.log1p(magnitude)
        self.spike[category] = self.spike.get(category, 0.0) + jump
        self.index[category] = self.index.get(category, 1.0) * math.exp(jump)

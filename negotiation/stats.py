"""Summary statistics for episode results: means with 95 % confidence intervals
(Student-t, and a percentile bootstrap for bounded, skewed scores)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Two-sided 97.5 % quantiles of Student's t for small samples; normal beyond 30.
_T975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
    9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042,
}  # fmt: skip


def _t975(dof: int) -> float:
    if dof > 30:
        return 1.96
    return _T975[max(k for k in _T975 if k <= dof)]


@dataclass(frozen=True)
class MeanCI:
    n: int
    mean: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def to_dict(self) -> dict[str, float | int | None]:
        """JSON-safe: an undefined statistic (no samples) is None, never NaN."""

        def num(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {"n": self.n, "mean": num(self.mean), "ci_low": num(self.low),
                "ci_high": num(self.high)}  # fmt: skip


def mean_ci(values: Iterable[float]) -> MeanCI:
    """Mean and Student-t 95 % interval; NaN-free values only (None/NaN are dropped)."""
    xs: Sequence[float] = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return MeanCI(0, math.nan, math.nan, math.nan)
    mean = math.fsum(xs) / n
    if n == 1:
        return MeanCI(1, mean, mean, mean)
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    half = _t975(n - 1) * math.sqrt(var / n)
    return MeanCI(n, mean, mean - half, mean + half)


# Indices drawn at once by bootstrap_mean_ci (8 bytes each): the draws come in one stream
# whatever the chunking, so the interval does not depend on it.
BOOTSTRAP_DRAWS = 1 << 20


def bootstrap_mean_ci(values: Iterable[float], *, resamples: int = 2000, seed: int = 0) -> MeanCI:
    """Mean and percentile-bootstrap 95 % interval (Efron): the 2.5th and 97.5th percentiles
    of the means of ``resamples`` resamples drawn with replacement. Scores are bounded and
    often piled up at 0 or 1, where the t-interval can leave [0, 1]; this one cannot.
    Seeded, so the same values always give the same interval. None/NaN are dropped."""
    if resamples < 1:
        raise ValueError("resamples must be at least 1.")
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return MeanCI(0, math.nan, math.nan, math.nan)
    mean = math.fsum(xs) / n
    if n == 1 or min(xs) == max(xs):
        return MeanCI(n, mean, mean, mean)
    import numpy as np  # here: the engine's light imports (env, OpenEnv client) skip numpy

    x, rng = np.asarray(xs), np.random.default_rng(seed)
    means = np.empty(resamples)
    rows = max(1, BOOTSTRAP_DRAWS // n)  # resamples drawn at once: bounded memory at any n
    for lo in range(0, resamples, rows):
        hi = min(resamples, lo + rows)
        means[lo:hi] = x[rng.integers(0, n, size=(hi - lo, n))].mean(axis=1)
    means.sort()
    last = resamples - 1
    return MeanCI(n, mean, float(means[round(0.025 * last)]), float(means[round(0.975 * last)]))

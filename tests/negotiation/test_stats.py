import math

import pytest

from negotiation import stats
from negotiation.stats import bootstrap_mean_ci, mean_ci


def test_mean_ci_matches_a_hand_computed_t_interval() -> None:
    ci = mean_ci([1.0, 2.0, 3.0, 4.0])
    assert ci.n == 4 and ci.mean == pytest.approx(2.5)
    # s = 1.2910, t(3) = 3.182 -> half width 3.182 * 1.2910 / 2 = 2.054
    assert ci.half_width == pytest.approx(2.054, abs=1e-3)


def test_mean_ci_drops_missing_values_and_handles_tiny_samples() -> None:
    assert mean_ci([None, float("nan"), 0.5]).to_dict() == {
        "n": 1,
        "mean": 0.5,
        "ci_low": 0.5,
        "ci_high": 0.5,
    }
    empty = mean_ci([])
    assert empty.n == 0 and math.isnan(empty.mean)
    assert empty.to_dict() == {"n": 0, "mean": None, "ci_low": None, "ci_high": None}


def test_large_samples_use_the_normal_quantile() -> None:
    ci = mean_ci([0.0, 1.0] * 50)
    assert ci.half_width == pytest.approx(1.96 * math.sqrt(0.25252525 / 100), rel=1e-4)


def test_the_bootstrap_interval_does_not_depend_on_how_its_draws_are_chunked(monkeypatch) -> None:
    xs = [(i % 7) / 6 for i in range(301)]
    whole = bootstrap_mean_ci(xs, seed=3)  # every resample drawn at once
    monkeypatch.setattr(stats, "BOOTSTRAP_DRAWS", 301 * 3 + 5)  # 3 a chunk, the last short
    assert bootstrap_mean_ci(xs, seed=3) == whole
    assert whole.low < whole.mean < whole.high and whole.n == 301


def test_the_bootstrap_interval_of_a_large_sample_is_the_normal_one() -> None:
    """100,000 scores (an evaluation's largest board): close to mean +- 1.96 sd / sqrt(n)."""
    xs = [(i * 7919 % 1000) / 999 for i in range(100_000)]
    ci, t = bootstrap_mean_ci(xs, seed=1), mean_ci(xs)
    assert ci.mean == t.mean
    assert ci.low == pytest.approx(t.low, abs=3e-4) and ci.high == pytest.approx(t.high, abs=3e-4)

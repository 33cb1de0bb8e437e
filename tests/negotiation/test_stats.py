import math

import pytest

from negotiation.stats import mean_ci


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

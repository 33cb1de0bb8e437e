"""negotiation.world.draws: each fast draw gives the same floats and leaves the generator in the
same state as the random.Random method it replaces (seeded episodes depend on it)."""

from __future__ import annotations

import random

import pytest

from negotiation.world.draws import Span, WeightedPool, gauss_noise, randint, uniforms


def _pair(seed: int = 7) -> tuple[random.Random, random.Random]:
    return random.Random(seed), random.Random(seed)


@pytest.mark.parametrize("low,high", [(0.97, 1.03), (-0.15, 0.15), (0.7, 1.8), (2.0, 2.0)])
def test_span_matches_uniform(low: float, high: float) -> None:
    ours, ref = _pair()
    span = Span(low, high)
    assert [span.draw(ours) for _ in range(200)] == [ref.uniform(low, high) for _ in range(200)]
    assert ours.getstate() == ref.getstate()


@pytest.mark.parametrize("low,high", [(1, 1), (1, 13), (6, 10), (0, 2**40), (-5, 5)])
def test_randint_matches_randint(low: int, high: int) -> None:
    ours, ref = _pair()
    assert [randint(ours, low, high) for _ in range(300)] == [
        ref.randint(low, high) for _ in range(300)
    ]
    assert ours.getstate() == ref.getstate()


def test_randint_rejects_an_empty_range() -> None:
    with pytest.raises(ValueError):
        randint(random.Random(1), 3, 2)


def test_uniforms_matches_uniform_in_order() -> None:
    ours, ref = _pair()
    bounds = [(0.04, 0.08), (1.5, 3.0), (-0.03, 0.03)]
    got = uniforms(ours, [Span(a, b) for a, b in bounds])
    assert got == [ref.uniform(a, b) for a, b in bounds]
    assert ours.getstate() == ref.getstate()


@pytest.mark.parametrize("weights", [[3, 2, 2, 1], [1.0, 3.0, 1.0], [5]])
def test_weighted_pool_matches_choices(weights: list[float]) -> None:
    ours, ref = _pair()
    items = [f"item{i}" for i in range(len(weights))]
    pool = WeightedPool(items, weights)
    got = [pool.pick(ours) for _ in range(300)]
    assert got == [ref.choices(items, weights=weights)[0] for _ in range(300)]
    assert ours.getstate() == ref.getstate()


def test_weighted_pool_rejects_bad_weights() -> None:
    with pytest.raises(ValueError):
        WeightedPool(["a", "b"], [1.0])
    with pytest.raises(ValueError):
        WeightedPool(["a"], [0.0])


@pytest.mark.parametrize("n", [0, 1, 2, 3, 10])
@pytest.mark.parametrize("spare", [False, True])
def test_gauss_noise_matches_gauss(n: int, spare: bool) -> None:
    ours, ref = _pair()
    if spare:  # an odd gauss call before leaves a cached spare normal
        assert ours.gauss(0.0, 1.0) == ref.gauss(0.0, 1.0)
    for sigma in (0.05, 0.0, 0.15):
        assert gauss_noise(ours, n, sigma) == [ref.gauss(0.0, sigma) for _ in range(n)]
        assert ours.getstate() == ref.getstate()
        assert ours.gauss(1.0, 2.0) == ref.gauss(1.0, 2.0)  # the spare carried over alike

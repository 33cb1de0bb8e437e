"""Sealed worlds: the seed under a server-held key decides the hidden draws."""

from __future__ import annotations

import random

import pytest

from negotiation import ProcurementEnv, load_scenario
from negotiation.world.seeding import side_uniform, world_root

KEY = b"server-held key for tests"


def _hidden(env: ProcurementEnv) -> list:
    """Every supplier's hidden numbers and every list price: what a player would need."""
    world = env.world
    return [
        [
            h.persona,
            h.margin,
            h.true_reliability,
            h.stress,
            sorted(h.cost_ratio.items()),
            sorted(h.true_capacity.items()),
            sorted(world.sup_by_id[sid].list_prices.items()),
        ]
        for sid, h in world.hidden.items()
    ]


def _world(seed: int, key: bytes | None) -> ProcurementEnv:
    env = ProcurementEnv(load_scenario("medium_adversarial"), world_key=key)
    env.reset(seed=seed)
    return env


def test_a_keyed_world_is_reproducible_with_its_key():
    assert _hidden(_world(7, KEY)) == _hidden(_world(7, KEY))


def test_a_keyed_world_differs_from_the_public_one_and_from_other_keys():
    public, sealed, other = _world(7, None), _world(7, KEY), _world(7, b"another key")
    assert _hidden(sealed) != _hidden(public)
    assert _hidden(sealed) != _hidden(other)
    # a different seed under the same key is another world too
    assert _hidden(_world(8, KEY)) != _hidden(sealed)


def test_a_public_world_starts_from_its_seed_as_it_always_has():
    # The generator of an unkeyed world is random.Random(seed): every stored public
    # episode (and bench/fingerprint.py) replays bit for bit.
    assert world_root(7, None) == 7
    env = _world(7, None)
    fresh = ProcurementEnv(load_scenario("medium_adversarial"))
    fresh.reset(seed=7)
    assert _hidden(env) == _hidden(fresh)
    rng = random.Random(7)
    assert env.world.root == 7 and random.Random(env.world.root).getstate() == rng.getstate()


def test_a_sealed_observation_carries_no_seed():
    assert _world(7, None).observation().seed == 7
    assert _world(7, KEY).observation().seed is None


@pytest.mark.parametrize("key", [b"", "text", 12])
def test_a_world_key_must_be_bytes(key):
    with pytest.raises(ValueError, match="world_key"):
        ProcurementEnv("easy_negotiation", world_key=key)


def test_side_draws_are_uniform_and_named():
    draws = [side_uniform(123, "escalation", "S01", "R01", step) for step in range(2000)]
    assert all(0.0 <= d < 1.0 for d in draws)
    assert 0.45 < sum(draws) / len(draws) < 0.55
    assert side_uniform(123, "a", 1) == side_uniform(123, "a", 1) != side_uniform(124, "a", 1)

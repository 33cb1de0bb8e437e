"""The expert outside its model (policies/expert/fit.py, safe.py): the fit detector flags
a seller whose ask stalls while the buyer moves and not a rule seller, and the expert
closes every possible deal with held-out sellers that walk once they have stopped."""

from __future__ import annotations

import pytest

from negotiation import ProcurementEnv, get_policy, load_scenario
from negotiation.config import PERSONAS
from negotiation.policies.expert.beliefs import history
from negotiation.policies.expert.fit import assess
from negotiation.suppliers import heldout


def expert_episode(preset: str, seed: int, family: str | None = None):
    """The expert plays one bilateral episode (against ``family`` when given); returns the
    env and the Fit of its thread after each answer."""
    env = ProcurementEnv(load_scenario(preset))
    if family is not None:
        heldout.install(env, family)
    obs = env.reset(seed=seed)
    pol = get_policy("expert", seed=seed)
    fits = []
    while not env.done:
        res = env.step(pol.act(obs))
        assert res.info["valid"], res.info["error"]
        obs = res.observation
        for th in obs.threads.values():
            if th.counter_price is not None and th.status == "open":
                fits.append(assess(history(th)))
    return env, fits


@pytest.mark.parametrize("family", ["floor_walk", "fixed_price", "impatient"])
def test_expert_closes_with_sellers_that_walk_once_stopped(family):
    possible = 0
    for seed in range(8):
        preset = f"bilateral_{PERSONAS[seed % len(PERSONAS)]}"
        env, _ = expert_episode(preset, seed, family)
        r = env.world.requirements[0]
        th = next(iter(env.world.th_hidden.values()))
        if heldout.walk_line(family, th) <= r.ceiling_unit_price:
            possible += 1
            assert env.world.contracts, f"{family} seed {seed}: a possible deal was lost"
    assert possible >= 5


def test_fit_flags_a_stalled_seller_and_not_a_rule_seller():
    _, fits = expert_episode("bilateral_hardball", 1, "floor_walk")
    assert not all(f.explained for f in fits)
    for seed, persona in enumerate(PERSONAS):
        _, fits = expert_episode(f"bilateral_{persona}", seed)
        assert fits and all(f.explained for f in fits), persona

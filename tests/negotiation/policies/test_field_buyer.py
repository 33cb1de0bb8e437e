"""Field buyers (negotiation/policies/field_buyer.py): negmas negotiators making a buyer's
offers on real threads, against a rule supplier and against a negmas seller. Skipped where
the optional packages are missing (requirements/field.txt)."""

from __future__ import annotations

import importlib.util

import pytest

from negotiation import ProcurementEnv, load_scenario
from negotiation.policies.field_buyer import (
    BUYERS,
    FieldBuyerPolicy,
    _Grid,
    available_field_buyers,
    make_field_buyer,
)

needs_negmas = pytest.mark.skipif(
    importlib.util.find_spec("negmas") is None, reason="negmas is not installed"
)


def play(buyer: str, seed: int, persona: str | None) -> tuple[ProcurementEnv, list]:
    """One bilateral episode; the thread's rounds at the end."""
    scn = load_scenario("bilateral", persona=persona) if persona else load_scenario("bilateral")
    env = ProcurementEnv(scn)
    obs = env.reset(seed=seed)
    policy = make_field_buyer(buyer, seed=seed)
    steps = 0
    while not env.done:
        obs = env.step(policy.act(obs)).observation
        steps += 1
        assert steps < 60, "the buyer never ends the episode"
    (th,) = obs.threads.values()
    return env, list(th.rounds)


def test_grid_maps_the_ceiling_to_the_reserved_value():
    g = _Grid(60.0, 110.0)
    assert g.price(200) == 110.0 and g.price(400) == 60.0 and g.price(0) == 160.0
    assert g.index(110.0) == 200 and g.index(1e9) == 0 and g.index(-5.0) == 400
    assert g.index(float("nan")) == 0


def test_unknown_buyer_is_refused():
    with pytest.raises(KeyError, match="unknown field buyer"):
        FieldBuyerPolicy("negmas_nobody")


@needs_negmas
@pytest.mark.parametrize("persona", [None, "field_linear"])
@pytest.mark.parametrize("buyer", ["negmas_boulware", "negmas_agent_k"])
def test_plays_a_whole_thread(buyer: str, persona: str | None):
    """Against a rule supplier and a negmas seller: offers rise from the opening, never
    above the ceiling, and the thread ends in a deal (at a price the buyer can pay) or a
    walk-away within the seller's horizon plus one offer."""
    if buyer not in available_field_buyers():
        pytest.skip(f"{BUYERS[buyer].module} is not installed")
    env, rounds = play(buyer, 3, persona)
    r = env.world.requirements[0]
    offers = [rd.buyer_offer for rd in rounds]
    assert len(offers) >= 2
    assert all(o is not None and 0 < o <= r.ceiling_unit_price + 1e-9 for o in offers)
    assert offers[-1] > offers[0]
    m = env.score().metrics
    if m["contracts"]:
        assert env.world.contracts[0].unit_price <= r.ceiling_unit_price + 1e-9
        assert 0.0 <= m["buyer_share"] <= 1.0
    # Deterministic: the same seed plays the same thread.
    assert [rd.buyer_offer for rd in play(buyer, 3, persona)[1]] == offers


@needs_negmas
def test_replay_resumes_from_any_step():
    """A fresh policy given the mid-episode observation decides what the original did."""
    env = ProcurementEnv(load_scenario("bilateral", persona="field_conceder"))
    obs = env.reset(seed=5)
    first = make_field_buyer("negmas_conceder", seed=5)
    for _ in range(4):
        action = first.act(obs)
        assert make_field_buyer("negmas_conceder", seed=5).act(obs) == action
        obs = env.step(action).observation

"""Held-out sellers (negotiation/suppliers/heldout.py): deterministic per seed, within
their own rules, and absent from every scenario unless installed."""

from __future__ import annotations

import pytest

from negotiation import ProcurementEnv, get_policy, list_presets, load_scenario
from negotiation.suppliers import heldout


def play(
    family: str | None, seed: int, buyer: str = "script_concede_5pct", persona: str = "hardball"
):
    """One bilateral episode against ``family`` (None: the rule persona itself): (env, the
    thread's rounds as tuples)."""
    env = ProcurementEnv(load_scenario("bilateral", persona=persona))
    if family is not None:
        heldout.install(env, family)
    obs = env.reset(seed=seed)
    pol = get_policy(buyer, seed=seed)
    while not env.done:
        res = env.step(pol.act(obs))
        assert res.info["valid"], res.info["error"]
        obs = res.observation
    rounds = [
        (rd.buyer_offer, rd.response, rd.supplier_price)
        for th in env.world.threads.values()
        for rd in th.rounds
    ]
    return env, rounds


@pytest.mark.parametrize("family", heldout.FAMILIES)
def test_deterministic_per_seed(family):
    runs = [play(family, seed)[1] for seed in (3, 3, 4)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


@pytest.mark.parametrize("family", heldout.FAMILIES)
def test_never_counters_under_its_walk_line_nor_above_its_last(family):
    for seed in range(6):
        env, rounds = play(family, seed, buyer="script_concede_2pct")
        th = next(iter(env.world.th_hidden.values()))
        line = round(heldout.walk_line(family, th), 2)
        counters = [p for _, kind, p in rounds if kind == "counter"]
        assert all(c >= line - 0.01 for c in counters)
        assert counters == sorted(counters, reverse=True)


def test_floor_walk_walks_a_few_offers_after_reaching_its_floor():
    walked = 0
    for seed in range(8):
        env, rounds = play("floor_walk", seed, buyer="script_concede_2pct")
        th = next(iter(env.world.th_hidden.values()))
        _, reach, patience = heldout._params("floor_walk", th)
        if rounds[-1][1] == "walk_away":
            walked += 1
            # answer `reach` is the first at the floor; the walk comes `patience` offers later
            assert len(rounds) == reach + patience
    assert walked >= 6  # a 2 % creep from 0.6 x reference rarely meets the floor in time


def test_fixed_price_never_moves():
    for seed in range(5):
        _, rounds = play("fixed_price", seed)
        assert len({p for _, kind, p in rounds if kind == "counter"}) <= 1


def test_not_in_any_scenario_unless_installed():
    for preset in list_presets(include_llm=False):
        env = ProcurementEnv(load_scenario(preset))
        sellers = env.supplier_policies.values()
        assert not any(
            isinstance(p, (heldout.HeldOutSeller, heldout.GrudgeSeller)) for p in sellers
        )
    with pytest.raises(KeyError):
        heldout.HeldOutSeller("nobody")
    with pytest.raises(KeyError):
        heldout.install(ProcurementEnv(load_scenario("bilateral")), "nobody")


def test_grudge_answers_as_its_persona_until_an_offer_retracts():
    """Against a buyer that never retracts, the grudge seller's answers are its rule
    persona's own; an offer under one the buyer made before ends the talks at once."""
    for seed, persona in enumerate(("hardball", "cooperative", "deceptive")):
        rule = play(None, seed, buyer="script_concede_2pct", persona=persona)[1]
        assert play("grudge", seed, buyer="script_concede_2pct", persona=persona)[1] == rule

        env = ProcurementEnv(load_scenario("bilateral", persona=persona))
        heldout.install(env, "grudge")
        obs = env.reset(seed=seed)
        opening = round(1.05 * obs.seller_cost, 2)
        for price, answer in ((opening, "counter"), (opening - 0.01, "walk_away")):
            res = env.step(
                {
                    "action_type": "negotiate",
                    "supplier_id": "S01",
                    "requirement_id": "R01",
                    "price": price,
                }
            )
            assert res.info["valid"], res.info["error"]
            assert res.observation.thread("S01", "R01").rounds[-1].response == answer


def test_erratic_asks_ignore_the_offers_and_it_walks_only_after_its_patience():
    """The random walk answers the clock, not the buyer: two buyers see the same counters
    while both are countered, and it walks from no offer before the public round limit."""
    for seed in range(4):
        _, slow = play("erratic", seed, buyer="script_concede_2pct")
        _, fast = play("erratic", seed, buyer="script_concede_5pct")
        a = [p for _, kind, p in slow if kind == "counter"]
        b = [p for _, kind, p in fast if kind == "counter"]
        n = min(len(a), len(b))
        assert n >= 2 and a[:n] == b[:n]
        for rounds in (slow, fast):
            walks = [i for i, (_, kind, _) in enumerate(rounds) if kind == "walk_away"]
            assert all(i >= 8 for i in walks)  # the bilateral preset's round limit is 8

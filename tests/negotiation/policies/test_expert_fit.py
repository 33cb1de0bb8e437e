"""The expert outside its model (policies/expert/fit.py, safe.py): the fit detector flags
a seller whose ask stalls while the buyer moves and not a rule seller, the residual test
flags a seller whose counters follow no documented tactic and no rule persona, and the
expert closes every possible deal with held-out sellers (those that walk once they have
stopped, and the random walk, which it does not take at its first pause)."""

from __future__ import annotations

import pytest

from negotiation import ProcurementEnv, get_policy, load_scenario
from negotiation.config import PERSONAS
from negotiation.policies.expert import safe
from negotiation.policies.expert.beliefs import HIGHEST_FLOOR_COST, floor_range, history
from negotiation.policies.expert.fit import Fit, assess, residual_misfit
from negotiation.suppliers import heldout


def expert_episode(preset: str, seed: int, family: str | None = None, **overrides):
    """The expert plays one bilateral episode (against ``family`` when given); returns the
    env and the Fit of its thread after each answer."""
    env = ProcurementEnv(load_scenario(preset, **overrides))
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


@pytest.mark.parametrize("family", heldout.FAMILIES)
def test_expert_closes_possible_deals_with_held_out_sellers(family):
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


def test_a_pause_in_the_upper_part_of_the_margin_is_no_stop():
    """A seller that conceded once and then held (a random walk's pause, or a fixed price)
    is met at once only where a price set for good can lie: not above ONE_PRICE_SHARE of
    the way from the highest floor to the list price."""
    paused = Fit(False, 1, 0.0, 0)
    cost, listed = 100.0, 200.0
    line = HIGHEST_FLOOR_COST * cost + safe.ONE_PRICE_SHARE * (listed - HIGHEST_FLOOR_COST * cost)
    assert safe.at_risk(paused, round(line - 0.01, 2), cost, listed)
    assert not safe.at_risk(paused, round(line + 0.01, 2), cost, listed)
    assert not safe.at_risk(paused, listed, cost, listed)
    assert safe.at_risk(paused, listed - 1.0, None, listed)  # no public cost: any price


def test_expert_holds_out_against_a_random_walk_paused_high():
    """Erratic seed 100062 (a tuning seed, as bench/quality.py plays it) pauses at 52.35 of
    list 62.40 after its first concession: the expert took that at once (share 0.02); now
    it holds out and closes at 39.95."""
    seed = 100062
    env, _ = expert_episode("bilateral", seed, "erratic", persona=PERSONAS[seed % len(PERSONAS)])
    assert env.world.contracts
    assert env.world.contracts[0].unit_price < 45.0


def test_fit_flags_a_stalled_seller_and_not_a_rule_seller():
    _, fits = expert_episode("bilateral_hardball", 1, "floor_walk")
    assert not all(f.explained for f in fits)
    _, fits = expert_episode("bilateral_hardball", 2, "erratic")
    assert not all(f.explained for f in fits)
    for seed, persona in enumerate(PERSONAS):
        _, fits = expert_episode(f"bilateral_{persona}", seed)
        assert fits and all(f.explained for f in fits), persona


def counters_seen(preset: str, seed: int, family: str | None, buyer: str):
    """The thread's history after every answer with 3 or more counters, with the inputs the
    residual test reads: [(history, anchor, T, floors)]."""
    env = ProcurementEnv(load_scenario(preset))
    if family is not None:
        heldout.install(env, family)
    obs = env.reset(seed=seed)
    pol = get_policy(buyer, seed=seed)
    seen = []
    while not env.done:
        obs = env.step(pol.act(obs)).observation
        for (sid, rid), th in obs.threads.items():
            h = history(th)
            if th.status == "open" and h.regular and len(h.counters) >= 3:
                s = next(x for x in obs.suppliers if x.id == sid)
                anchor = max(s.list_prices[rid], h.counters[0])
                seen.append((h, anchor, obs.max_rounds, floor_range(obs.seller_cost, h)))
    return seen


def test_residuals_flag_a_random_walk_and_no_rule_persona():
    flagged = 0
    for seed in range(4):
        seen = counters_seen("bilateral_hardball", seed, "erratic", "script_concede_2pct")
        flagged += any(residual_misfit(*x) for x in seen)
    assert flagged >= 3
    for seed, persona in enumerate(PERSONAS):
        seen = counters_seen(f"bilateral_{persona}", seed, None, "script_concede_2pct")
        assert seen and not any(residual_misfit(*x) for x in seen), persona

"""The naive baselines behave as their names say: always_accept closes deals at the
supplier's price, greedy_lowball lowballs and waits (which the responsive suppliers now
punish with frozen asks and walk-outs); neither sends an action it cannot pay for, and both
stay clearly below the expert."""

from __future__ import annotations

import statistics

import pytest

from negotiation import ProcurementEnv, get_policy, load_scenario, run_episode

SEEDS = range(30)
BILATERAL = [
    "bilateral",
    "bilateral_cooperative",
    "bilateral_hardball",
    "bilateral_deceptive",
    "bilateral_distressed",
]
BASELINES = ("always_accept", "greedy_lowball")


def _runs(preset: str, policy: str) -> list:
    return [run_episode(preset, policy, s, record_steps=False) for s in SEEDS]


def _mean(rs: list, key: str) -> float:
    return statistics.mean(r.metrics[key] for r in rs)


@pytest.mark.parametrize("preset", BILATERAL)
def test_always_accept_closes_bilateral_deals_without_invalid_actions(preset):
    rs = _runs(preset, "always_accept")
    assert _mean(rs, "invalid_action_rate") <= 0.01, preset
    assert _mean(rs, "deal_rate") > 0.9, preset
    assert statistics.mean(r.score for r in rs) > 0.3, preset


@pytest.mark.parametrize("preset", BILATERAL)
def test_lowballing_and_waiting_does_not_pay(preset):
    """greedy_lowball repeats half the list price: the seller freezes its ask, hardens or
    walks, so the lowballer closes fewer deals than the expert and never outscores it."""
    rs = _runs(preset, "greedy_lowball")
    expert = _runs(preset, "expert")
    assert _mean(rs, "invalid_action_rate") <= 0.01, preset
    assert _mean(rs, "deal_rate") <= _mean(expert, "deal_rate"), preset
    assert statistics.mean(r.score for r in rs) < statistics.mean(r.score for r in expert) - 0.1


@pytest.mark.parametrize("preset", [*BILATERAL, "medium_adversarial"])
def test_expert_beats_both_baselines(preset):
    expert = statistics.mean(r.score for r in _runs(preset, "expert"))
    for policy in BASELINES:
        assert expert > statistics.mean(r.score for r in _runs(preset, policy)) + 0.05, policy


@pytest.mark.parametrize("policy", BASELINES)
def test_arena_baselines_send_no_invalid_actions(policy):
    for preset in ("easy_negotiation", "medium_adversarial", "hard_arena"):
        rs = _runs(preset, policy)
        assert _mean(rs, "invalid_action_rate") <= 0.01, (preset, policy)
        assert _mean(rs, "deal_rate") > 0.2, (preset, policy)


@pytest.mark.parametrize("policy", BASELINES)
def test_baselines_never_pay_above_their_ceiling_or_budget(policy):
    for preset in ("bilateral", "medium_adversarial", "hard_arena"):
        for seed in range(10):
            env = ProcurementEnv(load_scenario(preset))
            obs = env.reset(seed=seed)
            pol = get_policy(policy, seed=seed)
            while not env.done:
                res = env.step(pol.act(obs))
                assert res.info["error"] is None, (preset, seed, res.info["error"])
                obs = res.observation
            ceilings = {r.id: r.ceiling_unit_price for r in obs.requirements}
            assert all(c.unit_price <= ceilings[c.requirement_id] + 1e-9 for c in obs.contracts)
            assert obs.budget_remaining >= -1e-6


def test_always_accept_takes_the_price():
    # always_accept never bargains, so it keeps no surplus.
    assert _mean(_runs("bilateral", "always_accept"), "buyer_share") < 0.05


def test_greedy_lowball_opens_at_its_fraction_of_list():
    env = ProcurementEnv(load_scenario("bilateral"))
    obs = env.reset(seed=3)
    action = get_policy("greedy_lowball", fraction=0.5).act(obs)
    s = obs.suppliers[0]
    r = obs.requirements[0]
    assert action["action_type"] == "negotiate"
    assert action["price"] == pytest.approx(s.list_prices[r.id] * 0.5, abs=0.01)

"""The oracle (policies/oracle.py): measurement only, and an upper reference that holds."""

from __future__ import annotations

import statistics

import pytest

from negotiation import ProcurementEnv, get_policy, list_policies, load_scenario
from negotiation.config import PERSONAS
from negotiation.evaluation import EvaluationError, build_spec
from negotiation.policies.expert.beliefs import SAFE_OPEN_COST
from negotiation.policies.oracle import OraclePolicy, SafeOpenOraclePolicy


def _play(preset: str, policy, seed: int) -> tuple[float, dict]:
    env = ProcurementEnv(load_scenario(preset))
    obs = env.reset(seed=seed)
    if isinstance(policy, OraclePolicy):
        policy.watch(env)
    while not env.done:
        res = env.step(policy.act(obs))
        assert res.info["valid"], res.info["error"]
        obs = res.observation
    sc = env.score()
    return sc.score, sc.metrics


@pytest.mark.parametrize("name", ["oracle", "oracle_safe_open"])
def test_the_oracle_is_not_a_registered_policy(name):
    assert name not in list_policies()
    with pytest.raises(ValueError, match="benchmarks only"):
        get_policy(name)
    with pytest.raises(EvaluationError, match="benchmarks only"):
        build_spec(policies=name, scenarios="bilateral", seeds=2)


def test_the_oracle_refuses_to_play_unwatched():
    env = ProcurementEnv(load_scenario("bilateral"))
    obs = env.reset(seed=1)
    with pytest.raises(RuntimeError, match="watch"):
        OraclePolicy(1).act(obs)


@pytest.mark.parametrize("persona", ["hardball", "cooperative", "deceptive", "distressed"])
def test_the_oracle_closes_every_bilateral_deal_and_bargains_as_well_as_the_expert(persona):
    """At least the expert's share, and more against hardball and deceptive sellers (on
    these 12 cooperative seeds the expert pays what the oracle pays on 11, to the cent)."""
    preset = f"bilateral_{persona}"
    oracle, expert = [], []
    for seed in range(12):
        _, m = _play(preset, OraclePolicy(seed), seed)
        assert m["deal_rate"] == 1.0, (persona, seed)
        oracle.append(m["buyer_share"])
        expert.append(_play(preset, get_policy("expert", seed=seed), seed)[1]["buyer_share"])
    assert statistics.mean(oracle) >= statistics.mean(expert) - 1e-9
    if persona in ("hardball", "deceptive"):
        assert statistics.mean(oracle) > statistics.mean(expert) + 0.01


def test_the_oracle_plays_arena_episodes_with_valid_actions():
    for seed in range(3):
        score, _ = _play("medium_adversarial", OraclePolicy(seed), seed)
        assert 0.0 <= score <= 1.0


def test_the_safe_opening_oracle_never_opens_under_the_experts_safe_line():
    """It bounds what a buyer that never risks an insult can reach: its first offer is at
    or above the expert's opening, it closes every deal, and on deceptive sellers (whose
    insult line sits far under the safe line) it keeps less than the free oracle."""
    safe, free = [], []
    for seed in range(12):
        env = ProcurementEnv(load_scenario("bilateral_deceptive"))
        obs = env.reset(seed=seed)
        pol = SafeOpenOraclePolicy(seed)
        pol.watch(env)
        first = pol.act(obs)
        assert first["price"] >= SAFE_OPEN_COST * obs.seller_cost - 1e-9
        _, m = _play("bilateral_deceptive", SafeOpenOraclePolicy(seed), seed)
        assert m["deal_rate"] == 1.0
        safe.append(m["buyer_share"])
        free.append(_play("bilateral_deceptive", OraclePolicy(seed), seed)[1]["buyer_share"])
    assert statistics.mean(safe) < statistics.mean(free)


def test_no_public_information_tells_the_bilateral_persona_before_the_first_offer():
    """Why `oracle_safe_open`, not the free oracle, bounds a buyer that keeps every deal:
    on the same seed the four personas show the buyer the same first observation (only
    the supplier's name may differ, drawn from one pool for all after the persona's own
    draws). A first offer under the safe line is therefore made to a hardball seller too,
    whose insult line it crosses, so the free oracle's persona-specific openings are
    out of reach of any buyer that reads the observation alone."""

    def first_observation(persona: str, seed: int) -> dict:
        env = ProcurementEnv(load_scenario("bilateral", persona=persona))
        seen = env.reset(seed=seed).to_dict()
        for s in seen["suppliers"]:
            s.pop("name")
        return seen

    for seed in range(16):
        seen = [first_observation(p, seed) for p in PERSONAS]
        assert all(o == seen[0] for o in seen[1:]), seed


@pytest.mark.parametrize("preset", ["easy_negotiation", "medium_adversarial", "hard_arena"])
def test_in_the_arena_the_expert_outscores_every_script_and_keeps_near_the_oracle(preset):
    """The arena targets of the expert (bench/quality.py measures them on 300 seeds): on
    the same 30 seeds its mean score beats every script's, reaches 0.9 of the oracle's,
    and its deal rate is at least the oracle's (scripts that keep more of the surplus per
    deal do it on far fewer deals, so the arena compares scores)."""
    seeds = range(30)
    expert = [_play(preset, get_policy("expert", seed=s), s) for s in seeds]
    oracle = [_play(preset, OraclePolicy(s), s) for s in seeds]
    score = statistics.mean(sc for sc, _ in expert)
    assert score >= 0.9 * statistics.mean(sc for sc, _ in oracle)
    deals = statistics.mean(m["deal_rate"] for _, m in expert)
    assert deals >= statistics.mean(m["deal_rate"] for _, m in oracle) - 1e-9
    for script in (p for p in list_policies() if p.startswith("script_")):
        theirs = statistics.mean(_play(preset, get_policy(script, seed=s), s)[0] for s in seeds)
        assert score > theirs, (script, score, theirs)

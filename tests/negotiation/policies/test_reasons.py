"""Every rule policy says why it chose each action: a short reason per decision, from the
numbers it used (the offer, the quantity, the PR amount), kept as the step's rationale."""

from __future__ import annotations

import pytest

from negotiation import ProcurementEnv, get_policy, list_policies, list_presets, load_scenario
from negotiation.policies.base import REASON_CHARS
from negotiation.policies.oracle import OraclePolicy, SafeOpenOraclePolicy
from negotiation.runner import run_episode

RULE_POLICIES = [p for p in list_policies() if p not in ("llm", "human")]


def _numbers(action: dict) -> list[str]:
    """What a reason for this action must name: the offer, the quantity or the amount."""
    kind = action["action_type"]
    if kind == "negotiate":
        return [f"{action['price']:.2f}"]
    if kind == "award_contract":
        return [str(action["quantity"])]
    if kind == "raise_pr":
        return [f"{action['amount']:.2f}"]
    return []


def _play(policy, preset: str, seed: int, watch: bool = False) -> list[tuple[dict, str | None]]:
    """(action, reason) per decision, the reason cleared before each one: a policy that
    left it over from the step before would give the wrong one."""
    env = ProcurementEnv(load_scenario(preset))
    obs = env.reset(seed=seed)
    policy.reset(seed)
    if watch:
        policy.watch(env)
    out = []
    while not env.done:
        policy.last_decision = None
        action = policy.act(obs)
        decision = policy.last_decision
        out.append((action, None if decision is None else decision.rationale))
        obs = env.step(action).observation
    return out


def _check(name: str, decisions: list[tuple[dict, str | None]]) -> None:
    assert decisions
    for step, (action, why) in enumerate(decisions):
        assert why and why.strip(), (name, step, action)
        assert len(why) <= REASON_CHARS, (name, step, why)
        if name != "random":  # random's reason is that it drew the action
            for number in _numbers(action):
                assert number in why, (name, step, action, why)


@pytest.mark.parametrize("preset", list_presets(include_llm=False))
@pytest.mark.parametrize("name", RULE_POLICIES)
def test_every_rule_policy_gives_a_reason_on_every_decision(name: str, preset: str) -> None:
    _check(name, _play(get_policy(name, seed=3), preset, 3))


@pytest.mark.parametrize("preset", ["easy_negotiation", "hard_arena", "bilateral_deceptive"])
@pytest.mark.parametrize("cls", [OraclePolicy, SafeOpenOraclePolicy])
def test_the_oracles_give_reasons_too(cls, preset: str) -> None:
    _check(cls.name, _play(cls(seed=2), preset, 2, watch=True))


def test_the_reason_is_the_steps_rationale_and_the_actor_stays_the_policy() -> None:
    result = run_episode("bilateral_hardball", "expert", 5)
    first = result.steps[0].to_dict()
    assert first["actor"] == "policy" and first["message"] is None
    assert first["rationale"].startswith(f"open at {first['action']['price']:.2f}: safe opening")
    assert all(s.decision.rationale for s in result.steps)


def test_expert_arena_offers_name_the_plan_and_awards_the_quantity() -> None:
    steps = run_episode("medium_adversarial", "expert", 1).steps
    offers = [s.decision.rationale for s in steps if s.action["action_type"] == "negotiate"]
    assert offers and all("plan:" in why and "expects ~" in why for why in offers)
    awards = [s for s in steps if s.action["action_type"] == "award_contract"]
    assert awards
    for s in awards:
        assert f"award {s.action['quantity']} " in s.decision.rationale

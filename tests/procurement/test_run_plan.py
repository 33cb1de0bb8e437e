"""The run plan answers "does this episode use a language model?" once, for every reader."""

from __future__ import annotations

import pytest

from negotiation import load_scenario
from procurement.run_plan import RunPlan

RULE = {"name": "expert", "policy": "expert", "params": {}, "backend": "", "model": ""}
LLM_BUYER = {**RULE, "name": "llm-a", "policy": "llm", "backend": "vllm", "model": "/m"}
HUMAN = {**RULE, "name": "human", "policy": "human"}


def config(**changes) -> dict:
    return {**load_scenario("medium_adversarial").model_dump(mode="json"), **changes}


@pytest.mark.parametrize(
    ("scenario", "policy", "buyer", "suppliers", "queue"),
    [
        (config(), RULE, False, False, "cpu"),
        (config(), LLM_BUYER, True, False, "gpu"),
        (config(supplier_llm={"model": "x", "personas": ["hardball"]}), RULE, False, True, "gpu"),
        (config(supplier_llm={"model": "x", "personas": []}), RULE, False, False, "cpu"),
        (config(), HUMAN, False, False, "human"),
    ],
)
def test_the_plan_says_who_uses_a_model_and_where_the_run_goes(
    scenario, policy, buyer, suppliers, queue
) -> None:
    plan = RunPlan.of(scenario_config=scenario, policy_snapshot=policy)
    assert (plan.buyer_uses_llm, plan.suppliers_use_llm, plan.queue) == (buyer, suppliers, queue)
    assert plan.uses_llm == (buyer or suppliers)


def test_llm_presets_play_llm_suppliers() -> None:
    for preset in ("llm_bilateral", "medium_adversarial_llm"):
        scenario = load_scenario(preset).model_dump(mode="json")
        plan = RunPlan.of(scenario_config=scenario, policy_snapshot=RULE)
        assert plan.suppliers_use_llm and plan.queue == "gpu"

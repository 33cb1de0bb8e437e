"""LLM suppliers: chosen per persona by the scenario's supplier_llm, decisions made by the
model inside the guard, fallbacks to the rule persona counted and recorded."""

from __future__ import annotations

import json

from negotiation import ProcurementEnv, get_policy, load_scenario, run_episode
from negotiation.suppliers.llm_supplier import LLMSupplierPolicy
from negotiation.suppliers.rule import RULE_POLICY
from tests.negotiation.llm.scripted import ScriptedBackend, fair_supplier, is_supplier


def _cfg(preset: str, personas: list[str]) -> dict:
    cfg = load_scenario(preset).model_dump()
    cfg["supplier_llm"] = {"backend": "transformers", "model": "", "personas": personas}
    return cfg


def test_only_the_named_personas_are_played_by_the_model() -> None:
    backend = ScriptedBackend(fair_supplier)
    cfg = _cfg("medium_adversarial", ["deceptive", "distressed"])
    env = ProcurementEnv(cfg, llm_backend=backend)
    assert set(env.supplier_policies) == {"deceptive", "distressed"}
    assert all(isinstance(p, LLMSupplierPolicy) for p in env.supplier_policies.values())
    assert ProcurementEnv("medium_adversarial").supplier_policies == {}  # rule-only: nothing

    result = run_episode(cfg, "expert", 7, llm_backend=backend)
    env.reset(seed=7)
    persona = {s.id: env.world.hidden[s.id].persona for s in env.world.suppliers}
    answered = [
        s for s in result.steps if s.response is not None and s.action["action_type"] == "negotiate"
    ]
    assert answered
    for step in answered:
        llm = persona[step.response["supplier_id"]] in ("deceptive", "distressed")
        assert step.supplier_actor == ("llm" if llm else "rule"), step
    n_llm = sum(s.supplier_actor == "llm" for s in result.steps)
    assert n_llm > 0 and result.metrics["supplier_llm_decisions"] == n_llm == backend.stats.requests
    assert result.metrics["guard_interventions"] == 0  # a well-behaved model needs no repair


def test_the_models_decision_is_the_suppliers_answer() -> None:
    backend = ScriptedBackend(fair_supplier)
    cfg = _cfg("bilateral_hardball", ["hardball"])
    env = ProcurementEnv(cfg, llm_backend=backend)
    env.reset(seed=3)
    sid, rid = env.world.suppliers[0].id, env.world.requirements[0].id
    res = env.step(
        {
            "action_type": "negotiate",
            "supplier_id": sid,
            "requirement_id": rid,
            "price": 1.0 + env.world.reservation_now(sid, env.world.requirements[0])[1],
        }
    )
    reply = json.loads(fair_supplier(backend.requests[-1]))
    assert res.info["response"]["response"] == reply["decision"] == "counter"
    assert res.info["response"]["price"] == round(reply["price"], 2)
    assert res.info["response"]["message"] == f"We can do {reply['price']:,.2f}."
    request = backend.requests[-1]
    # an offer above the reservation: every decision allowed, the counter at the ask
    branches = request.json_schema["anyOf"]
    kinds = [b["properties"]["decision"]["const"] for b in branches]
    assert kinds == ["accept", "counter", "walk_away"]
    assert branches[1]["properties"]["price"]["enum"] == [round(reply["price"], 2)]
    assert request.temperature == 0.0


def test_an_offer_over_every_counter_is_put_to_the_model_without_a_counter() -> None:
    """Over the planned ask and the last counter there is no counter left to offer: the
    prompt and schema allow the rest (the prompt used to raise IndexError here)."""
    backend = ScriptedBackend(fair_supplier)
    env = ProcurementEnv(_cfg("bilateral_hardball", ["hardball"]), llm_backend=backend)
    env.reset(seed=3)
    sid, rid = env.world.suppliers[0].id, env.world.requirements[0].id
    ask = env.world.reservation_now(sid, env.world.requirements[0])[1]
    res = env.step(
        {"action_type": "negotiate", "supplier_id": sid, "requirement_id": rid, "price": 2 * ask}
    )
    assert res.info["response"]["response"] == "accept"
    branches = backend.requests[-1].json_schema["anyOf"]
    assert "counter" not in [b["properties"]["decision"]["const"] for b in branches]
    assert "a counter names it\n" in backend.requests[-1].messages[0].content


def test_unusable_supplier_replies_fall_back_to_the_rule_persona_counted() -> None:
    cfg = _cfg("bilateral_hardball", ["hardball"])
    rule = run_episode(load_scenario("bilateral_hardball"), "expert", 5)
    garbage = run_episode(cfg, "expert", 5, llm_backend=ScriptedBackend(lambda r: "Deal!!"))
    offers = [s for s in garbage.steps if s.response is not None]
    # the rule persona answered in the model's place: the very game of a rule-only run
    assert [(s.action, s.response) for s in garbage.steps] == [
        (s.action, s.response) for s in rule.steps
    ]
    assert garbage.score == rule.score
    m = garbage.metrics
    assert m["supplier_llm_parse_failures"] == m["supplier_llm_fallbacks"] == len(offers)
    assert m["llm_parse_failures"] == m["llm_fallbacks"] == len(offers)
    assert m["buyer_llm_parse_failures"] == 0
    for step in offers:
        assert step.supplier_actor == "fallback:rule"
        assert (
            step.decision.llm_parse_failure
            and step.decision.llm_fallback
            and step.decision.actor == "policy"
        )

    timeouts = ScriptedBackend(fair_supplier, error=lambda r: "timeout")
    res = run_episode(cfg, "expert", 5, llm_backend=timeouts)
    assert res.metrics["supplier_llm_fallbacks"] > 0 == res.metrics["supplier_llm_parse_failures"]
    assert all(not s.decision.llm_parse_failure for s in res.steps)


def test_buyer_and_supplier_models_share_one_backend() -> None:
    from tests.negotiation.llm.scripted import both, simple_buyer

    backend = ScriptedBackend(both(simple_buyer, fair_supplier))
    cfg = _cfg("bilateral", ["hardball"])
    result = run_episode(cfg, get_policy("llm", backend=backend), 2, llm_backend=backend)
    kinds = {is_supplier(r) for r in backend.requests}
    assert kinds == {True, False}
    assert result.metrics["buyer_llm_calls"] + result.metrics["supplier_llm_decisions"] == (
        backend.stats.requests
    )
    assert {s.decision.actor for s in result.steps} == {"llm"}


def test_rule_policy_is_still_the_default_supplier() -> None:
    env = ProcurementEnv("bilateral")
    env.reset(seed=0)
    assert env.supplier_policies.get(env.world.hidden["S01"].persona, RULE_POLICY) is RULE_POLICY

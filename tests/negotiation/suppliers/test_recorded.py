"""A replay answers LLM suppliers from the record: the same world, step by step, with no
model, whatever the model did (fair answers, rule breaks the guard repaired, replies that
were not JSON, backend failures)."""

from __future__ import annotations

import json
import re
import zlib

import pytest

from negotiation import ProcurementEnv, load_scenario, run_episode
from negotiation.suppliers.recorded import RecordedReplies
from tests.negotiation.llm.scripted import N, ScriptedBackend, fair_supplier, prompt


def _kind(request) -> int:
    return zlib.crc32(prompt(request).encode()) % 5


def adversary(request) -> str:
    """Breaks a rule by the prompt, as a model outside its schema could: accepts any
    offer, raises its ask fivefold, or counters at half the offer, naming a low figure."""
    text = prompt(request)
    offer = float(re.search(rf"The buyer offers {N}", text).group(1).replace(",", ""))
    ask = float(re.search(rf"planned ask now: {N}", text).group(1).replace(",", ""))
    kind, price = [("accept", offer), ("counter", ask * 5), ("counter", offer * 0.5)][
        zlib.crc32(text.encode()) % 3
    ]
    return json.dumps({"decision": kind, "price": price, "message": f"ok, {offer * 0.9:.2f}"})


def moody(request) -> str:
    """Fair, adversarial (the guard repairs it) or not JSON at all, by the prompt."""
    kind = _kind(request)
    if kind == 0:
        return "I'd rather not say."
    return adversary(request) if kind in (1, 2) else fair_supplier(request)


def failing(request) -> str | None:
    second = prompt(request).count("- buyer offered") == 1  # the buyer's second offer
    return "timeout" if _kind(request) >= 3 and second else None


def llm_config(name: str) -> dict:
    cfg = load_scenario(name).model_dump()
    if cfg.get("supplier_llm") is None:
        cfg["supplier_llm"] = {"backend": "transformers", "personas": ["hardball"]}
    return cfg


@pytest.mark.parametrize(
    ("scenario", "seed"),
    [("bilateral_hardball", 1), ("bilateral_hardball", 4), ("medium_adversarial_llm", 3)],
)
def test_a_replay_from_the_record_rebuilds_every_step_and_the_score(
    scenario: str, seed: int
) -> None:
    cfg = llm_config(scenario)
    played = run_episode(cfg, "expert", seed, llm_backend=ScriptedBackend(moody, error=failing))
    actors = {r.supplier_actor for r in played.steps}
    assert {"llm", "fallback:rule"} <= actors  # the model answered and failed in turn
    assert sum(r.guard_interventions for r in played.steps) > 0

    replies = RecordedReplies()
    env = ProcurementEnv(cfg, llm_backend=replies)
    env.reset(seed=seed)
    for record in played.steps:
        replies.expect(response=record.response, supplier_actor=record.supplier_actor)
        result = env.step(record.action)
        assert json.dumps(result.info["response"]) == json.dumps(record.response), record.step
        assert result.info["running_score"] == record.running_score
    assert env.done and env.score().score == played.score
    asked = sum(r.supplier_actor in ("llm", "fallback:rule") for r in played.steps)
    assert replies.stats.requests == asked  # the model's turns, each answered once


def test_a_request_the_record_has_no_answer_for_gets_a_failed_reply() -> None:
    replies = RecordedReplies()
    env = ProcurementEnv(llm_config("bilateral_hardball"), llm_backend=replies)
    obs = env.reset(seed=1)
    req = obs.requirements[0]
    sup = obs.suppliers[0]
    action = {"action_type": "negotiate", "supplier_id": sup.id, "requirement_id": req.id}
    result = env.step({**action, "price": req.ceiling_unit_price * 0.8})
    assert env.world.step_supplier_actor == "fallback:rule"  # counted, never silent
    assert result.info["response"]["response"] in ("accept", "counter", "walk_away")

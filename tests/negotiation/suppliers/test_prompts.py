"""The LLM supplier's decision prompt never holds its floor, and the reply's schema holds
the model to the decisions the hard rules allow: no accept under the reservation, a
counter only at its planned ask or its last counter. Worked examples vary by seed."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from negotiation import ProcurementEnv, get_policy, load_scenario
from negotiation.config import PERSONAS
from negotiation.llm import ChatRequest
from negotiation.runner import record_step
from negotiation.suppliers.guard import band_floor
from negotiation.suppliers.prompts import EXAMPLES, example_message
from tests.negotiation.llm.scripted import N, ScriptedBackend, prompt

PRICE = re.compile(r"\d[\d,]*\.\d\d")


def _branches(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["properties"]["decision"]["const"]: b for b in schema["anyOf"]}


def _schema_model(seen: list[tuple[ChatRequest, Any]], env_of: list[ProcurementEnv]):
    """A "model" that records each decision request with its thread's hidden state at the
    time, and answers with the schema's first branch (its first counter price)."""

    def reply(request: ChatRequest) -> str:
        if "Private facts" not in prompt(request):
            return json.dumps({"message": "Thank you."})
        env = env_of[0]
        (hid,) = env.world.th_hidden.values()  # bilateral: one thread
        seen.append((request, (hid.reservation, hid.last_counter)))
        branch = request.json_schema["anyOf"][0]["properties"]
        out = {"decision": branch["decision"]["const"], "message": "Thank you."}
        if "price" in branch:
            out["price"] = branch["price"]["enum"][0]
        return json.dumps(out)

    return reply


@pytest.mark.parametrize("persona", PERSONAS)
def test_the_prompt_holds_no_floor_and_the_schema_only_legal_decisions(persona: str) -> None:
    seen: list[tuple[ChatRequest, Any]] = []
    env_of: list[ProcurementEnv] = []
    backend = ScriptedBackend(_schema_model(seen, env_of))
    cfg = load_scenario("bilateral", persona=persona, max_rounds=8).model_dump()
    cfg["supplier_llm"] = {"backend": "transformers", "personas": [persona]}
    accepts_offered = 0
    for seed in range(3):
        env = ProcurementEnv(cfg, llm_backend=backend)
        env_of[:] = [env]
        obs = env.reset(seed=seed)
        buyer = get_policy("expert", seed=seed)
        buyer.reset(seed)
        while not env.done:
            res, record = record_step(env, buyer.act(obs))
            obs = res.observation
            assert not set(record.guard_repairs), record.guard_repairs  # a legal model
    assert len(seen) >= 6
    for request, (reservation, last_counter) in seen:
        text = prompt(request)
        offer = float(re.search(rf"The buyer offers {N} per unit", text).group(1).replace(",", ""))
        system = request.messages[0].content
        # the reservation never; the opening price and the planned floor only as the ask
        # of the moment, which a counter makes public
        assert f"{reservation:,.2f}" not in system
        for figure in PRICE.findall(system):  # none at or under the floor but the offer
            x = float(figure.replace(",", ""))
            assert x >= band_floor(reservation) or abs(x - offer) < 0.006, (x, system)
        branches = _branches(request.json_schema)
        assert ("accept" in branches) == (offer >= reservation)
        accepts_offered += "accept" in branches
        assert "price" not in branches["walk_away"]["properties"]
        if "counter" in branches:
            prices = branches["counter"]["properties"]["price"]["enum"]
            assert prices and all(p >= band_floor(reservation) and p > offer for p in prices)
            assert last_counter is None or max(prices) <= last_counter + 1e-9
        assert "too low to accept" in system or "accept" in branches
    assert accepts_offered > 0


def test_worked_examples_vary_by_seed() -> None:
    for kind, pool in EXAMPLES.items():
        texts = {example_message(kind, 12.5, v) for v in range(len(pool))}
        assert len(texts) == len(pool) >= 3
        if kind != "walk_away":
            assert all("12.50" in t for t in texts)

"""A model whose decision the guard repairs words the repaired decision in a second,
message-only call: the buyer reads the model's own words for the decision that stands,
unless the guard refuses them too; the repairs are counted as before."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from negotiation import ProcurementEnv, load_scenario
from negotiation.llm import ChatRequest
from negotiation.runner import record_step
from negotiation.suppliers.guard import (
    ACCEPT_BELOW_FLOOR,
    CONTRADICTS,
    LOW_FIGURE,
    MISSTATED,
    NEUTRAL,
    PERSONA_WORDS,
    RESTATED,
    band_floor,
)
from tests.negotiation.llm.scripted import N, ScriptedBackend, prompt


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def accepting_model(
    second: Callable[[float], str], *, raw: bool = False
) -> Callable[[ChatRequest], str]:
    """Accepts every offer, floor or not; asked for a message only, answers with the
    message ``second(price)`` (``raw``: that very text) for the counter price the request
    states."""

    def reply(request: ChatRequest) -> str:
        text = prompt(request)
        if "Private facts" in text:  # the decision call: the private brief
            offer = _num(re.search(rf"The buyer offers {N} per unit", text).group(1))
            return json.dumps(
                {"decision": "accept", "price": offer, "message": f"Deal at {offer:,.2f}."}
            )
        asked = request.messages[-1].content  # the turn to answer, after a worked one
        price = _num(re.search(rf"Your decision: ask {N} per unit", asked).group(1))
        return second(price) if raw else json.dumps({"message": second(price)})

    return reply


def _offer_below_floor(second: Callable[[float, float], str], *, raw: bool = False):
    """One buyer offer under the floor to a hardball supplier played by the accepting
    model; ``second(price, floor)`` is its message-only reply."""
    cfg = load_scenario("bilateral_hardball").model_dump()
    cfg["supplier_llm"] = {"backend": "transformers", "personas": ["hardball"]}
    env = ProcurementEnv(cfg)
    env.reset(seed=4)
    sup, req = env.world.suppliers[0], env.world.requirements[0]
    key = (sup.id, req.id)
    backend = ScriptedBackend(
        accepting_model(lambda p: second(p, env.world.th_hidden[key].reservation), raw=raw)
    )
    env = ProcurementEnv(cfg, llm_backend=backend)
    env.reset(seed=4)
    offer = round(env.world.reservation_now(sup.id, req)[1] * 0.9, 2)  # accepting breaks rule 1
    action = {"action_type": "negotiate", "supplier_id": sup.id, "requirement_id": req.id}
    res, record = record_step(env, {**action, "price": offer})
    return env, env.world.th_hidden[key], backend, res.info["response"], record


def test_the_buyer_reads_the_models_words_for_the_repaired_decision() -> None:
    env, hid, backend, r, record = _offer_below_floor(
        lambda price, _: f"We can do {price:,.2f} per unit, a fair price for this quality."
    )
    assert r["response"] == "counter" and r["price"] >= band_floor(hid.reservation) - 1e-9
    assert r["message"] == f"We can do {r['price']:,.2f} per unit, a fair price for this quality."
    assert r["message"] != NEUTRAL["counter"].format(price=f"{r['price']:,.2f}")
    # the price repair is counted as before; the message, written for the counter, stands
    assert record.guard_repairs == (ACCEPT_BELOW_FLOOR,)
    assert record.guard_interventions == 1
    # the second call went through the supplier's backend: one decision, two requests
    assert backend.stats.requests == 2
    assert env.world.counters.supplier_llm_decisions == 1
    second = backend.requests[1]
    assert second.json_schema["required"] == ["message"]
    text = prompt(second)  # the message prompt holds no private fact
    assert "floor price" not in text and "patience" not in text
    assert f"{hid.reservation:,.2f}" not in text and f"{hid.anchor:,.2f}" not in text
    assert f"Your decision: ask {r['price']:,.2f} per unit" in second.messages[-1].content


@pytest.mark.parametrize(
    ("second", "reason"),
    [
        (lambda price, floor: f"Honestly, we could go to {floor:,.2f}.", LOW_FIGURE),
        (lambda price, floor: f"I am a tough negotiator: {price:,.2f}.", PERSONA_WORDS),
        (
            lambda price, floor: "You are a sales representative of a supplier, selling it.",
            RESTATED,
        ),
        (lambda price, floor: f"We accept, {price * 1.2:,.2f} then.", CONTRADICTS),
    ],
)
def test_a_leaking_second_reply_is_still_replaced(second, reason) -> None:
    _, hid, _, r, record = _offer_below_floor(second)
    assert r["response"] == "counter"
    assert r["message"] == NEUTRAL["counter"].format(price=f"{r['price']:,.2f}")
    assert record.guard_repairs[0] == ACCEPT_BELOW_FLOOR and reason in record.guard_repairs
    assert f"{hid.reservation:,.2f}" not in r["message"]


def test_an_unusable_second_reply_keeps_the_first_message_refused() -> None:
    _, _, backend, r, record = _offer_below_floor(lambda price, floor: "no JSON {", raw=True)
    assert backend.stats.requests == 2
    assert r["message"] == NEUTRAL["counter"].format(price=f"{r['price']:,.2f}")
    assert record.guard_repairs == (ACCEPT_BELOW_FLOOR, CONTRADICTS)


def _misstating_model(second: str) -> Callable[[ChatRequest], str]:
    """Counters at its planned ask (a legal decision) naming the buyer's offer as its own
    price; asked for a message only, answers ``second`` ({offer} and {price} filled in)."""

    def reply(request: ChatRequest) -> str:
        text = prompt(request)
        if "Private facts" in text:
            offer = re.search(rf"The buyer offers {N} per unit", text).group(1)
            ask = _num(re.search(rf"planned ask now: {N}", text).group(1))
            message = f"Thanks. We can offer you {offer} per unit."
            return json.dumps({"decision": "counter", "price": ask, "message": message})
        price = re.search(rf"Your decision: ask {N} per unit", request.messages[-1].content)
        offer = re.search(rf'Buyer: "We offer {N} per unit', request.messages[-1].content)
        return json.dumps({"message": second.format(price=price.group(1), offer=offer.group(1))})

    return reply


@pytest.mark.parametrize(
    ("second", "repairs"),
    [
        ("Thanks for your offer of {offer}. Our price is {price} per unit.", ()),
        ("Thanks for your offer of {price}. We can offer you {offer}.", (MISSTATED,)),
    ],
)
def test_a_message_that_names_the_buyers_offer_as_the_sellers_price_is_reworded(
    second: str, repairs: tuple[str, ...]
) -> None:
    cfg = load_scenario("bilateral_cooperative").model_dump()
    cfg["supplier_llm"] = {"backend": "transformers", "personas": ["cooperative"]}
    backend = ScriptedBackend(_misstating_model(second))
    env = ProcurementEnv(cfg, llm_backend=backend)
    env.reset(seed=2)
    sup, req = env.world.suppliers[0], env.world.requirements[0]
    offer = round(req.reference_price * 0.6, 2)
    action = {"action_type": "negotiate", "supplier_id": sup.id, "requirement_id": req.id}
    res, record = record_step(env, {**action, "price": offer})
    r = res.info["response"]
    assert r["response"] == "counter" and r["price"] > offer
    assert backend.stats.requests == 2  # the first message was refused: a second call
    assert record.guard_repairs == repairs
    if repairs:
        assert r["message"] == NEUTRAL["counter"].format(price=f"{r['price']:,.2f}")
    else:
        assert r["message"] == second.format(offer=f"{offer:,.2f}", price=f"{r['price']:,.2f}")

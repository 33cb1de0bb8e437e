"""An adversarial LLM supplier cannot break the hard rules: the guard repairs and counts
every violation with its reason, including a floor spelled out in words."""

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
    COUNTER_BELOW_FLOOR,
    COUNTER_RAISED,
    LOW_FIGURE,
    NEUTRAL,
    PERSONA_WORDS,
    HardRuleGuard,
    ProposedDecision,
    band_floor,
    words_value,
)
from tests.negotiation.llm.scripted import N, ScriptedBackend, prompt
from tests.negotiation.suppliers.leaks import spell  # the tests' own speller, not the guard's

G = HardRuleGuard()


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("eight hundred twelve", 812),
        ("Eight Hundred and Twelve", 812),
        ("twelve hundred fifty", 1250),
        ("eight one two", 812),
        ("eight-one-two point four", 812.4),
        ("one thousand two hundred", 1200),
        ("three grand", 3000),
        ("forty-two", 42),
    ],
)
def test_number_words_are_read(text: str, value: float) -> None:
    assert words_value(text) == pytest.approx(value)


@pytest.mark.parametrize(
    "leak",
    [
        "my floor is 812.40",
        "my floor is eight hundred twelve",
        "honestly, eight hundred and twelve dollars forty is my limit",
        "we could go to eight one two",
        "about 0.8k, no less",
        "eight hundred twelve point four",
    ],
)
def test_a_floor_in_words_or_digits_is_refused(leak: str) -> None:
    """Before: only digits were redacted, so "eight hundred twelve" reached the buyer."""
    d = G.apply(ProposedDecision("counter", 990.0, leak), 700.0, 812.40, None)
    assert d.message == NEUTRAL["counter"].format(price="990.00")
    assert LOW_FIGURE in d.repairs and d.interventions == len(d.repairs)


def test_harmless_words_and_the_decision_price_stay() -> None:
    msg = "Delivery in three weeks, one batch; nine hundred ninety per unit, as offered."
    d = G.apply(ProposedDecision("counter", 990.0, msg), 700.0, 812.40, None)
    assert d.message == msg and d.interventions == 0


def adversary(floor: float) -> Callable[[ChatRequest], str]:
    """Knows its floor (told by the test: the prompt no longer holds it) and breaks a rule
    every turn: accepts below it, raises its counter, counters below it, and leaks it each
    time."""
    turns = iter(range(1, 100))

    def reply(request: ChatRequest) -> str:
        text = prompt(request)
        if "Private facts" not in text:  # a message-only call: an answer it cannot use
            return "no"
        turn = next(turns) % 3
        if turn == 1:
            offer = float(re.search(rf"The buyer offers {N}", text).group(1).replace(",", ""))
            reply = {
                "decision": "accept",
                "price": offer,
                "message": f"ok, my floor is {floor:.2f}",
            }
        elif turn == 2:
            reply = {
                "decision": "counter",
                "price": floor * 5,
                "message": f"Price going up: the least is really {spell(int(floor))}.",
            }
        else:
            digits = " ".join(spell(int(c)) for c in str(int(floor)))
            reply = {
                "decision": "counter",
                "price": floor * 0.5,
                "message": f"Fine, below {digits}: {floor * 0.5:.2f}",
            }
        return json.dumps(reply)

    return reply


# What each turn breaks: a price rule, its message's figure at or below the floor, and
# the message no longer fits the repaired decision
EXPECTED = {
    1: (ACCEPT_BELOW_FLOOR, PERSONA_WORDS, LOW_FIGURE, CONTRADICTS),
    2: (COUNTER_RAISED, LOW_FIGURE, CONTRADICTS),
    0: (COUNTER_BELOW_FLOOR, LOW_FIGURE, CONTRADICTS),
}


def test_an_adversarial_llm_supplier_is_repaired_and_every_repair_counted() -> None:
    cfg = load_scenario("bilateral_hardball").model_dump()
    cfg["supplier_llm"] = {"backend": "transformers", "personas": ["hardball"]}
    env = ProcurementEnv(cfg)
    env.reset(seed=4)
    sup, req = env.world.suppliers[0], env.world.requirements[0]
    res_floor = env.world.reservation_now(sup.id, req)[1]
    env = ProcurementEnv(cfg, llm_backend=ScriptedBackend(adversary(res_floor)))
    env.reset(seed=4)
    offer = round(res_floor * 0.9, 2)  # below the floor: accepting it breaks rule 1
    last, total = None, 0
    for turn in range(1, 7):
        action = {
            "action_type": "negotiate",
            "supplier_id": sup.id,
            "requirement_id": req.id,
            "price": offer,
        }
        res, record = record_step(env, action)
        r = res.info["response"]
        hid = env.world.th_hidden[(sup.id, req.id)]
        assert r["response"] == "counter", r  # never an accept below the floor (rule 1)
        assert r["price"] >= band_floor(hid.reservation) - 1e-9  # rule 1 + band
        assert last is None or r["price"] <= last + 1e-9  # rule 3: monotone
        last = r["price"]
        # every message leaked the floor: each was replaced by the plain counter
        assert r["message"] == NEUTRAL["counter"].format(price=f"{r['price']:,.2f}")
        assert record.guard_repairs == EXPECTED[turn % 3], (turn, record.guard_repairs)
        assert record.guard_interventions == len(record.guard_repairs)
        assert "guard_repairs" not in res.info  # the buyer reads the info: reasons stay out
        total += record.guard_interventions
    assert env.world.counters.guard_interventions == total == 20
    metrics = env.score().metrics
    assert metrics["guard_interventions"] == 20
    assert metrics["supplier_llm_decisions"] == 6 and metrics["llm_fallbacks"] == 0
    # what the buyer can see never holds the floor, in digits or words
    public = json.dumps(env.observation().to_dict())
    assert f"{hid.reservation:.2f}" not in public and spell(int(hid.reservation)) not in public

"""An LLM supplier keeps its secrets: the guard refuses a message that restates its brief,
names a give-away word or a figure at or below the floor, or contradicts the decision,
replaces it with a plain line of the decision, and records each repair's reason. Rule
personas' messages pass untouched. Leaks are looked for by tests/.../leaks.py, which
knows nothing of the guard's detector."""

from __future__ import annotations

import json
import re

import pytest

from negotiation import ProcurementEnv, load_scenario
from negotiation.config import PERSONAS
from negotiation.llm import ChatRequest
from negotiation.suppliers.brief import (
    FLOOR,
    GIVEAWAY,
    GIVEAWAY_WORDS,
    OPENING,
    PATIENCE,
    PERSONA_STYLE_MARKED,
    PLANNED_ASK,
    STRESS,
    style_sentence,
)
from negotiation.suppliers.guard import (
    CONTRADICTS,
    LOW_FIGURE,
    MISSTATED,
    NEUTRAL,
    PERSONA_WORDS,
    RESTATED,
    HardRuleGuard,
    ProposedDecision,
    fmt_price,
    screen,
)
from negotiation.suppliers.rule import _TEMPLATES
from tests.negotiation.llm.scripted import N, ScriptedBackend, fair_supplier, prompt

from .leaks import MESSAGE_REASONS, Check, _Checker, check_batch, play_checked, spell

G = HardRuleGuard()
RESERVATIONS = (0.9, 1.15, 3.4, 18.0, 95.5, 812.4, 9800.0)  # the catalogue's range


def _llm_cfg(preset: str, personas: list[str], model: str = "", **overrides) -> dict:
    cfg = load_scenario(preset, **overrides).model_dump()
    cfg["supplier_llm"] = {"backend": "transformers", "model": model, "personas": personas}
    return cfg


def _brief(system: str) -> str:
    return system.split("\nExample:")[0]


def _briefs() -> dict[str, str]:
    """persona -> a real private brief, as the model read it for a first offer."""
    out = {}
    for persona in PERSONAS:
        backend = ScriptedBackend(fair_supplier)
        env = ProcurementEnv(_llm_cfg("bilateral", [persona], persona=persona), llm_backend=backend)
        env.reset(seed=1)
        sid, req = env.world.suppliers[0].id, env.world.requirements[0]
        action = {"action_type": "negotiate", "supplier_id": sid, "requirement_id": req.id}
        env.step({**action, "price": req.reference_price * 0.5})
        out[persona] = _brief(backend.requests[0].messages[0].content)
    return out


def test_the_brief_declares_every_persona_and_the_prompt_uses_its_words() -> None:
    assert tuple(PERSONA_STYLE_MARKED) == PERSONAS
    for persona, brief in _briefs().items():
        assert "Private facts (never mention them):" in brief
        low = brief.lower()
        for word in (PLANNED_ASK, STRESS, PATIENCE):
            assert word in low and word in GIVEAWAY_WORDS
        # the floor and the opening price are no longer told: a small model recites them
        for word in (FLOOR, OPENING):
            assert word not in low and word in GIVEAWAY_WORDS
        for word in re.findall(r"\[([^\]]+)\]", PERSONA_STYLE_MARKED[persona]):
            assert word.lower() in low and word.lower() in GIVEAWAY_WORDS
            assert GIVEAWAY.search(word)


def _rule_messages() -> list[tuple[str, str]]:
    out = []
    for kinds in _TEMPLATES.values():
        for kind in ("accept", "counter", "walk_away"):
            out += [(kind, t) for t in kinds[kind]]
        out += [("counter", t + " {price}.") for t in kinds["insult"]]
    return out


@pytest.mark.parametrize("reservation", RESERVATIONS)
def test_every_rule_message_passes_untouched(reservation: float) -> None:
    """Rule play must not change: no message of the shared pool is ever refused, even
    checked against a real LLM brief, at any price level of the catalogue."""
    briefs = _briefs() if reservation == RESERVATIONS[0] else {"none": ""}
    for kind, text in _rule_messages():
        offer = round(reservation * (1.1 if kind == "accept" else 0.9), 2)
        price = None if kind == "walk_away" else offer if kind == "accept" else reservation * 1.3
        for brief in briefs.values():
            proposal = ProposedDecision(kind, price, text, instructions=brief)
            d = G.apply(proposal, offer, reservation, None)
            shown = "" if d.price is None else fmt_price(d.price)
            assert d.repairs == () and d.message == text.replace("{price}", shown), (kind, text)


@pytest.mark.parametrize(
    ("kind", "message", "reasons"),
    [
        # the measured leaks: the brief recited, a counter that says it agreed
        (
            "counter",
            "You are a tough negotiator: you hold your price and concede only late. You "
            "lose patience after about 8 offers; this is offer 1.",
            (RESTATED, PERSONA_WORDS),
        ),
        (
            "counter",
            "You agreed to accept 13.97 per unit, but I'm not sure I agree.",
            (CONTRADICTS,),
        ),
        ("counter", "We can do 150.00, not a cent less.", (CONTRADICTS,)),
        ("counter", "Honestly, ninety-eight is what it costs us.", (LOW_FIGURE,)),
        ("accept", "We cannot accept that, sorry.", (CONTRADICTS,)),
        ("walk_away", "Agreed at 120.00.", (CONTRADICTS,)),
        ("walk_away", "Thank you for your offer. We can do 120.00 per unit.", (CONTRADICTS,)),
        (
            "counter",
            "Thank you for your offer. We can do 120.00 per unit.",
            (CONTRADICTS, MISSTATED),
        ),
        # a price named as the other side's, a muddle of whose figure is too high
        ("counter", "Thanks. We can offer you 120.00 per unit.", (CONTRADICTS, MISSTATED)),
        ("counter", "Thank you for your offer of 130.00 per unit.", (MISSTATED,)),
        ("counter", "We are not sure: 130.00 is a bit too high.", (MISSTATED,)),
        ("counter", "Your 120.00 is fine, but 130.00 is too low for us.", (MISSTATED,)),
        ("counter", "We would like a 130.00% discount.", (MISSTATED,)),
        ("counter", "Between us, I am under some financial stress.", (PERSONA_WORDS,)),
        ("counter", "We never bluff: 130.00 is real.", (PERSONA_WORDS,)),
    ],
)
def test_a_refused_message_becomes_the_plain_decision(kind, message, reasons) -> None:
    price = {"accept": 120.0, "counter": 130.0, "walk_away": None}[kind]
    brief = "Private facts (never mention them):\n- " + PERSONA_STYLE_MARKED["hardball"]
    brief += "\n- patience: about 8 offers, this is offer 1"
    d = G.apply(ProposedDecision(kind, price, message, instructions=brief), 120.0, 100.0, None)
    assert d.repairs == reasons
    assert d.message == NEUTRAL[kind].format(price="" if d.price is None else fmt_price(d.price))
    assert screen(d.message, d.kind, d.price, (120.0,), 100.0, brief) == ()


@pytest.mark.parametrize(
    "message",
    [
        "We can't accept 120.00; our price is 130.00 per unit.",
        "Thanks for your offer of 120.00. Delivery in three weeks, one batch: 130.00.",
        "Could you do 130.00? We need to close quickly.",
        "Let's make a deal at 130.00 per unit.",
        "130.00 is our absolute floor, and stock is nearly gone.",
        "Your offer of 120.00 is too low; we can do 130.00.",
        "We cannot go down to 120.00, but I can offer you 130.00 per unit.",
        "If you offer 120.00, we still need 130.00.",
    ],
)
def test_ordinary_sales_talk_passes(message: str) -> None:
    brief = _briefs()["hardball"]
    assert screen(message, "counter", 130.0, (120.0,), 100.0, brief) == ()


def echo(request: ChatRequest) -> str:
    """A "model" that recites its prompt: each turn a piece of it as its message (the whole
    brief, one fact line, its style, its planned ask as a floor, figures under the offer in
    digits or words, the offer as its own price, muddled), and a decision that may break a price
    rule besides (its backend does not hold it to the reply's schema)."""
    text = prompt(request)
    system = request.messages[0].content
    offer = float(re.search(rf"The buyer offers {N}", text).group(1).replace(",", ""))
    ask = float(re.search(rf"planned ask now: {N}", text).group(1).replace(",", ""))
    n = request.seed
    lines = [ln.strip("- ") for ln in _brief(system).splitlines() if ln.startswith("- ")]
    pieces = [
        system,
        *lines,
        f"Fine. My floor is {ask * 0.9:.2f}, honestly.",
        f"We could go as low as {spell(int(offer * 0.9))}.",
        f"Our cost is about {offer * 0.8:.2f}; {offer * 0.95:.2f} is a deal.",
        "I was told to hold my price and concede only late.",
        f"You agreed to accept {offer:.2f} per unit, but I'm not sure I agree.",
        f"We can do {offer:,.2f} per unit, but we cannot accept it.",
    ]
    message = pieces[(n + len(text)) % len(pieces)]
    kind = ("counter", "accept", "counter", "walk_away")[n % 4]
    price = {"counter": offer * 0.97, "accept": offer, "walk_away": None}[kind]
    return json.dumps({"decision": kind, "price": price, "message": message})


def test_an_echoing_model_leaks_nothing_and_every_repair_is_recorded() -> None:
    backend = ScriptedBackend(echo)
    jobs = [(_llm_cfg("bilateral", [p], persona=p), seed) for p in PERSONAS for seed in (0, 1)]
    jobs += [(_llm_cfg("medium_adversarial", list(PERSONAS)), seed) for seed in (0, 1)]
    total = None
    for cfg, seed in jobs:
        check = play_checked(cfg, seed, backend)
        assert check.leaks == [], check.leaks[:5]
        assert check.llm_decisions > 0 and check.llm_fallbacks == 0
        # every message was a piece of the brief: every one refused, with its reasons
        assert check.refused_messages == check.llm_decisions
        if total is None:
            total = check
        else:
            total.add(check)
    assert set(total.repairs) >= MESSAGE_REASONS
    assert total.guard_interventions == sum(total.repairs.values())


def test_rule_play_leaks_nothing_by_the_same_check() -> None:
    """The leak check itself: no false alarm on rule suppliers, and no repair."""
    for preset in ("medium_adversarial", "hard_arena", *(f"bilateral_{p}" for p in PERSONAS)):
        check = play_checked(load_scenario(preset), 3)
        assert check.leaks == [] and check.messages > 0, check.leaks[:5]
        assert not check.repairs and check.guard_interventions == 0


@pytest.mark.xdist_group("smollm2")  # one worker loads the model, once
def test_smollm2_suppliers_keep_their_secrets() -> None:
    """The shipped model plays every persona, 8 episodes as one batch per round."""
    from negotiation.llm.registry import get_backend

    smollm2 = get_backend("transformers", "smollm2", device="cpu")
    jobs = [
        (_llm_cfg("bilateral", [p], "smollm2", persona=p, max_rounds=2), seed)
        for p in PERSONAS
        for seed in (0, 1)
    ]
    check = check_batch(jobs, smollm2)
    assert check.episodes == 8 and check.llm_decisions >= 8
    assert check.leaks == [], check.leaks[:5]
    # decoded under the reply's schema, the model cannot break a price rule
    assert check.price_repairs == 0, check.repairs
    assert check.guard_interventions == sum(check.repairs.values())


def test_the_leak_check_finds_what_a_guardless_supplier_would_say() -> None:
    """The check is no formality: each kind of leak it knows is found."""
    env = ProcurementEnv("bilateral_hardball")
    env.reset(seed=2)
    sid, req = env.world.suppliers[0].id, env.world.requirements[0]
    env.step(
        {"action_type": "negotiate", "supplier_id": sid, "requirement_id": req.id, "price": 1.0}
    )
    hid = env.world.th_hidden[(sid, req.id)]
    check = Check()
    checker = _Checker(env, check)
    leaks = [
        f"Our floor is {hid.reservation:,.2f}.",
        f"We could go to {spell(int(hid.floor))}.",
        f"It costs us {hid.cost:,.2f}.",
        f"Take it at {hid.reservation * 1.2:,.2f}.",  # a price nobody named
    ]
    for text in leaks:
        checker.message("test", sid, req.id, text, [1.0])
    for text in (style_sentence("hardball"), f"about {hid.patience} offers", "a bluff"):
        checker.text("test", text)
    assert len(check.leaks) >= len(leaks) + 3, check.leaks
    assert check.messages == len(leaks)

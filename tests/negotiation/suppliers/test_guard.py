"""The guard repairs every hard-rule violation a (rogue, e.g. LLM) supplier proposes."""

from __future__ import annotations

import math

import pytest

from negotiation.actions import respond
from negotiation.suppliers.guard import (
    _LETTERS,
    _NUMBER_WORDS,
    ACCEPT_BELOW_FLOOR,
    ACCEPT_OFF_OFFER,
    BAND,
    CONTRADICTS,
    COUNTER_BELOW_FLOOR,
    COUNTER_RAISED,
    LOW_FIGURE,
    NEUTRAL,
    PERSONA_WORDS,
    HardRuleGuard,
    ProposedDecision,
    band_floor,
    has_number_word,
)
from negotiation.suppliers.rule import SupplierPolicy

G = HardRuleGuard()


def test_accept_below_reservation_becomes_counter():
    d = G.apply(
        ProposedDecision("accept", 80.0, "ok"), offer=80.0, reservation=100.0, last_counter=130.0
    )
    assert d.kind == "counter" and d.price == 130.0 and d.interventions >= 1


@pytest.mark.parametrize(
    ("written_for", "kept"),
    [
        (("counter", 130.0), True),  # worded for the held decision: screened, and it passes
        (("counter", 125.0), False),  # for another price: the repair refuses it
        (("accept", 80.0), False),  # for the proposed decision
        (None, False),
    ],
)
def test_a_message_written_for_the_held_decision_survives_the_repair(written_for, kept):
    message = "We can do 130.00 per unit, a fair price."
    d = G.apply(
        ProposedDecision("accept", 80.0, message, written_for=written_for),
        offer=80.0,
        reservation=100.0,
        last_counter=130.0,
    )
    assert (d.kind, d.price) == ("counter", 130.0)
    assert d.repairs[0] == ACCEPT_BELOW_FLOOR  # the price repair is counted either way
    assert (d.message == message) is kept
    assert (CONTRADICTS in d.repairs) is not kept


def test_counter_below_band_is_raised():
    d = G.apply(
        ProposedDecision("counter", 95.0, "{price}"),
        offer=50.0,
        reservation=100.0,
        last_counter=None,
    )
    assert d.kind == "counter" and d.price >= 100.0 * (1 + BAND) - 1e-9
    assert d.price == band_floor(100.0)
    # the message was written for the refused price: it gives way to the plain counter
    assert d.repairs == (COUNTER_BELOW_FLOOR, CONTRADICTS)
    assert d.message == NEUTRAL["counter"].format(price="102.00")


def test_counter_never_rises_within_thread():
    d = G.apply(
        ProposedDecision("counter", 150.0, "x"), offer=90.0, reservation=100.0, last_counter=120.0
    )
    assert d.price == 120.0 and d.repairs == (COUNTER_RAISED, CONTRADICTS)


def test_counter_at_or_below_offer_becomes_accept_at_offer():
    d = G.apply(
        ProposedDecision("counter", 110.0, "x"), offer=115.0, reservation=100.0, last_counter=None
    )
    assert d.kind == "accept" and d.price == 115.0


def test_accept_price_is_the_buyers_offer():
    d = G.apply(
        ProposedDecision("accept", 200.0, "x"), offer=120.0, reservation=100.0, last_counter=None
    )
    assert d.kind == "accept" and d.price == 120.0
    assert d.repairs == (ACCEPT_OFF_OFFER, CONTRADICTS) and d.interventions == 2


def test_a_message_naming_the_reservation_is_replaced():
    msg = "Honestly our floor is 100.00 and cost 97.5, but take 130.00. Delivery in 3 weeks."
    d = G.apply(
        ProposedDecision("counter", 130.0, msg), offer=90.0, reservation=100.0, last_counter=None
    )
    assert d.message == NEUTRAL["counter"].format(price="130.00")
    assert d.repairs == (PERSONA_WORDS, LOW_FIGURE) and d.interventions == 2


def test_garbage_decision_is_repaired():
    d = G.apply(
        ProposedDecision("explode", float("nan"), ""),
        offer=10.0,
        reservation=100.0,
        last_counter=None,
    )
    assert d.kind == "counter" and math.isfinite(d.price) and d.price > 100.0


class RogueSupplier(SupplierPolicy):
    """Tries to break every rule: accepts lowballs, counters under cost, leaks the floor."""

    def respond(self, ctx):
        r = ctx.thread.reservation
        if ctx.round % 3 == 0:
            return ProposedDecision("accept", ctx.offer * 0.5, f"fine, our floor is {r:.2f}")
        if ctx.round % 3 == 1:
            return ProposedDecision("counter", r * 0.5, f"my reservation is {r:.2f}")
        return ProposedDecision("counter", r * 3.0, "price going up!")


def test_guard_sits_in_the_env_path_and_counts_interventions(r01_thread):
    env, r, _, th, hid = r01_thread
    last = None
    for i in range(9):
        offer = hid.reservation * (0.5 + 0.05 * i)
        resp = respond(env.world, th, r, offer, "", RogueSupplier())
        if resp["response"] == "accept":
            assert resp["price"] >= hid.reservation
            break
        assert resp["price"] >= hid.reservation * (1 + BAND) - 1e-9
        if last is not None:
            assert resp["price"] <= last
        last = resp["price"]
        assert f"{hid.reservation:.2f}" not in resp["message"]
    assert env.world.counters.guard_interventions > 0
    assert env.score().metrics["guard_interventions"] == env.world.counters.guard_interventions


@pytest.mark.parametrize(
    "text",
    [
        "",
        "We can come down to 1,234.56 per unit.",
        "Eight hundred and twelve, final.",
        "someone tone-deaf: ONE",
        "twenty-one",
        "fiftyish, sixty_five, seventy5",
        "Ünïcode ône: one",
        "naïve two",
        "İstanbul nine",
        "tab\tseparated\nten\x0bvertical",
        "thousandfold",
        "grand",
    ],
)
def test_has_number_word_matches_its_definition(text: str) -> None:
    # The fast ASCII path must give exactly what the letters-run definition gives.
    expected = not _NUMBER_WORDS.isdisjoint(_LETTERS.findall(text.lower()))
    assert has_number_word(text) == expected


def test_has_number_word_matches_its_definition_on_random_text() -> None:
    import random

    rng = random.Random(0)
    pieces = ["one", "Two", "hundred", "and", "x", "k", "5", ",", " ", "-", "é", "_", "\t", "İ"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        expected = not _NUMBER_WORDS.isdisjoint(_LETTERS.findall(text.lower()))
        assert has_number_word(text) == expected, text

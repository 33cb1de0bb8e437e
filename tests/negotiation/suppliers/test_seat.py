"""The supplier seat in the engine: an unanswered offer stops the step with what the
person is asked; stored answers replay the same world; the person's words pass as typed
while the price rules still hold; after a hand-over the persona answers, marked so."""

from __future__ import annotations

import pytest

from negotiation import load_scenario, run_episode
from negotiation.suppliers.guard import (
    COUNTER_BELOW_FLOOR,
    HardRuleGuard,
    ProposedDecision,
)
from negotiation.suppliers.seat import (
    TIMEOUT_ACTOR,
    AwaitingSupplier,
    SeatAnswer,
    SupplierSeat,
    answer_problem,
)

CFG = load_scenario("bilateral")
SEED = 3


def _until_waiting(answers: dict[int, SeatAnswer], prefix: list) -> AwaitingSupplier:
    with pytest.raises(AwaitingSupplier) as waiting:
        run_episode(
            CFG, "expert", SEED, actions_prefix=prefix, supplier_seat=SupplierSeat("S01", answers)
        )
    return waiting.value


def test_an_offer_waits_and_the_answer_replays_the_same_world() -> None:
    first = _until_waiting({}, [])
    turn = first.turn
    assert turn["step"] == 0 and turn["supplier_id"] == "S01"
    assert first.action["action_type"] == "negotiate" and first.action["price"] == turn["offer"]
    p = turn["private"]
    assert p["cost"] < p["floor"] < p["lowest_counter"] < p["opening"]
    said = f"Our floor is {p['floor']}, we ask {p['opening']}."
    answers = {0: SeatAnswer("counter", p["opening"], said)}
    second = _until_waiting(answers, [first.action])
    assert second.turn["step"] == 1 and second.turn["private"]["last_counter"] == p["opening"]
    # the stored answer, replayed, is the same step: the message as typed, the price kept
    result = run_episode(
        CFG,
        "expert",
        SEED,
        actions_prefix=[first.action],
        supplier_seat=SupplierSeat("S01", answers, handed_over_at=1),
    )
    step0 = result.steps[0]
    assert step0.supplier_actor == "human" and step0.guard_interventions == 0
    assert step0.response["message"] == said and step0.response["price"] == p["opening"]
    assert result.metrics["supplier_llm_decisions"] == 0
    later = {s.supplier_actor for s in result.steps[1:] if s.response}
    assert later == {TIMEOUT_ACTOR}
    again = run_episode(
        CFG,
        "expert",
        SEED,
        actions_prefix=[s.action for s in result.steps],
        supplier_seat=SupplierSeat("S01", answers, handed_over_at=1),
    )
    assert again.score == result.score


def test_price_rules_hold_for_a_person_and_are_said_before_playing() -> None:
    turn = _until_waiting({}, []).turn
    p, offer = turn["private"], turn["offer"]
    assert answer_problem(turn, SeatAnswer("accept"))[0] == "decision"  # below the floor
    assert answer_problem(turn, SeatAnswer("counter", p["lowest_counter"] - 0.01))[0] == "price"
    assert answer_problem(turn, SeatAnswer("counter", None))[0] == "price"
    assert answer_problem(turn, SeatAnswer("counter", p["opening"])) is None
    assert answer_problem(turn, SeatAnswer("walk_away")) is None
    assert answer_problem(turn, SeatAnswer("haggle"))[0] == "decision"
    # the guard still repairs a price below the floor, even unscreened
    guarded = HardRuleGuard().apply(
        ProposedDecision("counter", offer, "as typed", actor="human", screen=False),
        offer,
        p["floor"],
        None,
    )
    assert COUNTER_BELOW_FLOOR in guarded.repairs and guarded.price >= p["floor"]


def test_an_unknown_seated_supplier_is_refused() -> None:
    with pytest.raises(ValueError, match="No supplier 'S99'"):
        run_episode(CFG, "expert", SEED, supplier_seat=SupplierSeat("S99"))

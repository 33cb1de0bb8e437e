"""The buyer's chat: one conversation per episode that only grows (so a backend's cache
stays valid), later turns carry what changed and what is valid now, never the whole
state again, and the model's own words stay as its turns."""

from __future__ import annotations

import json

from negotiation import ProcurementEnv, get_policy, load_scenario
from negotiation.action_mask import valid_actions
from negotiation.llm.backend import ChatMessage
from negotiation.policies.buyer_chat import BuyerChat, valid_now, valid_now_lines
from negotiation.policies.prompts import NEXT_JSON, budget_text


def test_turns_append_what_changed_and_keep_the_replies() -> None:
    env = ProcurementEnv(load_scenario("medium_adversarial"))
    obs = env.reset(seed=3)
    expert = get_policy("expert", seed=3)
    chat = BuyerChat(max_chars=100_000)
    before: tuple[ChatMessage, ...] = ()
    previous = None
    for step in range(8):
        mask = valid_actions(obs)
        messages = chat.prompt(obs, mask)
        assert messages[: len(before)] == before  # the chat only grows
        turn = messages[-1].content
        assert turn.endswith(NEXT_JSON)
        if step == 0:
            assert turn.endswith("\n".join([*valid_now_lines(mask), NEXT_JSON]))
        else:
            assert turn.startswith("Result:") and "Requirements:" not in turn
        if previous is not None and previous["action_type"] == "negotiate":
            assert f"- {previous['supplier_id']}/{previous['requirement_id']} " in turn
        previous = expert.act(obs)
        reply = json.dumps(previous)
        chat.answer(reply)
        before = (*messages, ChatMessage("assistant", reply))
        obs = env.step(previous).observation
    assert chat.restarts == 0


def test_a_chat_past_its_limit_starts_again_from_the_whole_state() -> None:
    env = ProcurementEnv(load_scenario("bilateral"))
    obs = env.reset(seed=0)
    chat = BuyerChat(max_chars=2_000)
    expert = get_policy("expert", seed=0)
    while not obs.done and chat.restarts == 0:
        messages = chat.prompt(obs, valid_actions(obs))
        assert sum(len(m.content) for m in messages[1:]) <= 2_000
        action = expert.act(obs)
        chat.answer(json.dumps(action))
        obs = env.step(action).observation
    assert chat.restarts == 1
    # the restart: system, the whole state, the reply to it
    assert len(chat.messages) == 3 and "Requirements:" in chat.messages[1].content


def test_later_turns_say_only_what_changed_of_the_status_and_the_valid_actions() -> None:
    """Every valid action is either in the turn or in the list the reader already has
    (unchanged); what is no longer valid is named; the budget only when it moved."""
    env = ProcurementEnv(load_scenario("medium_adversarial"))
    obs = env.reset(seed=3)
    expert = get_policy("expert", seed=3)
    chat = BuyerChat(max_chars=100_000)
    known: dict[str, str] = {}
    said_as_before = said_gone = 0
    previous = None
    for _ in range(14):
        if obs.done:
            break
        now = valid_now(valid_actions(obs))
        turn = chat.prompt(obs, valid_actions(obs))[-1].content
        if previous is not None:
            valid_part = turn[turn.index("Valid now:") :]
            for key, line in now.items():
                assert line in valid_part or known.get(key) == line, line
            for key in known.keys() - now.keys():
                assert key in valid_part.split("- no longer: ")[1], key
                said_gone += 1
            said_as_before += "as before" in valid_part
            assert (budget_text(obs) in turn) == (budget_text(obs) != budget_text(previous))
            assert f"{obs.actions_left_this_week} of {obs.actions_per_week} slots left" in turn
        known, previous = now, obs
        action = expert.act(obs)
        chat.answer(json.dumps(action))
        obs = env.step(action).observation
    assert said_as_before and said_gone  # the episode exercised both


def test_an_action_the_model_did_not_write_is_its_turn_as_a_decoder_writes_it() -> None:
    """A fallback's (or a replayed) action: the schema's key order, no rationale, the
    same separators; what is no action stays as its text."""
    chat = BuyerChat(max_chars=3_000)
    action = {"price": 5.5, "rationale": "why", "supplier_id": "S01", "requirement_id": "R01"}
    chat.answer_action({**action, "action_type": "negotiate"}, max_tokens=96)
    chat.answer_action("not an action", max_tokens=96)
    assert [m.content for m in chat.messages] == [
        '{"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01", "price": 5.5}',
        "not an action",
    ]

"""The buyer's chat: one conversation per episode that only grows (so a backend's cache
stays valid), later turns carry what changed and what is valid now, never the whole
state again, and the model's own words stay as its turns."""

from __future__ import annotations

import json

from negotiation import ProcurementEnv, get_policy, load_scenario
from negotiation.action_mask import valid_actions
from negotiation.llm.backend import ChatMessage
from negotiation.policies.buyer_chat import BuyerChat, valid_now_lines
from negotiation.policies.prompts import NEXT_JSON


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
        assert turn.endswith("\n".join([*valid_now_lines(mask), NEXT_JSON]))
        if step:
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

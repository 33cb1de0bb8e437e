"""Training chats are the chats the LLM buyer plays: byte for byte."""

from __future__ import annotations

import json

import pytest

from negotiation.policies import get_policy
from negotiation.runner import run_episode
from negotiation.training import EpisodeSource, TrainingError, chat_examples
from negotiation.training.examples import action_reply
from tests.negotiation.llm.scripted import ScriptedBackend, simple_buyer


def constrained_buyer(request):
    """simple_buyer's choice, written as a constrained decoder writes it."""
    return action_reply(json.loads(simple_buyer(request)))


@pytest.mark.parametrize(
    ("scenario", "max_chars"), [("bilateral", 12_000), ("medium_adversarial", 3_000)]
)
def test_training_prompts_are_the_play_prompts(scenario: str, max_chars: int) -> None:
    backend = ScriptedBackend(constrained_buyer)
    policy = get_policy("llm", seed=3, backend=backend, max_prompt_chars=max_chars)
    episode = run_episode(scenario, policy, seed=3)
    assert policy.stats["llm_fallbacks"] == 0
    source = EpisodeSource(scenario, 3, [s.action for s in episode.steps], episode.score)

    chats = [ex["messages"] for ex in chat_examples([source], max_prompt_chars=max_chars)]

    # every request the backend saw is a prefix of one training chat, in order, and the
    # turn after it is the reply the backend gave
    asked = [[{"role": m.role, "content": m.content} for m in r.messages] for r in backend.requests]
    flat = [(c, i) for c in chats for i, m in enumerate(c) if m["role"] == "assistant"]
    assert len(flat) == len(asked) == len(episode.steps)
    for request, (chat, i) in zip(asked, flat, strict=True):
        assert chat[:i] == request
        assert chat[i]["content"] == constrained_buyer_text(request)
    if max_chars == 3_000:
        assert len(chats) > 1  # the small budget made the chat start again


def constrained_buyer_text(messages: list[dict]) -> str:
    from negotiation.llm.backend import ChatMessage, ChatRequest

    return constrained_buyer(ChatRequest(tuple(ChatMessage(**m) for m in messages)))


def test_bad_sources_are_errors() -> None:
    with pytest.raises(TrainingError, match="scenario"):
        chat_examples([EpisodeSource("no_such_preset", 0, [{"action_type": "defer"}])])
    with pytest.raises(TrainingError, match="not a buyer action"):
        chat_examples([EpisodeSource("bilateral", 0, [{"action_type": "dance"}])])


def test_action_reply_is_schema_ordered_and_short() -> None:
    reply = action_reply(
        {
            "rationale": "x",
            "message": "m" * 500,
            "price": 10.5,
            "requirement_id": "R01",
            "supplier_id": "S01",
            "action_type": "negotiate",
        }
    )
    keys = list(json.loads(reply))
    assert keys == ["action_type", "supplier_id", "requirement_id", "price", "message"]
    assert len(json.loads(reply)["message"]) == 72

"""The transformers backend on a tiny random model: one generate per batch (per schema),
left padding that changes nothing, schema-valid JSON from noise, per-row stop strings,
seeds and token limits, and one bad request that fails alone."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pydantic import BaseModel, ConfigDict, Field

from negotiation.llm.transformers_backend import TransformersBackend
from tests.negotiation.llm.conftest import chat, generate_calls_of

# Bounded everywhere (enum, integer range, string length), so even a random model ends
# the document well inside max_tokens.
OFFER_SCHEMA = {
    "type": "object",
    "properties": {
        "action_type": {"enum": ["negotiate", "defer", "reject"]},
        "price": {"type": "integer", "minimum": 1, "maximum": 5000},
        "message": {"type": "string", "maxLength": 12},
    },
    "required": ["action_type", "price", "message"],
    "additionalProperties": False,
}
REPLY_SCHEMA = {
    "type": "object",
    "properties": {
        "accept": {"type": "boolean"},
        "counter": {"type": "integer", "minimum": 0, "maximum": 999},
    },
    "required": ["accept"],
    "additionalProperties": False,
}


class Offer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action_type: str = Field(pattern="^(negotiate|defer|reject)$")
    price: int = Field(ge=1, le=5000)
    message: str = Field(max_length=12)


@pytest.fixture
def generate_calls(tiny_backend: TransformersBackend) -> Iterator[list[int]]:
    with generate_calls_of(tiny_backend) as calls:
        yield calls


def test_a_batch_is_one_generate_and_equals_one_at_a_time(tiny_backend, generate_calls):
    # Prompts of very different lengths: left padding must not change any greedy reply.
    requests = [chat("offer " * n + "please", max_tokens=16) for n in (1, 5, 12, 30, 2, 60)]
    batched = tiny_backend.generate(requests)
    assert generate_calls == [6]
    alone = [tiny_backend.generate([r])[0] for r in requests]
    assert [r.text for r in batched] == [r.text for r in alone]
    assert [r.completion_tokens for r in batched] == [r.completion_tokens for r in alone]
    assert [r.prompt_tokens for r in batched] == [r.prompt_tokens for r in alone]
    assert len({r.prompt_tokens for r in batched}) == 6
    assert all(r.ok and r.latency_s > 0 for r in batched)


def test_every_schema_reply_is_valid_json_even_from_a_random_model(tiny_backend, generate_calls):
    offers = [chat(f"supplier asks {100 + 7 * n}; your move", max_tokens=80) for n in range(10)]
    requests = [
        *[chat(r.messages[0].content, max_tokens=80, json_schema=OFFER_SCHEMA) for r in offers[:6]],
        *[chat(f"accept {n}?", max_tokens=40, json_schema=REPLY_SCHEMA) for n in range(3)],
        chat("free text", max_tokens=10),
    ]
    results = tiny_backend.generate(requests)
    # the lean loop: one batch, a grammar per row (generate: one call per schema)
    assert generate_calls == [10]
    for result in results[:6]:
        assert result.finish_reason == "stop", result.text
        Offer.model_validate_json(result.text)
    for result in results[6:9]:
        reply = json.loads(result.text)
        assert isinstance(reply["accept"], bool)
        assert set(reply) <= {"accept", "counter"}
    unconstrained = tiny_backend.generate([offers[0]])
    with pytest.raises(ValueError):  # the same model without the schema: noise
        Offer.model_validate_json(unconstrained[0].text)


def test_stop_strings_end_their_own_row(tiny_backend):
    prompt = "hello"
    free = tiny_backend.generate([chat(prompt, max_tokens=32)])[0]
    assert free.finish_reason == "length"
    # A stop string the model really produces, past its first tokens.
    stop = next(c for c in free.text[4:] if c.isascii() and c.isprintable() and c != " ")
    prefix = free.text[: free.text.index(stop)]
    stopped, other = tiny_backend.generate(
        [
            chat(prompt, max_tokens=32, stop=(stop, "never-produced")),
            chat("tell me about copper", max_tokens=32),
        ]
    )
    assert stopped.text == prefix
    assert stopped.finish_reason == "stop"
    assert stopped.completion_tokens < free.completion_tokens  # generation really ended
    assert other.finish_reason == "length" and other.completion_tokens == 32


def test_each_row_keeps_its_own_token_limit(tiny_backend):
    short, long = tiny_backend.generate([chat("count", max_tokens=3), chat("count", max_tokens=20)])
    assert (short.completion_tokens, short.finish_reason) == (3, "length")
    assert (long.completion_tokens, long.finish_reason) == (20, "length")
    assert long.text.startswith(short.text)


def test_sampling_is_seeded_per_request_whatever_shares_the_batch(tiny_backend):
    sampled = chat("surprise me", temperature=1.0, seed=11, max_tokens=12)
    alone = tiny_backend.generate([sampled])[0]
    crowded = tiny_backend.generate(
        [chat("x" * 40, max_tokens=12), sampled, chat("y", temperature=0.7, seed=3)]
    )[1]
    assert crowded.text == alone.text
    other_seeds = {
        tiny_backend.generate([chat("surprise me", temperature=1.0, seed=s, max_tokens=12)])[0].text
        for s in range(4)
    }
    assert len(other_seeds) > 1  # the seed matters
    greedy = {tiny_backend.generate([chat("surprise me", seed=s)])[0].text for s in range(3)}
    assert len(greedy) == 1  # temperature 0 ignores it


def test_one_bad_request_fails_alone(tiny_backend):
    errors_before = tiny_backend.stats.errors
    results = tiny_backend.generate(
        [
            chat("fine", max_tokens=5),
            chat("long " * 600, max_tokens=5),  # past the 512-token context
            chat("bad schema", json_schema={"type": "no-such-type"}),
            chat("no tokens", max_tokens=0),
            chat("fine too", max_tokens=5, json_schema=REPLY_SCHEMA),
        ]
    )
    assert [r.ok for r in results] == [True, False, False, False, True]
    assert "exceeds the model's context of 512" in results[1].error
    assert "no-such-type" in results[2].error
    assert "max_tokens must be at least 1" in results[3].error
    assert all(r.finish_reason == "error" and r.text == "" for r in results[1:4])
    assert tiny_backend.stats.errors - errors_before == 3


def test_a_failing_generate_fails_only_its_requests(tiny_backend, monkeypatch):
    """A generate that raises (out of memory, a kernel error) for one row's content: the
    batch is retried row by row and the others still get their replies."""
    real = tiny_backend._decode

    def fragile(**kwargs):
        if kwargs["input_ids"].shape[0] > 1 or kwargs["batch"][0].max_tokens == 7:
            raise RuntimeError("simulated device failure")
        return real(**kwargs)

    monkeypatch.setattr(tiny_backend, "_decode", fragile)
    ok, broken = tiny_backend.generate([chat("a", max_tokens=5), chat("b", max_tokens=7)])
    assert ok.ok and ok.completion_tokens == 5
    assert broken.error == "RuntimeError: simulated device failure"

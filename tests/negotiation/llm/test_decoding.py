"""The transformers backend's own decoding loop and its jump-forward drafts give exactly
the replies of transformers' ``generate`` (the reference path): greedy and seeded rows,
batches of mixed lengths, stop strings, schemas, cached chats; on a tiny random model and
on the shipped SmolLM2 with real game prompts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from negotiation import get_policy, load_scenario, run_episode
from negotiation.llm import ChatMessage, ChatRequest, ChatResult, LLMBackend
from negotiation.llm.registry import get_backend
from negotiation.llm.transformers_backend import TransformersBackend
from tests.negotiation.llm.action_schema import ACTION_SCHEMA
from tests.negotiation.llm.conftest import chat
from tests.negotiation.llm.test_transformers_backend import OFFER_SCHEMA, REPLY_SCHEMA


@pytest.fixture(scope="module")
def reference(tiny_model: Path) -> TransformersBackend:
    return TransformersBackend(str(tiny_model), device="cpu", decoder="generate")


def same(lean: list[ChatResult], reference: list[ChatResult]) -> None:
    assert all(r.ok for r in lean + reference), [r.error for r in lean + reference]
    assert [(r.text, r.completion_tokens, r.finish_reason) for r in lean] == [
        (r.text, r.completion_tokens, r.finish_reason) for r in reference
    ]


def game_requests(seeds: list[int]) -> list[ChatRequest]:
    """The first request a free-mode LLM buyer sends in a bilateral episode, per seed:
    the real chat, its valid-action schema and token limit."""
    captured: list[ChatRequest] = []

    class Capture(LLMBackend):
        name = "capture"

        def generate(self, requests):
            captured.extend(requests)
            return [ChatResult("", "error", error="captured") for _ in requests]

    for seed in seeds:
        policy = get_policy("llm", backend=Capture(), seed=seed)
        run_episode(load_scenario("bilateral", max_steps=1), policy, seed, record_steps=False)
    return [dataclasses.replace(r, cache_key=None) for r in captured]


def test_lean_batches_equal_generate(tiny_backend, reference):
    """Rows of different lengths in one batch, with and without a schema, greedy and
    seeded, with stop strings and token limits."""
    plain = [chat("offer " * n + "please", max_tokens=12 + n % 5) for n in (1, 7, 20, 3)] + [
        chat("word " * 4, max_tokens=20, temperature=0.9, seed=5),
        chat("word " * 9, max_tokens=20, temperature=1.3, seed=6),
        chat("stop here", max_tokens=24, stop=("e", "0")),
    ]
    offers = [chat("deal " * n, max_tokens=48, json_schema=OFFER_SCHEMA) for n in (1, 4, 11)]
    seeded = [
        chat("x " * n, max_tokens=40, json_schema=REPLY_SCHEMA, temperature=1.0, seed=n)
        for n in (2, 3)
    ]
    for batch in (plain, offers, seeded):
        same(tiny_backend.generate(batch), reference.generate(batch))


def test_jump_forward_checks_drafts_and_changes_no_reply(tiny_backend, reference):
    """Single constrained rows (where drafts run): forced JSON keys and ids are checked in
    one pass, and the reply is the one generate gives."""
    drafted = tiny_backend.drafts[0]
    requests = [chat("award " * n, max_tokens=80, json_schema=ACTION_SCHEMA) for n in (1, 6)] + [
        chat("deal", max_tokens=48, json_schema=OFFER_SCHEMA, temperature=0.8, seed=3)
    ]
    for request in requests:
        same(tiny_backend.generate([request]), reference.generate([request]))
    assert tiny_backend.drafts[0] > drafted


def test_a_cached_chat_decodes_as_generate(tiny_model: Path, reference):
    """The lean loop on a cached conversation (its keys and values spliced in, a draft cut
    back): every turn equals generate without any cache."""
    lean = TransformersBackend(str(tiny_model), device="cpu")
    uncached = TransformersBackend(
        str(tiny_model), device="cpu", decoder="generate", kv_cache_conversations=0
    )
    request = chat(
        "The supplier asks 1200 per unit. " * 3,
        max_tokens=64,
        json_schema=ACTION_SCHEMA,
        cache_key="episode/buyer",
    )
    for turn in range(3):
        [mine], [theirs] = lean.generate([request]), uncached.generate([request])
        same([mine], [theirs])
        request = dataclasses.replace(
            request,
            messages=(
                *request.messages,
                ChatMessage("assistant", mine.text),
                ChatMessage("user", f"Turn {turn}: the supplier counters at {1150 - 20 * turn}."),
            ),
        )
    assert lean.kv is not None and lean.kv.conversations()["episode/buyer"] > 0


@pytest.mark.xdist_group("smollm2")
def test_smollm2_game_decisions_equal_generate():
    """The shipped model on two real first turns of a bilateral episode: the same reply,
    and most forced tokens taken from drafts."""
    requests = game_requests([0, 1])
    lean = get_backend("transformers", "smollm2", device="cpu")
    generate = get_backend("transformers", "smollm2", device="cpu", decoder="generate")
    drafted, kept = lean.drafts
    for request in requests:
        same(lean.generate([request]), generate.generate([request]))
    assert lean.drafts[1] - kept > (lean.drafts[0] - drafted) / 2 > 0


def test_a_batch_sheds_finished_rows_and_changes_no_reply(tiny_model: Path, reference):
    """Rows that end early leave the batch (later decode steps carry fewer rows, the
    cache loses their rows and the padding no live row attends to): every reply is the
    one generate gives, and a cached conversation's next turn still replies as without
    caches."""
    shrinking = TransformersBackend(str(tiny_model), device="cpu")
    padding = TransformersBackend(str(tiny_model), device="cpu", shrink=False)
    rows_fed: list[int] = []
    shrinking.model.register_forward_pre_hook(
        lambda _m, _a, kw: rows_fed.append(kw["input_ids"].shape[0]), with_kwargs=True
    )
    batch = [
        chat("offer " * n, max_tokens=limit, cache_key=f"episode-{n}/buyer")
        for n, limit in ((30, 40), (2, 3), (9, 6), (1, 12), (15, 2))
    ]
    mine = shrinking.generate(batch)
    same(mine, reference.generate(batch))
    same(mine, padding.generate(batch))
    assert (
        rows_fed[0] == 5
        and rows_fed[-1] == 1
        and sorted(rows_fed[1:], reverse=True) == (rows_fed[1:])
    )
    tokens = [r.completion_tokens + (r.finish_reason == "stop") for r in mine]
    assert len(rows_fed) - 1 == max(tokens) - 1  # one decode step per fed reply token
    uncached = TransformersBackend(
        str(tiny_model), device="cpu", decoder="generate", kv_cache_conversations=0
    )
    follow = [
        dataclasses.replace(
            r,
            messages=(*r.messages, ChatMessage("assistant", m.text), ChatMessage("user", "and?")),
        )
        for r, m in zip(batch, mine, strict=True)
    ]
    again = shrinking.generate(follow)
    same(again, uncached.generate(follow))
    assert all(r.cached_tokens > 0 for r in again)
    # each stored turn: the prompt and the reply tokens fed back (all but the last)
    assert shrinking.kv.conversations() == {
        r.cache_key: m.prompt_tokens + m.completion_tokens + (m.finish_reason == "stop") - 1
        for r, m in zip(follow, again, strict=True)
    }


@pytest.mark.xdist_group("smollm2")
def test_smollm2_game_batch_sheds_rows_as_generate():
    """The shipped model on three real first turns in ONE batch (replies of different
    lengths, so rows leave the batch): the replies generate gives."""
    requests = game_requests([0, 1, 2])
    lean = get_backend("transformers", "smollm2", device="cpu")
    generate = get_backend("transformers", "smollm2", device="cpu", decoder="generate")
    same(lean.generate(requests), generate.generate(requests))


def test_rows_of_different_schemas_share_one_batch(tiny_backend, reference):
    """The lean loop keeps a grammar per row: constrained rows of different schemas and
    an unconstrained row decode in ONE batch, each reply the one generate gives (where
    each schema is its own call)."""
    batch = [
        chat("deal " * 3, max_tokens=48, json_schema=OFFER_SCHEMA),
        chat("award " * 5, max_tokens=60, json_schema=ACTION_SCHEMA),
        chat("plain words", max_tokens=10),
        chat("x " * 7, max_tokens=40, json_schema=REPLY_SCHEMA, temperature=1.0, seed=4),
        chat("deal " * 9, max_tokens=48, json_schema=OFFER_SCHEMA),
    ]
    rows_fed: list[int] = []
    hook = tiny_backend.model.register_forward_pre_hook(
        lambda _m, _a, kw: rows_fed.append(kw["input_ids"].shape[0]), with_kwargs=True
    )
    try:
        mine = tiny_backend.generate(batch)
    finally:
        hook.remove()
    same(mine, reference.generate(batch))
    assert rows_fed[0] == len(batch)

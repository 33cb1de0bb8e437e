"""Per-conversation key/value caches of the transformers backend: a conversation that grows
turn by turn, alone or in a batch, with a schema or without, replies exactly as the same
backend without caches, while computing only the new tokens; a prompt that diverges from
its cache mid-way still does; the cache is bounded and released."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from negotiation.llm import ChatMessage, ChatRequest, ChatResult
from negotiation.llm.batching import BatchingBackend
from negotiation.llm.transformers_backend import MIN_SHARED_PREFIX_TOKENS, TransformersBackend
from tests.negotiation.llm.action_schema import ACTION_SCHEMA
from tests.negotiation.llm.conftest import generate_calls_of
from tests.negotiation.llm.test_transformers_backend import OFFER_SCHEMA

RULES = (
    "You are a procurement buyer. Budget 10000, deadline week 4. Reply with JSON: "
    "negotiate, defer or reject, a price and a short message. "
)


def opening(n: int) -> tuple[ChatMessage, ...]:
    """A conversation's first prompt: the shared rules, then its own observation."""
    return (
        ChatMessage("system", RULES * 2),
        ChatMessage("user", f"Week 1. The supplier S0{n} asks {1200 + 37 * n} per unit. " * n),
    )


class Conversation:
    """One chat played turn by turn: each prompt is the last one, the reply, a new turn."""

    def __init__(self, n: int, *, schema: bool | dict, max_tokens: int = 16) -> None:
        self.key = f"episode-{n}/buyer"
        self.messages = opening(n)
        self.schema = (OFFER_SCHEMA if schema is True else schema) or None
        self.max_tokens = max_tokens
        self.texts: list[str] = []
        self.cached: list[int] = []

    def request(self, *, keyed: bool = True) -> ChatRequest:
        return ChatRequest(
            messages=self.messages,
            max_tokens=self.max_tokens,
            json_schema=self.schema,
            cache_key=self.key if keyed else None,
        )

    def answer(self, result: ChatResult) -> None:
        assert result.ok, result.error
        self.texts.append(result.text)
        self.cached.append(result.cached_tokens)
        turn = len(self.texts)
        self.messages = (
            *self.messages,
            ChatMessage("assistant", result.text),
            ChatMessage("user", f"Week {turn + 1}: the supplier counters {1150 - 9 * turn}."),
        )


def play(
    backend: TransformersBackend, conversations: Sequence[Conversation], turns: int
) -> list[list[str]]:
    """``turns`` rounds; each round is one generate call with every conversation in it
    (conversation k joins at round k, so a batch mixes new and continued chats)."""
    for turn in range(turns):
        live = [c for k, c in enumerate(conversations) if k <= turn]
        for c, result in zip(live, backend.generate([c.request() for c in live]), strict=True):
            c.answer(result)
    return [c.texts for c in conversations]


def sharpened(source: Path, folder: Path) -> Path:
    """``source`` with its queries and keys scaled up: a random model attends almost
    uniformly, so a key at the wrong place or position would change nothing it says."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(source)
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if name.endswith(("q_proj.weight", "k_proj.weight")):  # llama
                weight.mul_(SHARPEN)
            elif name.endswith("attn.c_attn.weight"):  # gpt2: [q | k | v] columns
                weight[:, : 2 * model.config.n_embd].mul_(SHARPEN)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return folder


SHARPEN = 12.0


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def model(request, tiny_model: Path, tmp_path_factory) -> Path:
    """The session's tiny GPT-2 (learned positions) and a tiny Llama (rotary positions,
    like SmolLM2), both sharpened."""
    if request.param == "gpt2":
        source = tiny_model
    else:
        from tests.llm_models import build_tiny_model

        source = build_tiny_model(tmp_path_factory.mktemp("llama") / "model", arch="llama")
    return sharpened(source, tmp_path_factory.mktemp("sharp") / request.param)


@pytest.fixture(scope="module")
def uncached(model: Path) -> TransformersBackend:
    return TransformersBackend(str(model), device="cpu", kv_cache_conversations=0)


def cached_backend(model: Path | str, **options) -> TransformersBackend:
    return TransformersBackend(str(model), device="cpu", **options)


@pytest.mark.parametrize("schema", [False, True], ids=["free", "schema"])
def test_a_growing_conversation_replies_as_without_caches(model, uncached, schema):
    cached = cached_backend(model)
    expected = play(uncached, [Conversation(1, schema=schema)], turns=6)
    conversation = Conversation(1, schema=schema)
    assert play(cached, [conversation], turns=6) == expected
    # The first turn reuses the shared rules; each later one the whole previous turn but
    # the reply's last token and what re-tokenizing the reply text changed.
    assert conversation.cached[0] >= MIN_SHARED_PREFIX_TOKENS
    assert all(
        b > a + 10 for a, b in zip(conversation.cached, conversation.cached[1:], strict=False)
    )
    assert cached.stats.cached_tokens == sum(conversation.cached)


@pytest.mark.parametrize("split_step_tokens", [0, 10**6], ids=["split", "one-generate"])
@pytest.mark.parametrize("schema", [False, True], ids=["free", "schema"])
def test_conversations_of_different_lengths_in_one_batch(
    model, uncached, schema, split_step_tokens
):
    """Three chats of different lengths that join at different rounds. With splits free
    (0) every reuse is exact; with splits priced out each round is one generate, where a
    row that needs fewer new tokens than the widest recomputes the end of its cache."""
    cached = cached_backend(model, split_step_tokens=split_step_tokens)
    expected = [play(uncached, [Conversation(n, schema=schema)], turns=6 - n)[0] for n in range(3)]
    conversations = [Conversation(n, schema=schema) for n in range(3)]
    with generate_calls_of(cached) as calls:
        texts = play(cached, conversations, turns=6)
    assert texts == [e[: 6 - n] for n, e in enumerate(expected)]
    if split_step_tokens:
        assert calls == [1, 2, 3, 3, 3, 3]
    else:
        assert len(calls) > 6  # a new chat never waits in a batch of continued ones
    assert all(c.cached[-1] > c.cached[0] for c in conversations[:2])


def test_a_prompt_that_diverges_from_its_cache_reuses_only_the_common_part(model, uncached):
    cached = cached_backend(model)
    conversation = Conversation(2, schema=False)
    play(cached, [conversation], turns=3)
    [cached_length] = cached.kv.conversations().values()
    # Rewrite the second user message: the chat diverges in the middle of the cache.
    edited = list(conversation.messages)
    edited[3] = ChatMessage("user", "Week 2: the supplier walked away, then came back.")
    request = ChatRequest(messages=tuple(edited), max_tokens=16, cache_key=conversation.key)
    [result] = cached.generate([request])
    [expected] = uncached.generate([request])
    assert result.text == expected.text
    assert 0 < result.cached_tokens < cached_length
    old, new = _ids(cached, conversation.messages), _ids(cached, edited)
    assert result.cached_tokens == next(
        n for n, (a, b) in enumerate(zip(old, new, strict=False)) if a != b
    )
    # The same request again: now everything but its last token is cached.
    [again] = cached.generate([request])
    assert again.text == expected.text
    assert again.cached_tokens == again.prompt_tokens - 1


def test_conversations_are_evicted_least_recently_used_first_and_forgotten(model):
    cached = cached_backend(model, kv_cache_conversations=2)
    conversations = [Conversation(n, schema=False) for n in range(1, 4)]
    for c in conversations:
        c.answer(cached.generate([c.request()])[0])
    assert list(cached.kv.conversations()) == ["episode-2/buyer", "episode-3/buyer"]
    c2, c3 = conversations[1:]
    c2.answer(cached.generate([c2.request()])[0])  # used again: now the most recent
    assert list(cached.kv.conversations()) == ["episode-3/buyer", "episode-2/buyer"]
    # Memory is bounded by the count: two conversations and one shared system prefix.
    longest = max(len(_ids(cached, c.messages)) for c in conversations)
    assert cached.kv.tokens() <= 3 * longest
    cached.forget("episode-2/buyer")
    cached.forget("never-seen")  # unknown keys are ignored
    assert list(cached.kv.conversations()) == ["episode-3/buyer"]
    # A request without a key is served from caches but leaves none of its own.
    cached.generate([c3.request(keyed=False)])
    assert list(cached.kv.conversations()) == ["episode-3/buyer"]


def test_a_new_conversation_starts_from_the_shared_rules(model, uncached):
    cached = cached_backend(model)
    first, second = Conversation(1, schema=False), Conversation(2, schema=False)
    [result] = cached.generate([first.request()])
    rules_tokens = result.cached_tokens
    assert rules_tokens >= MIN_SHARED_PREFIX_TOKENS  # computed once, alone, then reused
    cached.forget(first.key)
    [other] = cached.generate([second.request()])
    assert other.cached_tokens >= rules_tokens
    assert other.text == uncached.generate([second.request()])[0].text


def test_caching_off_computes_every_token(uncached):
    conversation = Conversation(1, schema=False)
    play(uncached, [conversation], turns=2)
    assert conversation.cached == [0, 0]
    assert uncached.kv is None


def test_a_participant_forgets_its_conversations_when_it_leaves(model):
    cached = cached_backend(model)
    batcher = BatchingBackend(cached)
    with batcher.join() as participant:
        first, second = Conversation(1, schema=False), Conversation(2, schema=False)
        participant.generate([first.request(), second.request()])
        assert sorted(cached.kv.conversations()) == [first.key, second.key]
        participant.forget(first.key)
        assert list(cached.kv.conversations()) == [second.key]
    assert list(cached.kv.conversations()) == []


@pytest.fixture(scope="module")
def smollm2() -> tuple[TransformersBackend, TransformersBackend]:
    """The shipped model, with caches and without."""
    return cached_backend("smollm2"), cached_backend("smollm2", kv_cache_conversations=0)


@pytest.mark.slow
@pytest.mark.xdist_group("smollm2")
@pytest.mark.parametrize("schema", [None, ACTION_SCHEMA], ids=["free", "schema"])
def test_smollm2_conversations_reply_as_without_caches(smollm2, schema):
    """A real model's attention is sharp: a misplaced key or a wrong position would show.
    Alone (6 turns), then three chats of different lengths in one generate per round,
    then a prompt that diverges from its cache mid-way."""
    cached, uncached = smollm2
    expected = [play(uncached, [Conversation(n, schema=schema)], turns=6 - n)[0] for n in range(3)]
    alone = Conversation(0, schema=schema)
    assert play(cached, [alone], turns=6) == expected[:1]
    assert alone.cached[-1] > alone.cached[0] > 0
    cached.forget(alone.key)
    cached.split_step_tokens = 10**6  # every round one generate: rows recompute cache ends
    batch = [Conversation(n, schema=schema) for n in range(3)]
    assert play(cached, batch, turns=6) == [e[: 6 - n] for n, e in enumerate(expected)]
    edited = (*batch[0].messages[:3], ChatMessage("user", "Week 2: a new supplier S09 bids."))
    request = ChatRequest(
        messages=edited, max_tokens=16, json_schema=schema, cache_key=batch[0].key
    )
    [result] = cached.generate([request])
    assert result.cached_tokens > 0
    assert result.text == uncached.generate([request])[0].text


def _ids(backend: TransformersBackend, messages: Sequence[ChatMessage]) -> list[int]:
    """The prompt's token ids, as the model's chat template renders it."""
    text = backend.tokenizer.apply_chat_template(
        [{"role": m.role, "content": m.content} for m in messages],
        tokenize=False,
        add_generation_prompt=True,
    )
    return backend.tokenizer(text, add_special_tokens=False)["input_ids"]

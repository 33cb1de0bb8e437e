"""The llama.cpp backend on the shipped SmolLM2 GGUF: chat answers, schema-valid actions
through a grammar, stop strings, token limits and seeds, one bad request failing alone,
and prompt caching that evaluates only what is new without changing any reply.

llama-cpp-python is built from source (requirements/llamacpp.txt), so it lives in its own
virtualenv and these tests skip where it is not installed. There, run them without the
project's conftest (which needs Django): ``VENV/bin/python -m pytest --noconftest
tests/negotiation/llm/test_llamacpp_backend.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

pytest.importorskip(
    "llama_cpp",
    reason="llama-cpp-python is not installed (pip install -r requirements/llamacpp.txt)",
)

from negotiation.llm import ChatMessage, ChatRequest
from negotiation.llm.llamacpp_backend import LlamaCppBackend
from negotiation.llm.models import gguf_with_weights, smollm2_gguf
from tests.negotiation.llm.action_schema import ACTION_SCHEMA, parse_action

SYSTEM = (
    "You are a procurement buyer. Reply with one JSON action: negotiate, award_contract, "
    "raise_pr, defer, reject, hedge or escalate."
)


def chat(*texts: str, **settings) -> ChatRequest:
    """A conversation: the system prompt, then user and assistant turns alternating."""
    roles = ["user", "assistant"] * len(texts)
    messages = (ChatMessage("system", SYSTEM), *map(ChatMessage, roles, texts))
    return ChatRequest(messages=messages, **settings)


def turn(n: int) -> ChatRequest:
    ask = 80 + (n * 37) % 400
    text = (
        f"Week {1 + n % 6}/6. R0{n % 9 + 1}: {10 + n} laptops, ceiling {ask + 40}/unit. "
        f"S0{n % 7 + 1} asks {ask}/unit."
    )
    return chat(text, max_tokens=96, json_schema=ACTION_SCHEMA)


@pytest.fixture(scope="module")
def backend() -> Iterator[LlamaCppBackend]:
    backend = LlamaCppBackend("smollm2", n_ctx=2048)
    yield backend
    backend.close()


@pytest.fixture
def evaluated(backend: LlamaCppBackend) -> Iterator[list[int]]:
    """How many tokens each forward pass evaluates; every pass runs for real."""
    counts: list[int] = []
    real = backend.llm.eval

    def counted(tokens):
        counts.append(len(tokens))
        return real(tokens)

    backend.llm.eval = counted
    yield counts
    del backend.llm.eval


def cold(backend: LlamaCppBackend, request: ChatRequest) -> str:
    """The reply with nothing cached."""
    backend.llm.reset()
    [result] = backend.generate([request])
    assert result.ok, result.error
    return result.text


def test_float_copies_of_the_weights_are_made_once(tmp_path):
    shipped = smollm2_gguf()
    assert gguf_with_weights(shipped, "file", tmp_path) == shipped
    copy = gguf_with_weights(shipped, "f16", tmp_path)
    assert copy.parent == tmp_path and copy.name.endswith(".F16.gguf")
    assert copy.stat().st_size > shipped.stat().st_size  # 16 bits a weight, not about 5
    assert [p.name for p in tmp_path.iterdir()] == [copy.name]  # no temporary file left
    written = copy.stat().st_mtime_ns
    assert gguf_with_weights(shipped, "f16", tmp_path) == copy
    assert copy.stat().st_mtime_ns == written


def test_answers_a_chat_prompt(backend):
    request = ChatRequest(
        messages=(ChatMessage("user", "What is the capital of France?"),), max_tokens=24
    )
    [reply] = backend.generate([request])
    assert reply.ok, reply.error
    assert "Paris" in reply.text
    assert reply.prompt_tokens > 10
    assert 0 < reply.completion_tokens <= 24
    assert reply.finish_reason in ("stop", "length")


def test_schema_requests_give_valid_actions(backend):
    results = backend.generate([turn(n) for n in range(4)])
    for result in results:
        assert result.ok, result.error
        parse_action(result.text)  # raises unless a valid action


def test_greedy_replies_are_llama_cpp_pythons_own(backend):
    """The backend's greedy loop (grammar checked on the pick first) gives what
    llama-cpp-python's sampler chain gives with the grammar over the whole vocabulary."""
    from llama_cpp import LlamaGrammar

    from negotiation.llm.constrained import schema_key

    counting = ChatRequest(
        messages=(ChatMessage("user", "Count from one to ten in words, comma separated."),),
        max_tokens=40,
        stop=("seven",),
    )
    for request in (*(turn(n) for n in range(5)), counting):
        ours = cold(backend, request)
        backend.llm.reset()
        grammar = None
        if request.json_schema is not None:
            text = backend._grammar(schema_key(request.json_schema))
            grammar = LlamaGrammar.from_string(text, verbose=False)
        theirs = backend.llm.create_completion(
            backend._prompt(request),
            max_tokens=request.max_tokens,
            temperature=0.0,
            repeat_penalty=1.0,
            stop=list(request.stop),
            grammar=grammar,
        )
        assert ours == theirs["choices"][0]["text"]


def test_stop_strings_token_limits_and_seeds(backend):
    counting = ChatRequest(
        messages=(ChatMessage("user", "Count from one to ten in words, comma separated."),),
        max_tokens=40,
        stop=("five",),
    )
    [stopped] = backend.generate([counting])
    assert stopped.finish_reason == "stop" and "five" not in stopped.text
    [cut] = backend.generate([dataclasses.replace(counting, stop=(), max_tokens=3)])
    assert (cut.finish_reason, cut.completion_tokens) == ("length", 3)

    sampled = chat("Say hello to the supplier.", max_tokens=16, temperature=1.0, seed=7)
    first, again, other = backend.generate([sampled, sampled, dataclasses.replace(sampled, seed=8)])
    assert first.text == again.text
    assert first.text != other.text


def test_a_bad_request_fails_alone(backend):
    results = backend.generate(
        [
            chat("long " * 3000, max_tokens=8),  # past the 2048-token context
            chat("bad schema", max_tokens=8, json_schema={"type": "no-such-type"}),
            chat("Say hello.", max_tokens=8),
        ]
    )
    too_long, bad_schema, fine = results
    assert too_long.finish_reason == "error" and "exceeds the context" in too_long.error
    assert bad_schema.finish_reason == "error"
    assert fine.ok and fine.text
    assert backend.stats.errors >= 2


def test_a_shared_prefix_is_evaluated_once(backend, evaluated):
    first, second = turn(1), turn(2)  # the same system prompt, another question
    expected = cold(backend, second)
    backend.llm.reset()
    backend.generate([first])
    evaluated.clear()
    [result] = backend.generate([second])
    assert result.text == expected  # caching never changes the reply
    prompt_evaluated = evaluated[0]
    assert prompt_evaluated < result.prompt_tokens / 2  # the system prompt was not redone


def test_each_keyed_conversation_restores_its_own_context(backend, evaluated):
    a1 = chat("Supplier S01 asks 120 for 10 laptops. Your offer?", max_tokens=24)
    b1 = chat("Supplier S04 asks 90 for 200 chairs, delivery in two weeks. Your offer?")
    b1 = dataclasses.replace(b1, max_tokens=24)
    backend.llm.reset()
    [a_reply] = backend.generate([a1])
    a2 = chat(a1.messages[1].content, a_reply.text, "S01 now asks 110.", max_tokens=24)
    expected = cold(backend, a2)

    prompt_evaluated = {}
    for key in (None, "a"):
        backend.llm.reset()
        backend.generate([dataclasses.replace(a1, cache_key=key)])
        backend.generate([dataclasses.replace(b1, cache_key=key and "b")])  # another chat
        evaluated.clear()
        [result] = backend.generate([dataclasses.replace(a2, cache_key=key)])
        assert result.text == expected
        prompt_evaluated[key] = evaluated[0]
    # Unkeyed, a2 shares only the system prompt with b1, the context before it; keyed, a's
    # first turn and its reply come back from a's saved context, and only the new turn
    # is evaluated.
    assert prompt_evaluated["a"] < 32 < prompt_evaluated[None]
    assert backend.saved.restored >= 1


def test_saved_contexts_are_bounded(backend):
    unsaved = LlamaCppBackend("smollm2", n_ctx=512, saved_context_mb=0)
    unsaved.generate([dataclasses.replace(turn(0), cache_key="a")])
    assert not unsaved.saved.contexts
    unsaved.close()

    backend.saved.contexts.clear()
    for key in "abcd":
        backend.generate([dataclasses.replace(turn(ord(key)), max_tokens=4, cache_key=key)])
    # a conversation's context is saved when another one takes the live context
    assert list(backend.saved.contexts) == ["a", "b", "c"]
    backend.saved.capacity = backend.saved.size  # room for these three, not a fourth
    backend.generate([dataclasses.replace(turn(ord("e")), max_tokens=4, cache_key="e")])
    assert "a" not in backend.saved.contexts  # the least recently used went first
    assert list(backend.saved.contexts)[-1] == "d"
    assert backend.saved.size <= backend.saved.capacity
    backend.saved.capacity = 512 << 20


def test_a_lone_conversation_is_never_copied_and_forget_drops_a_context(backend, evaluated):
    backend.saved.contexts.clear()
    backend.live_key = None  # the context holds no conversation (earlier tests')
    first = dataclasses.replace(turn(3), max_tokens=24, cache_key="lone")
    [reply] = backend.generate([first])
    second = chat(first.messages[1].content, reply.text, "S01 now asks 110.", max_tokens=24)
    evaluated.clear()
    [result] = backend.generate([dataclasses.replace(second, cache_key="lone")])
    assert result.ok, result.error
    assert not backend.saved.contexts  # the live context was its own all along
    assert result.cached_tokens == result.prompt_tokens - evaluated[0]  # reported as reused
    assert evaluated[0] < result.prompt_tokens / 2  # the first turn was not evaluated again
    backend.generate([dataclasses.replace(turn(4), max_tokens=4, cache_key="other")])
    assert list(backend.saved.contexts) == ["lone"]
    backend.forget("lone")
    backend.forget("other")
    assert not backend.saved.contexts and backend.live_key is None

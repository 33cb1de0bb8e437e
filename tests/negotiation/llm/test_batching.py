"""BatchingBackend: generate() calls of many threads become one inner call."""

from __future__ import annotations

import threading
import time

import pytest

from negotiation.llm import ChatMessage, ChatRequest
from negotiation.llm.batching import BatchingBackend

from .scripted import ScriptedBackend


def _req(i: int) -> ChatRequest:
    return ChatRequest((ChatMessage("user", f"q{i}"),))


def _echo(request: ChatRequest) -> str:
    return "a" + request.messages[0].content[1:]


def _run_threads(batcher: BatchingBackend, n: int, calls: int = 1, pause=None) -> dict:
    participants = [batcher.join() for _ in range(n)]
    answers: dict[int, list[str]] = {}

    def play(i: int) -> None:
        with participants[i] as p:
            got = []
            for c in range(calls):
                if pause is not None:
                    pause(i, c)
                got.append(p.generate([_req(i * 1000 + c)])[0].text)
            answers[i] = got

    threads = [threading.Thread(target=play, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    return answers


def test_one_call_per_round_when_every_participant_waits() -> None:
    """Before: N threads sharing a backend made N calls per round (and overlapping calls
    corrupt an in-process model); now one call of N requests per round."""
    inner = ScriptedBackend(_echo, delay_s=0.01)
    batcher = BatchingBackend(inner, max_wait_s=10)
    answers = _run_threads(batcher, 16, calls=5)
    assert answers == {i: [f"a{i * 1000 + c}" for c in range(5)] for i in range(16)}
    assert inner.stats.calls == 5 and inner.stats.batch_sizes == [16] * 5
    assert batcher.flushes == {"all_waiting": 5} and batcher.live == 0


def test_a_busy_participant_holds_the_batch_until_it_calls_or_leaves() -> None:
    inner = ScriptedBackend(_echo)
    batcher = BatchingBackend(inner, max_wait_s=10)

    def slow_first(i: int, c: int) -> None:
        if i == 0 and c == 0:
            time.sleep(0.3)  # long non-LLM work: the others wait for it, not for a timer

    _run_threads(batcher, 4, calls=2, pause=slow_first)
    assert inner.stats.batch_sizes == [4, 4] and batcher.flushes == {"all_waiting": 2}

    # participants that finish early leave, so the rest are not held back
    inner = ScriptedBackend(_echo)
    batcher = BatchingBackend(inner, max_wait_s=10)
    parts = [batcher.join() for _ in range(3)]
    parts[2].leave()
    out: list[str] = []
    t = threading.Thread(target=lambda: out.append(parts[0].generate([_req(1)])[0].text))
    t.start()
    time.sleep(0.05)
    assert not out  # participant 1 neither called nor left
    parts[1].leave()
    t.join(5)
    assert out == ["a1"] and batcher.flushes == {"all_waiting": 1}
    parts[0].leave()


def test_max_batch_splits_large_rounds() -> None:
    inner = ScriptedBackend(_echo)
    batcher = BatchingBackend(inner, max_batch=5, max_wait_s=10)
    _run_threads(batcher, 12, calls=1)
    assert sum(inner.stats.batch_sizes) == 12 and max(inner.stats.batch_sizes) <= 5
    assert inner.stats.calls == 3


def test_the_safety_net_flushes_when_a_participant_never_comes() -> None:
    inner = ScriptedBackend(_echo)
    batcher = BatchingBackend(inner, max_wait_s=0.2)
    absent = batcher.join()  # joined, never calls, never leaves
    started = time.monotonic()
    answers = _run_threads(batcher, 3, calls=1)
    assert answers == {0: ["a0"], 1: ["a1000"], 2: ["a2000"]}
    assert 0.15 <= time.monotonic() - started < 5
    assert batcher.flushes == {"max_wait": 1} and inner.stats.batch_sizes == [3]
    absent.leave()


def test_a_failing_backend_gives_error_results_not_exceptions() -> None:
    def boom(request: ChatRequest) -> str:
        raise RuntimeError("CUDA out of memory")

    batcher = BatchingBackend(ScriptedBackend(boom), max_wait_s=10)
    with batcher.join() as p:
        (result,) = p.generate([_req(1)])
    assert not result.ok and result.error == "RuntimeError: CUDA out of memory"
    assert batcher.stats.errors == 1


def test_a_call_from_outside_any_episode_still_works() -> None:
    batcher = BatchingBackend(ScriptedBackend(_echo))
    assert [r.text for r in batcher.generate([_req(1), _req(2)])] == ["a1", "a2"]
    assert batcher.live == 0


def test_a_participant_that_left_cannot_call() -> None:
    batcher = BatchingBackend(ScriptedBackend(_echo))
    p = batcher.join()
    p.leave()
    p.leave()  # idempotent
    assert batcher.live == 0
    with pytest.raises(RuntimeError, match="left"):
        p.generate([_req(1)])
    with pytest.raises(ValueError):
        BatchingBackend(ScriptedBackend(_echo), max_batch=0)

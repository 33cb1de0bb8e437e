"""Concurrent LLM episodes: every pending call of all episodes (buyers and suppliers)
goes to the backend together, and the games are those of sequential play."""

from __future__ import annotations

import pytest

from negotiation import get_policy, load_scenario, run_episode
from negotiation.interfaces.concurrent import run_episodes_concurrently
from negotiation.llm.batching import BatchingBackend
from tests.negotiation.llm.scripted import (
    ScriptedBackend,
    both,
    fair_supplier,
    narrator,
    simple_buyer,
)

PERSONAS = ["cooperative", "hardball", "deceptive", "distressed"]


def _cfg(preset: str) -> dict:
    cfg = load_scenario(preset).model_dump()
    cfg["supplier_llm"] = {"backend": "transformers", "personas": PERSONAS}
    return cfg


def _free(backend):
    return get_policy("llm", backend=backend, fallback="expert")


def _both_ways(jobs, reply, **options):
    """(sequential results, their backend, concurrent results, its inner backend, the
    batcher): the same jobs one by one, then together."""
    seq_backend = ScriptedBackend(reply)
    sequential = [
        run_episode(scenario, factory(seq_backend), seed, llm_backend=seq_backend)
        for scenario, factory, seed in jobs
    ]
    inner = ScriptedBackend(reply)
    batcher = BatchingBackend(inner, max_wait_s=30)
    concurrent = run_episodes_concurrently(jobs, backend=batcher, **options)
    return sequential, seq_backend, concurrent, inner, batcher


def _trajectory(result) -> list[dict]:
    return [s.to_dict() for s in result.steps]


def test_concurrent_episodes_batch_their_calls_and_play_the_same_games() -> None:
    reply = both(simple_buyer, fair_supplier)
    jobs = [(_cfg("bilateral"), _free, seed) for seed in range(12)]
    sequential, seq_backend, concurrent, inner, batcher = _both_ways(jobs, reply)

    for a, b in zip(sequential, concurrent, strict=True):
        assert _trajectory(a) == _trajectory(b)
        assert a.metrics == b.metrics and a.score == b.score
    per_episode = [
        r.metrics["buyer_llm_calls"] + r.metrics["supplier_llm_decisions"] for r in sequential
    ]
    # one by one: one call per decision; together: one call per round of decisions
    assert seq_backend.stats.calls == sum(per_episode) == inner.stats.requests
    assert inner.stats.calls == max(per_episode), inner.stats.batch_sizes
    assert inner.stats.batch_sizes[0] == len(jobs)
    assert sum(per_episode) / inner.stats.calls > 8
    assert batcher.flushes.keys() == {"all_waiting"}  # never the timer


def test_narrator_mode_on_an_arena_batches_and_replays_exactly() -> None:
    def factory(backend):
        return get_policy("llm", backend=backend, mode="narrator", fallback="expert")

    reply = both(narrator, fair_supplier)
    jobs = [(_cfg("medium_adversarial"), factory, seed) for seed in range(4)]
    sequential, seq_backend, concurrent, inner, _ = _both_ways(jobs, reply)
    assert [_trajectory(r) for r in sequential] == [_trajectory(r) for r in concurrent]
    assert inner.stats.calls < seq_backend.stats.calls / 2
    assert any(s.supplier_actor == "llm" for r in concurrent for s in r.steps)


def test_fewer_workers_than_episodes_still_batch_and_finish() -> None:
    reply = both(simple_buyer, fair_supplier)
    jobs = [(_cfg("bilateral_cooperative"), _free, seed) for seed in range(6)]
    sequential, _, concurrent, inner, batcher = _both_ways(jobs, reply, max_workers=3)
    assert [_trajectory(r) for r in sequential] == [_trajectory(r) for r in concurrent]
    assert max(inner.stats.batch_sizes) == 3 and "max_wait" not in batcher.flushes


def test_on_step_sees_every_step_with_its_episode() -> None:
    jobs = [(_cfg("bilateral"), _free, seed) for seed in range(3)]
    seen: dict[int, list[int]] = {}
    results = run_episodes_concurrently(
        jobs,
        backend=ScriptedBackend(both(simple_buyer, fair_supplier)),
        on_step=lambda i, rec: seen.setdefault(i, []).append(rec.step),
        record_steps=False,
    )
    assert all(r.steps == [] for r in results)
    assert seen == {i: list(range(int(r.metrics["steps"]))) for i, r in enumerate(results)}


def test_a_failing_episode_fails_alone() -> None:
    def broken(backend):
        raise ValueError("bad policy config")

    jobs = [(_cfg("bilateral"), _free, 0), ("bilateral", broken, 1), (_cfg("bilateral"), _free, 2)]
    backend = ScriptedBackend(both(simple_buyer, fair_supplier))
    out = run_episodes_concurrently(jobs, backend=backend, return_exceptions=True, max_wait_s=30)
    assert isinstance(out[1], ValueError)
    assert out[0].metrics["steps"] > 0 and out[2].metrics["steps"] > 0
    with pytest.raises(ValueError, match="bad policy config"):
        run_episodes_concurrently(jobs, backend=backend, max_wait_s=30)
    assert run_episodes_concurrently([], backend=backend) == []


def test_a_rolling_batch_tells_each_episode_with_its_own_calls_and_plays_the_same_games() -> None:
    reply = both(simple_buyer, fair_supplier)
    jobs = [(_cfg("bilateral"), _free, seed) for seed in range(12)]
    ended: list[tuple[int, int]] = []
    sequential, _, concurrent, inner, _ = _both_ways(
        jobs, reply, max_workers=4, on_done=lambda i, r, p: ended.append((i, p.stats.requests))
    )
    assert sorted(i for i, _ in ended) == list(range(12))
    assert [_trajectory(r) for r in sequential] == [_trajectory(r) for r in concurrent]
    calls = {i: n for i, n in ended}  # each participant played one episode alone
    assert all(
        calls[i] == r.metrics["buyer_llm_calls"] + r.metrics["supplier_llm_decisions"]
        for i, r in enumerate(concurrent)
    )
    assert sum(calls.values()) == inner.stats.requests and max(inner.stats.batch_sizes) <= 8


class _Stop(Exception):
    pass


def test_a_hook_that_raises_stops_the_play_within_the_round_in_flight() -> None:
    inner = ScriptedBackend(both(simple_buyer, fair_supplier))
    started: list[int] = []

    def counted(backend):
        started.append(1)
        return _free(backend)

    jobs = [(_cfg("bilateral"), counted, seed) for seed in range(40)]
    at_stop: list[int] = []

    def cancel(index, result, participant) -> None:
        at_stop.append(inner.stats.calls)
        raise _Stop

    with pytest.raises(_Stop):
        run_episodes_concurrently(
            jobs, backend=BatchingBackend(inner, max_wait_s=30), max_workers=8, on_done=cancel
        )
    # the 8 slots, each of which may have taken its next job as its episode ended (before
    # the hook ran): those get no model call; nothing further starts
    assert len(started) <= 2 * 8
    assert inner.stats.calls - at_stop[0] <= 1  # at most the round in flight, then none

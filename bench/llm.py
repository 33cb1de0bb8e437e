"""LLM benchmark on the game's own prompts: SmolLM2-135M-Instruct (the default model) as
the buyer, transformers backend, CPU, everything in ONE run on the same machine.

1. Machine limits, measured here: a float32 matmul probe (FLOP/s) and a memory-bandwidth
   probe (bytes/s read and written by a large tensor copy).
2. Kernels on a real first-turn prompt of a bilateral episode: prefill tokens/s (one
   forward pass over the prompt) and decode tokens/s (one row, growing key/value cache),
   each as a fraction of its bound: prefill at 2 x parameters FLOP per token against the
   FLOP/s probe, decode at the weights' bytes per token against the bandwidth probe.
   Then one whole constrained decision on that prompt per decoder (transformers'
   ``generate``, the backend's lean loop, the lean loop with jump-forward drafts): reply
   tokens per second of decoding (the decision's time less one prefill), also as a
   fraction of the bandwidth bound, and the draft tokens checked and kept.
3. Episodes: SmolLM2 buyers (free mode, expert fallback) on ``bilateral``, ``--max-steps``
   decisions each, played one at a time and ``--concurrent`` at once through one batching
   backend, each with and without per-episode key/value caching: decisions/s, decision
   latency p50/p95 (the wall time of the generate a decision waited for), prompt tokens
   computed vs reused, invalid-action rate (engine-refused actions per decision) and
   fallback rate (replies the policy could not use).
4. Live single episodes (``--live-episodes N``, 0 to skip; ``bench/llm_live.py``): the
   decision latency p50/p95 of today's path (``--today REF``: that tree's code) beside
   this tree's transformers path (and llama.cpp's with ``--llamacpp-site``), episodes
   interleaved across worker processes, with per-decision prefill, decode and
   outside-the-model time, prefill and decode as fractions of each worker's probes.
5. Quality (``--quality-seeds N``, 0 to skip): the untrained SmolLM2 buyer in free and
   narrator mode against the expert and the naive baselines (always_accept, random) on the
   same N seeds of each ``--quality-presets`` preset: mean score, deal rate and buyer share
   with 95 % bootstrap intervals, invalid-action and fallback rates.

Usage: .venv/bin/python bench/llm.py [--max-steps 6] [--concurrent 32] [--single 4]
       [--quality-seeds 50] [--quality-presets bilateral,bilateral_cooperative,...]
       [--quality-modes free,narrator] [--quality-at-once 25]
       [--live-episodes 4] [--live-steps 8] [--today REF] [--llamacpp-site DIR]
       [--live-paths today,transformers,today-llamacpp,llamacpp] [--live-only]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import llm_live  # bench/, beside this file

from negotiation import get_policy, load_scenario, run_episode
from negotiation.interfaces.concurrent import run_episodes_concurrently
from negotiation.llm import ChatResult, LLMBackend
from negotiation.llm.registry import get_backend
from negotiation.scenarios import bilateral_presets
from negotiation.stats import bootstrap_mean_ci

PRESET = "bilateral"
BILATERAL = bilateral_presets()
BASELINES = ("expert", "always_accept", "random")


def percentile(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


# ---------------------------------------------------------------------- 1. machine limits
def flops_probe(size: int = 1024, seconds: float = 3.0) -> float:
    """float32 FLOP/s of square matmuls on all of torch's threads (the model's dtype)."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    n, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        torch.mm(a, b)
        n += 1
    return n * 2 * size**3 / (time.perf_counter() - started)


def bandwidth_probe(megabytes: int = 512, seconds: float = 3.0) -> float:
    """Bytes/s moved by copying a tensor far larger than the caches (read + write)."""
    import torch

    src = torch.ones(megabytes * 2**20 // 4)
    dst = torch.empty_like(src)
    dst.copy_(src)
    n, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        dst.copy_(src)
        n += 1
    return n * 2 * src.numel() * 4 / (time.perf_counter() - started)


# ---------------------------------------------------------------------- 2. kernels
def first_prompt() -> Any:
    """The first request a SmolLM2 buyer sends in a bilateral episode (seed 0)."""
    from negotiation.llm import ChatRequest

    captured: list[ChatRequest] = []

    class Capture(LLMBackend):
        name = "capture"

        def generate(self, requests):
            captured.extend(requests)
            return [ChatResult("", "error", error="captured") for _ in requests]

    policy = get_policy("llm", backend=Capture(), seed=0)
    run_episode(load_scenario(PRESET, max_steps=1), policy, 0, record_steps=False)
    return captured[0]


def kernels(backend: Any, flops: float, bandwidth: float, decode_tokens: int = 64) -> None:
    import torch

    model, tokenizer = backend.model, backend.tokenizer
    request = first_prompt()
    text = tokenizer.apply_chat_template(
        [{"role": m.role, "content": m.content} for m in request.messages],
        tokenize=False,
        add_generation_prompt=True,
    )
    ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    params = sum(p.numel() for p in model.parameters())
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    with torch.inference_mode():
        model(ids)  # warm-up
        times = []
        for _ in range(3):
            started = time.perf_counter()
            out = model(ids, use_cache=True)
            times.append(time.perf_counter() - started)
        prefill = ids.shape[1] / min(times)
        cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        started = time.perf_counter()
        for _ in range(decode_tokens):
            out = model(token, past_key_values=cache, use_cache=True)
            cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        decode = decode_tokens / (time.perf_counter() - started)
    print(
        f"\nKernels on the game's first bilateral prompt ({ids.shape[1]} tokens; "
        f"{params / 1e6:.0f} M parameters, {weight_bytes / 2**20:.0f} MiB of weights):"
    )
    print(
        f"  prefill {prefill:8.1f} tokens/s = {prefill * 2 * params / 1e9:6.1f} GFLOP/s, "
        f"{prefill * 2 * params / flops:5.1%} of the matmul probe"
    )
    print(
        f"  decode  {decode:8.1f} tokens/s = {decode * weight_bytes / 1e9:6.1f} GB/s of "
        f"weights, {decode * weight_bytes / bandwidth:5.1%} of the bandwidth probe"
    )


def decoders(bandwidth: float) -> None:
    """One constrained decision on the first prompt per decoder (best of two, uncached
    but for the shared rules prefix, which each backend computes once); its prefill is
    the same request cut to one reply token."""
    import dataclasses

    request = dataclasses.replace(first_prompt(), cache_key=None)
    first = dataclasses.replace(request, max_tokens=1)
    print("  one constrained decision on that prompt (best of 2; decode: after the first token):")
    for label, options in (
        ("generate", {"decoder": "generate"}),
        ("lean", {"jump_forward": False}),
        ("lean + jump-forward", {}),
    ):
        backend = get_backend("transformers", "smollm2", device="cpu", **options)
        drafts = list(backend.drafts)
        walls, result, prefill_s = [], None, float("inf")
        for _ in range(2):
            started = time.perf_counter()
            backend.generate([first])
            prefill_s = min(prefill_s, time.perf_counter() - started)
            started = time.perf_counter()
            [result] = backend.generate([request])
            walls.append(time.perf_counter() - started)
        weight_bytes = sum(p.numel() * p.element_size() for p in backend.model.parameters())
        rate = (result.completion_tokens - 1) / max(1e-9, min(walls) - prefill_s)
        checked, kept = (backend.drafts[0] - drafts[0]) // 2, (backend.drafts[1] - drafts[1]) // 2
        print(
            f"    {label:>20}: {min(walls):5.2f} s ({prefill_s:4.2f} s to the first token), "
            f"{result.completion_tokens} tokens, "
            f"decode {rate:6.1f} tokens/s = {rate * weight_bytes / bandwidth:5.1%} of the "
            f"bandwidth probe, drafts kept {kept} of {checked}"
        )


# ---------------------------------------------------------------------- 3. episodes
class TimedBackend(LLMBackend):
    """Records each generate's wall time, size and results."""

    name = "timed"

    def __init__(self, inner: LLMBackend) -> None:
        super().__init__()
        self.inner = inner
        self.calls: list[tuple[float, list[ChatResult]]] = []

    def generate(self, requests):
        started = time.perf_counter()
        results = self.inner.generate(requests)
        self.calls.append((time.perf_counter() - started, list(results)))
        return results

    def forget(self, cache_key: str) -> None:
        self.inner.forget(cache_key)


@dataclass
class Play:
    results: list[Any]
    timed: TimedBackend
    wall: float


def buyer_factory(mode: str, max_tokens: int) -> Callable[[LLMBackend, int], Any]:
    def make(handle: LLMBackend, seed: int) -> Any:
        return get_policy("llm", seed=seed, backend=handle, mode=mode, max_tokens=max_tokens)

    return make


def play(
    backend: LLMBackend,
    preset: str,
    seeds: list[int],
    *,
    concurrent: bool,
    max_steps: int = 0,
    mode: str = "free",
    max_tokens: int = 128,
    max_workers: int | None = None,
) -> Play:
    timed = TimedBackend(backend)
    scenario = load_scenario(preset, **({"max_steps": max_steps} if max_steps else {}))
    make = buyer_factory(mode, max_tokens)
    started = time.perf_counter()
    if concurrent:
        jobs = [(scenario, lambda h, s=seed: make(h, s), seed) for seed in seeds]
        results = run_episodes_concurrently(jobs, backend=timed, max_workers=max_workers)
    else:
        results = [run_episode(scenario, make(timed, s), s) for s in seeds]
    return Play(results, timed, time.perf_counter() - started)


def decision_rates(results: list[Any]) -> tuple[int, float, float]:
    """(buyer decisions, invalid-action rate, fallback rate)."""
    steps = [s for r in results for s in r.steps]
    invalid = sum(not s.valid for s in steps)
    fallbacks = sum(r.metrics.get("llm_fallbacks", 0) for r in results)
    return len(steps), invalid / max(1, len(steps)), fallbacks / max(1, len(steps))


def fallback_reasons(results: list[Any]) -> str:
    """Why the buyer's replies were not used, most frequent first (a rate hides it), and
    how many the token limit cut inside their text and were closed and played."""
    steps = [s for r in results for s in r.steps]
    reasons = Counter(
        (s.decision.llm_error or "?")[:60]
        for s in steps
        if s.decision.actor.startswith("fallback")  # the buyer's own, not a supplier's
    )
    closed = sum(s.decision.actor == "llm" and s.decision.llm_error is not None for s in steps)
    shown = "; ".join(f"{n} x {why!r}" for why, n in reasons.most_common(4)) or "none"
    return f"{shown}; cut replies closed and played: {closed}"


def episodes(backends: dict[str, LLMBackend], n_single: int, n_many: int, max_steps: int) -> None:
    print(
        f"\nSmolLM2 buyer episodes on {PRESET}, first {max_steps} decisions each "
        "(latency: the wall time of the generate a decision waited for)"
    )
    for label, seeds, concurrent in (
        ("1 at a time", list(range(n_single)), False),
        (f"{n_many} concurrent", list(range(n_many)), True),
    ):
        for cache, backend in backends.items():
            run = play(backend, PRESET, seeds, concurrent=concurrent, max_steps=max_steps)
            latency = [wall for wall, results in run.timed.calls for _ in results]
            answered = [r for _, results in run.timed.calls for r in results]
            prompt = sum(r.prompt_tokens for r in answered)
            reused = sum(r.cached_tokens for r in answered)
            decisions, invalid, fallback = decision_rates(run.results)
            completion = sum(r.completion_tokens for r in answered)
            print(
                f"  {label:>14}, {cache:>8}: {decisions / run.wall:5.2f} decisions/s, "
                f"p50 {percentile(latency, 50):5.2f} s, p95 {percentile(latency, 95):5.2f} s, "
                f"prompt tokens {prompt} ({reused / max(1, prompt):4.0%} reused), "
                f"invalid {invalid:.1%}, fallbacks {fallback:.1%} ({decisions} decisions, "
                f"{completion / max(1, len(answered)):.0f} reply tokens each, {run.wall:.0f} s)"
            )
            print(f"{'':>28}fallbacks: {fallback_reasons(run.results)}")


# ---------------------------------------------------------------------- 4. quality
def metric_rows(results: list[Any]) -> dict[str, str]:
    def ci(values: list[float]) -> str:
        if not values:
            return "n/a"
        m = bootstrap_mean_ci(values)
        return f"{m.mean:6.3f} [{m.low:6.3f}, {m.high:6.3f}]"

    shares = [r.metrics["buyer_share"] for r in results if r.metrics.get("contracts", 0) > 0]
    return {
        "score": ci([r.score for r in results]),
        "deal_rate": ci([r.metrics.get("deal_rate", 0.0) for r in results]),
        "buyer_share": ci([s for s in shares if s is not None]),
    }


def action_counts(results: list[Any]) -> str:
    """How often each action type was played, most played first (what a score hides)."""
    counts = Counter((s.action or {}).get("action_type", "?") for r in results for s in r.steps)
    return ", ".join(f"{name} {n}" for name, n in counts.most_common())


def quality(
    backend: LLMBackend, presets: list[str], seeds: int, modes: list[str], at_once: int
) -> None:
    """``at_once`` bounds the episodes in play (each holds its key/value caches while it
    plays, so memory grows with it)."""
    print(
        f"\nQuality on {seeds} seeds per preset (mean [95 % bootstrap CI]; buyer_share over "
        f"episodes with a deal), {at_once} episodes at a time"
    )
    ids = list(range(seeds))

    def show(name: str, results: list[Any], rates: str) -> None:
        m = metric_rows(results)
        print(
            f"    {name:>16}: score {m['score']}  deal_rate {m['deal_rate']}  "
            f"buyer_share {m['buyer_share']}  {rates}",
            flush=True,  # a long table: each row as soon as it is played
        )

    for preset in presets:
        print(f"  {preset}")
        for mode in modes:
            run = play(backend, preset, ids, concurrent=True, mode=mode, max_workers=at_once)
            decisions, invalid, fallback = decision_rates(run.results)
            show(
                f"smollm2 {mode}",
                run.results,
                f"invalid {invalid:.1%}, fallbacks {fallback:.1%} of {decisions} decisions, "
                f"{run.wall:.0f} s; actions {action_counts(run.results)}; "
                f"fallbacks: {fallback_reasons(run.results)}",
            )
        for name in BASELINES:
            results = [run_episode(preset, get_policy(name, seed=s), s) for s in ids]
            _, invalid, _ = decision_rates(results)
            show(name, results, f"invalid {invalid:.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--single", type=int, default=4, help="episodes played one at a time")
    parser.add_argument("--concurrent", type=int, default=32)
    parser.add_argument("--quality-seeds", type=int, default=0)
    parser.add_argument("--quality-presets", default=",".join(BILATERAL))
    parser.add_argument("--quality-modes", default="free,narrator")
    parser.add_argument("--quality-at-once", type=int, default=25, help="episodes in play")
    parser.add_argument("--quality-only", action="store_true", help="only section 5")
    parser.add_argument("--skip-episodes", action="store_true")
    parser.add_argument("--live-episodes", type=int, default=4)
    parser.add_argument("--live-steps", type=int, default=8)
    parser.add_argument("--today", default=llm_live.TODAY, help="git ref of today's path")
    parser.add_argument("--llamacpp-site", default="", help="site-packages with llama_cpp")
    parser.add_argument("--live-only", action="store_true", help="only section 4")
    parser.add_argument(
        "--live-paths",
        type=lambda text: text.split(","),
        default=["today", "transformers", "llamacpp"],
        help="section 4's paths (bench/llm_live.py --paths)",
    )
    args = parser.parse_args()
    if args.live_only:
        llm_live.compare(
            args.live_episodes, args.live_steps, args.today, args.llamacpp_site, args.live_paths
        )
        return

    import torch

    def run_quality(backend: LLMBackend) -> None:
        presets, modes = args.quality_presets.split(","), args.quality_modes.split(",")
        quality(backend, presets, args.quality_seeds, modes, args.quality_at_once)

    print(f"torch threads {torch.get_num_threads()}")
    if args.quality_only:
        run_quality(get_backend("transformers", "smollm2", device="cpu"))
        return
    flops, bandwidth = flops_probe(), bandwidth_probe()
    print(f"Machine: matmul probe {flops / 1e9:.1f} GFLOP/s, copy probe {bandwidth / 1e9:.1f} GB/s")
    started = time.perf_counter()
    cached = get_backend("transformers", "smollm2", device="cpu")
    print(f"SmolLM2-135M-Instruct loaded in {time.perf_counter() - started:.1f} s")
    kernels(cached, flops, bandwidth)
    decoders(bandwidth)
    if not args.skip_episodes:
        uncached = get_backend("transformers", "smollm2", device="cpu", kv_cache_conversations=0)
        episodes(
            {"cached": cached, "uncached": uncached}, args.single, args.concurrent, args.max_steps
        )
    if args.live_episodes:
        llm_live.compare(
            args.live_episodes, args.live_steps, args.today, args.llamacpp_site, args.live_paths
        )
    if args.quality_seeds:
        run_quality(cached)


if __name__ == "__main__":
    main()

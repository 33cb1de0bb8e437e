"""Batched LLM play on CPU, interleaved in ONE run on the same machine and the same jobs
(SmolLM2-135M-Instruct buyers, free mode, ``bilateral``, ``--episodes`` at once through
one batching backend, ``--max-steps`` decisions each), by ``--variants``:

- "old": one generate per JSON schema (each episode's valid-action schema is its own, so
  episodes hardly share a batch; finished rows fed padding until the longest reply ends);
- "mixed": rows of different schemas in one batch; "shrink": that batch also sheds its
  finished rows;
- "sdpa": transformers' attention, which copies every key/value head per query head when
  a mask is given (every padded batch); "gqa": the backend's masked grouped-query
  attention (negotiation/llm/attention.py), which reads them in place.

Per round: wall time, decisions/s, model calls and rows per call, decode forwards (steps,
row-tokens, live rows per step, row-tokens/s), prefill forwards (token positions, /s),
and whether every reply equals the first round's (shedding must change none).

    PYTHONPATH=$PWD nice -n 10 .venv/bin/python bench/llm_shrink.py [--episodes 8]
        [--max-steps 2] [--rounds 1] [--variants ...]
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from typing import Any

from negotiation import get_policy, load_scenario
from negotiation.interfaces.concurrent import run_episodes_concurrently
from negotiation.llm.registry import get_backend

PRESET = "bilateral"
_OLD = {"shrink": False, "mixed_schemas": False}
VARIANTS: dict[str, dict[str, Any]] = {
    "old/sdpa": {**_OLD, "attention": "sdpa"},
    "mixed/sdpa": {"shrink": False, "attention": "sdpa"},
    "shrink/sdpa": {"attention": "sdpa"},
    "old/gqa": {**_OLD, "attention": "sdpa_gqa"},
    "shrink/gqa": {"attention": "sdpa_gqa"},
}
DEFAULT_VARIANTS = ("old/sdpa", "shrink/sdpa", "old/gqa", "shrink/gqa")


class Probe:
    """Forward passes of one model: width 1 is a decode step, wider is prefill (or a
    jump-forward draft check), as bench/arena.py counts them."""

    def __init__(self, model: Any) -> None:
        self.lock = threading.Lock()
        self.reset()
        probe, local = self, threading.local()

        def before(_m: Any, args: Any, kwargs: Any) -> None:
            ids = kwargs.get("input_ids", args[0] if args else None)
            local.start = (time.perf_counter(), tuple(ids.shape))

        def after(_m: Any, _a: Any, _k: Any, _o: Any) -> None:
            started, (rows, width) = local.start
            dt = time.perf_counter() - started
            with probe.lock:
                key = "decode" if width == 1 else "prefill"
                probe.t[key] += dt
                probe.n[key] += rows * width
                probe.steps[key] += 1

        model.register_forward_pre_hook(before, with_kwargs=True)
        model.register_forward_hook(after, with_kwargs=True)

    def reset(self) -> None:
        self.t = {"decode": 0.0, "prefill": 0.0}
        self.n = {"decode": 0, "prefill": 0}
        self.steps = {"decode": 0, "prefill": 0}


class Counted:
    """The backend, counting calls and keeping every reply."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls, self.replies = inner, 0, []

    def generate(self, requests: Any) -> Any:
        results = self.inner.generate(requests)
        self.calls += 1
        self.replies.extend((r.prompt_tokens, r.text) for r in results)
        return results

    def forget(self, key: str) -> None:
        self.inner.forget(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def play_round(backend: Any, probe: Probe, episodes: int, max_steps: int) -> dict[str, Any]:
    from negotiation.llm.backend import LLMBackend

    class Wrapped(LLMBackend):
        name = "counted"

        def __init__(self) -> None:
            super().__init__()
            self.counted = Counted(backend)

        def generate(self, requests):  # type: ignore[no-untyped-def]
            return self.counted.generate(requests)

        def forget(self, key: str) -> None:
            self.counted.forget(key)

    wrapped = Wrapped()
    scenario = load_scenario(PRESET, max_steps=max_steps)
    jobs = [
        (scenario, lambda h, s=seed: get_policy("llm", seed=s, backend=h, mode="free"), seed)
        for seed in range(episodes)
    ]
    probe.reset()
    started = time.perf_counter()
    results = run_episodes_concurrently(jobs, backend=wrapped)
    wall = time.perf_counter() - started
    decisions = sum(len(r.steps) for r in results)
    counted = wrapped.counted
    return {
        "wall": wall,
        "decisions": decisions,
        "calls": counted.calls,
        "requests": len(counted.replies),
        "replies": sorted(counted.replies),
        "t": dict(probe.t),
        "n": dict(probe.n),
        "steps": dict(probe.steps),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--max-steps", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--variants", default=",".join(DEFAULT_VARIANTS), help=f"of: {', '.join(VARIANTS)}"
    )
    args = parser.parse_args()
    import torch

    backends = {
        label: get_backend("transformers", "smollm2", **VARIANTS[label])
        for label in args.variants.split(",")
    }
    probes = {label: Probe(b.model) for label, b in backends.items()}
    print(
        f"{args.episodes} SmolLM2 buyer episodes at once on {PRESET}, {args.max_steps} "
        f"decisions each; torch threads {torch.get_num_threads()}, cpus {os.cpu_count()}"
    )
    first: list[Any] | None = None
    for round_ in range(args.rounds):
        for label, backend in backends.items():
            load = os.getloadavg()[0]
            r = play_round(backend, probes[label], args.episodes, args.max_steps)
            same = (
                ""
                if first is None
                else ("same replies" if r["replies"] == first else "REPLIES DIFFER")
            )
            first = first if first is not None else r["replies"]
            t, n, steps = r["t"], r["n"], r["steps"]
            print(
                f"  round {round_} {label:>11}: {r['wall']:6.1f} s, "
                f"{r['decisions'] / r['wall']:.3f} decisions/s, {r['calls']} calls "
                f"({r['requests'] / max(1, r['calls']):.1f} rows each); decode {t['decode']:.1f} s "
                f"{steps['decode']} steps {n['decode']} row-tokens "
                f"({n['decode'] / max(1, steps['decode']):.2f} rows/step, "
                f"{n['decode'] / max(1e-9, t['decode']):.1f} row-tokens/s); prefill "
                f"{t['prefill']:.1f} s {n['prefill']} positions "
                f"({n['prefill'] / max(1e-9, t['prefill']):.0f}/s); load {load:.2f} {same}",
                flush=True,
            )


if __name__ == "__main__":
    main()

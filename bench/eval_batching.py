"""LLM evaluation episodes: the old lock-step batches against the rolling batch.

Before, an evaluation's LLM lane played its episodes in lock-step batches of
LLM_BATCH_EPISODES: each batch started together and the next waited for its slowest
episode, so progress, cancel and the outcomes' storing moved per batch. Now up to
LLM_BATCH_EPISODES play at once and a new one starts as each ends
(negotiation.evaluation._run_llm_batched): this prints, interleaved, rounds of each on the
same jobs and one model: wall time, episodes a second, the model's calls and their mean
batch size, and the ratio.

    PYTHONPATH=$PWD .venv/bin/python bench/eval_batching.py [--model FOLDER] [--episodes 128]

Without --model a tiny random GPT-2 is built (tests/llm_models.py: CPU, noise replies);
``--latency A,B`` adds A + B x batch seconds to every model call (a GPU-like cost, where
a call's time hardly grows with its batch).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from negotiation.evaluation import LLM_BATCH_EPISODES
from negotiation.interfaces.concurrent import run_episodes_concurrently
from negotiation.llm import resolve_backend
from negotiation.llm.backend import LLMBackend
from negotiation.llm.batching import BatchingBackend
from negotiation.players import build_policy
from negotiation.scenarios import load_scenario


class Slowed(LLMBackend):
    """The model, each call taking ``a + b x batch`` seconds more."""

    name = "slowed"

    def __init__(self, inner: LLMBackend, a: float, b: float) -> None:
        super().__init__()
        self.inner, self.a, self.b = inner, a, b

    def generate(self, requests):
        time.sleep(self.a + self.b * len(requests))
        return self.inner.generate(requests)


def jobs(model: str, scenario: Any, n: int) -> list:
    snapshot = {"policy": "llm", "backend": "transformers", "model": model}
    return [(scenario, lambda b, s=seed: build_policy(snapshot, s, b), seed) for seed in range(n)]


def lockstep(batcher: BatchingBackend, work: list) -> None:
    for start in range(0, len(work), LLM_BATCH_EPISODES):
        run_episodes_concurrently(
            work[start : start + LLM_BATCH_EPISODES], backend=batcher, record_steps=False
        )


def rolling(batcher: BatchingBackend, work: list) -> None:
    ended = []
    run_episodes_concurrently(
        work,
        backend=batcher,
        record_steps=False,
        max_workers=LLM_BATCH_EPISODES,
        on_done=lambda i, r, p: ended.append(i),
    )
    assert len(ended) == len(work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a transformers model folder (default: a tiny one)")
    parser.add_argument("--episodes", type=int, default=2 * LLM_BATCH_EPISODES)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenario", default="bilateral")
    parser.add_argument("--latency", default="", help="A,B: A + B x batch s per call")
    args = parser.parse_args()
    model = args.model
    if model is None:
        from tests.llm_models import build_tiny_model

        model = str(build_tiny_model(Path(tempfile.mkdtemp()) / "gpt2"))
    inner = resolve_backend("transformers", model)
    if args.latency:
        a, b = (float(x) for x in args.latency.split(","))
        inner = Slowed(inner, a, b)
    scenario = load_scenario(args.scenario)
    work = jobs(model, scenario, args.episodes)
    rolling(BatchingBackend(inner), work[:8])  # warm: the model loaded, kernels built
    seen: dict[str, list[tuple[float, int, float]]] = {"lockstep": [], "rolling": []}
    for _ in range(args.rounds):
        for name, play in (("lockstep", lockstep), ("rolling", rolling)):
            batcher = BatchingBackend(inner)
            t0 = time.perf_counter()
            play(batcher, work)
            wall = time.perf_counter() - t0
            sizes = batcher.stats.batch_sizes
            seen[name].append((wall, len(sizes), statistics.fmean(sizes)))
            print(
                f"{name:8} {wall:7.2f} s  {len(work) / wall:6.2f} ep/s  "
                f"{len(sizes):5} calls, mean batch {statistics.fmean(sizes):5.1f}",
                flush=True,
            )
    walls = {k: statistics.median(w for w, _, _ in v) for k, v in seen.items()}
    ratio = walls["rolling"] / walls["lockstep"]
    print(
        f"\n{len(work)} episodes of {args.scenario}, {LLM_BATCH_EPISODES} at once, "
        f"median of {args.rounds}: lockstep {walls['lockstep']:.2f} s, rolling "
        f"{walls['rolling']:.2f} s, rolling/lockstep wall {ratio:.3f}"
        f"; load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()

"""Live single-episode decision latency of the SmolLM2 buyer, several code paths side by
side in ONE run: each path is a worker process (its own model, its own machine probes)
and the episodes are interleaved (seed 0 on every path, then seed 1, ...), so a machine
whose load moves shifts every path alike; compare the ratios, and say the load.

A path is a backend on a source tree: this checkout, or ``--today REF`` (a git ref whose
code is unpacked with ``git archive``: the prompts, cache and decoder as they were). Each
worker plays ``bilateral`` episodes one at a time (free mode, the policy's own
``max_tokens``), the game's real prompts, and reports per decision: its latency (the
wall time of the backend's generate), prompt tokens computed and reused, reply tokens,
and for transformers every forward pass (tokens fed, seconds) and the jump-forward drafts
kept. From those: prefill tokens/s (the pass over a turn's new tokens) and decode
tokens/s (one-token passes), each as a fraction of the worker's own matmul FLOP/s and
copy-bandwidth probes, and the time outside the model (grammar masks, tokenizing, cache
copies, Python).

For llama.cpp every evaluation is timed instead (tokens fed, seconds); its decode bound
is the model's tensor bytes as stored (``llama_model_size``: every weight is read once
per token) over the copy probe.

Usage (what the latency target is read from; quiet machine):
  PYTHONPATH=$PWD .venv/bin/python bench/llm_live.py --episodes 4 --max-steps 8 \
      [--today 73ba0f6] [--llamacpp-site VENV/lib/python3.11/site-packages] \
      [--paths today,transformers,today-llamacpp,llamacpp]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trees import export

from negotiation.llm.decoding import DRAFT_MAX  # the most tokens a jump-forward pass feeds

ROOT = Path(__file__).resolve().parent.parent
PRESET = "bilateral"
# The tree before issue 29's latency work (full valid list and status every turn,
# transformers' concatenating cache).
TODAY = "73ba0f6"


# ---------------------------------------------------------------------- worker side
def probes() -> tuple[float, float]:
    """(float32 matmul FLOP/s, copy bytes/s) of this process, as bench/llm.py measures."""
    import torch

    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    torch.mm(a, b)
    n, started = 0, time.perf_counter()
    while time.perf_counter() - started < 2.0:
        torch.mm(a, b)
        n += 1
    flops = n * 2 * 1024**3 / (time.perf_counter() - started)
    src = torch.ones(512 * 2**20 // 4)
    dst = torch.empty_like(src)
    dst.copy_(src)
    n, started = 0, time.perf_counter()
    while time.perf_counter() - started < 2.0:
        dst.copy_(src)
        n += 1
    return flops, n * 2 * src.numel() * 4 / (time.perf_counter() - started)


def worker(backend_name: str) -> None:
    """Plays the episodes the parent names on stdin ("seed max_steps"), one JSON line
    of decisions each on stdout."""
    if os.environ.get("LLM_LIVE_EXTRA_SITE"):
        sys.path.append(os.environ["LLM_LIVE_EXTRA_SITE"])
    from negotiation import get_policy, load_scenario, run_episode
    from negotiation.llm import LLMBackend
    from negotiation.llm.registry import get_backend

    started = time.perf_counter()
    options = {"device": "cpu"} if backend_name == "transformers" else {}
    backend = get_backend(backend_name, "smollm2", **options)
    load_s = time.perf_counter() - started
    passes: list[tuple[int, float]] = []
    model = getattr(backend, "model", None)
    params = weight_bytes = 0
    if backend_name == "llamacpp":  # every evaluation: tokens fed, seconds
        import llama_cpp

        llm, evaluate = backend.llm, backend.llm.eval

        def timed_eval(tokens):
            began = time.perf_counter()
            evaluate(tokens)
            passes.append((len(tokens), time.perf_counter() - began))

        llm.eval = timed_eval
        params = llama_cpp.llama_model_n_params(llm.model)
        weight_bytes = llama_cpp.llama_model_size(llm.model)  # every tensor, as stored
    elif model is not None:  # every forward pass: tokens fed, seconds
        clock: list[float] = []
        model.register_forward_pre_hook(lambda *_: clock.append(time.perf_counter()))
        model.register_forward_hook(
            lambda _m, args, kwargs, _out: passes.append(
                (kwargs["input_ids"].shape[1], time.perf_counter() - clock.pop())
            ),
            with_kwargs=True,
        )
        params = sum(p.numel() for p in model.parameters())
        weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())

    class Timed(LLMBackend):
        name = "timed"

        def __init__(self) -> None:
            super().__init__()
            self.decisions: list[dict[str, Any]] = []

        def generate(self, requests):
            first, drafts = len(passes), list(getattr(backend, "drafts", (0, 0)))
            began = time.perf_counter()
            results = backend.generate(requests)
            wall = time.perf_counter() - began
            now = getattr(backend, "drafts", (0, 0))
            for r in results:
                self.decisions.append(
                    {
                        "latency": wall,
                        "prompt": r.prompt_tokens,
                        "reused": r.cached_tokens,
                        "reply": r.completion_tokens,
                        "drafted": now[0] - drafts[0],
                        "kept": now[1] - drafts[1],
                        "passes": passes[first:],
                    }
                )
            return results

        def forget(self, cache_key: str) -> None:
            backend.forget(cache_key)

    flops, bandwidth = probes()
    # One throwaway decision: the shared rules prefix is computed once per process.
    warm = Timed()
    run_episode(load_scenario(PRESET, max_steps=1), get_policy("llm", seed=99, backend=warm), 99)
    print(
        json.dumps(
            {
                "ready": True,
                "load_s": load_s,
                "flops": flops,
                "bandwidth": bandwidth,
                "params": params,
                "weight_bytes": weight_bytes,
            }
        ),
        flush=True,
    )
    for line in sys.stdin:
        seed, steps = map(int, line.split())
        timed = Timed()
        policy = get_policy("llm", seed=seed, backend=timed)
        result = run_episode(load_scenario(PRESET, max_steps=steps), policy, seed)
        invalid = sum(not s.valid for s in result.steps)
        print(json.dumps({"decisions": timed.decisions, "invalid": invalid}), flush=True)


# ---------------------------------------------------------------------- parent side
@dataclass
class Lane:
    label: str
    backend: str
    source: Path
    extra_path: str = ""
    proc: Any = None
    info: dict[str, Any] = field(default_factory=dict)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    invalid: int = 0

    def start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.source)
        env["LLM_LIVE_EXTRA_SITE"] = self.extra_path  # after the venv's own packages
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", self.backend],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=self.source,
        )

    def ready(self) -> None:
        self.info = self._read()

    def play(self, seed: int, steps: int) -> None:
        self.proc.stdin.write(f"{seed} {steps}\n")
        self.proc.stdin.flush()
        out = self._read()
        self.decisions.extend(out["decisions"])
        self.invalid += out["invalid"]

    def _read(self) -> dict[str, Any]:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.label}: the worker ended (see its stderr above)")
        return json.loads(line)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(60)


def pct(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def report(lanes: list[Lane]) -> None:
    base = lanes[0]
    base_p50 = pct([d["latency"] for d in base.decisions], 50)
    print(
        f"\nLive single {PRESET} episodes (decision latency = the generate a decision "
        "waited for; ratios against the first path):"
    )
    for p in lanes:
        ds = p.decisions
        if not ds:
            print(f"  {p.label:>22}: no decisions reached its backend")
            continue
        lat = [d["latency"] for d in ds]
        new = statistics.mean(d["prompt"] - d["reused"] for d in ds)
        reply = statistics.mean(d["reply"] for d in ds)
        p50 = pct(lat, 50)
        print(
            f"  {p.label:>22}: p50 {p50:5.2f} s, p95 {pct(lat, 95):5.2f} s "
            f"(x{p50 / base_p50:4.2f} of {base.label}), {len(ds)} decisions, "
            f"{new:5.0f} prompt tokens computed and {reply:3.0f} reply tokens each, "
            f"invalid {p.invalid / max(1, len(ds)):.1%}, load {p.info['load_s']:.1f} s"
        )
        if not ds[0]["passes"]:
            continue
        # A pass over more tokens than a draft holds is a prefill (a turn's new tokens, or
        # a system prompt computed once to be shared); 1 token: decode; else a draft.
        # llama.cpp drafts nothing: every pass over more than one token is a prefill.
        passes = [pas for d in ds for pas in d["passes"]]
        longest_draft = 1 if p.backend == "llamacpp" else DRAFT_MAX
        prefill = [(n, s) for n, s in passes if n > longest_draft]
        ones = [s for n, s in passes if n == 1]
        drafts = [(n, s) for n, s in passes if 1 < n <= longest_draft]
        model_s = sum(s for d in ds for _, s in d["passes"])
        tokens = sum(n for n, _ in prefill)
        prefill_rate = tokens / sum(s for _, s in prefill)
        decode_rate = len(ones) / sum(ones) if ones else 0.0
        kept = sum(d["kept"] for d in ds)
        info = p.info
        print(
            f"  {'':>22}  per decision: prefill {tokens / len(ds):4.0f} tokens in "
            f"{sum(s for _, s in prefill) / len(ds):4.2f} s; {len(ones) / len(ds):4.1f} "
            f"one-token passes in {sum(ones) / len(ds):4.2f} s; {len(drafts) / len(ds):3.1f} "
            f"draft passes in {sum(s for _, s in drafts) / len(ds):4.2f} s "
            f"({kept / len(ds):3.0f} reply tokens forced); outside the model "
            f"{(sum(lat) - model_s) / len(ds):4.2f} s"
        )
        print(
            f"  {'':>22}  prefill {prefill_rate:6.1f} tokens/s = "
            f"{prefill_rate * 2 * info['params'] / info['flops']:5.1%} of its matmul probe "
            f"({info['flops'] / 1e9:.0f} GFLOP/s); decode {decode_rate:5.1f} tokens/s = "
            f"{decode_rate * info['weight_bytes'] / info['bandwidth']:5.1%} of its copy probe "
            f"({info['bandwidth'] / 1e9:.1f} GB/s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--today", default=TODAY, help="git ref of today's path ('' : none)")
    parser.add_argument(
        "--llamacpp-site",
        default="",
        help="site-packages holding llama_cpp (its own venv); adds a llamacpp path",
    )
    parser.add_argument(
        "--paths",
        default="today,transformers,llamacpp",
        help="which of today (--today's transformers), transformers, today-llamacpp "
        "(--today's llamacpp) and llamacpp (with --llamacpp-site) to play",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    compare(args.episodes, args.max_steps, args.today, args.llamacpp_site, args.paths.split(","))


def compare(
    episodes: int,
    max_steps: int,
    today: str,
    llamacpp_site: str,
    paths: Sequence[str] = ("today", "transformers", "llamacpp"),
) -> None:
    """Plays the lanes interleaved and prints their figures (bench/llm.py calls this).
    ``paths``: today (``today``'s transformers), transformers, today-llamacpp and
    llamacpp; the today paths need ``today``, the llamacpp paths ``llamacpp_site``."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = export(today, Path(tmp) / "tree") if today else None
        lanes = []
        if tree is not None and "today" in paths:
            lanes.append(Lane(f"today ({today})", "transformers", tree))
        if "transformers" in paths:
            lanes.append(Lane("transformers (this tree)", "transformers", ROOT))
        if llamacpp_site and tree is not None and "today-llamacpp" in paths:
            lanes.append(Lane(f"llamacpp ({today})", "llamacpp", tree, llamacpp_site))
        if llamacpp_site and "llamacpp" in paths:
            lanes.append(Lane("llamacpp (this tree)", "llamacpp", ROOT, llamacpp_site))
        try:
            for lane in lanes:  # one at a time: each probes the machine alone
                lane.start()
                lane.ready()
            print(f"load average at start: {os.getloadavg()}")
            for seed in range(episodes):
                for lane in lanes:
                    lane.play(seed, max_steps)
            print(f"load average at end: {os.getloadavg()}")
            report(lanes)
        finally:
            for lane in lanes:
                lane.stop()


if __name__ == "__main__":
    main()

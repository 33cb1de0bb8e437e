"""Resident memory of a CPU model process playing SmolLM2-buyer episodes under three
allocation rules (negotiation/llm/freed_memory.py), in ONE run: glibc's default, a fixed
128 KiB mmap threshold, and the backend's own (the default, trimmed after each call). Each
runs in its own fresh process (the threshold is process-wide and one-way), the same
episodes (``bilateral``, free mode, seeds
0..N-1, ``--at-once`` in play through one batching backend).

Printed per process: wall time, decisions, peak and final resident memory (sampled every
0.5 s), and how much of the last sample the key/value store accounts for; then the
ratios. Quiet machine for the wall times; the memory figures do not depend on load.

Usage: PYTHONPATH=$PWD:$PWD/bench .venv/bin/python bench/llm_memory.py \
           [--episodes 24] [--at-once 12] [--preset bilateral] [--rules "glibc default,..."]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time

MODES = ("glibc default", "fixed threshold", "trim each call")


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


def child(mode: str, preset: str, episodes: int, at_once: int) -> None:
    import negotiation.llm.transformers_backend as tb

    if mode != MODES[2]:
        tb.release_freed_memory = lambda: False  # no trim: glibc's own rule, or the fixed one
    if mode == MODES[1]:
        from negotiation.llm.freed_memory import fix_mmap_threshold

        assert fix_mmap_threshold()
    from llm import decision_rates, play  # bench/, beside this file

    from negotiation.llm.registry import get_backend

    backend = get_backend("transformers", "smollm2", device="cpu")
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.5):
            samples.append(rss_mib())

    loaded = rss_mib()
    threading.Thread(target=sample, daemon=True).start()
    run = play(backend, preset, list(range(episodes)), concurrent=True, max_workers=at_once)
    done.set()
    decisions, _, _ = decision_rates(run.results)
    config = backend.model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    token_bytes = (  # keys and values of every layer, as the store holds them
        config.num_hidden_layers
        * 2
        * config.num_key_value_heads
        * head_dim
        * next(backend.model.parameters()).element_size()
    )
    kv_mib = (backend.kv.tokens() if backend.kv is not None else 0) * token_bytes / 2**20
    print(
        json.dumps(
            {
                "wall": run.wall,
                "decisions": decisions,
                "loaded": loaded,
                "peak": max(samples, default=loaded),
                "final": rss_mib(),
                "kv": kv_mib,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=24)
    parser.add_argument("--at-once", type=int, default=12)
    parser.add_argument("--preset", default="bilateral")
    parser.add_argument(
        "--rules", default=",".join(MODES), help=f"which of: {', '.join(MODES)} (the first: 1.00)"
    )
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.preset, args.episodes, args.at_once)
        return
    print(
        f"SmolLM2 buyers (free mode) on {args.preset}: {args.episodes} episodes, "
        f"{args.at_once} at once, each allocation rule in a fresh process"
    )
    rules = args.rules.split(",")
    if unknown := set(rules) - set(MODES):
        parser.error(f"unknown rules {sorted(unknown)}: choose from {', '.join(MODES)}")
    figures = {}
    for mode in rules:
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, __file__, "--child", mode, *sys.argv[1:]],
            capture_output=True,
            text=True,
            check=True,
        )
        f = figures[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"  {mode:>16}: play {f['wall']:6.1f} s ({time.perf_counter() - started:5.1f} s "
            f"with loading), {f['decisions']} decisions; resident memory after loading "
            f"{f['loaded'] / 1024:5.2f} GiB, peak {f['peak'] / 1024:5.2f} GiB, at the end "
            f"{f['final'] / 1024:5.2f} GiB (of which {f['kv'] / 1024:4.2f} GiB in the "
            f"key/value store)"
        )
    old = figures[rules[0]]
    for mode in rules[1:]:
        new = figures[mode]
        print(
            f"  {mode} / {rules[0]}: peak x{new['peak'] / old['peak']:.2f}, at the end "
            f"x{new['final'] / old['final']:.2f}, play time x{new['wall'] / old['wall']:.2f}"
        )


if __name__ == "__main__":
    main()

"""Engine benchmark: steps/s of engine + policy per preset and policy (one core), and per
preset a table of mean score (95 % bootstrap CI), deal rate, buyer_share and mutual_loss.

Usage: .venv/bin/python bench/engine.py [--seeds 200] [--presets a,b] [--policies x,y]
       [--baseline REF [--repeats 5]]

``--baseline REF`` (a git commit, e.g. ``main~3``) also times that commit's engine on the
same episodes in this same run, alternating the two ``--repeats`` times and keeping each
side's best, so other load on the machine hits both alike; it prints before/after steps/s
and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from trees import export, run_json

from negotiation import run_episode
from negotiation.evaluation import headless_policies
from negotiation.stats import bootstrap_mean_ci

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_PRESETS = (
    "easy_negotiation",
    "medium_adversarial",
    "hard_arena",
    "bilateral",
    "bilateral_cooperative",
    "bilateral_deceptive",
    "bilateral_distressed",
)


# Runs in a subprocess inside the baseline's source tree: CPU seconds for the episodes,
# after one untimed episode (seed ``seeds``, outside the timed range) has imported the
# policy's modules and loaded any compiled code, so both trees are timed in steady state.
_TIMER = """
import json, sys, time
from negotiation import run_episode
preset, policy, seeds = sys.argv[1], sys.argv[2], int(sys.argv[3])
run_episode(preset, policy, seeds, record_steps=False)
c0 = time.process_time()
steps = sum(int(run_episode(preset, policy, s, record_steps=False).metrics["steps"])
            for s in range(seeds))
print(json.dumps({"steps": steps, "cpu": time.process_time() - c0}))
"""


def _timed(tree: Path, preset: str, policy: str, seeds: int) -> tuple[int, float]:
    row = run_json(tree, _TIMER, preset, policy, seeds)
    return int(row["steps"]), float(row["cpu"])


def compare(ref: str, presets: list[str], policies: list[str], seeds: int, repeats: int) -> None:
    """Before (ref) and after (this tree) steps/s on one core, measured alternately."""
    print(f"\n## Before/after: {ref} vs this tree ({repeats} alternating runs, best of each)")
    print(
        f"{'preset':24s} {'policy':16s} {'before steps/s':>15s} {'after steps/s':>14s} "
        f"{'after/before':>12s}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        export(ref, base)
        for preset in presets:
            for pol in policies:
                best = {"before": 0.0, "after": 0.0}
                for _ in range(repeats):
                    for side, tree in (("before", base), ("after", ROOT)):
                        steps, cpu = _timed(tree, preset, pol, seeds)
                        best[side] = max(best[side], steps / cpu if cpu > 0 else 0.0)
                ratio = best["after"] / best["before"] if best["before"] else float("nan")
                print(
                    f"{preset:24s} {pol:16s} {best['before']:15.0f} {best['after']:14.0f} "
                    f"{ratio:12.2f}"
                )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--presets", default=",".join(DEFAULT_PRESETS))
    # Rule policies only: bench/llm.py measures the LLM buyer; a human needs a person.
    ap.add_argument("--policies", default=",".join(headless_policies()))
    ap.add_argument("--baseline", help="git commit to time against (before/after)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    presets = [p for p in args.presets.split(",") if p]
    policies = [p for p in args.policies.split(",") if p]
    if args.baseline:
        compare(args.baseline, presets, policies, args.seeds, args.repeats)
        return

    print(f"# Engine benchmark: {args.seeds} seeds per (preset, policy); single process")
    speed_rows = []
    tables: dict[str, list[tuple]] = {}
    for preset in presets:
        for pol in policies:
            t0 = time.perf_counter()
            c0 = time.process_time()
            results = [run_episode(preset, pol, s, record_steps=False) for s in range(args.seeds)]
            dt = time.perf_counter() - t0
            cpu = time.process_time() - c0
            steps = sum(int(r.metrics["steps"]) for r in results)
            speed_rows.append(
                (
                    preset,
                    pol,
                    steps,
                    dt,
                    steps / dt if dt > 0 else 0.0,
                    steps / cpu if cpu > 0 else 0.0,
                )
            )
            scores = [r.score for r in results]
            ci = bootstrap_mean_ci(scores)
            lo, hi = ci.low, ci.high
            m = statistics.mean
            tables.setdefault(preset, []).append(
                (
                    pol,
                    m(scores),
                    lo,
                    hi,
                    m(float(r.metrics["deal_rate"]) for r in results),
                    m(float(r.metrics["buyer_share"]) for r in results),
                    m(float(r.metrics["mutual_loss"]) for r in results),
                    m(float(r.metrics["fulfilment_rate"]) for r in results),
                    m(float(r.metrics["invalid_action_rate"]) for r in results),
                )
            )

    print("\n## Throughput (engine + policy, resets included; one process = one core)")
    print("# steps/s(wall) is disturbed by other load; steps/s(cpu) uses this process's CPU time")
    print(
        f"{'preset':24s} {'policy':16s} {'steps':>8s} {'seconds':>8s} "
        f"{'steps/s(wall)':>14s} {'steps/s(cpu)':>13s}"
    )
    for preset, pol, steps, dt, sps, cps in speed_rows:
        print(f"{preset:24s} {pol:16s} {steps:8d} {dt:8.2f} {sps:14.0f} {cps:13.0f}")

    for preset, rows in tables.items():
        print(f"\n## {preset}")
        print(
            f"{'policy':16s} {'score':>7s} {'95% CI':>17s} {'deal':>6s} {'share':>6s} "
            f"{'m.loss':>6s} {'fulfil':>6s} {'invalid':>7s}"
        )
        for pol, mean, lo, hi, deal, share, ml, ful, inv in rows:
            print(
                f"{pol:16s} {mean:7.3f} [{lo:6.3f}, {hi:6.3f}] {deal:6.3f} {share:6.3f} "
                f"{ml:6.3f} {ful:6.3f} {inv:7.3f}"
            )


if __name__ == "__main__":
    main()

"""Engine benchmark: steps/s of engine + policy per preset and policy (one core), and per
preset a table of mean score (95 % bootstrap CI), deal rate, buyer_share and mutual_loss.

Usage: .venv/bin/python bench/engine.py [--seeds 200] [--presets a,b] [--policies x,y]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from negotiation import list_policies, run_episode

DEFAULT_PRESETS = (
    "easy_negotiation",
    "medium_adversarial",
    "hard_arena",
    "bilateral",
    "bilateral_cooperative",
    "bilateral_deceptive",
    "bilateral_distressed",
)


def bootstrap_ci(xs: list[float], n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    if len(xs) < 2:
        return (xs[0], xs[0]) if xs else (0.0, 0.0)
    rng = random.Random(seed)
    n = len(xs)
    means = sorted(sum(rng.choices(xs, k=n)) / n for _ in range(n_boot))
    return means[int(0.025 * n_boot)], means[int(0.975 * n_boot) - 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--presets", default=",".join(DEFAULT_PRESETS))
    rule_policies = [p for p in list_policies() if p != "llm"]  # bench/llm.py measures it
    ap.add_argument("--policies", default=",".join(rule_policies))
    args = ap.parse_args()
    presets = [p for p in args.presets.split(",") if p]
    policies = [p for p in args.policies.split(",") if p]

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
            lo, hi = bootstrap_ci(scores)
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

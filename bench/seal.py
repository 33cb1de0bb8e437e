"""Sealing a large evaluation: how long its league tables take and how much memory, from
the outcomes as the seal reads them (packed pieces, unpacked), on this tree and, with
``--baseline REF``, on that commit's in the same run.

The outcomes are synthetic but shaped as an evaluation's: buyers x supplier line-ups x
seeds on one scenario, every buyer on a seed seeing one world (paired), scores drawn from
a seeded generator. Each tree runs in its own process; printed per tree: seconds to unpack
the pieces and for each table (leaderboard with its bootstraps, ratings, matrix, supplier
table) in CPU seconds, so that other load on the machine barely moves them, and the
process's peak resident memory, then the ratios.

Usage: PYTHONPATH=$PWD .venv/bin/python bench/seal.py [--seeds 10000] [--baseline REF]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from trees import export, run_json

ROOT = Path(__file__).resolve().parents[1]
BUYERS = "expert,always_accept,random,script_concede_2pct,greedy_lowball"
LINEUPS = "cooperative,hardball,deceptive,distressed"
PIECE = 5000  # outcomes per stored piece

# Runs in a subprocess inside either tree: prints one JSON object.
_SEAL = """
import json, random, resource, sys, time
from negotiation import evaluation as ev
buyers, lineups, seeds, piece = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spec = ev.build_spec(policies=buyers, scenarios="bilateral", suppliers=lineups, seeds=seeds)
rng, pieces, batch = random.Random(0), [], []
for scenario, tier, lineup, policy, lo, hi in ev._tasks(spec):
    for seed in range(lo, hi):
        deal = rng.random() < 0.8
        batch.append(ev.Outcome(
            scenario, tier, policy, seed, rng.random() if deal else 0.0, float(deal),
            rng.random() if deal else 0.0, 0.0, 5.0, 0.0, "persona:" + lineup, lineup, 0,
            "bilateral", deal, f"world-{seed}", 0.01))
        if len(batch) == piece:
            pieces.append(ev.pack_outcomes(batch))
            batch = []
pieces.append(ev.pack_outcomes(batch))
del batch
out = {"episodes": spec.episodes, "packed_mb": sum(map(len, pieces)) / 1e6,
       "rss_before_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
t = time.process_time()
outcomes = ev.combine(spec, [o for p in pieces for o in ev.unpack_outcomes(p)])
out["unpack_s"] = time.process_time() - t
for name, call in (
    ("leaderboard_s", lambda: ev.leaderboard(outcomes)),
    ("ratings_s", lambda: ev.ratings(outcomes)),
    ("matrix_s", lambda: ev.matrix(outcomes)),
    ("suppliers_s", lambda: ev.supplier_table(outcomes, resamples=ev.BOOTSTRAP_RESAMPLES)),
):
    t = time.process_time()
    call()
    out[name] = time.process_time() - t
out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""

STAGES = ("unpack_s", "leaderboard_s", "ratings_s", "matrix_s", "suppliers_s")


def measure(tree: Path, args: argparse.Namespace) -> dict[str, float]:
    return run_json(tree, _SEAL, args.buyers, args.lineups, args.seeds, PIECE)


def show(label: str, row: dict[str, float]) -> None:
    total = sum(row[s] for s in STAGES)
    stages = "  ".join(f"{s.removesuffix('_s')} {row[s]:.1f}" for s in STAGES)
    print(
        f"{label:>10s}: {row['episodes']:,} episodes ({row['packed_mb']:.1f} MB packed); "
        f"CPU seconds: {stages}; total {total:.1f} s; peak RSS {row['peak_rss_mib']:.0f} MiB "
        f"(before unpacking {row['rss_before_mib']:.0f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10_000)
    ap.add_argument("--buyers", default=BUYERS)
    ap.add_argument("--lineups", default=LINEUPS)
    ap.add_argument("--baseline", help="git commit to compare with (before/after)")
    args = ap.parse_args()
    print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    after = measure(ROOT, args)
    show("this tree", after)
    if not args.baseline:
        return
    with tempfile.TemporaryDirectory() as tmp:
        before = measure(export(args.baseline, Path(tmp)), args)
    show(args.baseline[:10], before)
    total = {r: sum(row[s] for s in STAGES) for r, row in (("b", before), ("a", after))}
    print(
        f"after/before: total time x{total['a'] / total['b']:.2f}, "
        + ", ".join(
            f"{s.removesuffix('_s')} x{after[s] / max(before[s], 1e-9):.2f}" for s in STAGES
        )
        + f"; peak RSS x{after['peak_rss_mib'] / before['peak_rss_mib']:.2f}"
    )


if __name__ == "__main__":
    main()

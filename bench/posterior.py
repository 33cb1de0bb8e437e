"""What the expert's closing offer pays for not knowing the seller: per supplier family and
bilateral preset, how far the consistent parameter sets' lines sit from what the seller
really accepts, and what that costs in buyer share.

At its first move after the seller's patience (offer T+1) the expert offers the highest
of the consistent sets' lowest accepted offers, plus CLOSE_MARGIN and a cent
(posterior.closing_offer). This benchmark plays the expert, and on those threads reads
the truth from the hidden state (lookahead.lowest_accepted) beside the posterior's lines:

  threads     threads that reached offer T+1 with a posterior closing offer
  covered     share of them whose closing offer the true seller accepts     (must be 1)
  spread      mean (highest line / truth - 1), % of the price: the posterior's width
  p95         its 95th percentile
  median      mean (median line / truth - 1), %: near 0 when the sets sit around the truth
  need        the largest (truth / highest line - 1), %, and CLOSE_MARGIN beside it:
              the margin the truth needed beyond the highest line
  cost        mean (closing offer - truth) / (ceiling - cost): the buyer share the
              closing offer gives up against a buyer that knew the floor (share points)

Usage: .venv/bin/python bench/posterior.py [--seeds 100] [--families rule,mixed]
       [--presets bilateral,...] [--procs 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from quality import make_buyer, regenerate_tactics, scenario

from negotiation import ProcurementEnv
from negotiation.policies.expert import posterior
from negotiation.policies.expert.policy import posterior_inputs
from negotiation.policies.lookahead import lowest_accepted

PRESETS = ("bilateral", "bilateral_cooperative", "bilateral_deceptive", "bilateral_distressed")
FAMILIES = ("rule", "mixed")


def closing_reading(env: ProcurementEnv, obs) -> dict[str, float] | None:
    """The posterior's lines and closing offer beside the truth, on the one thread of a
    bilateral episode at offer T+1; None where the expert has no posterior closing offer."""
    th = next(iter(obs.threads.values()), None)
    T = obs.max_rounds
    if th is None or th.status != "open" or th.counter_price is None or th.offers != T:
        return None
    r = obs.requirements[0]
    inputs = posterior_inputs(obs, obs.suppliers[0], r, th)
    if inputs is None:
        return None
    h, anchor, floors = inputs
    lines = posterior.closing_lines(h, anchor, T, floors)
    closing = posterior.closing_from(lines, th.counter_price)
    if closing.offer is None:  # no consistent set, or none the expert closes with
        return None
    top, offer = float(lines.max()), closing.offer
    key = (th.supplier_id, th.requirement_id)
    true = lowest_accepted(
        env.world.th_hidden[key],
        env.world.hidden[th.supplier_id],
        T + 1,
        env.world.week,
        th.counter_price,
    )
    if true is None:
        return None
    cost = env.world.th_hidden[key].cost
    return {
        "covered": float(offer >= true),
        "spread": top / true - 1.0,
        "median": float(statistics.median(lines.tolist())) / true - 1.0,
        "need": true / top - 1.0,
        "cost": (offer - true) / max(1e-9, r.ceiling_unit_price - cost),
    }


def play(task: tuple[str, str, int]) -> tuple[str, str, dict[str, float] | None]:
    """One expert episode; the reading taken at its first step after the seller's patience."""
    family, preset, seed = task
    policy = make_buyer("expert", seed)
    policy.reset(seed)
    env = ProcurementEnv(scenario(family, preset))
    obs = env.reset(seed=seed)
    if family == "mixed":
        regenerate_tactics(env, random.Random(seed * 7919 + 17))
    reading = None
    while not env.done:
        if reading is None:
            reading = closing_reading(env, obs)
        obs = env.step(policy.act(obs)).observation
    return family, preset, reading


def summarise(readings: list[dict[str, float]]) -> dict[str, Any]:
    if not readings:
        return {"threads": 0}
    spread = sorted(x["spread"] for x in readings)
    return {
        "threads": len(readings),
        "covered": statistics.mean(x["covered"] for x in readings),
        "spread": statistics.mean(spread),
        "p95": spread[min(len(spread) - 1, int(0.95 * len(spread)))],
        "median": statistics.mean(x["median"] for x in readings),
        "need": max(x["need"] for x in readings),
        "cost": statistics.mean(x["cost"] for x in readings),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args()
    families = [f for f in args.families.split(",") if f]
    presets = [p for p in args.presets.split(",") if p]
    bad = [f for f in families if f not in FAMILIES] + [p for p in presets if p not in PRESETS]
    if bad or args.seeds < 1:
        ap.error(f"unknown families or presets {bad} (or --seeds < 1)")
    tasks = [(f, p, s) for f in families for p in presets for s in range(args.seeds)]
    t0 = time.perf_counter()
    with Pool(max(1, args.procs)) as pool:
        rows = pool.map(play, tasks, chunksize=8)
    cells: dict[tuple[str, str], list[dict[str, float]]] = {
        (f, p): [] for f in families for p in presets
    }
    for family, preset, reading in rows:
        if reading is not None:
            cells[(family, preset)].append(reading)
    print(
        f"# {len(tasks)} expert episodes in {time.perf_counter() - t0:.0f} s; CLOSE_MARGIN = "
        f"{100 * posterior.CLOSE_MARGIN:.2f} % + {posterior.CLOSE_CENTS:.2f}"
    )
    head = f"{'family':7}{'preset':24}{'threads':>8}{'covered':>9}{'spread%':>9}{'p95%':>8}"
    print(head + f"{'median%':>9}{'need%':>8}{'cost':>8}")
    out = {}
    for (family, preset), readings in cells.items():
        s = summarise(readings)
        out[f"{family}/{preset}"] = s
        if not s["threads"]:
            print(f"{family:7}{preset:24}{0:>8}")
            continue
        print(
            f"{family:7}{preset:24}{s['threads']:>8}{s['covered']:>9.3f}"
            f"{100 * s['spread']:>9.3f}{100 * s['p95']:>8.3f}{100 * s['median']:>9.3f}"
            f"{100 * s['need']:>8.3f}{s['cost']:>8.4f}"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"seeds": args.seeds, "cells": out}, indent=1))
        print(f"# figures written to {args.json}")


if __name__ == "__main__":
    main()

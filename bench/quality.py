"""Negotiation quality: how well each buyer bargains, per preset, against the oracle.

For every preset and buyer (the expert, the scripted buyers, the field's negotiators as
buyers where negmas is installed (``negmas_*``, policies/field_buyer.py: negmas's
time-based and tit-for-tat negotiators and four ANAC agents), always_accept, random, the
measurement-only ``oracle``, which reads hidden state, and ``oracle_safe_open``, the same
oracle never opening under the expert's safe bilateral line, which bounds what a buyer
that cannot tell the persona before its first offer and keeps every deal can reach) it
plays N seeds with the bare engine loop and prints a table per preset: each figure is a
mean with its 95 % percentile bootstrap interval (negotiation/stats.py).

  buyer_share      share of the zone of agreement the buyer kept, per deal   (higher)
  deal_rate        requirements with a contract                              (higher)
  mutual_loss      requirements with a zone of agreement but no deal         (lower)
  rounds_per_deal  negotiation rounds in the thread of each deal             (lower)
  score            the episode score                                         (higher)
  surplus          buyer_share with a failed deal counted 0, over the episodes where a
                   deal was possible (the seller's lowest acceptable price, its floor,
                   at or under the ceiling)                                  (higher)
  lost             of those, the share without a deal                        (lower)

buyer_share and rounds_per_deal are averaged over the episodes that made at least one
deal (an episode without a contract has no share to speak of; n says how many). "/oracle"
is the row's buyer_share (bilateral presets) or score (arena presets) over the oracle's;
"*" marks the best scripted buyer in each column, "+" the best negmas_* buyer. For the
field and held-out families a line under each table gives each buyer's loss rate over the
seeds where some buyer of the run closed a deal: the base persona's floor says a deal is
possible where a field seller may never come down to the ceiling in its horizon.

Supplier families (``--families``; tables per family and preset):

  rule    the presets as they are (the suppliers the expert was tuned against)
  mixed   HELD OUT: the same presets, but right after reset every supplier's concession
          tactic is re-drawn from wider ranges than any persona uses (regenerate_tactics)
  field   the "bilateral" preset with each field persona (negotiation/suppliers/field.py,
          third-party negotiators; needs the optional negmas packages, skipped otherwise).
          Rules for sellers the model does not explain were designed with them in view and
          some numbers chosen on their seeds from 100000 (policy.MEET, over_cap.NEAR_CAP;
          beliefs.trend_offer's share is set by principle): report on seeds 0-99999
  floor_walk, fixed_price, impatient, erratic, grudge
          HELD OUT: the "bilateral" preset (its base persona rotating with the seed over
          the four rule personas, for their hidden numbers) with the seller replaced by a
          supplier agent outside the documented model (negotiation/suppliers/heldout.py:
          stops at its floor and walks a few offers later; one fixed price; concedes fast
          and walks soon; a random walk; the rule persona itself, walking at a retracted
          offer). One number was chosen on the first four's seeds from 100000
          (expert/safe.py's ONE_PRICE_SHARE: how high a stalled ask that never moved is
          still met at once; TUNED_ON below): report on seeds 0-99999. Nothing was
          tuned on grudge (the expert's no-retraction rule came from the SmolLM2
          seller). Not in the default families. No oracle plays them (it models rule
          sellers only).

A summary at the end gives, per family and preset, expert/oracle, expert/safe-opening
oracle, safe-opening oracle/oracle (the most expert/oracle a buyer that reads only the
observation and keeps every deal can reach), the expert's and the oracle's deal rates and
the scripts whose mean score or buyer share beats the expert's (with their deal rates).

Usage: .venv/bin/python bench/quality.py [--seeds 300] [--presets a,b] [--policies x,y]
       [--families rule,mixed,field,floor_walk,...] [--seed-start S] [--procs N]
       [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from tqdm import tqdm

from negotiation import (
    ProcurementEnv,
    get_policy,
    list_policies,
    list_presets,
    load_scenario,
)
from negotiation.config import PERSONAS
from negotiation.policies.base import Policy
from negotiation.policies.field_buyer import available_field_buyers, make_field_buyer
from negotiation.policies.oracle import OraclePolicy, SafeOpenOraclePolicy
from negotiation.stats import MeanCI, bootstrap_mean_ci
from negotiation.suppliers import heldout
from negotiation.suppliers.field import available_field_strategies

ROOT = Path(__file__).resolve().parents[1]

PRESETS = (
    "bilateral_cooperative",
    "bilateral_hardball",
    "bilateral_deceptive",
    "bilateral_distressed",
    "easy_negotiation",
    "medium_adversarial",
    "hard_arena",
)
ORACLE = "oracle"
SAFE_ORACLE = "oracle_safe_open"  # the oracle held to the expert's safe bilateral opening
ORACLES = (ORACLE, SAFE_ORACLE)
SCRIPTS = tuple(p for p in list_policies() if p.startswith("script_"))
# negmas's and the Genius agents' negotiators as buyers (policies/field_buyer.py): the
# field's own reference buyers, where the optional packages are installed.
FIELD_BUYERS = tuple(available_field_buyers())
REFERENCES = (*SCRIPTS, *FIELD_BUYERS)  # the buyers the expert is measured against
POLICIES = ("expert", *SCRIPTS, *FIELD_BUYERS, "always_accept", "random", *ORACLES)
# metric -> True when higher is better
METRICS = {
    "buyer_share": True,
    "deal_rate": True,
    "mutual_loss": False,
    "rounds_per_deal": False,
    "score": True,
    "surplus": True,
    "lost": False,
}
DERIVED = ("surplus", "lost")  # computed here, not by the engine
PER_DEAL = ("buyer_share", "rounds_per_deal")  # undefined without a deal
HELD_OUT = heldout.FAMILIES  # supplier agents outside the model (suppliers/heldout.py)
# The expert's numbers chosen on a family's tuning seeds (from 100000), printed under its
# tables: the family is held out for the reported seeds (0-99999) only.
TUNED_ON = {
    "field": "policy.MEET, over_cap.NEAR_CAP",
    **{family: "safe.ONE_PRICE_SHARE" for family in heldout.AGENTS},
}
FAMILIES = ("rule", "mixed", "field", *HELD_OUT)
FIELD_PRESET = "bilateral"  # the preset the field personas play


def field_strategies() -> tuple[list[str], str | None]:
    """(the field personas that can play here, why none can)."""
    names = list(available_field_strategies())
    if not names:
        return [], "no field strategy is available (the optional negmas packages are missing)"
    return names, None


def regenerate_tactics(env: ProcurementEnv, rng: random.Random) -> None:
    """Re-draw every supplier's hidden concession tactic from ranges wider than any persona's
    (the held-out "mixed" family). Patience, prices, insult and reliability are kept;
    threads already open take the new beta too (none are open right after reset), later
    threads take it from SupplierHidden when they open."""
    for sid in sorted(env.world.hidden):
        h = env.world.hidden[sid]
        h.time_weight = rng.uniform(0.1, 0.95)
        h.reciprocity = rng.uniform(0.2, 2.0)
        h.tft_window = rng.randint(1, 4)
        h.stall_rounds = rng.randint(2, 5)
        h.beta = math.exp(rng.uniform(math.log(0.12), math.log(5.0)))
        h.quarter_pressure = rng.uniform(0.0, 0.9)
    for (sid, _rid), th in env.world.th_hidden.items():
        th.beta = env.world.hidden[sid].beta


def scenario(family: str, preset: str, seed: int = 0):
    """The scenario a (family, preset) cell plays; a field cell's preset is
    ``bilateral:<field persona>``; a held-out family's base persona turns with the seed."""
    if family in HELD_OUT:
        return load_scenario(preset, persona=PERSONAS[seed % len(PERSONAS)])
    if family == "field":
        base, persona = preset.split(":", 1)
        return load_scenario(base, persona=persona)
    return load_scenario(preset)


def oracle_class(name: str = ORACLE) -> type[Policy]:
    """An oracle's class."""
    return SafeOpenOraclePolicy if name == SAFE_ORACLE else OraclePolicy


def make_buyer(name: str, seed: int) -> Policy:
    """A fresh buyer for one episode: an oracle (not in the public registry) or a
    registered policy."""
    if name in ORACLES:
        return oracle_class(name)(seed=seed)
    if name in FIELD_BUYERS:
        return make_field_buyer(name, seed=seed)
    return get_policy(name, seed=seed)


def play(task: tuple[str, str, str, int]) -> tuple[str, str, str, int, dict[str, Any]]:
    """One episode with the bare engine loop; the oracle watches the world after reset
    (after the mixed family's re-draw, so it sees the tactics the suppliers play)."""
    family, preset, name, seed = task
    try:
        policy = make_buyer(name, seed)
        policy.reset(seed)
        env = ProcurementEnv(scenario(family, preset, seed))
        if family in HELD_OUT:
            heldout.install(env, family)
        obs = env.reset(seed=seed)
        if family == "mixed":
            regenerate_tactics(env, random.Random(seed * 7919 + 17))
        watch = getattr(policy, "watch", None)
        if watch is not None:
            watch(env)
        while not env.done:
            obs = env.step(policy.act(obs)).observation
        sc = env.score()
    except Exception as exc:  # a crashing buyer is reported, not fatal
        return family, preset, name, seed, {"error": f"{type(exc).__name__}: {exc}"[:300]}
    m = sc.metrics
    dealt = int(m["contracts"]) > 0
    row: dict[str, Any] = {k: float(m[k]) for k in METRICS if k not in DERIVED}
    for k in PER_DEAL:
        row[k] = row[k] if dealt else None
    row["invalid_actions"] = int(m["invalid_actions"])
    possible = _deal_possible(env, family)
    row["surplus"] = (row["buyer_share"] or 0.0) if possible else None
    row["lost"] = float(not dealt) if possible else None
    return family, preset, name, seed, row


def summarise(
    cell: tuple[str, str, str, list[dict[str, Any]]],
) -> tuple[str, str, str, dict[str, Any]]:
    family, preset, name, rows = cell
    ok = [r for r in rows if "error" not in r]
    out: dict[str, Any] = {k: bootstrap_mean_ci(r[k] for r in ok) for k in METRICS}
    out["episodes"] = len(ok)
    out["failed"] = len(rows) - len(ok)
    out["errors"] = sorted({r["error"] for r in rows if "error" in r})
    out["invalid_actions"] = sum(r["invalid_actions"] for r in ok)
    closable = [r["closable_lost"] for r in ok if r.get("closable_lost") is not None]
    out["closable"] = bootstrap_mean_ci(closable).to_dict() if closable else None
    return family, preset, name, out


def mark_closable(done: list[tuple[str, str, str, int, dict[str, Any]]]) -> None:
    """Where a deal was possible by the seller's floor, whether some buyer of the run
    closed one on that seed, and, if so, whether this one lost it (``closable_lost``).
    A field seller's floor is its base persona's, not the line it really accepts within
    its horizon (HardHeaded never comes down to the ceiling), so for the field family
    "lost" counts seeds no buyer could close; this counts only the demonstrably closable."""
    closed = {(f, pr, seed) for f, pr, _n, seed, row in done if row.get("buyer_share") is not None}
    for f, pr, _n, seed, row in done:
        if row.get("lost") is not None and (f, pr, seed) in closed:
            row["closable_lost"] = row["lost"]


def _deal_possible(env: ProcurementEnv, family: str) -> bool:
    """A bilateral game (one seller, one requirement) where the lowest price the seller
    ever takes is under the ceiling. Arena presets have no single seller to ask: in
    them the first supplier need not even sell the first requirement's category."""
    world = env.world
    if len(world.requirements) != 1 or len(world.suppliers) != 1:
        return False
    r, seller = world.requirements[0], world.suppliers[0]
    hid = world.th_hidden.get((seller.id, r.id)) or world.hidden_thread_now(seller.id, r)
    line = heldout.walk_line(family, hid) if family in HELD_OUT else hid.floor
    return line <= r.ceiling_unit_price


def floor_describes(family: str) -> bool:
    """Families whose sellers the floor describes (rule, mixed): "lost" says it all."""
    return family in ("rule", "mixed")


def _fmt(ci: MeanCI) -> str:
    if ci.n == 0:
        return f"{'n/a':>22s}"
    return f"{ci.mean:6.3f} [{ci.low:6.3f},{ci.high:6.3f}]"


def _ratio(a: MeanCI | None, b: MeanCI | None) -> float | None:
    if a is None or b is None or a.n == 0 or b.n == 0 or abs(b.mean) < 1e-12:
        return None
    return a.mean / b.mean


def report(
    family: str, preset: str, bilateral: bool, cells: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Prints one (family, preset) table; returns its figures for --json."""
    key = "buyer_share" if bilateral else "score"
    oracle = cells.get(ORACLE, {}).get(key)
    best: dict[str, str] = {}
    best_field: dict[str, str] = {}
    for metric, higher in METRICS.items():
        for group, into in ((SCRIPTS, best), (FIELD_BUYERS, best_field)):
            scored = [(c[metric].mean, n) for n, c in cells.items() if n in group and c[metric].n]
            if scored:
                into[metric] = (max if higher else min)(scored)[1]
    mode = "bilateral" if bilateral else "arena"
    print(f"\n## {family} / {preset} ({mode}; /oracle is {key})")
    head = "".join(f" {m:>23s}" for m in METRICS)
    print(f"{'buyer':22s}{head} {'/oracle':>8s} {'n.deal':>6s}")
    out: dict[str, Any] = {
        "mode": mode,
        "ratio_metric": key,
        "policies": {},
        "best_script": best,
        "best_field_buyer": best_field,
    }

    def mark(m: str, name: str) -> str:
        return "*" if best.get(m) == name else "+" if best_field.get(m) == name else " "

    for name, c in cells.items():
        line = "".join(f" {_fmt(c[m])}{mark(m, name)}" for m in METRICS)
        ratio = _ratio(c[key], oracle)
        rtxt = f"{ratio:8.3f}" if ratio is not None else f"{'n/a':>8s}"
        print(f"{name:22s}{line}{rtxt} {c['buyer_share'].n:6d}")
        out["policies"][name] = {
            **{m: c[m].to_dict() for m in METRICS},
            "episodes": c["episodes"],
            "failed": c["failed"],
            "errors": c["errors"],
            "invalid_actions": c["invalid_actions"],
            "vs_oracle": ratio,
            "closable": c.get("closable"),
        }
    expert = _ratio(cells.get("expert", {}).get(key), oracle)
    out["expert_vs_oracle"] = expert
    lost = [(n, c["closable"]) for n, c in cells.items() if c.get("closable")]
    if lost and not floor_describes(family):
        print(
            "lost where some buyer of this run closed a deal on the seed: "
            + ", ".join(f"{n} {cl['mean']:.3f} (n {cl['n']})" for n, cl in lost)
        )
    if family in TUNED_ON and "expert" in cells:
        print(f"expert: {TUNED_ON[family]} chosen on this family's seeds from 100000")
    out["summary"] = summary_row(key, cells)
    print(
        f"expert/oracle {key}: "
        + ("n/a (no oracle figures, or they are zero)" if expert is None else f"{expert:.3f}")
    )
    for name, c in cells.items():
        if c["failed"]:
            print(f"note: {name} crashed in {c['failed']} episode(s), left out: {c['errors'][0]}")
        if c["invalid_actions"]:
            print(f"note: {name} made {c['invalid_actions']} invalid actions")
    return out


def summary_row(key: str, cells: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """expert/oracle on ``key``, the expert's and the oracle's deal rates, and the reference
    buyers (scripts, field buyers) whose mean score, buyer share or surplus beats the
    expert's."""

    def mean(name: str, metric: str) -> float | None:
        ci = cells.get(name, {}).get(metric)
        return None if ci is None or ci.n == 0 else ci.mean

    beats: dict[str, list[str]] = {}
    for metric in ("score", "buyer_share", "surplus"):
        ref = mean("expert", metric)
        beats[metric] = [
            n
            for n in cells
            if n in REFERENCES
            and ref is not None
            and (v := mean(n, metric)) is not None
            and v > ref
        ]
    expert = cells.get("expert", {}).get(key)
    oracle = cells.get(ORACLE, {}).get(key)
    safe = cells.get(SAFE_ORACLE, {}).get(key)
    return {
        "ratio_metric": key,
        "expert_vs_oracle": _ratio(expert, oracle),
        "expert_vs_safe_oracle": _ratio(expert, safe),
        # The most exp/orc any buyer that reads only the observation and keeps every deal
        # can reach: the personas look alike until the first offer (tests/negotiation/
        # test_oracle.py), so none can open under the safe line.
        "safe_oracle_vs_oracle": _ratio(safe, oracle),
        "script_deal_rates": {n: mean(n, "deal_rate") for n in beats["buyer_share"]},
        "expert_deal_rate": mean("expert", "deal_rate"),
        "oracle_deal_rate": mean(ORACLE, "deal_rate"),
        "scripts_beating_expert": beats,
    }


def print_summary(figures: dict[str, dict[str, dict[str, Any]]]) -> None:
    def num(x: float | None, width: int) -> str:
        return f"{'n/a':>{width}s}" if x is None else f"{x:{width}.3f}"

    print("\n# Summary: expert vs oracle, and the reference buyers (scripts, negmas_*) that beat")
    print("# the expert (by mean)")
    print("# exp/safe: expert over the oracle held to the expert's safe opening (bilateral);")
    print("# safe/orc: that oracle over the free one, the most exp/orc a buyer that reads only")
    print("# the observation and keeps every deal can reach; (deal rate) after a script's name")
    print(
        f"{'family':7s} {'preset':32s} {'metric':11s} {'exp/orc':>7s} {'exp/safe':>8s} "
        f"{'safe/orc':>8s} {'exp.deal':>8s} {'orc.deal':>8s}  references beating the expert"
    )
    for family, presets in figures.items():
        for preset, fig in presets.items():
            sm = fig["summary"]
            beats = sm["scripts_beating_expert"]
            deal = sm["script_deal_rates"]
            share = [f"{n} ({num(deal[n], 0)})" for n in beats["buyer_share"]]
            who = (
                f"score: {', '.join(beats['score']) or 'none'}; "
                f"buyer_share: {', '.join(share) or 'none'}; "
                f"surplus: {', '.join(beats['surplus']) or 'none'}"
            )
            print(
                f"{family:7s} {preset:32s} {sm['ratio_metric']:11s} "
                f"{num(sm['expert_vs_oracle'], 7)} {num(sm['expert_vs_safe_oracle'], 8)} "
                f"{num(sm['safe_oracle_vs_oracle'], 8)} {num(sm['expert_deal_rate'], 8)} "
                f"{num(sm['oracle_deal_rate'], 8)}  {who}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seeds", type=int, default=300)
    ap.add_argument(
        "--seed-start",
        type=int,
        default=0,
        help="first seed (report on one range, tune on another: the expert's rules were "
        "checked on seeds from 1000)",
    )
    ap.add_argument(
        "--presets",
        default=None,
        help="comma-separated presets (default: the bilateral personas and the arena "
        "presets); a field cell is named bilateral:<field persona>, e.g. "
        "bilateral:field_tit_for_tat (default: every available one)",
    )
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument(
        "--families",
        default=None,
        help="comma-separated supplier families: rule, mixed, field, "
        + ", ".join(HELD_OUT)
        + " (default: rule,mixed, and field when a field strategy is available)",
    )
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args()
    named = [p for p in (args.presets or "").split(",") if p]
    presets = [p for p in named if ":" not in p] if named else list(PRESETS)
    field_named = [p for p in named if ":" in p]
    rule_presets = list_presets(include_llm=False)
    for p in presets:
        if p not in rule_presets:
            ap.error(f"unknown preset '{p}'; use one of {', '.join(rule_presets)}")
    policies = [p for p in args.policies.split(",") if p]
    for p in policies:
        if p not in ORACLES and p not in FIELD_BUYERS and p not in list_policies():
            ap.error(f"unknown policy '{p}'")
    if not FIELD_BUYERS:
        print("note: no negmas_* buyers: the optional negmas packages are missing")
    strategies, why_not = field_strategies()
    if args.families is None:
        families = ["rule", "mixed"] + (["field"] if strategies else [])
        if not strategies:
            print(f"note: the field family is skipped: {why_not}")
    else:
        families = [f for f in args.families.split(",") if f]
        for f in families:
            if f not in FAMILIES:
                ap.error(f"unknown family '{f}'; use {', '.join(FAMILIES)}")
    cells_of: dict[str, list[str]] = {}  # family -> its presets
    for family in families:
        if family in HELD_OUT:
            cells_of[family] = [FIELD_PRESET]
            continue
        if family != "field":
            if presets:
                cells_of[family] = list(presets)
            continue
        if not strategies:
            print(f"note: the field family is skipped: {why_not}")
            continue
        field_cells = []
        for name in strategies:
            try:
                load_scenario(FIELD_PRESET, persona=name)
            except Exception as exc:  # the persona is not wired into scenarios yet
                print(f"note: field persona '{name}' is skipped: {str(exc)[:200]}")
                continue
            field_cells.append(f"{FIELD_PRESET}:{name}")
        if field_named:
            unknown = sorted(set(field_named) - set(field_cells))
            if unknown:
                ap.error(f"unknown field cell '{unknown[0]}'; use one of {', '.join(field_cells)}")
            field_cells = field_named
        elif named:  # only rule presets were named
            continue
        if field_cells:
            cells_of[family] = field_cells
        else:
            print("note: the field family is skipped: load_scenario accepts no field persona")
    modes = {(f, p): scenario(f, p).mode == "bilateral" for f, ps in cells_of.items() for p in ps}

    def plays(family: str, preset: str, policy: str) -> bool:
        # The oracles simulate the rule suppliers' model: against a field seller they would
        # be a guess, not a reference. In the arena the safe-opening oracle is the oracle.
        if policy in ORACLES and (family == "field" or family in HELD_OUT):
            return False
        return policy != SAFE_ORACLE or modes[(family, preset)]

    if ORACLE in policies and any(f == "field" or f in HELD_OUT for f in cells_of):
        print("note: no oracle for the field and held-out families: it models rule suppliers")
    tasks = [
        (f, pr, po, s)
        for f, ps in cells_of.items()
        for pr in ps
        for po in policies
        if plays(f, pr, po)
        for s in range(args.seed_start, args.seed_start + args.seeds)
    ]
    print(
        f"# Negotiation quality: {args.seeds} seeds x {len(policies)} buyers x "
        f"{len(modes)} (family, preset) cells [{', '.join(cells_of)}] = {len(tasks)} "
        f"episodes on {args.procs} process(es)"
    )
    t0 = time.perf_counter()
    rows: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    with Pool(max(1, args.procs)) as pool:
        chunk = max(1, min(32, math.ceil(len(tasks) / (8 * max(1, args.procs)))))
        played = pool.imap_unordered(play, tasks, chunksize=chunk)
        progress = tqdm(played, total=len(tasks), desc="episodes", file=sys.stderr, miniters=50)
        done = sorted(progress, key=lambda t: t[:4])
        mark_closable(done)
        for family, preset, name, _seed, row in done:
            rows[(family, preset, name)].append(row)
        cells = [
            (f, pr, po, rows[(f, pr, po)]) for f, pr in modes for po in policies if plays(f, pr, po)
        ]
        summaries = pool.map(summarise, cells)
    print(f"# {time.perf_counter() - t0:.1f} s")
    by_cell: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for family, preset, name, summary in summaries:
        by_cell[(family, preset)][name] = summary
    figures: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for f, pr in modes:
        figures[f][pr] = report(f, pr, modes[(f, pr)], by_cell[(f, pr)])
    print_summary(figures)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"seeds": args.seeds, "families": figures, "presets": figures.get("rule", {})},
                indent=2,
            )
            + "\n"
        )
        print(f"\n# figures written to {args.json}")


if __name__ == "__main__":
    main()

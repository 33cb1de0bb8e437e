"""Fingerprint of play: every rule preset x every episode-playing rule policy x N seeds.

Prints one sha256 per preset and one over everything, from each step's action, validity,
error code, supplier response, reward and running score, and each episode's score and
metrics. A refactor that must not change play keeps every line identical:

    python bench/fingerprint.py --seeds 30 > before.txt   # on the old commit
    python bench/fingerprint.py --seeds 30 > after.txt    # on the new one
    diff before.txt after.txt

Families (``--families``, as in bench/quality.py): ``rule`` the presets, ``field`` the
bilateral preset against each field persona (where negmas is installed), ``mixed`` each
preset with every supplier's tactics re-drawn after reset as quality.py's held-out mixed
family does (cells ``mixed:<preset>``; not in the default, whose lines stay comparable).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import random
import time
from concurrent.futures import ProcessPoolExecutor

from bench.quality import regenerate_tactics
from negotiation import (
    ProcurementEnv,
    ScenarioConfig,
    get_policy,
    list_policies,
    list_presets,
    load_scenario,
    run_episode,
)
from negotiation.config import FIELD_PERSONAS
from negotiation.runner import episode_metrics, record_step

# Policies that need a person or a model to move are not part of the engine's play.
NOT_RULE = {"llm", "human"}


def _scenario(cell: str) -> ScenarioConfig:
    """``preset`` or ``preset@persona`` (a bilateral preset against another persona)."""
    preset, _, persona = cell.partition("@")
    return load_scenario(preset, persona=persona) if persona else load_scenario(preset)


def _mixed_episode(preset: str, policy: str, seed: int) -> tuple[list, float, dict]:
    """run_episode's play with every supplier's tactics re-drawn right after reset, with
    bench/quality.py's draw and seed: (steps, score, metrics)."""
    pol = get_policy(policy, seed=seed)
    pol.reset(seed)
    env = ProcurementEnv(load_scenario(preset))
    obs = env.reset(seed=seed)
    regenerate_tactics(env, random.Random(seed * 7919 + 17))
    steps = []
    while not env.done:
        res, rec = record_step(env, pol.act(obs))
        steps.append(rec)
        obs = res.observation
    sc = env.score()
    return steps, sc.score, episode_metrics(sc.metrics, pol)


def episode_digest(task: tuple[str, str, int]) -> tuple[str, str, int, str]:
    cell, policy, seed = task
    family, _, preset = cell.rpartition(":")
    if family == "mixed":
        played, score, metrics = _mixed_episode(preset, policy, seed)
    else:
        res = run_episode(_scenario(cell), policy, seed=seed)
        played, score, metrics = res.steps, res.score, res.metrics
    steps = [
        [
            s.action,
            s.valid,
            (s.error or {}).get("code"),
            s.response,
            round(s.reward, 12),
            round(s.running_score, 12),
        ]
        for s in played
    ]
    body = json.dumps([steps, round(score, 12), metrics], sort_keys=True, default=repr).encode()
    return cell, policy, seed, hashlib.sha256(body).hexdigest()


def _default_cells(families: list[str]) -> list[str]:
    presets = list_presets(include_llm=False)
    cells = list(presets) if "rule" in families else []
    if "field" in families and importlib.util.find_spec("negmas") is not None:
        cells += [f"bilateral@{p}" for p in FIELD_PERSONAS]
    if "mixed" in families:
        cells += [f"mixed:{p}" for p in presets]
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30, help="seeds 0..N-1 per cell (30)")
    ap.add_argument("--workers", type=int, default=2, help="processes (2)")
    ap.add_argument(
        "--families", default="rule,field", help="rule, field, mixed (default rule,field)"
    )
    ap.add_argument(
        "--presets",
        default="",
        help="comma-separated cells, preset, preset@persona or mixed:preset (default: "
        "those of --families)",
    )
    args = ap.parse_args()
    families = [f for f in args.families.split(",") if f]
    presets = args.presets.split(",") if args.presets else _default_cells(families)
    policies = [p for p in list_policies() if p not in NOT_RULE]
    tasks = [(pr, po, s) for pr in presets for po in policies for s in range(args.seeds)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        digests = sorted(pool.map(episode_digest, tasks, chunksize=8))
    total = hashlib.sha256()
    for preset in presets:
        h = hashlib.sha256()
        for pr, po, s, d in digests:
            if pr == preset:
                h.update(f"{po}:{s}:{d}\n".encode())
        total.update(h.digest())
        print(f"{preset:32s} {h.hexdigest()}")
    print(f"{'ALL':32s} {total.hexdigest()}")
    print(
        f"# {len(tasks)} episodes ({len(presets)} presets x {len(policies)} policies x "
        f"{args.seeds} seeds) in {time.perf_counter() - t0:.0f} s"
    )


if __name__ == "__main__":
    main()

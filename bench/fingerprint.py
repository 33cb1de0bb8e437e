"""Fingerprint of play: every rule preset x every episode-playing rule policy x N seeds.

Prints one sha256 per preset and one over everything, from each step's action, validity,
error code, supplier response, reward and running score, and each episode's score and
metrics. A refactor that must not change play keeps every line identical:

    python bench/fingerprint.py --seeds 30 > before.txt   # on the old commit
    python bench/fingerprint.py --seeds 30 > after.txt    # on the new one
    diff before.txt after.txt
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import time
from concurrent.futures import ProcessPoolExecutor

from negotiation import ScenarioConfig, list_policies, list_presets, load_scenario, run_episode
from negotiation.config import FIELD_PERSONAS

# Policies that need a person or a model to move are not part of the engine's play.
NOT_RULE = {"llm", "human"}


def _scenario(cell: str) -> ScenarioConfig:
    """``preset`` or ``preset@persona`` (a bilateral preset against another persona)."""
    preset, _, persona = cell.partition("@")
    return load_scenario(preset, persona=persona) if persona else load_scenario(preset)


def _episode_digest(task: tuple[str, str, int]) -> tuple[str, str, int, str]:
    preset, policy, seed = task
    res = run_episode(_scenario(preset), policy, seed=seed)
    steps = [
        [
            s.action,
            s.valid,
            (s.error or {}).get("code"),
            s.response,
            round(s.reward, 12),
            round(s.running_score, 12),
        ]
        for s in res.steps
    ]
    body = json.dumps(
        [steps, round(res.score, 12), res.metrics], sort_keys=True, default=repr
    ).encode()
    return preset, policy, seed, hashlib.sha256(body).hexdigest()


def _default_cells() -> list[str]:
    cells = list_presets(include_llm=False)
    if importlib.util.find_spec("negmas") is not None:
        cells += [f"bilateral@{p}" for p in FIELD_PERSONAS]
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30, help="seeds 0..N-1 per cell (30)")
    ap.add_argument("--workers", type=int, default=2, help="processes (2)")
    ap.add_argument(
        "--presets",
        default="",
        help="comma-separated cells, preset or preset@persona (every rule preset, and "
        "bilateral against each field persona where negmas is installed)",
    )
    args = ap.parse_args()
    presets = args.presets.split(",") if args.presets else _default_cells()
    policies = [p for p in list_policies() if p not in NOT_RULE]
    tasks = [(pr, po, s) for pr in presets for po in policies for s in range(args.seeds)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        digests = sorted(pool.map(_episode_digest, tasks, chunksize=8))
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

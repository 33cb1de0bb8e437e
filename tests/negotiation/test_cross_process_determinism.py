"""Workers replay episodes in other processes: trajectories must not depend on the
interpreter's string-hash seed (set iteration order)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = """
import json
from negotiation import list_presets, run_episode
out = {}
for name in list_presets(include_llm=False):
    for policy in ("expert", "random", "greedy_lowball"):
        r = run_episode(name, policy, 5)
        out[f"{name}/{policy}"] = [r.score, [s.action for s in r.steps]]
print(json.dumps(out))
"""


def _run(hash_seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", CODE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout)


def test_same_trajectories_under_different_hash_seeds() -> None:
    first, second = _run("1"), _run("2")
    assert first.keys() == second.keys()
    for key in first:
        assert first[key] == second[key], f"{key} differs between processes"

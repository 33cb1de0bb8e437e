"""Helpers for tests of the expert: the held-out tactic re-draw and a played episode."""

from __future__ import annotations

import math
import random

from negotiation import ProcurementEnv, get_policy, load_scenario


def redraw_tactics(env: ProcurementEnv, rng: random.Random) -> None:
    """Concession tactics from ranges wider than any persona's (as bench/quality.py's
    held-out "mixed" family), for checks that must hold off the personas' ranges."""
    for h in env.world.hidden.values():
        h.time_weight, h.reciprocity = rng.uniform(0.1, 0.95), rng.uniform(0.2, 2.0)
        h.tft_window, h.quarter_pressure = rng.randint(1, 4), rng.uniform(0.0, 0.9)
        h.beta = math.exp(rng.uniform(math.log(0.12), math.log(5.0)))


def play_expert(preset: str, seed: int, *, redraw: bool = False) -> tuple[ProcurementEnv, int]:
    """One episode played to the end by the expert, every action valid: the env and the
    week it started in (a bilateral thread's only week)."""
    env = ProcurementEnv(load_scenario(preset))
    obs = env.reset(seed=seed)
    if redraw:
        redraw_tactics(env, random.Random(seed))
    week = obs.week
    pol = get_policy("expert", seed=seed)
    while not env.done:
        res = env.step(pol.act(obs))
        assert res.info["valid"], res.info["error"]
        obs = res.observation
    return env, week

"""Expert episodes with injected noise (DART, Laskey et al. 2017): the states a learner's
own mistakes lead to, each answered by the expert.

A model trained on the expert's clean episodes meets, in its own play, states the expert
never showed it: its raises come out a little smaller than the expert's, its offers fall
behind, and it has never seen how the expert recovers from there. Here the expert plays
each episode, but with probability ``rate`` a raise it makes on a thread is cut to a random
part of itself (the learner's typical error: too little, never too much). That offer is
played and shown in the chat but not learned from (``EpisodeSource.untaught``); every
later decision is the expert's own answer to the state the noise made.
"""

from __future__ import annotations

import random
from typing import Any

from ..env import ProcurementEnv
from ..observation import Observation
from ..policies import get_policy
from ..scenarios import load_scenario
from .contract import EpisodeSource, TrainingError

TEACHER = "expert"  # the policy whose episodes noise is put into, and who answers it


def check_rate(rate: float) -> None:
    """A noise rate is a share of the raises: 0-1. Raises TrainingError otherwise."""
    if isinstance(rate, bool) or not (isinstance(rate, int | float) and 0.0 <= rate <= 1.0):
        raise TrainingError(f"The noise rate is a share of the raises, 0-1; got {rate!r}")


def under_raise(
    obs: Observation, action: dict[str, Any], rng: random.Random, rate: float
) -> dict[str, Any] | None:
    """With probability ``rate``, ``action`` with its raise on the buyer's last offer cut
    to a uniform part of itself (None: play it as it is). Only a ``negotiate`` that raises
    an earlier offer on its thread is cut."""
    if action.get("action_type") != "negotiate" or rng.random() >= rate:
        return None
    th = obs.threads.get((action["supplier_id"], action["requirement_id"]))
    last = th.rounds[-1].buyer_offer if th is not None and th.rounds else None
    if last is None or action["price"] <= last:
        return None
    price = round(last + (action["price"] - last) * rng.random(), 2)
    return {**action, "price": price}


def noisy_expert_sources(
    rows: list[tuple[str, int]], *, rate: float, seed: int = 0
) -> list[EpisodeSource]:
    """The expert's play of each (scenario, seed) row with ``under_raise`` noise at
    ``rate`` (0-1; the draws are seeded by ``seed`` and the row, so the data repeats), the
    cut offers ``untaught``, each with its score. Rate 0 is the expert's own play."""
    check_rate(rate)
    out = []
    for scenario, episode_seed in rows:
        try:
            env = ProcurementEnv(load_scenario(scenario))
            obs = env.reset(seed=episode_seed)
        except Exception as exc:  # an unknown scenario, a bad seed: several kinds
            raise TrainingError(f"cannot play {scenario}/{episode_seed}: {exc}") from exc
        rng = random.Random(f"{seed}/{scenario}/{episode_seed}")
        teacher = get_policy(TEACHER, seed=episode_seed)
        actions: list[dict[str, Any]] = []
        untaught: set[int] = set()
        while not env.done:
            action = teacher.act(obs)
            cut = under_raise(obs, action, rng, rate)
            if cut is not None:
                untaught.add(len(actions))
                action = cut
            actions.append(action)
            obs = env.step(action).observation
        score = env.score().score
        out.append(EpisodeSource(scenario, episode_seed, actions, score, frozenset(untaught)))
    return out

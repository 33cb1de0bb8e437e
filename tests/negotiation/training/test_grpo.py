"""GRPO's decision points and reward, without a model."""

from __future__ import annotations

import json

from negotiation.runner import run_episode
from negotiation.scenarios import load_scenario
from negotiation.training import EpisodeSource
from negotiation.training.examples import action_reply
from negotiation.training.grpo import (
    decision_points,
    episode_reward,
    expert_sources,
    reward_episode_score,
)


def test_decision_points_are_the_expert_episode_in_play_format() -> None:
    expert = run_episode("bilateral", "expert", seed=4)
    points = decision_points(expert_sources([("bilateral", 4)]), 3_000, seed=0)
    assert len(points) == len(expert.steps)
    first = next(p for p in points if p["prefix"] == "[]")
    assert first["prompt"][0]["role"] == "system" and first["prompt"][-1]["role"] == "user"


def test_decision_points_follow_any_players_own_episode() -> None:
    """States from another player's play (the model's own, in training): each point's
    prefix is that player's actions so far, and its prompt is the chat there."""
    played = run_episode("bilateral", "script_concede_10pct", seed=4)
    actions = [s.action for s in played.steps]
    config = load_scenario("bilateral").model_dump(mode="json")  # as a stored episode has it
    source = EpisodeSource(config, 4, actions)
    points = decision_points([source], 3_000, seed=0)
    assert len(points) == len(actions)
    assert {p["prefix"] for p in points} == {json.dumps(actions[:k]) for k in range(len(actions))}
    expert = decision_points(expert_sources([("bilateral", 4)]), 3_000, seed=0)
    assert {p["prefix"] for p in points} != {p["prefix"] for p in expert}
    last = max(points, key=lambda p: len(json.loads(p["prefix"])))
    # the script's own last state, scored by the reply there and the expert after it
    reply = action_reply(actions[-1])
    fields = [[last[k]] for k in ("prompt", "scenario", "seed", "prefix")]
    prompts, scenario, seed, prefix = fields
    # TRL calls the reward with the dataset's columns
    assert reward_episode_score(prompts, [reply], scenario, seed, prefix) == [played.score]


def test_reward_is_the_final_score_after_the_reply() -> None:
    expert = run_episode("bilateral", "expert", seed=4)
    actions = [s.action for s in expert.steps]
    # the expert's own first action, then the expert: the expert's episode and score
    assert episode_reward("bilateral", 4, [], action_reply(actions[0])) == expert.score
    assert episode_reward("bilateral", 4, [], "I think we should negotiate.") == 0.0
    walk = json.dumps({"action_type": "reject", "supplier_id": "S01"})
    assert episode_reward("bilateral", 4, [], walk) < expert.score

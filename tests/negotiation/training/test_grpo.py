"""GRPO's decision points and reward, without a model."""

from __future__ import annotations

import json

from negotiation.runner import run_episode
from negotiation.training.examples import action_reply
from negotiation.training.grpo import decision_points, episode_reward


def test_decision_points_are_the_expert_episode_in_play_format() -> None:
    expert = run_episode("bilateral", "expert", seed=4)
    points = decision_points([("bilateral", 4)], 3_000, seed=0)
    assert len(points) == len(expert.steps)
    first = next(p for p in points if p["prefix"] == "[]")
    assert first["prompt"][0]["role"] == "system" and first["prompt"][-1]["role"] == "user"


def test_reward_is_the_final_score_after_the_reply() -> None:
    expert = run_episode("bilateral", "expert", seed=4)
    actions = [s.action for s in expert.steps]
    # the expert's own first action, then the expert: the expert's episode and score
    assert episode_reward("bilateral", 4, [], action_reply(actions[0])) == expert.score
    assert episode_reward("bilateral", 4, [], "I think we should negotiate.") == 0.0
    walk = json.dumps({"action_type": "reject", "supplier_id": "S01"})
    assert episode_reward("bilateral", 4, [], walk) < expert.score

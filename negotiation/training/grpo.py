"""GRPO in the play format: the model answers the LLM buyer's own chat with one JSON action.

TRL's ``environment_factory`` (``interfaces/trl_env.py``) makes every public method a
tool and parses tool calls out of the completions, so a model trained there acts by tool
calls, not by the JSON replies it plays with. Training what is played comes first here,
so GRPO runs on decision points instead:

- every step of an episode is a decision point: the BuyerChat prompt before it (exactly
  what the LLM buyer reads there, built from the replies a constrained decoder writes for
  the earlier actions). The episodes are the expert's play of (scenario, seed) rows, and
  ``states``: any player's episodes, e.g. the model's own, so that it learns in the states
  its own play reaches, its mistakes included (the expert's states hold none);
- one GRPO group = ``num_generations`` replies to the same prompt (same seed, same state);
- reward = the final episode score after playing the reply and letting the continuation
  play the rest (``run_episode`` with the earlier actions and the reply as its prefix). A
  reply that is not a JSON action scores 0, the lowest score: TRL samples without the
  play-time grammar, so a format failure must cost something. An action the engine rejects
  costs its slot and penalty there, as in play. Nothing else is rewarded.
- the continuation (``TrainJob.continuation``) is the expert (one-step credit: cheap, but
  the expert closes the deals the model would lose, so nearly every reply scores alike)
  or the model being trained (``ModelContinuation``: a whole-episode rollout of its own
  greedy, constrained play after the reply, every group's rollouts played at once through
  one batching backend, so the reward sees its own closing). The model's chat holds the
  earlier actions and the reply as a constrained decoder writes them (the LLM buyer's
  ``replayed``), as the decision point's prompt does.
- advantage = a reply's reward minus its group's mean, divided by the group's standard
  deviation (TRL's default, ``TrainJob.scale_rewards="group"``), or left in score units
  (``"none"``, as in Dr. GRPO). The reward is continuous: most groups differ by cents of
  price, a few by a lost deal, and the std scaling pulls the first kind as hard as the
  second; score units pull the decisive groups at about half the strength instead.
"""

from __future__ import annotations

import json
import random
from typing import Any

from ..interfaces.concurrent import run_episodes_concurrently
from ..policies import get_policy
from ..policies.action_schema import parse_action
from ..runner import run_episode
from .contract import EpisodeSource, TrainingError
from .examples import PLAY_MAX_TOKENS, replay
from .noise import noisy_expert_sources

CONTINUATION = "expert"  # plays the episode's rest after the sampled reply, and the states


def expert_sources(rows: list[tuple[str, int]]) -> list[EpisodeSource]:
    """The expert's play of each (scenario, seed) row, with its score."""
    return noisy_expert_sources(rows, rate=0.0)


def decision_points(
    sources: list[EpisodeSource], max_prompt_chars: int, seed: int
) -> list[dict[str, Any]]:
    """Dataset rows, one per action of each episode: ``prompt`` (the chat messages before
    it), ``scenario`` (JSON: a preset's name or a config), ``seed`` and ``prefix`` (the
    JSON list of the episode's actions before it), shuffled with ``seed``. The episodes
    are the expert's (``expert_sources``) or any player's, e.g. the model's own, whose
    states are the ones it meets in play."""
    out = []
    for source in sources:
        actions = list(source.actions)
        for k, (messages, _) in enumerate(replay(source, max_prompt_chars, PLAY_MAX_TOKENS)):
            out.append(
                {
                    "prompt": [{"role": m.role, "content": m.content} for m in messages],
                    "scenario": json.dumps(source.scenario),
                    "seed": source.seed,
                    "prefix": json.dumps(actions[:k]),
                }
            )
    random.Random(seed).shuffle(out)
    return out


def episode_reward(
    scenario: str | dict[str, Any], seed: int, prefix: list[dict[str, Any]], reply: str
) -> float:
    """The final score of the episode where ``reply`` is played after ``prefix`` and the
    expert plays the rest; 0 for a reply that is not an action."""
    action, _ = parse_action(reply)
    if action is None:
        return 0.0
    return run_episode(
        scenario, CONTINUATION, seed=seed, actions_prefix=[*prefix, action], record_steps=False
    ).score


Row = tuple[str, dict[str, Any] | str, int, list[dict[str, Any]]]  # reply, scenario, seed, prefix


class EpisodeScoreReward:
    """TRL reward function (one float per completion): the score of the episode where the
    reply is played after the decision point's prefix and the expert plays the rest.
    TRL calls it with the dataset's columns (``decision_points``)."""

    __name__ = "reward_episode_score"  # TRL names the reward's log column by it

    def __call__(
        self,
        prompts: list[Any],
        completions: list[Any],
        scenario: list[str],
        seed: list[int],
        prefix: list[str],
        **_: Any,
    ) -> list[float]:
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        columns = map(json.loads, scenario), map(int, seed), map(json.loads, prefix)
        return self.scores(list(zip(texts, *columns, strict=True)))

    def scores(self, rows: list[Row]) -> list[float]:
        return [episode_reward(sc, sd, pre, text) for text, sc, sd, pre in rows]


reward_episode_score = EpisodeScoreReward()


class ModelContinuation(EpisodeScoreReward):
    """The reward with the rest played by the model being trained (``bind`` it once the
    trainer holds it) as the LLM buyer plays (free mode, greedy, constrained decoding,
    the expert's action where a reply fails), every row's episode at once."""

    __name__ = "reward_model_continuation"

    def __init__(self, max_prompt_chars: int, max_tokens: int = PLAY_MAX_TOKENS) -> None:
        self.max_prompt_chars, self.max_tokens = max_prompt_chars, max_tokens
        self.model: Any = None
        self.tokenizer: Any = None

    def bind(self, model: Any, tokenizer: Any) -> None:
        self.model, self.tokenizer = model, tokenizer

    def scores(self, rows: list[Row]) -> list[float]:
        from ..llm.transformers_backend import TransformersBackend

        if self.model is None:
            raise TrainingError("the model continuation was never bound to a model")
        out = [0.0] * len(rows)  # a reply that is no action: the lowest score
        jobs, prefixes, at = [], [], []
        for k, (text, scenario, seed, prefix) in enumerate(rows):
            action, _ = parse_action(text)
            if action is not None:
                at.append(k)
                prefixes.append([*prefix, action])
                jobs.append((scenario, self._policy, seed))
        if not jobs:
            return out
        # A fresh backend per call: its key/value cache must not outlive these weights.
        backend = TransformersBackend(loaded=(self.model, self.tokenizer))
        training = self.model.training
        self.model.eval()
        try:
            played = run_episodes_concurrently(
                jobs, backend=backend, prefixes=prefixes, record_steps=False, max_wait_s=0.05
            )
        finally:
            self.model.train(training)
        for k, result in zip(at, played, strict=True):
            out[k] = result.score
        return out

    def _policy(self, handle: Any) -> Any:
        return get_policy(
            "llm",
            backend=handle,
            max_prompt_chars=self.max_prompt_chars,
            max_tokens=self.max_tokens,
        )


def build_trainer(job: Any, model: Any, tokenizer: Any, args: dict[str, Any], peft: Any) -> Any:
    """The GRPOTrainer for the decision points of ``job.states`` and of the expert's play
    of ``job.rows`` (one of them already validated non-empty)."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    sources = [*job.states, *expert_sources(job.rows)]
    points = decision_points(sources, job.max_prompt_chars, job.seed)
    # One reply per forward/backward pass, accumulated over the step's groups: a pass's
    # memory is then one chat's activations whatever the group size. Four ~3,700-token
    # replies at once (a late decision point) outgrew 24 GB on CPU.
    prompts = args.pop("per_device_train_batch_size") * args.pop("gradient_accumulation_steps")
    config = GRPOConfig(
        **args,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=prompts * job.num_generations,
        num_generations=job.num_generations,
        max_completion_length=job.max_completion_tokens,
        scale_rewards=job.scale_rewards,
        remove_unused_columns=False,
    )
    reward = reward_episode_score
    if job.continuation == "model":
        reward = ModelContinuation(job.max_prompt_chars, job.max_completion_tokens)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=config,
        train_dataset=Dataset.from_list(points),
        processing_class=tokenizer,
        peft_config=peft,
    )
    if isinstance(reward, ModelContinuation):
        reward.bind(trainer.model, tokenizer)  # peft's wrapper where LoRA trains
    return trainer

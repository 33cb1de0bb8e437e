"""The training library's data types: what a caller hands in and gets back.

Stable contract for the product side (``manage.py train``, the Celery task, the Training
page); a change here is announced in CONTRACT_CHANGES.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Kind = Literal["sft", "grpo"]
Device = Literal["cpu", "cuda", "auto"]
ScaleRewards = Literal["group", "batch", "none"]
Continuation = Literal["expert", "model"]

MODEL_SUBDIR = "model"  # output_dir/model: the final plain HF folder the backends load
LINEAGE_FILE = "lineage.json"  # written next to the weights, inside output_dir/model
CHECKPOINT_PREFIX = "checkpoint-"  # TRL/transformers' own naming under output_dir


class TrainingError(ValueError):
    """A training request that cannot run (bad job, no examples, unknown scenario, missing
    model folder); raised before anything is written."""


@dataclass(frozen=True, slots=True)
class EpisodeSource:
    """One stored episode, as much of it as replaying needs: the scenario (a preset name
    or a config dict), the seed, and the buyer's actions in the order they were played
    (the engine is deterministic, so these rebuild every observation). ``score`` (the
    episode's final score, when known) is used only for filtering and the data summary.
    ``untaught``: indices of actions that are played and shown in the chat but not learned
    from (injected noise, ``noise.py``): the states after them are trained, they are not."""

    scenario: str | dict[str, Any]
    seed: int
    actions: tuple[dict[str, Any], ...] | list[dict[str, Any]]
    score: float | None = None
    untaught: frozenset[int] = frozenset()


@dataclass(slots=True)
class TrainJob:
    """What to train.

    - ``kind``: "sft" (needs ``examples``: ``chat_examples(...)`` output) or "grpo" (needs
      ``rows``, (scenario, seed) pairs the expert plays, or ``states``, episodes of any
      player; every action of those episodes is a decision point where a group of
      ``num_generations`` replies is sampled).
    - ``base_model``: a local Hugging Face folder (the shipped SmolLM2 folder, or a model
      this library trained earlier: ``TrainOutcome.model_dir``).
    - ``output_dir``: checkpoints (``checkpoint-N``), the final folder
      ``output_dir/model`` and its ``lineage.json``. Re-running the same job with the same
      output_dir resumes from its last checkpoint.
    - ``lora``: train LoRA adapters (rank ``lora_r``) and merge them into the saved
      folder; else full fine-tuning.
    - ``max_prompt_chars``: the BuyerChat budget the examples were rendered with (grpo
      renders its prompts with it); the lineage's ``policy_params`` repeats it so the
      registered ``llm`` policy plays with the same budget.
    - ``eval_examples``: held-out chats (sft only; ``chat_examples`` of episodes never
      trained on): their loss and token accuracy on the assistant turns are logged
      (``eval_loss``, ``eval_mean_token_accuracy``) every ``eval_every`` steps (0: at the
      end only), a cheap learning curve that needs no episode played.
    - ``scale_rewards`` (grpo): TRL's advantage scaling: "group" (its default: divided by
      the group's reward std), "batch", or "none" (score units); see ``grpo.py``.
    - ``continuation`` (grpo): who plays the episode's rest after a sampled reply, for its
      reward: "expert" (one-step credit: the expert's continuation rescues most replies)
      or "model" (the model being trained, greedy, as it plays: the reward sees its own
      closing); see ``grpo.py``.
    - ``batch_size`` x ``grad_accum``: chats (sft) or GRPO groups per optimizer step; GRPO
      runs one reply per forward/backward pass (``grpo.build_trainer``).
    - ``data_summary``: free-form facts about the data for the lineage (filled by
      ``chat_examples`` callers, e.g. policy filter); scenarios/seeds/counts are added.
    """

    kind: Kind
    base_model: Path
    output_dir: Path
    examples: list[dict[str, Any]] = field(default_factory=list)
    rows: list[tuple[str, int]] = field(default_factory=list)
    states: list[EpisodeSource] = field(default_factory=list)
    max_steps: int = 20
    learning_rate: float = 5e-5
    lora: bool = False
    lora_r: int = 16
    batch_size: int = 1
    grad_accum: int = 1
    num_generations: int = 4
    scale_rewards: ScaleRewards = "group"
    continuation: Continuation = "expert"
    max_completion_tokens: int = 96  # grpo: tokens per reply (one JSON action)
    max_prompt_chars: int = 12_000  # the chat budget; the trained policy must play with it
    seed: int = 0
    device: Device = "auto"
    save_every: int = 0  # checkpoint every N steps (0: only at the end or on cancel)
    eval_examples: list[dict[str, Any]] = field(default_factory=list)
    eval_every: int = 0
    data_summary: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class TrainHooks:
    """Callbacks into the caller (progress bar, Channels, cancel button). Each is optional.

    - ``on_log(step, metrics)``: after every optimizer step; metrics hold floats such as
      ``loss``, ``learning_rate``, ``epoch``, ``grad_norm``, ``reward`` (grpo),
      ``examples_per_s``, ``seconds``.
    - ``should_stop()``: polled every step; True saves a checkpoint and stops cleanly
      (``TrainOutcome.cancelled``), and the final folder is still written.
    - ``on_checkpoint(path)``: after each checkpoint is saved.
    """

    on_log: Callable[[int, dict[str, float]], None] | None = None
    should_stop: Callable[[], bool] | None = None
    on_checkpoint: Callable[[Path], None] | None = None


@dataclass(slots=True)
class TrainOutcome:
    """The result: ``model_dir`` (a plain HF folder, loadable by the transformers
    backend as ``model=str(model_dir)``), the optimizer steps done, the last metrics,
    the lineage written to ``model_dir/lineage.json``, whether it was cancelled, and
    ``history``: every logged step (``step`` and its floats), those of the runs it resumed
    included (the trainer's own log, kept in each checkpoint), so a resumed run's curves
    start at step 1."""

    model_dir: Path
    steps: int
    metrics: dict[str, float]
    lineage: dict[str, Any]
    cancelled: bool = False
    history: list[dict[str, float]] = field(default_factory=list)

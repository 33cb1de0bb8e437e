"""run_training: one entry point for SFT and GRPO."""

from __future__ import annotations

from .contract import TrainHooks, TrainJob, TrainOutcome


def run_training(job: TrainJob, hooks: TrainHooks | None = None) -> TrainOutcome:
    """Validate ``job`` (TrainingError, nothing written), then train with TRL's
    SFTTrainer (assistant-only loss) or GRPOTrainer (reward = episode score, groups of
    ``num_generations`` rollouts per seed), resuming from the last checkpoint in
    ``job.output_dir``; save the final plain HF folder ``output_dir/model`` (LoRA merged)
    with ``lineage.json`` (base, kind, data summary, steps, final metrics, versions,
    time). Blocking; call it from a worker."""
    raise NotImplementedError

"""run_training: validate a job, train it with TRL, save a plain model folder and lineage.

Checkpoints are transformers' own (``output_dir/checkpoint-N``): a job run again with
the same output_dir resumes from the last one. Cancel (``hooks.should_stop``) saves a
checkpoint at the current step, stops, and still writes the final folder, so a cancelled
run is a usable model and can be resumed with a larger ``max_steps``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, get_args

from ..scenarios import load_scenario
from .contract import (
    LINEAGE_FILE,
    MODEL_SUBDIR,
    Continuation,
    ScaleRewards,
    TrainHooks,
    TrainingError,
    TrainJob,
    TrainOutcome,
)
from .examples import LEARN

VERSIONS = ("torch", "transformers", "trl", "peft", "datasets")


def _check(job: TrainJob) -> None:
    """Every way a job can be wrong, before anything is written."""
    if job.kind not in ("sft", "grpo"):
        raise TrainingError(f"kind must be sft or grpo, not {job.kind!r}")
    base = Path(job.base_model)
    if not (base / "config.json").is_file():
        raise TrainingError(f"{base} is not a Hugging Face model folder (no config.json)")
    if job.kind == "sft" and not job.examples:
        raise TrainingError("sft needs examples: no episode matched")
    if job.eval_examples and job.kind != "sft":
        raise TrainingError("eval_examples are for sft")
    if job.eval_every < 0:
        raise TrainingError("eval_every must be >= 0")
    if job.kind == "grpo" and not (job.rows or job.states):
        raise TrainingError("grpo needs (scenario, seed) rows or episodes (states)")
    if job.max_steps < 1 or job.learning_rate <= 0 or job.batch_size < 1 or job.grad_accum < 1:
        raise TrainingError("max_steps, learning_rate, batch_size and grad_accum must be > 0")
    if job.kind == "grpo" and job.num_generations < 2:
        raise TrainingError("grpo needs num_generations >= 2 (a group to compare)")
    if job.scale_rewards not in get_args(ScaleRewards):
        raise TrainingError(f"scale_rewards must be one of {get_args(ScaleRewards)}")
    if job.continuation not in get_args(Continuation):
        raise TrainingError(f"continuation must be one of {get_args(Continuation)}")
    if job.device not in ("cpu", "cuda", "auto"):
        raise TrainingError(f"device must be cpu, cuda or auto, not {job.device!r}")
    if job.lora and job.lora_r < 1:
        raise TrainingError("lora_r must be >= 1")


def _device(job: TrainJob) -> str:
    import torch

    if job.device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if job.device == "cuda" and not torch.cuda.is_available():
        raise TrainingError("device cuda asked for, but no CUDA device is available")
    return job.device


def _hooks_callback(hooks: TrainHooks, state: dict[str, Any]) -> Any:
    from transformers import TrainerCallback

    class Hooks(TrainerCallback):
        def on_step_end(self, args, st, control, **kw):
            if hooks.should_stop is not None and hooks.should_stop():
                state["cancelled"] = True
                control.should_save = True
                control.should_training_stop = True
            return control

        def on_log(self, args, st, control, logs=None, **kw):
            logs = logs or {}
            if "train_runtime" in logs:  # the run's summary, not a step
                state["metrics"]["runtime_s"] = float(logs["train_runtime"])
                state["metrics"]["examples_per_s"] = float(logs["train_samples_per_second"])
                return
            metrics = _floats(logs)
            if not metrics:
                return
            elapsed = time.perf_counter() - state["started"]
            metrics["seconds"] = elapsed
            state["metrics"].update(metrics)
            if hooks.on_log is not None:
                hooks.on_log(int(st.global_step), metrics)

        def on_save(self, args, st, control, **kw):
            path = Path(args.output_dir) / f"checkpoint-{st.global_step}"
            if hooks.on_checkpoint is not None and path.is_dir():
                hooks.on_checkpoint(path)

    return Hooks()


def _floats(logs: dict[str, Any]) -> dict[str, float]:
    out = {}
    for key, value in logs.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = float(value)
    return out


def _bf16(device: str) -> bool:
    """bf16 autocast where the hardware does bf16 math: CUDA, or a CPU with AVX-512 BF16
    (bench/sft_speed.py: one 1.9k-token SFT step 202 s vs 411 s fp32 on 2 loaded Zen 4
    cores). The weights stay float32 either way."""
    if device == "cuda":
        return True
    import torch

    supported = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
    return bool(supported and supported())


def _training_args(job: TrainJob, device: str) -> dict[str, Any]:
    return {
        "output_dir": str(job.output_dir),
        "max_steps": job.max_steps,
        "learning_rate": job.learning_rate,
        "per_device_train_batch_size": job.batch_size,
        "gradient_accumulation_steps": job.grad_accum,
        "seed": job.seed,
        "use_cpu": device == "cpu",
        "bf16": _bf16(device),
        "logging_steps": 1,
        "report_to": "none",
        # the last step always saves, so a finished job run again resumes, not restarts
        "save_strategy": "steps",
        "save_steps": job.save_every or job.max_steps,
        "save_total_limit": 2,
        "gradient_checkpointing": False,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
    }


def _last_checkpoint(output_dir: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(output_dir)) if output_dir.is_dir() else None


def _data_summary(job: TrainJob) -> dict[str, Any]:
    summary = dict(job.data_summary)
    if job.kind == "sft":
        replies = [m for ex in job.examples for m in ex["messages"] if m["role"] == "assistant"]
        learned = sum(m.get(LEARN, True) for m in replies)
        summary.update(
            examples=len(job.examples),
            assistant_turns=learned,
            untaught_turns=len(replies) - learned,
            eval_examples=len(job.eval_examples),
        )
    else:
        played = [*job.rows, *((load_scenario(e.scenario).name, e.seed) for e in job.states)]
        summary.update(
            scenarios=sorted({s for s, _ in played}),
            seeds=sorted({int(seed) for _, seed in played}),
            rows=len(job.rows),
        )
        if job.states:
            summary["state_episodes"] = len(job.states)
    return summary


def _versions() -> dict[str, str]:
    out = {}
    for name in VERSIONS:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out[name] = importlib.metadata.version(name)
    return out


def run_training(job: TrainJob, hooks: TrainHooks | None = None) -> TrainOutcome:
    """Validate ``job`` (TrainingError, nothing written), then train with TRL's
    SFTTrainer (assistant-only loss) or GRPOTrainer (reward = episode score, groups of
    ``num_generations`` replies per decision point), resuming from the last checkpoint in
    ``job.output_dir``; save the final plain HF folder ``output_dir/model`` (LoRA merged)
    with ``lineage.json`` (base, kind, data summary, steps, final metrics, versions,
    time). Blocking; call it from a worker."""
    _check(job)
    hooks = hooks or TrainHooks()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    device = _device(job)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from . import grpo, sft

    started = time.time()
    tokenizer = AutoTokenizer.from_pretrained(job.base_model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(job.base_model, dtype=dtype)
    peft = None
    if job.lora:
        from peft import LoraConfig

        peft = LoraConfig(
            r=job.lora_r,
            lora_alpha=2 * job.lora_r,
            lora_dropout=0.0,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        )
    builder = sft.build_trainer if job.kind == "sft" else grpo.build_trainer
    state: dict[str, Any] = {"cancelled": False, "metrics": {}, "started": time.perf_counter()}
    trainer = builder(job, model, tokenizer, _training_args(job, device), peft)
    trainer.add_callback(_hooks_callback(hooks, state))
    resume = _last_checkpoint(Path(job.output_dir))
    trainer.train(resume_from_checkpoint=resume)
    steps = int(trainer.state.global_step)
    model_dir = _save_final(trainer, tokenizer, Path(job.output_dir), job.lora)
    lineage = {
        "base_model": str(job.base_model),
        "kind": job.kind,
        "lora": job.lora,
        "lora_r": job.lora_r if job.lora else None,
        "data": _data_summary(job),
        "steps": steps,
        "max_steps": job.max_steps,
        "learning_rate": job.learning_rate,
        "scale_rewards": job.scale_rewards if job.kind == "grpo" else None,
        "continuation": job.continuation if job.kind == "grpo" else None,
        "cancelled": state["cancelled"],
        "resumed_from": resume,
        "metrics": state["metrics"],
        "device": device,
        "versions": _versions(),
        "started": started,
        "finished": time.time(),
        "policy_params": {
            "backend": "transformers",
            "model": str(model_dir),
            "mode": "free",
            "max_prompt_chars": job.max_prompt_chars,
        },
    }
    (model_dir / LINEAGE_FILE).write_text(json.dumps(lineage, indent=2))
    history = [_floats(e) for e in trainer.state.log_history if "train_runtime" not in e]
    return TrainOutcome(
        model_dir, steps, dict(state["metrics"]), lineage, state["cancelled"], history
    )


def _save_final(trainer: Any, tokenizer: Any, output_dir: Path, lora: bool) -> Path:
    """A plain folder the transformers backend loads: LoRA merged into the weights."""
    target = output_dir / MODEL_SUBDIR
    partial = output_dir / f"{MODEL_SUBDIR}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    model = trainer.model
    if lora:
        model = model.merge_and_unload()
    model.save_pretrained(str(partial))
    tokenizer.save_pretrained(str(partial))
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target

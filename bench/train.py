"""Training bench: SmolLM2-135M base vs SFT vs SFT+GRPO vs the expert and the naive
baselines, on held-out seeds never used in training, everything in ONE run.

1. Data: the expert plays ``--train-episodes`` seeds of each ``--train-presets`` preset
   (seeds 0..N-1), rendered by ``chat_examples`` exactly as the LLM buyer plays.
2. SFT from SmolLM2 (``--sft-steps``, full tuning unless ``--lora``), then GRPO from the
   SFT folder (``--grpo-steps``, rows = ``--grpo-seeds`` seeds after the SFT ones, groups of
   ``--num-generations`` replies per decision point).
3. Evaluation on ``--eval-seeds`` seeds from HELD_OUT (100000 up, disjoint from every
   training seed) of each ``--eval-presets`` preset: the three SmolLM2 buyers (free mode,
   transformers backend, expert fallback, played concurrently through one batching
   backend each) and expert, always_accept, random. Score with its bootstrap 95 % CI
   (``evaluation.summarise``), deal rate, buyer share, invalid-action rate (engine-refused
   actions per decision) and fallback rate (replies the policy could not use).
4. Output under ``--out`` (default DATA_DIR/bench_train, which the Training page shows):
   ``results.json`` (negotiation/training/report.py's Report), ``table.md``, ``curves.png``
   (SFT loss, GRPO reward and learning rate per step), and the trained folders.

Usage: .venv/bin/python bench/train.py [--train-episodes 8] [--sft-steps 30]
       [--grpo-steps 4] [--eval-seeds 50] [--eval-presets bilateral,...] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any, get_args

from negotiation import get_policy, run_episode
from negotiation.evaluation import BOOTSTRAP_RESAMPLES, summarise
from negotiation.interfaces.concurrent import run_episodes_concurrently
from negotiation.league import paired_difference
from negotiation.llm.models import smollm2_folder
from negotiation.llm.registry import get_backend
from negotiation.scenarios import bilateral_presets
from negotiation.training import (
    EpisodeSource,
    TrainHooks,
    TrainJob,
    chat_examples,
    run_training,
)
from negotiation.training.contract import Continuation, ScaleRewards
from negotiation.training.examples import LEARN
from negotiation.training.grpo import expert_sources
from negotiation.training.noise import noisy_expert_sources
from negotiation.training.report import CURVES_FILE, REPORT_DIR, Cell, write_report

BILATERAL = bilateral_presets()
BASELINES = ("expert", "always_accept", "random")
HELD_OUT = 100_000  # evaluation seeds start here; training seeds stay below
METRICS = ("deal_rate", "buyer_share", "invalid_action_rate", "fallback_rate")


def train(args: argparse.Namespace, out: Path) -> tuple[dict[str, Path], dict[str, list]]:
    """SFT then GRPO; the folders and each run's per-step log."""
    curves: dict[str, list] = {"sft": [], "grpo": []}
    sft_seeds = range(args.train_episodes)
    grpo_seeds = range(args.train_episodes, args.train_episodes + args.grpo_seeds)
    assert max(grpo_seeds, default=0) < HELD_OUT
    rows = [(p, s) for p in args.train_presets for s in sft_seeds]
    sources = noisy_expert_sources(rows, rate=args.noise)  # rate 0: the expert's own play
    examples = chat_examples(sources, max_prompt_chars=args.max_prompt_chars)
    # held-out chats for the loss curve: evaluation seeds, never trained on
    held_out = expert_sources(
        [(p, s) for p in args.eval_presets for s in range(HELD_OUT, HELD_OUT + args.eval_chats)]
    )
    eval_examples = chat_examples(held_out, max_prompt_chars=args.max_prompt_chars)
    replies = [m for e in examples for m in e["messages"] if m["role"] == "assistant"]
    print(
        f"data: {len(sources)} expert episodes (noise {args.noise}, mean score "
        f"{sum(s.score or 0 for s in sources) / len(sources):.3f}), {len(examples)} chats, "
        f"{len(replies)} replies, {sum(not m.get(LEARN, True) for m in replies)} untaught"
    )

    def log(kind: str):
        def on_log(step: int, metrics: dict[str, float]) -> None:
            keys = ("loss", "reward", "eval_loss", "eval_mean_token_accuracy")
            shown = {k: round(v, 4) for k, v in metrics.items() if k in keys}
            print(f"  {kind} step {step}: {shown} ({metrics['seconds']:.0f} s)", flush=True)

        return on_log

    common = {
        "device": args.device,
        "lora": args.lora,
        "max_prompt_chars": args.max_prompt_chars,
    }
    started = time.perf_counter()
    sft = run_training(
        TrainJob(
            "sft",
            smollm2_folder(),
            out / "sft",
            examples=examples,
            eval_examples=eval_examples,
            eval_every=args.sft_eval_every,
            max_steps=args.sft_steps,
            learning_rate=args.sft_lr,
            grad_accum=args.grad_accum,
            data_summary={
                "policy": "expert",
                "noise": args.noise,
                "presets": args.train_presets,
                "episodes": len(sources),
            },
            **common,
        ),
        TrainHooks(on_log=log("sft")),
    )
    curves["sft"] = sft.history  # the whole run's, steps before a resume included
    print(f"SFT: {sft.steps} steps in {time.perf_counter() - started:.0f} s -> {sft.model_dir}")
    folders = {"smollm2": smollm2_folder(), "sft": sft.model_dir}
    if args.grpo_steps:
        started = time.perf_counter()
        rows = [(p, s) for p in args.train_presets for s in grpo_seeds]
        states = []
        if args.grpo_states == "own":  # the SFT model's own play of the same seeds
            states, rows = own_sources(sft.model_dir, args.train_presets, grpo_seeds, args), []
            played = sum(len(e.actions) for e in states)
            print(
                f"GRPO states: the SFT model's {len(states)} episodes ({played} decisions, "
                f"mean score {sum(e.score or 0 for e in states) / len(states):.3f}) "
                f"in {time.perf_counter() - started:.0f} s"
            )
        grpo = run_training(
            TrainJob(
                "grpo",
                sft.model_dir,
                out / "grpo",
                rows=rows,
                states=states,
                max_steps=args.grpo_steps,
                learning_rate=args.grpo_lr,
                num_generations=args.num_generations,
                scale_rewards=args.scale_rewards,
                continuation=args.continuation,
                **common,
            ),
            TrainHooks(on_log=log("grpo")),
        )
        curves["grpo"] = grpo.history
        print(f"GRPO: {grpo.steps} steps in {time.perf_counter() - started:.0f} s")
        folders["sft+grpo"] = grpo.model_dir
    return folders, curves


def play_model(backend: Any, preset: str, seeds: range, args: argparse.Namespace) -> list[Any]:
    """The model behind ``backend`` as the LLM buyer (free mode) on ``seeds``, the episodes
    played at once through its batching backend."""
    jobs = [
        (
            preset,
            lambda h, s=seed: get_policy(
                "llm", seed=s, backend=h, max_prompt_chars=args.max_prompt_chars
            ),
            seed,
        )
        for seed in seeds
    ]
    return run_episodes_concurrently(jobs, backend=backend)


def own_sources(folder: Path, presets: list[str], seeds: range, args: argparse.Namespace):
    """The model's own episodes on ``seeds``: GRPO's states where it learns in its own play."""
    backend = get_backend("transformers", str(folder), device=args.device)
    out = []
    for preset in presets:
        for res in play_model(backend, preset, seeds, args):
            out.append(EpisodeSource(preset, res.seed, [st.action for st in res.steps], res.score))
    return out


def row(res: Any) -> dict[str, Any]:
    m = res.metrics
    decisions = max(1, len(res.steps))
    return {
        "score": res.score,
        "deal_rate": m.get("deal_rate"),
        "buyer_share": m.get("buyer_share") if m.get("contracts", 0) else None,
        "contracts": m.get("contracts", 0),
        "invalid_action_rate": sum(not s.valid for s in res.steps) / decisions,
        "fallback_rate": m.get("buyer_llm_fallbacks", 0) / decisions,
    }


def play_tokens(stats: Any) -> tuple[int, int]:
    """A backend's prompt tokens computed (its cache's reuse left out) and reply tokens
    written so far."""
    return stats.prompt_tokens - stats.cached_tokens, stats.completion_tokens


def evaluate(args: argparse.Namespace, folders: dict[str, Path]) -> list[dict[str, Any]]:
    seeds = range(HELD_OUT, HELD_OUT + args.eval_seeds)
    table = []
    for label, folder in folders.items():
        if args.play is not None and label not in args.play:
            continue
        backend = get_backend("transformers", str(folder), device=args.device)
        for preset in args.eval_presets:
            before = play_tokens(backend.stats)
            started = time.perf_counter()
            results = play_model(backend, preset, seeds, args)
            wall = time.perf_counter() - started
            after = play_tokens(backend.stats)
            computed, written = after[0] - before[0], after[1] - before[1]
            table.append(cell(preset, label, results, wall, computed, written))
            print(
                f"  {label} on {preset}: {wall:.0f} s, prefill {computed / wall:.0f} tokens/s, "
                f"decode {written / wall:.1f} tokens/s (all episodes at once)",
                flush=True,
            )
        del backend
    for name in BASELINES:
        for preset in args.eval_presets:
            results = [run_episode(preset, get_policy(name, seed=s), s) for s in seeds]
            table.append(cell(preset, name, results, 0.0))
    return table


def cell(
    preset: str, policy: str, results: list[Any], wall: float, prefill: int = 0, decode: int = 0
) -> dict[str, Any]:
    rows = [row(r) for r in results]
    numbers = summarise(rows, key=f"{preset}/{policy}", metrics=METRICS)
    # What it played (a model that never awards scores 0 however well it haggles), and
    # each seed's score for the paired differences.
    actions = Counter(s.action.get("action_type", "?") for r in results for s in r.steps)
    return {
        "preset": preset,
        "policy": policy,
        "wall_s": round(wall, 1),
        "prefill_tokens": prefill,
        "decode_tokens": decode,
        **numbers,
        "actions": dict(actions.most_common()),
        "scores": {str(r.seed): r.score for r in results},
    }


# (player, against): the differences the issue asks for, paired over the same seeds
PAIRS = (("sft", "smollm2"), ("sft+grpo", "sft"), ("sft", "expert"), ("sft", "always_accept"))


def differences(
    table: list[dict[str, Any]], pairs: tuple[tuple[str, str], ...] = PAIRS
) -> list[dict[str, Any]]:
    """Per preset and (player, against) pair both played: mean score difference with its
    paired bootstrap 95 % CI over their common seeds."""
    at = {(c["preset"], c["policy"]): c for c in table}
    out = []
    for preset in dict.fromkeys(c["preset"] for c in table):
        for player, against in pairs:
            a, b = at.get((preset, player)), at.get((preset, against))
            if a is None or b is None or not set(a["scores"]) & set(b["scores"]):
                continue
            diff = paired_difference(
                {int(k): v for k, v in a["scores"].items()},
                {int(k): v for k, v in b["scores"].items()},
                key=f"{preset}/{player}-{against}",
                resamples=BOOTSTRAP_RESAMPLES,
            )
            out.append({"preset": preset, "player": player, "against": against, **diff})
    return out


def speed(c: dict[str, Any]) -> str:
    """A model cell's play throughput (the report's Cell rates); n/a for a rule buyer."""
    model = Cell.model_validate(c)
    if model.decode_per_s is None:
        return "n/a"
    return f"{model.prefill_per_s or 0:.0f}, {model.decode_per_s:.1f}"


def markdown(table: list[dict[str, Any]]) -> str:
    def num(x: Any) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    lines = [
        "| preset | policy | n | score [95 % CI] | deal rate | buyer share | invalid | fallback "
        "| actions played | play tokens/s (prefill, decode) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in table:
        s = c["score"]
        lines.append(
            f"| {c['preset']} | {c['policy']} | {c['episodes']} | {num(s['mean'])} "
            f"[{num(s['ci_low'])}, {num(s['ci_high'])}] | {num(c['deal_rate'])} | "
            f"{num(c['buyer_share'])} | {num(c['invalid_action_rate'])} | "
            f"{num(c['fallback_rate'])} | "
            + ", ".join(f"{k} {v}" for k, v in c["actions"].items())
            + f" | {speed(c)} |"
        )
    return "\n".join(lines)


def markdown_differences(diffs: list[dict[str, Any]]) -> str:
    lines = [
        "| preset | score difference | mean [95 % paired CI] | seeds |",
        "|---|---|---|---|",
    ]
    for d in diffs:
        lines.append(
            f"| {d['preset']} | {d['player']} - {d['against']} | {d['mean']:+.3f} "
            f"[{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] | {d['n']} |"
        )
    return "\n".join(lines)


def plot(curves: dict[str, list], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("sft", "loss"),
        ("sft", "eval_loss"),
        ("sft", "eval_mean_token_accuracy"),
        ("grpo", "reward"),
        ("sft", "learning_rate"),
    ]
    # Two columns, so the image still reads on a phone (the Training page scales it).
    rows = (len(panels) + 1) // 2
    fig, grid = plt.subplots(rows, 2, figsize=(9.0, 3.0 * rows), squeeze=False)
    axes = list(grid.ravel())
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    for ax, (kind, key) in zip(axes, panels, strict=False):
        points = [(p["step"], p[key]) for p in curves[kind] if key in p]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o" if len(points) <= 30 else None)
        else:
            ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
        ax.set_title(f"{kind.upper()} {key.replace('_', ' ')}")
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--train-episodes",
        type=int,
        default=8,
        help="expert episodes per preset (seeds 0..N-1; the bilateral presets share each "
        "seed's item and prices, so N seeds are N price scales, whatever the presets)",
    )
    p.add_argument("--train-presets", type=lambda s: s.split(","), default=list(BILATERAL))
    p.add_argument("--sft-steps", type=int, default=30)
    p.add_argument("--sft-lr", type=float, default=5e-5, help="2e-4 suits --lora")
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument(
        "--noise",
        type=float,
        default=0.0,
        help="share of the expert's raises cut short in the SFT data and not learned from "
        "(negotiation/training/noise.py): states its own small raises lead the model to",
    )
    p.add_argument(
        "--eval-chats",
        type=int,
        default=2,
        help="held-out expert episodes per eval preset scored for the SFT loss curve (eval_loss)",
    )
    p.add_argument("--sft-eval-every", type=int, default=5, help="steps between eval_loss")
    p.add_argument(
        "--play",
        type=lambda s: s.split(","),
        default=None,
        help="trained models to play (smollm2,sft,sft+grpo; default all)",
    )
    p.add_argument("--lora", action="store_true", help="LoRA (merged) instead of full tuning")
    p.add_argument("--grpo-steps", type=int, default=4, help="0 skips GRPO")
    p.add_argument("--grpo-lr", type=float, default=2e-5)
    p.add_argument("--grpo-seeds", type=int, default=2, help="GRPO rows per preset")
    p.add_argument(
        "--grpo-states",
        choices=("expert", "own"),
        default="expert",
        help="whose play of the GRPO seeds gives the decision points: the expert's, or the "
        "SFT model's own (the states it reaches in play, its mistakes included)",
    )
    p.add_argument(
        "--continuation",
        choices=get_args(Continuation),
        default="expert",
        help="who plays an episode's rest after a GRPO reply, for its reward: the expert "
        "(one-step credit) or the model being trained (a whole-episode rollout)",
    )
    p.add_argument("--num-generations", type=int, default=4)
    p.add_argument(
        "--scale-rewards",
        choices=get_args(ScaleRewards),
        default="group",
        help="GRPO advantages divided by the group's reward std (TRL's default) or not",
    )
    p.add_argument("--eval-seeds", type=int, default=50, help="held-out seeds per preset")
    p.add_argument("--eval-presets", type=lambda s: s.split(","), default=list(BILATERAL))
    p.add_argument("--max-prompt-chars", type=int, default=12_000)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"))
    p.add_argument(
        "--out",
        type=Path,
        default=Path(os.environ.get("DATA_DIR", "data")) / REPORT_DIR,
        help="where the report goes; the Training page shows the one under DATA_DIR",
    )
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.out.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    started = time.perf_counter()
    folders, curves = train(args, args.out)
    trained = time.perf_counter()
    table = evaluate(args, folders)
    (args.out / "table.json").write_text(json.dumps(table, indent=2))
    diffs = differences(table)
    text = markdown(table) + "\n\n" + markdown_differences(diffs)
    print(text)
    result = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "load_at_start": load,
        "load_at_end": os.getloadavg(),
        "train_s": round(trained - started, 1),
        "eval_s": round(time.perf_counter() - trained, 1),
        "folders": {k: str(v) for k, v in folders.items()},
        "curves": curves,
        "table": table,
        "differences": diffs,
    }
    write_report(args.out, result)
    (args.out / "table.md").write_text(text + "\n")
    plot(curves, args.out / CURVES_FILE)
    print(
        f"train {result['train_s']} s, eval {result['eval_s']} s, load {load} -> {os.getloadavg()}"
    )


if __name__ == "__main__":
    main()

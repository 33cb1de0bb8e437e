"""CPU backends compared on SmolLM2-135M-Instruct: llama.cpp (the shipped Q4_1 GGUF, and
its weights stored as float16 or float32) against transformers (float32), on real buyer
prompts of a game.

The prompts come from one episode of a preset played by the expert buyer:
``buyer_messages(obs)`` of its first ``--steps`` observations (the LLM buyer's own chat).
Each backend runs in its own process and virtualenv (llama-cpp-python is built apart),
one after the other, on the same prompt text, and reports:

- prefill tokens/s: the first prompt, nothing cached, one token generated;
- decode tokens/s: (completion tokens - 1) / (time for 64 tokens - time for 1 token);
- per-step latency p50 over the episode's prompts, JSON schema on (as the buyer asks):
  each prompt from scratch ("uncached") and one after another on one context
  ("cached": llama.cpp reuses the common prefix, the system prompt at least);
- the same over a growing chat (each step appends the reply and the next state);
- llama.cpp only: two growing chats (seeds s and s + 1) taking turns, without and with
  ``cache_key``;
- grammar overhead: decode ms/token with the action schema against without;
- load s: the backend's creation, its library's import included.

Times are by the wall clock and in the process's CPU time: on a machine whose cores other
processes share, CPU time (one thread: --threads 1) is the steadier figure.

Usage: .venv/bin/python bench/llamacpp.py --llamacpp-python VENV/bin/python
                                          [--weights file f16 f32] [--no-transformers]
                                          [--threads N] [--steps 10]
                                          [--preset medium_adversarial] [--seed 1] [--out F]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's negotiation, in either virtualenv
CLOCKS = ("wall", "cpu")
SHORT_STATE = 1200  # characters of a growing chat's states, so that ten turns fit


def episode(preset: str, seed: int, steps: int) -> tuple[list, list]:
    """The buyer's chats over one expert-played episode, as [role, text] lists: each
    step's own chat, and a growing chat (short states, the expert's action as the reply)
    cut at each step's question."""
    from negotiation import ProcurementEnv, get_policy
    from negotiation.policies.prompts import buyer_messages

    env = ProcurementEnv(preset)
    obs = env.reset(seed=seed)
    expert = get_policy("expert")
    expert.reset(seed)
    game, growing, chat, previous = [], [], [], None
    for _ in range(steps):
        full = buyer_messages(obs, previous_action=previous)
        system, user = buyer_messages(obs, previous_action=previous, max_chars=SHORT_STATE)
        game.append([[m.role, m.content] for m in full])
        chat = [*(chat or [[system.role, system.content]]), [user.role, user.content]]
        growing.append(chat)
        previous = expert.act(obs)
        chat = [*chat, ["assistant", json.dumps(previous, separators=(",", ":"))]]
        step = env.step(previous)
        obs = step.observation
        if step.done:
            break
    return game, growing


def game_prompts(preset: str, seed: int, steps: int) -> dict[str, Any]:
    from negotiation.policies.action_schema import action_json_schema

    game, growing = episode(preset, seed, steps)
    other = episode(preset, seed + 1, steps)[1]
    half = len(growing) // 2  # two conversations taking turns, as many steps in all
    pair = [chat for two in zip(growing[:half], other[:half], strict=True) for chat in two]
    return {"game": game, "growing": growing, "pair": pair, "schema": action_json_schema()}


def measure(side: str, setting: str, threads: int, prompts: dict[str, Any]) -> dict[str, Any]:
    """One backend's figures (run in that backend's virtualenv)."""
    from negotiation.llm import ChatMessage, ChatRequest
    from negotiation.llm.registry import get_backend

    started = time.perf_counter()
    if side == "llamacpp":
        backend = get_backend("llamacpp", "smollm2", weights=setting, n_threads=threads)

        def fresh() -> None:
            backend.llm.reset()  # forget the evaluated prefix: the next prompt starts cold

    else:
        import torch

        torch.set_num_threads(threads or torch.get_num_threads())
        backend = get_backend("transformers", "smollm2", device="cpu", dtype="float32")

        def fresh() -> None:
            pass  # transformers keeps nothing between calls

    loaded_s = time.perf_counter() - started
    schema = prompts["schema"]

    def run(messages: list, *, cold: bool, key: str | None = None, **settings: Any):
        """The result and the seconds it took, by the wall clock and in this process's
        CPU time (steadier when other processes share the cores)."""
        if cold:
            fresh()
        request = ChatRequest(
            tuple(ChatMessage(role, text) for role, text in messages),
            cache_key=key,
            **{"max_tokens": 192, "json_schema": schema, **settings},
        )
        wall, cpu = time.perf_counter(), time.process_time()
        [result] = backend.generate([request])
        assert result.ok, result.error
        return result, {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}

    first = prompts["game"][0]
    run(first, cold=True, max_tokens=4)  # warm-up: kernels touched, grammar converted

    def best(**settings: Any) -> tuple[Any, dict[str, float]]:
        runs = [run(first, cold=True, **settings) for _ in range(3)]
        return runs[0][0], {c: min(seconds[c] for _, seconds in runs) for c in CLOCKS}

    one, t1 = best(max_tokens=1, json_schema=None)
    free, t_free = best(max_tokens=64, json_schema=None)
    constrained, t_schema = best(max_tokens=64)

    def per_token(result: Any, seconds: dict[str, float], clock: str) -> float:
        return (seconds[clock] - t1[clock]) / max(1, result.completion_tokens - 1)

    def steps(chats: list[list], *, cold: bool, keys: list[str | None] | None = None):
        fresh()
        out = [run(chat, cold=cold, key=keys[n] if keys else None) for n, chat in enumerate(chats)]
        return {
            **{f"p50_{c}": statistics.median(seconds[c] for _, seconds in out) for c in CLOCKS},
            "prompt_tokens": [r.prompt_tokens for r, _ in out],
            "completion_tokens": [r.completion_tokens for r, _ in out],
            "texts": [r.text for r, _ in out],
        }

    figures: dict[str, Any] = {
        "load_average": os.getloadavg()[0],  # 1-minute, as uptime shows it
        "loaded_s": loaded_s,
        "prompt_tokens": one.prompt_tokens,
        "decode_tokens": free.completion_tokens,
        "schema_tokens": constrained.completion_tokens,
    }
    for c in CLOCKS:
        figures[f"prefill_tok_s_{c}"] = one.prompt_tokens / t1[c]
        figures[f"decode_tok_s_{c}"] = 1 / per_token(free, t_free, c)
        figures[f"schema_ms_per_token_{c}"] = 1000 * per_token(constrained, t_schema, c)
        figures[f"free_ms_per_token_{c}"] = 1000 * per_token(free, t_free, c)
    figures["game_uncached"] = steps(prompts["game"], cold=True)
    figures["growing_uncached"] = steps(prompts["growing"], cold=True)
    if side == "llamacpp":  # transformers keeps nothing between calls: cached = uncached
        figures["game_cached"] = steps(prompts["game"], cold=False)
        figures["growing_cached"] = steps(prompts["growing"], cold=False)
        # two conversations taking turns: without keys each turn starts from the other
        # conversation's context; with keys each restores its own
        figures["pair_unkeyed"] = steps(prompts["pair"], cold=False)
        keys = ["a", "b"] * (len(prompts["pair"]) // 2)
        figures["pair_keyed"] = steps(prompts["pair"], cold=False, keys=keys)
    backend.close()
    figures["load_average_after"] = os.getloadavg()[0]
    return figures


def side_main(args: argparse.Namespace) -> None:
    prompts = json.loads(Path(args.prompts).read_text())
    print(json.dumps(measure(args.side, args.setting, args.threads, prompts)))


def run_side(python: str, side: str, setting: str, threads: int, prompts: Path) -> dict:
    command = [python, __file__, "--side", side, "--setting", setting, "--prompts", str(prompts)]
    command += ["--threads", str(threads)]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{side} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def p50s(figures: dict[str, Any], name: str, clock: str) -> str:
    cached = figures.get(f"{name}_cached")
    return f"{figures[f'{name}_uncached'][f'p50_{clock}']:.2f} / " + (
        f"{cached[f'p50_{clock}']:.2f}" if cached else "-"
    )


def table(rows: list[tuple[str, dict[str, Any]]], clock: str) -> None:
    print(
        f"\n{clock} seconds | load s | prefill tok/s | decode tok/s "
        "| game step p50 s uncached / cached | growing chat p50 s uncached / cached "
        "| ms/token schema (free) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, f in rows:
        print(
            f"| {name} | {f['loaded_s']:.1f} | {f[f'prefill_tok_s_{clock}']:.0f} | "
            f"{f[f'decode_tok_s_{clock}']:.1f} | {p50s(f, 'game', clock)} | "
            f"{p50s(f, 'growing', clock)} | {f[f'schema_ms_per_token_{clock}']:.1f} "
            f"({f[f'free_ms_per_token_{clock}']:.1f}) |"
        )
    for name, f in rows:
        if "pair_keyed" in f:
            print(
                f"{name}, two conversations taking turns: p50 "
                f"{f['pair_unkeyed'][f'p50_{clock}']:.2f} s without cache_key, "
                f"{f['pair_keyed'][f'p50_{clock}']:.2f} s with"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llamacpp-python", default=sys.executable)
    parser.add_argument("--transformers-python", default=sys.executable)
    parser.add_argument(
        "--weights", nargs="*", default=["file", "f16", "f32"], help="llama.cpp runs"
    )
    parser.add_argument("--transformers", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--threads", type=int, default=0, help="0: each library's default")
    parser.add_argument("--preset", default="medium_adversarial")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--out", help="write every figure (and reply) as JSON here")
    parser.add_argument("--side", choices=["llamacpp", "transformers"], help=argparse.SUPPRESS)
    parser.add_argument("--setting", default="", help=argparse.SUPPRESS)
    parser.add_argument("--prompts", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        side_main(args)
        return

    prompts = game_prompts(args.preset, args.seed, args.steps)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "prompts.json"
        path.write_text(json.dumps(prompts))
        names = {"file": "Q4_1 (as shipped)", "f16": "float16", "f32": "float32"}
        runs = [
            (f"llama.cpp {names[w]}", args.llamacpp_python, "llamacpp", w) for w in args.weights
        ]
        if args.transformers:
            runs.append(("transformers float32", args.transformers_python, "transformers", ""))
        for label, python, side, setting in runs:
            rows.append((label, run_side(python, side, setting, args.threads, path)))
            f = rows[-1][1]
            print(
                f"{label}: done, load average {f['load_average']:.1f} -> "
                f"{f['load_average_after']:.1f}",
                flush=True,
            )
    if args.out:
        Path(args.out).write_text(json.dumps({"prompts": prompts, "rows": rows}, indent=1))
    game = rows[0][1]["game_uncached"]["prompt_tokens"]
    growing = rows[0][1]["growing_uncached"]["prompt_tokens"]
    print(
        f"\n{args.preset} seed {args.seed}: {len(game)} game prompts of {min(game)}-{max(game)} "
        f"tokens, growing chat {growing[0]}-{growing[-1]} tokens"
    )
    print(f"threads: {args.threads or 'default'}")
    for clock in CLOCKS:
        table(rows, clock)


if __name__ == "__main__":
    main()

"""Runs the vllm backend in its own process (vLLM spawns workers, so it needs a
``__main__`` guard, and on CPU it lives in .venv-vllm): one engine, a few batches, and
the results as a JSON file for test_vllm_backend.py to check (vLLM logs to stdout).

    .venv-vllm/bin/python tests/negotiation/llm/vllm_script.py MODEL_FOLDER OUT.json
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def main(model: str) -> dict:
    sys.path.insert(0, str(ROOT))
    from negotiation.llm import ChatMessage, ChatRequest
    from negotiation.llm.registry import get_backend
    from tests.negotiation.llm.action_schema import ACTION_SCHEMA
    from tests.negotiation.llm.test_smollm2 import buyer_turn

    def chat(text: str, **settings) -> ChatRequest:
        return ChatRequest(messages=(ChatMessage("user", text),), **settings)

    backend = get_backend(
        "vllm", model, max_model_len=1024, gpu_memory_utilization=0.25, enforce_eager=True
    )
    mixed = [
        *[dataclasses.replace(buyer_turn(n), max_tokens=320) for n in range(6)],
        chat("What is the capital of France?", max_tokens=24),
        chat("Count: one, two, three,", max_tokens=30, stop=(" five",)),
        chat("long " * 1200, max_tokens=8),  # past max_model_len
        chat("bad schema", max_tokens=8, json_schema={"type": "no-such-type"}),
        chat("Say hello.", max_tokens=12, temperature=1.0, seed=7),
    ]
    engine_calls = []
    real = backend.engine.generate

    def counted(prompts, *args, **kwargs):
        engine_calls.append(len(prompts))
        return real(prompts, *args, **kwargs)

    backend.engine.generate = counted
    first = backend.generate(mixed)
    again = [backend.generate([mixed[-1], mixed[0]]) for _ in range(2)]
    return {
        "schema": ACTION_SCHEMA,
        "first": [dataclasses.asdict(r) for r in first],
        "again": [[dataclasses.asdict(r) for r in results] for results in again],
        "engine_calls": engine_calls,
        "calls": backend.stats.calls,
        "batch_sizes": backend.stats.batch_sizes,
        "same_backend": get_backend(
            "vllm", model, max_model_len=1024, gpu_memory_utilization=0.25, enforce_eager=True
        )
        is backend,
    }


if __name__ == "__main__":
    Path(sys.argv[2]).write_text(json.dumps(main(sys.argv[1])))

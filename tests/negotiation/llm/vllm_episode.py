"""Plays one bilateral episode with the ``llm`` buyer on the vllm backend, in its own
process (vLLM spawns workers, so it needs a ``__main__`` guard, and on CPU it lives in
.venv-vllm), and writes what happened as JSON for the test that started it.

    .venv-vllm/bin/python tests/negotiation/llm/vllm_episode.py MODEL_FOLDER OUT.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# A small engine: the model is tiny, the machine shared with the rest of the suite.
ENGINE = {"max_model_len": 8192, "gpu_memory_utilization": 0.1, "enforce_eager": True}


def main(model: str) -> dict:
    sys.path.insert(0, str(ROOT))
    from negotiation import get_policy, run_episode

    policy = get_policy(
        "llm", backend="vllm", model=model, max_tokens=160, max_prompt_chars=3000,
        backend_options=ENGINE,
    )  # fmt: skip
    result = run_episode("bilateral", policy, seed=3, record_steps=False)
    return {"score": result.score, "metrics": result.metrics, "backend": policy.backend.name}


if __name__ == "__main__":
    Path(sys.argv[2]).write_text(json.dumps(main(sys.argv[1])))

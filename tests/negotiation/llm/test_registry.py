"""get_backend: one loaded backend per process and settings, clear errors for bad names,
options and models, and no heavy import until a backend is asked for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from negotiation.llm.registry import clear_backends, get_backend

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def fresh_registry():
    clear_backends()
    yield
    clear_backends()


def test_every_episode_of_a_process_shares_one_backend(tiny_model, fresh_registry):
    first = get_backend("transformers", str(tiny_model), device="cpu")
    assert get_backend("transformers", str(tiny_model), device="cpu") is first
    assert get_backend("transformers", str(tiny_model), device="cpu", max_batch_size=64) is first
    other = get_backend("transformers", str(tiny_model), device="cpu", max_batch_size=8)
    assert other is not first and other.max_batch_size == 8
    clear_backends()
    assert get_backend("transformers", str(tiny_model), device="cpu") is not first


@pytest.mark.parametrize(
    ("name", "model", "options", "message"),
    [
        ("gpt", "", {}, "unknown LLM backend 'gpt': choose one of llamacpp, openai_compatible, "),
        ("transformers", "", {"devise": "cpu"}, "devise: Extra inputs are not permitted"),
        ("transformers", "", {"max_batch_size": "many"}, "max_batch_size: Input should be"),
        ("transformers", "", {"dtype": "int3"}, "dtype: Input should be 'auto'"),
        ("vllm", "", {"gpu_memory_utilization": 2}, "gpu_memory_utilization: Input should"),
        ("openai_compatible", "", {"timeout_s": 0}, "timeout_s: Input should be greater"),
        ("openai_compatible", "served", {}, "needs a server URL"),
        ("openai_compatible", "ftp://host/v1", {}, "needs a server URL"),
        ("openai_compatible", "m", {"base_url": "ftp://h/v1"}, "not an http(s) server URL"),
        ("transformers", "/no/such/model", {}, "'/no/such/model' is not a local Hugging Face"),
        ("llamacpp", "/no/such/model.gguf", {}, "'/no/such/model.gguf' is not a local GGUF"),
        ("llamacpp", "", {"n_ctx": 8}, "n_ctx: Input should be greater than or equal to 64"),
    ],
)
def test_bad_settings_are_a_clear_value_error(fresh_registry, name, model, options, message):
    with pytest.raises(ValueError) as excinfo:
        get_backend(name, model, **options)
    assert message in str(excinfo.value)


def test_importing_the_llm_package_loads_no_heavy_library():
    modules = [
        "negotiation",
        "negotiation.llm",
        "negotiation.llm.registry",
        "negotiation.llm.models",
        "negotiation.llm.results",
        "negotiation.llm.constrained",
        "negotiation.llm.openai_wire",
        "negotiation.llm.server",
        "negotiation.llm.transformers_backend",
        "negotiation.llm.openai_backend",
        "negotiation.llm.vllm_backend",
        "negotiation.llm.llamacpp_backend",
    ]
    code = (
        f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
        "heavy = ('torch', 'transformers', 'vllm', 'httpx', 'xgrammar', 'llama_cpp')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"

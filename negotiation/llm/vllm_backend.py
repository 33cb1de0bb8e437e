"""The in-process vLLM backend: an engine on the GPU worker (``-Q gpu --pool=solo``), or
on CPU with the vllm-cpu build (scripts/vllm_cpu_env.sh), which runs the same code.

vLLM schedules a whole batch itself (continuous batching, paged KV cache) and takes one
SamplingParams per prompt, so unlike the transformers backend a batch never splits:
different schemas, seeds, temperatures and stop strings share one ``generate``. Schemas
go through ``StructuredOutputsParams(json=...)``. Prefix caching is on explicitly, so
conversations need no ``forget``: vLLM evicts unused KV blocks itself. vLLM starts
worker processes, so a script that creates this backend needs an
``if __name__ == "__main__":`` guard, and a forked (prefork) worker must never create one.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from .backend import ChatRequest, ChatResult
from .models import resolve_model
from .results import BackendOptions, LocalBatchBackend, describe, messages_as_dicts

INSTALL_HINT = (
    "the vllm backend needs vLLM: install requirements/gpu.txt on a GPU host, or run "
    "scripts/vllm_cpu_env.sh and use .venv-vllm on CPU"
)


def installed() -> bool:
    """Whether this interpreter can import vLLM (checked without importing it)."""
    return importlib.util.find_spec("vllm") is not None


class VLLMOptions(BackendOptions):
    max_model_len: int = Field(default=4096, ge=64)
    # On CPU this is the share of RAM vLLM reserves (weights + KV cache), despite the name.
    gpu_memory_utilization: float = Field(default=0.85, gt=0, le=1)
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    enforce_eager: bool = False
    load_format: Literal["auto", "safetensors", "dummy"] = "auto"  # dummy: random weights
    tensor_parallel_size: int = Field(default=1, ge=1)
    seed: int = 0
    # Automatic prefix caching: a conversation's next prompt (ChatRequest.cache_key) and
    # the rules text every episode shares reuse the KV blocks of earlier prompts.
    enable_prefix_caching: bool = True


class VLLMBackend(LocalBatchBackend):
    name = "vllm"
    Options = VLLMOptions

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__()
        opts = VLLMOptions.parse(self.name, options)
        try:
            from vllm import LLM
        except ImportError as exc:
            raise RuntimeError(f"{INSTALL_HINT} ({describe(exc)})") from exc
        folder = resolve_model(model)
        self.max_model_len = opts.max_model_len
        self.engine = LLM(
            model=str(folder),
            # Compact JSON, as in the transformers backend: free whitespace lets a weak
            # model pad until max_tokens. vLLM reads this per engine, and only for xgrammar
            # (the grammar engine of the transformers backend too) or guidance.
            structured_outputs_config={"backend": "xgrammar", "disable_any_whitespace": True},
            **opts.model_dump(),
        )
        self.tokenizer = self.engine.get_tokenizer()

    def _prompt(self, request: ChatRequest) -> list[int]:
        text = self.tokenizer.apply_chat_template(
            messages_as_dicts(request), tokenize=False, add_generation_prompt=True
        )
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) + request.max_tokens > self.max_model_len:
            raise ValueError(
                f"prompt of {len(ids)} tokens + max_tokens {request.max_tokens} exceeds "
                f"max_model_len {self.max_model_len}"
            )
        if request.json_schema is not None:
            # vLLM rejects a bad schema for the whole batch; xgrammar (its structured-output
            # backend) finds it here, so only this request fails.
            import xgrammar

            xgrammar.Grammar.from_json_schema(json.dumps(request.json_schema))
        return ids

    def _run(
        self,
        requests: Sequence[ChatRequest],
        prompts: dict[int, list[int]],
        rows: Sequence[int],
        started: float,
    ) -> dict[int, ChatResult]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        params = []
        for i in rows:
            r = requests[i]
            structured = None
            if r.json_schema is not None:
                structured = StructuredOutputsParams(json=r.json_schema)
            params.append(
                SamplingParams(
                    temperature=r.temperature,
                    seed=r.seed,
                    max_tokens=r.max_tokens,
                    stop=list(r.stop) or None,
                    structured_outputs=structured,
                )
            )
        outputs = self.engine.generate(
            [{"prompt_token_ids": prompts[i]} for i in rows], params, use_tqdm=False
        )
        latency = time.perf_counter() - started
        results = {}
        for i, out in zip(rows, outputs, strict=True):
            completion = out.outputs[0]
            results[i] = ChatResult(
                text=completion.text,
                finish_reason="length" if completion.finish_reason == "length" else "stop",
                prompt_tokens=len(out.prompt_token_ids or prompts[i]),
                completion_tokens=len(completion.token_ids),
                latency_s=latency,
            )
        return results

    def close(self) -> None:
        self.engine = None

"""The in-process transformers backend: one loaded model, CPU or CUDA, that answers a whole
batch of chats with one ``generate`` call per JSON schema in it.

Batching only pays if rows of different lengths can share a forward pass, so prompts are
padded on the LEFT (every row's next token sits in the last column) with an attention
mask. ``generate`` takes one set of sampling settings per call, but requests differ, so
the per-request parts are logits processors and stopping criteria that work row by row:
greedy rows are left alone, sampled rows draw from their own seeded generator (a reply
does not depend on which other requests shared its batch), stop strings end their own
row, and each row's ``max_tokens`` cuts its own reply. Only the schema splits a batch,
because xgrammar's processor takes one grammar per row and has no "unconstrained" row.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from .backend import ChatRequest, ChatResult
from .constrained import JsonSchemaConstraint, schema_key
from .models import resolve_model
from .results import BackendOptions, LocalBatchBackend, messages_as_dicts


class TransformersOptions(BackendOptions):
    device: str = "auto"  # "auto": cuda when available, else cpu
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    max_batch_size: int = Field(default=64, ge=1)  # rows per generate: bounds memory


class TransformersBackend(LocalBatchBackend):
    name = "transformers"
    Options = TransformersOptions

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        opts = TransformersOptions.parse(self.name, options)
        folder = resolve_model(model)
        device = opts.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = opts.dtype
        if dtype == "auto":
            dtype = "float32" if device == "cpu" else "bfloat16"
        self.device = torch.device(device)
        self.max_batch_size = opts.max_batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype))
        self.model.to(self.device).eval()
        config = self.model.config
        self.context_tokens = getattr(config, "max_position_embeddings", None) or getattr(
            config, "n_positions", 2048
        )
        eos = self.model.generation_config.eos_token_id
        eos = eos if isinstance(eos, list) else [eos]
        # A row that ended early is filled with padding until the batch ends: padding ends
        # a reply like EOS does.
        ends = [*eos, self.tokenizer.eos_token_id, self.tokenizer.pad_token_id]
        self.end_ids = {t for t in ends if t is not None}
        self.constraint = JsonSchemaConstraint(self.tokenizer, config.vocab_size)

    def _batches(self, requests: Sequence[ChatRequest], rows: list[int]) -> list[list[int]]:
        groups: dict[str | None, list[int]] = {}
        for i in rows:
            groups.setdefault(schema_key(requests[i].json_schema), []).append(i)
        size = self.max_batch_size
        return [
            g[start : start + size] for g in groups.values() for start in range(0, len(g), size)
        ]

    def _prompt(self, request: ChatRequest) -> str:
        text = self.tokenizer.apply_chat_template(
            messages_as_dicts(request), tokenize=False, add_generation_prompt=True
        )
        n_tokens = len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        if n_tokens + request.max_tokens > self.context_tokens:
            raise ValueError(
                f"prompt of {n_tokens} tokens + max_tokens {request.max_tokens} exceeds the "
                f"model's context of {self.context_tokens} tokens"
            )
        if request.json_schema is not None:
            self.constraint.compile(schema_key(request.json_schema))  # a bad schema fails here
        return text

    def _run(
        self,
        requests: Sequence[ChatRequest],
        prompts: dict[int, str],
        rows: Sequence[int],
        started: float,
    ) -> dict[int, ChatResult]:
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList

        batch = [requests[i] for i in rows]
        key = schema_key(batch[0].json_schema)  # one schema per batch (_batches)
        enc = self.tokenizer(
            [prompts[i] for i in rows],
            return_tensors="pt",
            padding=True,
            add_special_tokens=False,
        ).to(self.device)
        width = enc["input_ids"].shape[1]
        processors = [] if key is None else [self.constraint.logits_processor(key, len(rows))]
        processors.append(_RowSampler(batch, self.device))
        criteria = []
        # A stop string ending a row early would feed xgrammar a padding token it cannot
        # accept; schema rows end with the document anyway, and the reply is still cut.
        if key is None and any(r.stop for r in batch):
            criteria.append(_StopStrings(self.tokenizer, batch, width))
        with torch.inference_mode():
            out = self.model.generate(
                **enc,
                do_sample=False,
                num_beams=1,
                max_new_tokens=max(r.max_tokens for r in batch),
                logits_processor=LogitsProcessorList(processors),
                stopping_criteria=StoppingCriteriaList(criteria),
                pad_token_id=self.tokenizer.pad_token_id,
            )
        latency = time.perf_counter() - started
        prompt_lengths = enc["attention_mask"].sum(dim=1).tolist()
        return {
            i: self._result(requests[i], out[row, width:].tolist(), prompt_lengths[row], latency)
            for row, i in enumerate(rows)
        }

    def _result(
        self, request: ChatRequest, tokens: list[int], prompt_tokens: int, latency: float
    ) -> ChatResult:
        tokens = tokens[: request.max_tokens]
        finish = "length"
        for n, token in enumerate(tokens):
            if token in self.end_ids:
                tokens, finish = tokens[:n], "stop"
                break
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        cut = min((p for s in request.stop if (p := text.find(s)) >= 0), default=-1)
        if cut >= 0:
            text, finish = text[:cut], "stop"
        return ChatResult(
            text=text,
            finish_reason=finish,
            prompt_tokens=int(prompt_tokens),
            completion_tokens=len(tokens),
            latency_s=latency,
        )

    def close(self) -> None:
        self.model = None  # the registry drops its reference too; memory goes with both


class _RowSampler:
    """Seeded sampling per row inside a greedy ``generate``: a sampled row's logits become
    one-hot on the token drawn from its own generator, so greedy picks exactly that token.
    Greedy rows (temperature 0) pass through untouched."""

    def __init__(self, batch: Sequence[ChatRequest], device: Any) -> None:
        import torch

        self.rows = [
            (row, r.temperature, torch.Generator(device=device).manual_seed(r.seed))
            for row, r in enumerate(batch)
            if r.temperature > 0
        ]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        for row, temperature, generator in self.rows:
            probs = torch.softmax(scores[row].float() / temperature, dim=-1)
            token = torch.multinomial(probs, 1, generator=generator)
            scores[row] = torch.full_like(scores[row], float("-inf"))
            scores[row, token] = 0.0
        return scores


class _StopStrings:
    """Ends each row when its own stop strings appear in what it generated."""

    def __init__(self, tokenizer: Any, batch: Sequence[ChatRequest], prompt_width: int) -> None:
        self.tokenizer = tokenizer
        self.stops = [r.stop for r in batch]
        self.prompt_width = prompt_width
        # Decoding only the tail is enough: a token is at least one byte of text.
        self.window = max(len(s.encode()) for r in batch for s in r.stop) + 2

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        done = []
        for row, stops in enumerate(self.stops):
            tail = input_ids[row, self.prompt_width :][-self.window :]
            text = self.tokenizer.decode(tail, skip_special_tokens=True) if stops else ""
            done.append(any(s in text for s in stops))
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)

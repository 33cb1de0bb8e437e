"""The llama.cpp backend (llama-cpp-python): a GGUF model run by llama.cpp's CPU kernels in
this process.

The weights are the file's own (``weights="file"``) or a float16/float32 copy of them that
llama.cpp writes once into the model cache. The default is float16: with quantised weights
llama.cpp also quantises the activations to 8 bits for its dot products, which moves a
small model's greedy replies away from what the same weights give in float (SmolLM2's
Q4_1 file then answers differently from the transformers backend, which de-quantises it).

Requests run one at a time on one context. llama.cpp keeps the tokens it evaluated last
and reuses their longest common prefix with the next prompt, so a request sharing the
system prompt (or a conversation's earlier turns) with the one before evaluates only what
is new; requests of a batch run in prompt order so that shared prefixes meet. The live
context belongs to the ``cache_key`` of the request that filled it; when a request of
another key (or none) is about to take it, that conversation's context is saved first,
and a request whose saved context shares more of its prompt than the live context does
restores it: each of several interleaved conversations keeps its own prefix, and a lone
conversation (a live episode) is never copied. Saved contexts are bounded in megabytes,
least recently used dropped first, and ``forget`` drops one. (llama-cpp-python's
LlamaRAMCache is not used: each of its entries also copies the whole logits buffer,
n_batch x vocabulary.) A result's ``cached_tokens`` are the prompt tokens the context
already held, which llama.cpp did not evaluate again.

The chat template is the GGUF's own ``tokenizer.chat_template``, rendered with jinja2 as
transformers renders it. A JSON schema becomes a llama.cpp grammar (GBNF, at most one
space between tokens, so a weak model cannot pad forever), converted once per schema.
Temperature 0 is greedy; above 0 the whole distribution is sampled (no top-k, top-p or
min-p, as in the transformers backend), seeded by the request, from a clean context (no
reused prefix), so that the same request always gets the same reply.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from .backend import ChatRequest, ChatResult
from .constrained import schema_key
from .llamacpp_greedy import GreedyDecoder
from .models import gguf_with_weights, resolve_gguf
from .results import BackendOptions, LocalBatchBackend, messages_as_dicts


class LlamaCppOptions(BackendOptions):
    # "file": the GGUF's own weights; "f16"/"f32": a copy stored in that type, made once
    weights: Literal["file", "f16", "f32"] = "f16"
    n_ctx: int = Field(default=8192, ge=64)  # context tokens: prompt + reply
    n_threads: int = Field(default=0, ge=0)  # 0: default_threads()
    n_batch: int = Field(default=512, ge=1)  # prompt tokens per forward pass
    saved_context_mb: int = Field(default=512, ge=0)  # contexts kept by cache_key; 0: none


class LlamaCppBackend(LocalBatchBackend):
    name = "llamacpp"
    Options = LlamaCppOptions

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__()
        opts = LlamaCppOptions.parse(self.name, options)
        path = resolve_gguf(model)  # bad settings fail before llama_cpp is needed
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        path = gguf_with_weights(path, opts.weights)
        threads = opts.n_threads or default_threads()
        self.llm = Llama(
            str(path),
            n_ctx=opts.n_ctx,
            n_batch=opts.n_batch,
            n_threads=threads,
            n_threads_batch=threads,
            verbose=False,
        )
        self.context_tokens = self.llm.n_ctx()
        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ValueError(f"{path.name} has no chat template (tokenizer.chat_template)")
        self.formatter = Jinja2ChatFormatter(
            template,
            eos_token=self._token_text(self.llm.token_eos()),
            bos_token=self._token_text(self.llm.token_bos()),
        )
        self.saved = SavedContexts(self.llm, opts.saved_context_mb << 20)
        self.greedy = GreedyDecoder(self.llm)
        self.live_key: str | None = None  # the conversation the live context holds
        self._grammars: dict[str, str] = {}

    def forget(self, cache_key: str) -> None:
        self.saved.forget(cache_key)
        if self.live_key == cache_key:
            self.live_key = None

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self.llm.detokenize([token], special=True).decode("utf-8", errors="replace")

    def _grammar(self, key: str) -> str:
        """The GBNF text of a ``schema_key``; raises for a schema the converter rejects."""
        grammar = self._grammars.get(key)
        if grammar is None:
            from llama_cpp.llama_grammar import json_schema_to_gbnf

            grammar = self._grammars[key] = json_schema_to_gbnf(key)
        return grammar

    def _prompt(self, request: ChatRequest) -> list[int]:
        text = self.formatter(messages=messages_as_dicts(request)).prompt
        # The template writes any special tokens itself (as add_special_tokens=False does).
        tokens = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        if len(tokens) + request.max_tokens > self.context_tokens:
            raise ValueError(
                f"prompt of {len(tokens)} tokens + max_tokens {request.max_tokens} exceeds "
                f"the context of {self.context_tokens} tokens"
            )
        if request.json_schema is not None:
            self._grammar(schema_key(request.json_schema))  # a bad schema fails here
        return tokens

    def _batches(
        self, requests: Sequence[ChatRequest], prompts: dict[int, list[int]], rows: list[int]
    ) -> list[list[int]]:
        def order(i: int) -> tuple[Any, ...]:
            request = requests[i]
            return (request.cache_key or "", [(m.role, m.content) for m in request.messages])

        return [[i] for i in sorted(rows, key=order)]

    def _run(
        self,
        requests: Sequence[ChatRequest],
        prompts: dict[int, list[int]],
        rows: Sequence[int],
        started: float,
    ) -> dict[int, ChatResult]:
        from llama_cpp import LlamaGrammar

        [i] = rows  # one request at a time (_batches)
        request, tokens = requests[i], prompts[i]
        grammar = None  # GBNF text
        if request.json_schema is not None:
            grammar = self._grammar(schema_key(request.json_schema))
        if self.live_key is not None and self.live_key != request.cache_key:
            self.saved.save(self.live_key)  # another conversation takes the context
        self.live_key = None  # until this request's tokens are in it
        if request.temperature > 0:
            # Sampling the whole distribution turns the last bits of a logit into another
            # token, and a reused prefix leaves different last bits than one pass over the
            # prompt: a seeded reply is only reproducible from a clean context.
            self.llm.reset()
        else:
            self.saved.restore(request.cache_key, tokens)
        if request.temperature == 0:
            greedy = self.greedy.run(
                tokens, grammar=grammar, max_tokens=request.max_tokens, stop=request.stop
            )
            self.live_key = request.cache_key
            text = self.llm.detokenize(greedy.tokens).decode("utf-8", errors="ignore")
            cut = min((p for s in request.stop if (p := text.find(s)) >= 0), default=-1)
            return {
                i: ChatResult(
                    text=text if cut < 0 else text[:cut],
                    finish_reason=greedy.finish,
                    prompt_tokens=len(tokens),
                    completion_tokens=len(greedy.tokens),
                    latency_s=time.perf_counter() - started,
                    cached_tokens=greedy.reused,
                )
            }
        out = self.llm.create_completion(
            tokens,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            top_k=0,
            top_p=1.0,
            min_p=0.0,
            repeat_penalty=1.0,
            seed=request.seed,
            stop=list(request.stop),
            grammar=None if grammar is None else LlamaGrammar.from_string(grammar, verbose=False),
        )
        self.live_key = request.cache_key
        choice, usage = out["choices"][0], out["usage"]
        return {
            i: ChatResult(
                text=choice["text"],
                finish_reason="length" if choice["finish_reason"] == "length" else "stop",
                prompt_tokens=usage["prompt_tokens"],
                completion_tokens=usage["completion_tokens"],
                latency_s=time.perf_counter() - started,
            )
        }

    def close(self) -> None:
        llm, self.llm = self.llm, None
        if llm is not None:
            llm.close()


def default_threads() -> int:
    """OMP_NUM_THREADS where set (as torch reads it: the share of the cores this process
    was given), else every core this process may run on. llama.cpp's threads wait for each
    other at every layer, so more threads than free cores is much slower than fewer."""
    configured = os.environ.get("OMP_NUM_THREADS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return len(os.sched_getaffinity(0))


@dataclass(frozen=True, slots=True)
class SavedContext:
    tokens: tuple[int, ...]  # what the context had evaluated
    data: bytes  # llama.cpp's state: KV cache and last logits


class SavedContexts:
    """Contexts saved by cache key, at most ``capacity`` bytes, least recently used
    dropped first."""

    def __init__(self, llm: Any, capacity: int) -> None:
        self.llm = llm
        self.capacity = capacity
        self.contexts: OrderedDict[str, SavedContext] = OrderedDict()
        self.restored = 0  # how many requests started from a saved context

    @property
    def size(self) -> int:
        return sum(len(c.data) for c in self.contexts.values())

    def save(self, key: str | None) -> None:
        if key is None or self.capacity == 0:
            return
        import llama_cpp

        ctx = self.llm.ctx
        size = llama_cpp.llama_state_get_size(ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(ctx, buffer, size)
        tokens = tuple(self.llm.input_ids[: self.llm.n_tokens].tolist())
        self.contexts.pop(key, None)
        self.contexts[key] = SavedContext(tokens, ctypes.string_at(buffer, written))
        while self.contexts and self.size > self.capacity:
            self.contexts.popitem(last=False)

    def forget(self, key: str) -> None:
        self.contexts.pop(key, None)

    def restore(self, key: str | None, prompt: Sequence[int]) -> None:
        """Load ``key``'s context if it shares a longer prefix with ``prompt`` than the
        live one does (llama.cpp then evaluates only the rest)."""
        saved = self.contexts.get(key) if key is not None else None
        if saved is None:
            return
        import llama_cpp

        self.contexts.move_to_end(key)
        live = self.llm.input_ids[: self.llm.n_tokens].tolist()
        if common_prefix(saved.tokens, prompt) <= common_prefix(live, prompt):
            return
        buffer = (ctypes.c_uint8 * len(saved.data)).from_buffer_copy(saved.data)
        if llama_cpp.llama_state_set_data(self.llm.ctx, buffer, len(buffer)) != len(buffer):
            self.llm.reset()  # the live context is no longer what input_ids says
            raise RuntimeError("llama.cpp refused a saved context")
        self.llm.input_ids[: len(saved.tokens)] = saved.tokens
        self.llm.n_tokens = len(saved.tokens)
        self.restored += 1


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n

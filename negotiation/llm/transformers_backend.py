"""The in-process transformers backend: one loaded model, CPU or CUDA, that answers a whole
batch of chats with one ``generate`` call per JSON schema in it.

Batching only pays if rows of different lengths can share a forward pass, so prompts are
padded on the LEFT (every row's next token sits in the last column) with an attention
mask. ``generate`` takes one set of sampling settings per call, but requests differ, so
the per-request parts are logits processors and stopping criteria that work row by row:
greedy rows are left alone, sampled rows draw from their own seeded generator (a reply
does not depend on which other requests shared its batch), stop strings end their own
row, and each row's ``max_tokens`` cuts its own reply. For ``generate`` the schema
splits a batch, because xgrammar's processor takes one grammar per row and has no
"unconstrained" row; the lean loop (decoding.py) keeps a grammar per row, so episodes
whose valid-action schemas differ still share one batch (``mixed_schemas``).

Conversations (``ChatRequest.cache_key``) keep their keys and values between calls
(``kv_cache_conversations`` of them): a prompt starts from the longest token prefix it
shares with a cached sequence and only the rest is computed. In a batch, rows stay
left-padded and right-aligned: the first ``width - new`` columns come from caches, the
last ``new`` columns are computed, where ``new`` is the most any row must compute; a row
that must compute fewer recomputes the end of its cached prefix instead, so the layout,
positions and attention mask are exactly those of an uncached left-padded batch. A row
that would recompute much of its cache next to a row that shares nothing goes to another
``generate`` when that saves more than the extra call costs (``split_step_tokens``).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from .attention import register as attention_register
from .backend import ChatRequest, ChatResult
from .constrained import JsonSchemaConstraint, schema_key
from .decoding import Decoder, RowRule
from .freed_memory import release_freed_memory
from .growing_cache import growing_cache, is_plain
from .kv_cache import KVEntry, KVStore, Reuse
from .models import resolve_model
from .results import BackendOptions, LocalBatchBackend, messages_as_dicts

# A system message shorter than this is computed with its prompt, not cached on its own.
MIN_SHARED_PREFIX_TOKENS = 32
SHARED_PREFIXES = 4  # system messages cached per process (each once)


class TransformersOptions(BackendOptions):
    device: str = "auto"  # "auto": cuda when available, else cpu
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    max_batch_size: int = Field(default=64, ge=1)  # rows per generate: bounds memory
    # Conversations whose keys and values are kept (least recently used go); 0: none.
    kv_cache_conversations: int = Field(default=64, ge=0)
    # Prompt tokens one decode step of an extra generate costs; None: by device.
    split_step_tokens: int | None = Field(default=None, ge=0)
    # "lean": the backend's own loop (decoding.py); "generate": transformers' generate,
    # the reference the lean loop is tested against.
    decoder: Literal["lean", "generate"] = "lean"
    # Lean loop, one constrained row: strings the grammar forces are checked in one pass.
    jump_forward: bool = True
    # Lean loop: finished rows leave the batch (their cache rows and padding dropped);
    # False keeps feeding them padding until the longest reply ends (the old loop).
    shrink: bool = True
    # Lean loop: rows of different JSON schemas (and none) share one batch, each with its
    # own grammar; False: one batch per schema, as generate needs (one grammar per call).
    mixed_schemas: bool = True
    # "auto": on CPU masked grouped-query attention without copying the cache
    # (attention.py), on CUDA transformers' sdpa (its fused kernels want the key/value
    # heads repeated); or one by name: "sdpa_gqa", "sdpa", "eager" (transformers' own).
    attention: Literal["auto", "sdpa_gqa", "sdpa", "eager"] = "auto"


@dataclass(frozen=True, slots=True)
class _Prompt:
    ids: Any  # 1-D token ids on CPU
    shared: int  # leading tokens that render the system message alone (0: none)


class TransformersBackend(LocalBatchBackend):
    name = "transformers"
    Options = TransformersOptions

    def __init__(self, model: str = "", *, loaded: Any = None, **options: Any) -> None:
        """Load ``model`` (a local folder, or the shipped default), or serve ``loaded``:
        a (model, tokenizer) pair already in memory, e.g. a model being trained (its
        device is kept; ``device``, ``dtype`` and ``attention`` are then its own)."""
        super().__init__()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        opts = TransformersOptions.parse(self.name, options)
        if loaded is not None:
            self.model, tokenizer = loaded
            self.tokenizer = copy.copy(tokenizer)  # its padding side is set below, not theirs
            self.device = self.model.device
        else:
            folder = resolve_model(model)
            device = opts.device
            if device == "auto":
                device = "cuda" if torch.cuda.is_available() else "cpu"
            dtype = opts.dtype
            if dtype == "auto":
                dtype = "float32" if device == "cpu" else "bfloat16"
            self.device = torch.device(device)
            self.tokenizer = AutoTokenizer.from_pretrained(folder)
            attention = opts.attention
            gqa = attention_register()  # a name transformers knows, by default or by choice
            if attention == "auto":
                attention = "sdpa" if self.device.type == "cuda" else gqa
            self.model = AutoModelForCausalLM.from_pretrained(
                folder, dtype=getattr(torch, dtype), attn_implementation=attention
            )
            self.model.to(self.device).eval()
        self.max_batch_size = opts.max_batch_size
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
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
        self.kv = self._kv_store(opts.kv_cache_conversations)
        self.split_step_tokens = opts.split_step_tokens
        # A draft is cut back by cropping the cache: plain growing layers only.
        self.decoder = opts.decoder
        self.plain = self._plain_cache()
        self.shrink = opts.shrink and self.plain
        self.mixed_schemas = opts.mixed_schemas and self.decoder == "lean"
        self.jump_forward = opts.jump_forward and self.plain
        self.drafts = [0, 0]  # jump-forward draft tokens checked, kept (since loading)
        if self.split_step_tokens is None:
            self.split_step_tokens = 6 if self.device.type == "cpu" else 2048

    def _plain_cache(self) -> bool:
        """Whether the model's cache is one growing sequence per layer (not sliding
        windows or recurrent state, which cannot be cropped and spliced)."""
        return all(is_plain(layer) for layer in growing_cache(self.model.config).layers)

    def _kv_store(self, conversations: int) -> KVStore | None:
        """None where caching is off or the cache is not plain."""
        if conversations == 0 or not self._plain_cache():
            return None
        return KVStore(conversations, SHARED_PREFIXES)

    def forget(self, cache_key: str) -> None:
        if self.kv is not None:
            self.kv.forget(cache_key)

    def _batches(
        self, requests: Sequence[ChatRequest], prompts: dict[int, _Prompt], rows: list[int]
    ) -> list[list[int]]:
        groups: dict[str | None, list[int]] = {}
        for i in rows:
            key = "" if self.mixed_schemas else schema_key(requests[i].json_schema)
            groups.setdefault(key, []).append(i)
        return [b for g in groups.values() for b in self._split(requests, prompts, g)]

    def _split(
        self, requests: Sequence[ChatRequest], prompts: dict[int, _Prompt], rows: list[int]
    ) -> list[list[int]]:
        """Rows of one group (one schema, or all with ``mixed_schemas``) in generate calls
        of at most ``max_batch_size`` rows. A call computes ``new`` columns for every row
        (the most any row needs), so a row that reuses a cache recomputes ``new`` minus its
        own need: rows, ordered by need, are cut into runs where a cut saves more
        recomputation than the decode steps of one more call cost. Rows that reuse
        nothing waste nothing (their prompt is padding or tokens they would compute
        anyway), so a batch without caches stays whole."""
        size = self.max_batch_size
        if self.kv is None or len(rows) == 1:
            return [rows[start : start + size] for start in range(0, len(rows), size)]
        plans = {i: self._reuse(requests[i], prompts[i]) for i in rows}
        need = {i: len(prompts[i].ids) - plans[i] for i in rows}
        order = sorted(rows, key=need.__getitem__)
        call = max(requests[i].max_tokens for i in rows) * self.split_step_tokens
        # cost[j]: least recomputation + call cost of the first j rows of ``order``, the
        # last run being order[cut[j]:j].
        cost = [0] + [0] * len(order)
        cut = [0] * (len(order) + 1)
        for j in range(1, len(order) + 1):
            new = need[order[j - 1]]
            reusing = reused_need = 0  # of the rows order[i:j]
            best = None
            for i in range(j - 1, max(0, j - size) - 1, -1):
                if plans[order[i]] > 0:
                    reusing, reused_need = reusing + 1, reused_need + need[order[i]]
                total = cost[i] + new * reusing - reused_need + call
                if best is None or total < best:
                    best, cut[j] = total, i
            cost[j] = best
        runs, j = [], len(order)
        while j > 0:
            runs.append(order[cut[j] : j])
            j = cut[j]
        return runs[::-1]

    def _reuse(self, request: ChatRequest, prompt: _Prompt) -> int:
        """Prompt tokens this request can start from (a shared prefix counts: it will be
        computed once for all)."""
        assert self.kv is not None
        found = self.kv.best(request.cache_key, prompt.ids).tokens
        return min(max(found, prompt.shared), len(prompt.ids) - 1)

    def _prompt(self, request: ChatRequest) -> _Prompt:
        import torch

        messages = messages_as_dicts(request)
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) + request.max_tokens > self.context_tokens:
            raise ValueError(
                f"prompt of {len(ids)} tokens + max_tokens {request.max_tokens} exceeds the "
                f"model's context of {self.context_tokens} tokens"
            )
        if request.json_schema is not None:
            self.constraint.compile(schema_key(request.json_schema))  # a bad schema fails here
        shared = 0
        if self.kv is not None and len(messages) > 1 and messages[0]["role"] == "system":
            system = self.tokenizer.apply_chat_template(messages[:1], tokenize=False)
            system_ids = self.tokenizer(system, add_special_tokens=False)["input_ids"]
            shared = next(
                (n for n, (a, b) in enumerate(zip(ids, system_ids, strict=False)) if a != b),
                min(len(ids), len(system_ids)),
            )
            shared = shared if shared >= MIN_SHARED_PREFIX_TOKENS else 0
        return _Prompt(torch.tensor(ids, dtype=torch.long), shared)

    def _run(
        self,
        requests: Sequence[ChatRequest],
        prompts: dict[int, _Prompt],
        rows: Sequence[int],
        started: float,
    ) -> dict[int, ChatResult]:
        import torch

        batch = [requests[i] for i in rows]
        keys = [schema_key(r.json_schema) for r in batch]  # one per batch unless mixed
        ids = [prompts[i].ids for i in rows]
        lengths = [len(x) for x in ids]
        width = max(lengths)
        reuse = self._plan(batch, [prompts[i] for i in rows])
        new = max(n - r.tokens for n, r in zip(lengths, reuse, strict=True))
        # Right-aligned rows: row r's first lengths[r] - new tokens come from its cache.
        cached = [max(0, n - new) for n in lengths]
        input_ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(rows), width), dtype=torch.long)
        for row, x in enumerate(ids):
            input_ids[row, width - len(x) :] = x
            attention_mask[row, width - len(x) :] = 1
        past = None if self.kv is None else self._past(reuse, cached, width - new)
        enc = {
            "input_ids": input_ids.to(self.device),
            "attention_mask": attention_mask.to(self.device),
        }
        replies, caches = self._decode(
            batch=batch,
            keys=keys,
            input_ids=enc["input_ids"],
            attention_mask=enc["attention_mask"],
            past=past,
            cached=width - new,
        )
        latency = time.perf_counter() - started
        if caches is not None:
            self._keep_decoded(batch, ids, replies, caches)
        elif past is not None:
            self._keep(batch, ids, replies, past, width)
        return {
            i: self._result(requests[i], replies[row].tolist(), lengths[row], cached[row], latency)
            for row, i in enumerate(rows)
        }

    def _decode(
        self,
        *,
        batch: Sequence[ChatRequest],
        keys: Sequence[str | None],
        input_ids: Any,
        attention_mask: Any,
        past: Any,
        cached: int,
    ) -> tuple[Any, list[Any] | None]:
        """Reply tokens [rows, longest], padded after each row's end, and (lean loop,
        caching on) each row's keys and values; else ``past`` (when given) comes back
        holding every reply token but each row's last. The lean loop sheds finished rows
        where the cache is plain (a batch's decode steps cost its live rows only)."""
        import torch

        if self.decoder == "lean":
            caching = past is not None
            grammars = [None if k is None else self.constraint.compile(k) for k in keys]
            rules = [RowRule(r.max_tokens, r.temperature, r.seed, r.stop) for r in batch]
            decoder = Decoder(
                self.model,
                self.tokenizer,
                rules,
                grammars,
                self.end_ids,
                jump_forward=self.jump_forward,
                shrink=self.shrink,
                keep=[caching and r.cache_key is not None for r in batch],
            )
            if past is None:  # caching off: a throwaway cache for this batch
                past = growing_cache(self.model.config)
            with torch.inference_mode():
                out = decoder.run(input_ids, attention_mask, past, cached)
            self.drafts[0] += out.drafted
            self.drafts[1] += out.accepted
            longest = max(len(t) for t in out.tokens)
            replies = torch.full((len(batch), longest), self.tokenizer.pad_token_id)
            for row, tokens in enumerate(out.tokens):
                replies[row, : len(tokens)] = torch.tensor(tokens)
            return replies, (out.caches if caching else None)
        from transformers import LogitsProcessorList, StoppingCriteriaList

        key = keys[0]  # one schema per generate (_batches)
        width = input_ids.shape[1]
        processors = [] if key is None else [self.constraint.logits_processor(key, len(batch))]
        processors.append(_RowSampler(batch, self.device))
        criteria = []
        # A stop string ending a row early would feed xgrammar a padding token it cannot
        # accept; schema rows end with the document anyway, and the reply is still cut.
        if key is None and any(r.stop for r in batch):
            criteria.append(_StopStrings(self.tokenizer, batch, width))
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                do_sample=False,
                num_beams=1,
                max_new_tokens=max(r.max_tokens for r in batch),
                logits_processor=LogitsProcessorList(processors),
                stopping_criteria=StoppingCriteriaList(criteria),
                pad_token_id=self.tokenizer.pad_token_id,
                past_key_values=past,
            )
        return out[:, width:].cpu(), None

    def _plan(self, batch: Sequence[ChatRequest], prompts: Sequence[_Prompt]) -> list[Reuse]:
        """What each row starts from, never its whole prompt (the last prompt token must
        be computed: its logits pick the first reply token). A system message no cache
        covers yet is computed once, alone, and shared from then on."""
        if self.kv is None:
            return [Reuse() for _ in batch]
        kv = self.kv
        found = [kv.best(r.cache_key, p.ids) for r, p in zip(batch, prompts, strict=True)]
        missing = {
            tuple(p.ids[: p.shared].tolist()): p.ids[: p.shared]
            for p, f in zip(prompts, found, strict=True)
            if p.shared > f.tokens
        }
        for prefix in missing.values():
            kv.put_prefix(self._encode(prefix))
        if missing:
            found = [kv.best(r.cache_key, p.ids) for r, p in zip(batch, prompts, strict=True)]
        return [
            Reuse(f.entry, min(f.tokens, len(p.ids) - 1)) if f.tokens else f
            for f, p in zip(found, prompts, strict=True)
        ]

    def _encode(self, ids: Any) -> KVEntry:
        import torch

        cache = growing_cache(self.model.config)
        with torch.inference_mode():
            self.model(input_ids=ids[None].to(self.device), past_key_values=cache, use_cache=True)
        return KVEntry(ids, tuple((layer.keys[0], layer.values[0]) for layer in cache.layers))

    def _past(self, reuse: Sequence[Reuse], cached: Sequence[int], columns: int) -> Any:
        """The batch's cache of ``columns`` columns: each row's reused prefix right-aligned,
        zeros (masked out) to its left."""
        past = growing_cache(self.model.config)
        if columns == 0:
            return past  # still passed to generate: it comes back filled, to keep
        source = next(r.entry for r in reuse if r.entry is not None)
        for layer, (keys0, _) in enumerate(source.layers):
            heads, _, dim = keys0.shape
            keys = keys0.new_zeros((len(reuse), heads, columns, dim))
            values = keys0.new_zeros((len(reuse), heads, columns, dim))
            for row, (r, n) in enumerate(zip(reuse, cached, strict=True)):
                if n > 0:
                    assert r.entry is not None and n <= r.tokens
                    row_keys, row_values = r.entry.layers[layer]
                    keys[row, :, columns - n :] = row_keys[:, :n]
                    values[row, :, columns - n :] = row_values[:, :n]
            past.update(keys, values, layer)
        return past

    def _keep_decoded(
        self,
        batch: Sequence[ChatRequest],
        ids: Sequence[Any],
        replies: Any,
        caches: Sequence[Any],
    ) -> None:
        """Store each conversation's prompt and the reply tokens fed back (all but the
        last) with the keys and values the lean loop copied out when the row ended."""
        import torch

        assert self.kv is not None
        for row, request in enumerate(batch):
            if request.cache_key is None:
                continue
            layers = caches[row]
            fed = int(layers[0][0].shape[-2]) - len(ids[row])
            reply = replies[row, :fed].to(torch.long)
            self.kv.put(request.cache_key, KVEntry(torch.cat([ids[row], reply]), tuple(layers)))

    def _keep(
        self, batch: Sequence[ChatRequest], ids: Sequence[Any], replies: Any, past: Any, width: int
    ) -> None:
        """Store each conversation's prompt and reply tokens with their keys and values
        (the last generated token has none: it was never fed back)."""
        import torch

        computed = past.get_seq_length() - width  # reply tokens that have keys and values
        for row, request in enumerate(batch):
            if request.cache_key is None:
                continue
            reply = replies[row, : min(request.max_tokens, computed)].tolist()
            end = next((n for n, t in enumerate(reply) if t in self.end_ids), None)
            reply = reply if end is None else reply[: end + 1]  # the end token is in the chat
            start, stop = width - len(ids[row]), width + len(reply)
            self.kv.put(
                request.cache_key,
                KVEntry(
                    torch.cat([ids[row], torch.tensor(reply, dtype=torch.long)]),
                    tuple(
                        (
                            layer.keys[row, :, start:stop].clone(),
                            layer.values[row, :, start:stop].clone(),
                        )
                        for layer in past.layers
                    ),
                ),
            )

    def _result(
        self,
        request: ChatRequest,
        tokens: list[int],
        prompt_tokens: int,
        cached_tokens: int,
        latency: float,
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
            prompt_tokens=prompt_tokens,
            completion_tokens=len(tokens),
            latency_s=latency,
            cached_tokens=cached_tokens,
        )

    def generate(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        try:
            return super().generate(requests)
        finally:
            if self.device.type == "cpu":  # else a long-lived lane grows until it is killed
                release_freed_memory()

    def close(self) -> None:
        if self.kv is not None:
            self.kv.clear()
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

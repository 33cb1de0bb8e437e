"""JSON-schema-constrained decoding for transformers with xgrammar.

xgrammar compiles a schema into a grammar over the model's vocabulary and masks every
token that cannot continue a valid document, so even a tiny or random model can only
emit JSON of that schema (a string ``maxLength`` can still let control characters
through, so callers validate anyway). Compiling costs milliseconds to seconds, so
compiled grammars are cached per schema, the least recently used dropped past
``GRAMMARS_KEPT`` (an LLM supplier's schema changes with every decision, so an unbounded
cache would grow for as long as a server runs); the logits processor keeps per-row
matcher state and is single-use, so every ``generate`` call gets a new one.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

GRAMMARS_KEPT = 256  # compiled grammars per tokenizer


def schema_key(schema: dict[str, Any] | None) -> str | None:
    """The text of a schema: equal schemas share one compiled grammar and one generate
    call. Key order is kept, because xgrammar emits properties in the schema's order."""
    return None if schema is None else json.dumps(schema, separators=(",", ":"))


class JsonSchemaConstraint:
    """Compiled grammars for one tokenizer, cached by schema."""

    def __init__(self, tokenizer: Any, vocab_size: int) -> None:
        import xgrammar as xgr

        self._xgr = xgr
        # The model's vocabulary can be larger than the tokenizer's (padded embeddings):
        # the mask must cover every logit.
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
        # One bounded cache, this one: xgrammar's own would keep every schema too.
        self._compiler = xgr.GrammarCompiler(info, cache_enabled=False)
        self._compiled: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def compile(self, key: str) -> Any:
        """The compiled grammar for a ``schema_key``; raises for a schema xgrammar rejects."""
        with self._lock:
            grammar = self._compiled.get(key)
            if grammar is None:
                # Compact JSON: free whitespace lets a weak model pad forever.
                grammar = self._compiler.compile_json_schema(key, any_whitespace=False)
                self._compiled[key] = grammar
                while len(self._compiled) > GRAMMARS_KEPT:
                    self._compiled.popitem(last=False)
            else:
                self._compiled.move_to_end(key)
            return grammar

    def logits_processor(self, key: str, batch: int) -> Any:
        return self._xgr.contrib.hf.LogitsProcessor([self.compile(key)] * batch)

"""The compiled-grammar cache stays bounded and keeps what is in use."""

from __future__ import annotations

from negotiation.llm import constrained
from negotiation.llm.constrained import schema_key


def _schema(n: int) -> str | None:
    return schema_key({"type": "object", "properties": {"price": {"enum": [n]}}})


def test_the_least_recently_used_grammar_goes_first(tiny_backend, monkeypatch) -> None:
    monkeypatch.setattr(constrained, "GRAMMARS_KEPT", 3)
    cache = constrained.JsonSchemaConstraint(
        tiny_backend.tokenizer, tiny_backend.model.config.vocab_size
    )
    first = cache.compile(_schema(0))
    for n in (1, 2):
        cache.compile(_schema(n))
    assert cache.compile(_schema(0)) is first  # used again: now the most recent
    cache.compile(_schema(3))  # over the bound: schema 1, the least recent, goes
    assert list(cache._compiled) == [_schema(n) for n in (2, 0, 3)]
    assert cache.compile(_schema(1)) is not None  # compiled again on demand
    assert len(cache._compiled) == 3

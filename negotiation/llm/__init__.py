"""Language-model agents: the backend interface, backends, and LLM buyer and supplier
policies. Importing this package is cheap; torch, transformers, vllm and HTTP clients are
imported by the backend that uses them, when it is created."""

from __future__ import annotations

from typing import Any

from .backend import BackendStats, ChatMessage, ChatRequest, ChatResult, LLMBackend


def resolve_backend(name: str | LLMBackend, model: str = "", **options: Any) -> LLMBackend:
    """The one way policies obtain a backend: an LLMBackend instance is used as given (a
    test double, or one shared batching handle); a name goes to the backend registry,
    imported only now so that rule-only runs never load it."""
    if isinstance(name, LLMBackend):
        return name
    from .registry import get_backend

    return get_backend(name, model, **options)


__all__ = [
    "BackendStats",
    "ChatMessage",
    "ChatRequest",
    "ChatResult",
    "LLMBackend",
    "resolve_backend",
]

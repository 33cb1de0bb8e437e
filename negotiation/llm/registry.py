"""One place that turns (backend name, model, options) into a loaded backend.

Loading a model costs seconds and hundreds of megabytes, so a process keeps one backend
per (name, model, options) and every episode it plays shares it: that is also what lets
their calls meet in one batch. A forked child (a prefork Celery worker) must not reuse a
model or an engine its parent loaded, so the cache belongs to the process that filled it.
Backend modules are imported here only when asked for: importing the registry loads no
torch, transformers, vllm, llama_cpp or httpx.
"""

from __future__ import annotations

import importlib
import os
import threading
from typing import Any

from .backend import LLMBackend
from .models import canonical_model

BACKENDS = {
    "transformers": ("negotiation.llm.transformers_backend", "TransformersBackend"),
    "vllm": ("negotiation.llm.vllm_backend", "VLLMBackend"),
    "openai_compatible": ("negotiation.llm.openai_backend", "OpenAICompatibleBackend"),
    "llamacpp": ("negotiation.llm.llamacpp_backend", "LlamaCppBackend"),
}

_cache: dict[tuple[str, str, tuple[tuple[str, Any], ...]], LLMBackend] = {}
_cache_pid = os.getpid()
_lock = threading.Lock()


def backend_class(name: str) -> type[LLMBackend]:
    if name not in BACKENDS:
        known = ", ".join(sorted(BACKENDS))
        raise ValueError(f"unknown LLM backend {name!r}: choose one of {known}")
    module, attr = BACKENDS[name]
    return getattr(importlib.import_module(module), attr)


def get_backend(name: str, model: str = "", **options: Any) -> LLMBackend:
    """The process's backend for these settings, created (and its model loaded) on first
    use. Raises ValueError for an unknown backend, a bad option or a model that is not
    there."""
    global _cache_pid
    cls = backend_class(name)
    # Validated before any loading; defaults filled in, so equal settings share a key.
    settings = cls.Options.parse(name, options).model_dump()
    key = (name, canonical_model(name, model), tuple(sorted(settings.items())))
    with _lock:
        if _cache_pid != os.getpid():
            _cache.clear()  # inherited through fork: the parent's, not ours
            _cache_pid = os.getpid()
        backend = _cache.get(key)
        if backend is None:
            backend = cls(model, **options)
            _cache[key] = backend
        return backend


def clear_backends() -> None:
    """Close and forget every backend of this process (tests; a worker shutting down)."""
    with _lock:
        backends = list(_cache.values())
        _cache.clear()
    for backend in backends:
        backend.close()

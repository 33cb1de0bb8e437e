"""One batching backend per model per process, shared by every LLM episode it plays.

A worker plays many LLM-backed episodes at once: single episodes arriving as concurrent
tasks, and the cells of a sweep chunk. If each made its own calls, the model would run
one small batch per episode and turn; through one ``BatchingBackend`` per (backend,
model), each round of turns of all of them is one batch. The model itself is loaded once
per process by the backend registry.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .batching import BatchingBackend
from .models import canonical_model


@dataclass(frozen=True)
class LLMSpec:
    """Which model an episode talks to: its buyer's, else its LLM suppliers'."""

    backend: str
    model: str
    options: tuple[tuple[str, Any], ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", canonical_model(self.backend, self.model))

    @classmethod
    def for_episode(
        cls,
        scenario_config: dict,
        policy_snapshot: dict,
        *,
        buyer_uses_llm: bool,
        suppliers_use_llm: bool,
    ) -> LLMSpec | None:
        """The model an episode talks to: its buyer's when the buyer uses one, else its
        suppliers'; None for rule-only episodes (they pay for none of this). Whether each
        side uses a model is the caller's run plan, decided once, never re-derived here."""
        if buyer_uses_llm:
            params = policy_snapshot.get("params") or {}
            return cls(
                policy_snapshot.get("backend") or params.get("backend") or "transformers",
                policy_snapshot.get("model") or params.get("model") or "",
                tuple(sorted((params.get("backend_options") or {}).items())),
            )
        if suppliers_use_llm:
            suppliers = scenario_config["supplier_llm"]
            return cls(suppliers.get("backend") or "transformers", suppliers.get("model") or "")
        return None


_batchers: dict[LLMSpec, BatchingBackend] = {}
_lock = threading.Lock()


def shared_batcher_loaded(spec: LLMSpec) -> bool:
    """Whether ``shared_batcher(spec)`` answers at once (its model is loaded here)."""
    with _lock:
        return spec in _batchers


def shared_batcher(spec: LLMSpec) -> BatchingBackend:
    """This process's batching backend for ``spec`` (the model is loaded on first use)."""
    with _lock:
        batcher = _batchers.get(spec)
        if batcher is None:
            from . import resolve_backend

            inner = resolve_backend(spec.backend, spec.model, **dict(spec.options))
            batcher = _batchers[spec] = BatchingBackend(inner)
        return batcher

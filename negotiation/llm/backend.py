"""The one interface every LLM backend implements: generate replies for a batch of chat
requests. Policies (buyer and supplier) build requests; backends (transformers in
process, vLLM in process, any OpenAI-compatible server) turn them into text.

A backend never raises for one bad request: each reply carries its own ``error`` (a
timeout, a server error), so one failing call degrades one decision, visibly, and the
policy's fallback takes over. Heavy libraries (torch, transformers, vllm, httpx) are
imported only inside the backend that needs them, never when this module is imported.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant"]
FinishReason = Literal["stop", "length", "error", "timeout"]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One call: a chat, sampling settings, and optionally a JSON schema the reply must
    follow (constrained decoding where the backend supports it)."""

    messages: tuple[ChatMessage, ...]
    seed: int = 0
    temperature: float = 0.0  # 0: greedy, deterministic
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    json_schema: dict[str, Any] | None = None
    # Requests of one conversation share a key: a backend that keeps prompt state may keep
    # it per key. A hint for speed, not part of what is asked.
    cache_key: str | None = None


@dataclass(frozen=True, slots=True)
class ChatResult:
    text: str
    finish_reason: FinishReason = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    error: str | None = None  # set when finish_reason is "error" or "timeout"

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class BackendStats:
    """Counts a backend keeps: calls are generate() invocations, requests are chats."""

    calls: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: int = 0
    batch_sizes: list[int] = field(default_factory=list)

    def record(self, results: Sequence[ChatResult]) -> None:
        self.calls += 1
        self.requests += len(results)
        self.batch_sizes.append(len(results))
        for r in results:
            self.prompt_tokens += r.prompt_tokens
            self.completion_tokens += r.completion_tokens
            self.errors += 0 if r.ok else 1


class LLMBackend(ABC):
    """Turns a batch of chat requests into one result each, in order."""

    name: str = "base"

    def __init__(self) -> None:
        self.stats = BackendStats()

    @abstractmethod
    def generate(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        """One result per request, same order. Thread-safe is not required: callers that
        share a backend across threads go through ``negotiation.llm.batching``."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release what the backend holds (engine, HTTP client)."""


def generate_one(backend: LLMBackend, request: ChatRequest) -> ChatResult:
    """One request through ``backend``; an exception becomes an error result, so a
    backend bug degrades one decision (the policy falls back, counted), not the episode."""
    try:
        return backend.generate([request])[0]
    except Exception as exc:
        return ChatResult("", "error", error=f"{type(exc).__name__}: {exc}")

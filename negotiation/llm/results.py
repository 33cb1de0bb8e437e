"""What every backend does the same way: turn a failure into that request's result, and
keep one bad request from failing the others of its batch."""

from __future__ import annotations

import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from .backend import ChatRequest, ChatResult, FinishReason, LLMBackend


class BackendOptions(BaseModel):
    """Options of one backend: unknown names and wrong types are errors, never ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def parse(cls, backend: str, options: dict[str, Any]) -> BackendOptions:
        try:
            return cls.model_validate(options)
        except ValidationError as exc:
            raise ValueError(
                f"bad options for the {backend} backend: {problems(exc, 'options')}"
            ) from None


def problems(exc: ValidationError, root: str) -> str:
    """Each invalid field and what is wrong with it, on one line."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or root}: {err['msg']}" for err in exc.errors()
    )


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:500]


def failed(
    message: str, *, finish_reason: FinishReason = "error", latency_s: float = 0.0
) -> ChatResult:
    return ChatResult(text="", finish_reason=finish_reason, latency_s=latency_s, error=message)


def check_request(request: ChatRequest) -> None:
    """Settings no backend can serve: raised as this request's error."""
    if not request.messages:
        raise ValueError("a chat request needs at least one message")
    if request.max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, not {request.max_tokens}")
    if request.temperature < 0:
        raise ValueError(f"temperature must be at least 0, not {request.temperature}")


def messages_as_dicts(request: ChatRequest) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in request.messages]


Run = Callable[[Sequence[int]], dict[int, ChatResult]]


def run_isolated(run: Run, indices: Sequence[int]) -> dict[int, ChatResult]:
    """``run`` the batch; if it raises, run each request alone, so only the requests that
    fail by themselves get an error result (and the batch call never raises)."""
    try:
        return run(indices)
    except Exception as exc:
        if len(indices) == 1:
            return {indices[0]: failed(describe(exc))}
    out: dict[int, ChatResult] = {}
    for index in indices:
        out.update(run_isolated(run, [index]))
    return out


class LocalBatchBackend(LLMBackend):
    """A backend whose model runs in this process (transformers, vLLM): requests are
    rendered to prompts one by one (a request that cannot be rendered fails alone), then
    run in as few batches as the backend can, one batch at a time on the one model."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def generate(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        if not requests:
            return []
        with self._lock:
            started = time.perf_counter()
            results: dict[int, ChatResult] = {}
            prompts: dict[int, Any] = {}
            for i, request in enumerate(requests):
                try:
                    check_request(request)
                    prompts[i] = self._prompt(request)
                except Exception as exc:  # this request's error, not the batch's
                    results[i] = failed(describe(exc))
            for batch in self._batches(requests, prompts, list(prompts)):
                run = lambda rows: self._run(requests, prompts, rows, started)  # noqa: E731
                results.update(run_isolated(run, batch))
            ordered = [results[i] for i in range(len(requests))]
            self.stats.record(ordered)
            return ordered

    @abstractmethod
    def _prompt(self, request: ChatRequest) -> Any:
        """The rendered prompt; raises for a request this backend cannot serve."""

    def _batches(
        self, requests: Sequence[ChatRequest], prompts: dict[int, Any], rows: list[int]
    ) -> Iterable[list[int]]:
        """Which rows run together: all of them, unless the backend must split."""
        return [rows] if rows else []

    @abstractmethod
    def _run(
        self,
        requests: Sequence[ChatRequest],
        prompts: dict[int, Any],
        rows: Sequence[int],
        started: float,
    ) -> dict[int, ChatResult]:
        """One batch through the model; may raise (then each row is retried alone)."""

"""The ``openai_compatible`` backend: any OpenAI-style chat server (vLLM's, the project's
own ``negotiation.llm.server``, a hosted API) over async HTTP.

A batch becomes concurrent requests, so the server's own batcher sees them together.
generate() is called from plain worker threads, so the backend owns one event loop in a
daemon thread, with one ``httpx.AsyncClient`` whose connections are kept between calls;
generate() hands its batch to that loop and waits. Connection errors and 5xx/429 replies
are retried with exponential backoff; a timeout, a 4xx or a reply that is not a chat
completion becomes that request's error result, never an exception.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from pydantic import Field, ValidationError

from .backend import ChatRequest, ChatResult, LLMBackend
from .openai_wire import Completion, CompletionRequest
from .results import BackendOptions, check_request, describe, failed

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class OpenAIOptions(BackendOptions):
    base_url: str = ""  # e.g. http://127.0.0.1:8011/v1; empty: the model is the URL
    api_key_env: str = "OPENAI_API_KEY"  # the key is read from this variable, never passed
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0)
    backoff_s: float = Field(default=0.5, ge=0)
    max_concurrency: int = Field(default=64, ge=1)


class OpenAICompatibleBackend(LLMBackend):
    name = "openai_compatible"
    Options = OpenAIOptions

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__()
        import httpx

        opts = OpenAIOptions.parse(self.name, options)
        url = opts.base_url or (model if model.startswith(("http://", "https://")) else "")
        if not url:
            raise ValueError(
                "the openai_compatible backend needs a server URL: the base_url option "
                "(with the served model name as model), or the URL as model"
            )
        parsed = httpx.URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"not an http(s) server URL: {url!r}")
        if parsed.path in ("", "/"):
            url = f"{url.rstrip('/')}/v1"
        self.base_url = url.rstrip("/")
        # Given only the URL, the served model's name is asked of the server (GET /models).
        self.served_model: str | None = model if opts.base_url else None
        self.opts = opts
        key = os.environ.get(opts.api_key_env, "")
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="openai-backend-loop", daemon=True
        )
        self._thread.start()
        self._client: Any = None

    def generate(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        if not requests:
            return []
        future = asyncio.run_coroutine_threadsafe(self._generate(requests), self._loop)
        results = future.result()
        self.stats.record(results)
        return results

    async def _generate(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(
                headers=self._headers,
                limits=httpx.Limits(max_connections=self.opts.max_concurrency),
            )
        gate = asyncio.Semaphore(self.opts.max_concurrency)
        return list(await asyncio.gather(*(self._one(r, gate) for r in requests)))

    async def _one(self, request: ChatRequest, gate: asyncio.Semaphore) -> ChatResult:
        started = time.perf_counter()
        try:
            check_request(request)
            async with gate:
                return await self._post(request, started)
        except Exception as exc:  # anything unforeseen stays this request's error
            return failed(describe(exc), latency_s=time.perf_counter() - started)

    async def _post(self, request: ChatRequest, started: float) -> ChatResult:
        import httpx

        error = ""
        attempts = self.opts.max_retries + 1
        for attempt in range(attempts):
            if attempt:
                await asyncio.sleep(self.opts.backoff_s * 2 ** (attempt - 1))
            try:
                body = CompletionRequest.from_chat(request, await self._model()).body()
                reply = await self._client.post(
                    f"{self.base_url}/chat/completions", json=body, timeout=self.opts.timeout_s
                )
            except httpx.ConnectTimeout as exc:  # nothing reached the server: try again
                error = describe(exc)
                continue
            except httpx.TimeoutException:
                return failed(
                    f"no reply within {self.opts.timeout_s} s",
                    finish_reason="timeout",
                    latency_s=time.perf_counter() - started,
                )
            except httpx.TransportError as exc:
                error = describe(exc)
                continue
            latency = time.perf_counter() - started
            if reply.status_code in RETRY_STATUS:
                error = f"HTTP {reply.status_code}: {reply.text[:200]}"
                continue
            if reply.status_code != 200:
                return failed(f"HTTP {reply.status_code}: {reply.text[:300]}", latency_s=latency)
            try:
                return Completion.model_validate_json(reply.content).to_result(latency)
            except ValidationError as exc:
                return failed(
                    f"malformed reply: {describe(exc)} in {reply.text[:200]!r}",
                    latency_s=latency,
                )
        return failed(
            f"{error} (after {attempts} attempts)", latency_s=time.perf_counter() - started
        )

    async def _model(self) -> str:
        if self.served_model is None:
            reply = await self._client.get(f"{self.base_url}/models", timeout=self.opts.timeout_s)
            reply.raise_for_status()
            self.served_model = reply.json()["data"][0]["id"]
        return self.served_model

    def close(self) -> None:
        if self._loop.is_closed():
            return
        if self._client is not None:
            asyncio.run_coroutine_threadsafe(self._client.aclose(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

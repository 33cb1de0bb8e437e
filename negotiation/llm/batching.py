"""Batching across episodes: many episode threads, one backend call per round of turns.

An LLM-backed episode spends its life waiting for the model; played one after another,
N episodes leave an accelerator idle between N x steps small calls. Here every episode
runs in its own thread and talks to the backend through a ``Participant`` handle of one
shared ``BatchingBackend``. A call blocks; the batch is sent to the inner backend as ONE
``generate`` when

- every live participant is waiting on the backend (the usual case: all episodes have
  reached their next buyer or supplier turn), or
- ``max_batch`` requests are pending, or
- as a safety net, the oldest request has waited ``max_wait_s`` while the backend sat
  idle (a participant stuck in long non-LLM work, or one that forgot to leave).

Participants leave when their episode ends, so the last episodes are not held back by
finished ones; leaving also forgets the conversations (``ChatRequest.cache_key``) the
participant started, and ``forget`` passes one on to the inner backend earlier. Results
come back per request in order; a backend exception becomes an error result for each
request of that batch (the policies fall back, counted), never an exception inside an
episode. The inner backend is called by one thread at a time.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence

from .backend import ChatRequest, ChatResult, LLMBackend


class _Ticket:
    __slots__ = ("done", "requests", "results", "since")

    def __init__(self, requests: list[ChatRequest]) -> None:
        self.requests = requests
        self.results: list[ChatResult] | None = None
        self.since = time.monotonic()
        self.done = threading.Event()


class Participant(LLMBackend):
    """One episode's handle on a BatchingBackend. Use it as that episode's backend (buyer
    and suppliers alike) from one thread; ``leave()`` (or ``close()``) when it ends."""

    name = "batching-participant"

    def __init__(self, batcher: BatchingBackend) -> None:
        super().__init__()
        self._batcher = batcher
        self._left = False
        self._conversations: set[str] = set()

    def generate(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        if self._left:
            raise RuntimeError("this participant has left the batch")
        self._conversations.update(r.cache_key for r in requests if r.cache_key is not None)
        results = self._batcher._submit(list(requests))
        self.stats.record(results)
        return results

    def forget(self, cache_key: str) -> None:
        self._conversations.discard(cache_key)
        self._batcher.forget(cache_key)

    def leave(self) -> None:
        if not self._left:
            self._left = True
            for key in sorted(self._conversations):
                self._batcher.forget(key)
            self._conversations.clear()
            self._batcher._leave()

    close = leave

    def __enter__(self) -> Participant:
        return self

    def __exit__(self, *exc: object) -> None:
        self.leave()


class BatchingBackend(LLMBackend):
    """Coalesces generate() calls of many threads into single calls of ``inner``.
    ``stats`` counts the inner calls (``batch_sizes``); ``flushes`` why each was sent."""

    name = "batching"

    def __init__(self, inner: LLMBackend, *, max_batch: int = 256, max_wait_s: float = 5.0) -> None:
        super().__init__()
        if max_batch < 1 or max_wait_s <= 0:
            raise ValueError("max_batch must be >= 1 and max_wait_s > 0")
        self.inner = inner
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.flushes: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._inner_lock = threading.Lock()
        self._live = 0
        self._pending: list[_Ticket] = []
        self._pending_requests = 0
        self._in_flight = 0
        self._idle_since = time.monotonic()

    # ------------------------------------------------------------------ membership
    def join(self) -> Participant:
        """Register a participant now (before its thread starts, so that the first batch
        waits for it)."""
        with self._lock:
            self._live += 1
        return Participant(self)

    @property
    def live(self) -> int:
        return self._live

    def _leave(self) -> None:
        with self._lock:
            self._live -= 1
        self._drive()  # the rest may all be waiting now

    def generate(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        """A call from outside any episode joins for the duration of the call."""
        with self.join() as participant:
            return participant.generate(requests)

    def forget(self, cache_key: str) -> None:
        """Passed on at once: the inner backend's forget must not wait for a batch."""
        self.inner.forget(cache_key)

    def close(self) -> None:
        self.inner.close()

    # ------------------------------------------------------------------ batching
    def _submit(self, requests: list[ChatRequest]) -> list[ChatResult]:
        if not requests:
            return []
        ticket = _Ticket(requests)
        with self._lock:
            self._pending.append(ticket)
            self._pending_requests += len(requests)
        self._drive()
        while not ticket.done.wait(self._poll_timeout()):
            self._drive()
        assert ticket.results is not None
        return ticket.results

    def _flush_reason(self) -> str | None:
        """Why the pending requests should go now (called with the lock held)."""
        if not self._pending:
            return None
        if self._pending_requests >= self.max_batch:
            return "max_batch"
        if len(self._pending) >= self._live:
            return "all_waiting"  # each participant has at most one pending call
        if self._in_flight == 0:
            waited = time.monotonic() - max(self._pending[0].since, self._idle_since)
            if waited >= self.max_wait_s:
                return "max_wait"
        return None

    def _poll_timeout(self) -> float:
        with self._lock:
            if self._in_flight or not self._pending:
                return self.max_wait_s
            start = max(self._pending[0].since, self._idle_since)
            return max(0.001, start + self.max_wait_s - time.monotonic())

    def _take(self) -> list[_Ticket]:
        """The oldest pending tickets, up to max_batch requests (at least one ticket)."""
        batch, n = [], 0
        while self._pending and (not batch or n + len(self._pending[0].requests) <= self.max_batch):
            ticket = self._pending.pop(0)
            batch.append(ticket)
            n += len(ticket.requests)
        self._pending_requests -= n
        return batch

    def _drive(self) -> None:
        """Send batches while a flush condition holds; any waiting thread may do it."""
        while True:
            with self._lock:
                reason = self._flush_reason()
                if reason is None:
                    return
                batch = self._take()
                self._in_flight += 1
                self.flushes[reason] += 1
            try:
                self._run(batch)
            finally:
                with self._lock:
                    self._in_flight -= 1
                    self._idle_since = time.monotonic()

    def _run(self, batch: list[_Ticket]) -> None:
        requests = [r for t in batch for r in t.requests]
        with self._inner_lock:
            try:
                results = list(self.inner.generate(requests))
                if len(results) != len(requests):
                    raise RuntimeError(
                        f"backend returned {len(results)} results for {len(requests)} requests"
                    )
            except Exception as exc:  # one failing call degrades these decisions, visibly
                error = f"{type(exc).__name__}: {exc}"
                results = [ChatResult("", "error", error=error) for _ in requests]
            self.stats.record(results)
        i = 0
        for ticket in batch:
            ticket.results = results[i : i + len(ticket.requests)]
            i += len(ticket.requests)
            ticket.done.set()

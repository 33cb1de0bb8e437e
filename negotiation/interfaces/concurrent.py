"""Play many LLM-backed episodes at once against one batching backend.

Each episode runs ``run_episode`` unchanged in its own thread; its buyer policy and its
LLM suppliers talk to the model through the episode's ``Participant`` handle, so every
pending LLM call of all episodes (buyers and suppliers) reaches the backend in one batch.
With a deterministic backend (temperature 0, replies that depend only on the request)
the trajectories are exactly those of sequential play with the same seeds: episodes share
nothing but the backend, and every request carries its own seed.

Rule-only episodes gain nothing here; callers play them with ``run_episode`` directly.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from queue import SimpleQueue
from typing import Any

from ..config import ScenarioConfig
from ..llm import resolve_backend
from ..llm.backend import ChatRequest, ChatResult, LLMBackend
from ..llm.batching import BatchingBackend, Participant
from ..policies.base import Policy
from ..runner import EpisodeResult, StepRecord, run_episode

PolicyFactory = Callable[[LLMBackend], Policy]
Job = tuple[str | dict | ScenarioConfig, PolicyFactory, int]


class PlayStopped(RuntimeError):
    """The concurrent play was stopped: a call of an episode still playing is refused."""


class _Stoppable(LLMBackend):
    """An episode's participant that refuses calls once the play is stopped."""

    name = "stoppable-participant"

    def __init__(self, participant: Participant, stop: threading.Event) -> None:
        super().__init__()
        self.stats = participant.stats  # one count: the participant's
        self._participant, self._stop = participant, stop

    def generate(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        if self._stop.is_set():
            raise PlayStopped("the play was stopped")
        return self._participant.generate(requests)

    def forget(self, cache_key: str) -> None:
        self._participant.forget(cache_key)


def run_episodes_concurrently(
    jobs: Sequence[Job],
    *,
    backend: LLMBackend | BatchingBackend,
    on_step: Callable[[int, StepRecord], None] | None = None,
    record_steps: bool = True,
    max_workers: int | None = None,
    max_batch: int = 256,
    max_wait_s: float = 5.0,
    return_exceptions: bool = False,
    on_done: Callable[[int, Any, Participant], None] | None = None,
    prefixes: Sequence[list[Any]] | None = None,
) -> list[Any]:
    """Play ``jobs`` (scenario, policy_factory(backend) -> Policy, seed) in threads.

    Returns one EpisodeResult per job, in order. A failing episode fails alone: the
    others finish, then its exception is raised (or, with ``return_exceptions``, put in
    its place). ``on_step(job_index, record)`` is called under a lock, one at a time.
    ``max_workers`` bounds the threads (default: one per job); a worker joins the next
    job's participant before the finished one's leaves, so the batch keeps its size and
    a queued job never stalls it, and each job's participant counts its calls alone.

    ``on_done(job_index, result, participant)`` is called in the calling thread as each
    episode ends (result: an EpisodeResult or the exception; participant: the one that
    played it, left, its ``stats`` that episode's alone). If it raises (a cancel), no
    further job starts, the episodes playing get no more model calls (their decisions
    fall back, so they end within the round in flight) and are dropped, and its
    exception propagates.

    ``prefixes``: one list of stored actions per job, replayed before its policy plays
    (``run_episode``'s ``actions_prefix``).
    """
    if prefixes is not None and len(prefixes) != len(jobs):
        raise ValueError(f"{len(prefixes)} prefixes for {len(jobs)} jobs")
    if not jobs:
        return []
    batcher = (
        backend
        if isinstance(backend, BatchingBackend)
        else BatchingBackend(resolve_backend(backend), max_batch=max_batch, max_wait_s=max_wait_s)
    )
    queue = deque(enumerate(jobs))
    queue_lock, step_lock = threading.Lock(), threading.Lock()
    results: list[Any] = [None] * len(jobs)
    played_by: list[Participant | None] = [None] * len(jobs)
    ended: SimpleQueue[int | None] = SimpleQueue()  # job indexes as they end; None: a worker
    stop = threading.Event()

    def play(index: int, job: Job, participant: Participant) -> EpisodeResult:
        scenario, policy_factory, seed = job
        callback = None
        if on_step is not None:

            def callback(record: StepRecord) -> None:
                with step_lock:
                    on_step(index, record)

        backend = _Stoppable(participant, stop)
        return run_episode(
            scenario,
            policy_factory(backend),
            seed,
            on_step=callback,
            record_steps=record_steps,
            actions_prefix=None if prefixes is None else prefixes[index],
            llm_backend=backend,
        )

    def take() -> tuple[int, Job] | None:
        with queue_lock:
            return None if stop.is_set() or not queue else queue.popleft()

    def worker(participant: Participant) -> None:
        try:
            item = take()
            while item is not None:
                index, job = item
                try:
                    results[index] = play(index, job, participant)
                except Exception as exc:
                    results[index] = exc
                item = take()
                ended_with, played_by[index] = participant, participant
                if item is not None:
                    participant = batcher.join()  # before the old one leaves: same size
                ended_with.leave()
                ended.put(index)
        finally:
            participant.leave()
            ended.put(None)

    n_workers = min(len(jobs), max_workers or len(jobs))
    # Join before any thread starts, so the first batch waits for every episode.
    participants = [batcher.join() for _ in range(n_workers)]
    threads = [
        threading.Thread(target=worker, args=(p,), name=f"llm-episode-{i}", daemon=True)
        for i, p in enumerate(participants)
    ]
    for t in threads:
        t.start()
    try:
        running = n_workers
        while running:
            index = ended.get()
            if index is None:
                running -= 1
            elif on_done is not None:
                on_done(index, results[index], played_by[index])
    except BaseException:
        stop.set()  # no job starts; those playing finish
        raise
    finally:
        for t in threads:
            t.join()
    if not return_exceptions:
        for r in results:
            if isinstance(r, BaseException):
                raise r
    return results

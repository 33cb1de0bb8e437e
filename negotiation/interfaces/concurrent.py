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
from typing import Any

from ..config import ScenarioConfig
from ..llm import resolve_backend
from ..llm.backend import LLMBackend
from ..llm.batching import BatchingBackend, Participant
from ..policies.base import Policy
from ..runner import EpisodeResult, StepRecord, run_episode

PolicyFactory = Callable[[LLMBackend], Policy]
Job = tuple[str | dict | ScenarioConfig, PolicyFactory, int]


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
) -> list[Any]:
    """Play ``jobs`` (scenario, policy_factory(backend) -> Policy, seed) in threads.

    Returns one EpisodeResult per job, in order. A failing episode fails alone: the
    others finish, then its exception is raised (or, with ``return_exceptions``, put in
    its place). ``on_step(job_index, record)`` is called under a lock, one at a time.
    ``max_workers`` bounds the threads (default: one per job); a worker's participant
    stays in the batch across the jobs it plays, so a queued job never stalls a batch.
    """
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

    def play(index: int, job: Job, participant: Participant) -> EpisodeResult:
        scenario, policy_factory, seed = job
        callback = None
        if on_step is not None:

            def callback(record: StepRecord) -> None:
                with step_lock:
                    on_step(index, record)

        return run_episode(
            scenario,
            policy_factory(participant),
            seed,
            on_step=callback,
            record_steps=record_steps,
            llm_backend=participant,
        )

    def worker(participant: Participant) -> None:
        with participant:
            while True:
                with queue_lock:
                    if not queue:
                        return
                    index, job = queue.popleft()
                try:
                    results[index] = play(index, job, participant)
                except Exception as exc:
                    results[index] = exc

    n_workers = min(len(jobs), max_workers or len(jobs))
    # Join before any thread starts, so the first batch waits for every episode.
    participants = [batcher.join() for _ in range(n_workers)]
    threads = [
        threading.Thread(target=worker, args=(p,), name=f"llm-episode-{i}", daemon=True)
        for i, p in enumerate(participants)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if not return_exceptions:
        for r in results:
            if isinstance(r, BaseException):
                raise r
    return results

"""Run one stored episode through the engine: resume, batch-persist, publish, finish.

Idempotent: decisions are keyed by (episode, step). A re-delivered task replays the
stored actions through a fresh engine (deterministic) and continues from there.

No worker waits through a pause: a paced episode (``step_delay`` > 0) plays one decision
per task, then sends its continuation to its queue ``step_delay`` seconds later (a
Celery countdown; the embedded runner's timer) and frees the worker. The continuation
replays the stored steps, as a resumed run does, and plays the next decision.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.utils import timezone

from negotiation import StepRecord, get_policy, run_episode
from negotiation.llm import ChatRequest, ChatResult, LLMBackend
from negotiation.llm.shared import shared_batcher, shared_batcher_loaded
from negotiation.suppliers.seat import AwaitingSupplier
from procurement import dispatch
from procurement.models import Episode, EpisodeStatus
from procurement.run_phases import LOADING_MODEL, THINKING, Phase, phase_set
from procurement.selectors.episodes import episode_llm_spec
from procurement.services import approvals, live, supplier_seat
from procurement.services.episodes import (
    AttemptSuperseded,
    episode_claim,
    episode_decisions_append,
    episode_fail,
    episode_finish,
    episode_touch,
)
from procurement.services.faults import describe, is_infrastructure_error
from procurement.services.heartbeat import Heartbeat
from procurement.worlds import episode_supplier_seat, episode_world_key

BATCH_STEPS = 256  # rows per INSERT
BATCH_SECONDS = 0.05  # a slow (LLM) policy still streams each decision promptly


def policy_build(*, snapshot: dict[str, Any], seed: int, backend: LLMBackend | None = None):
    """The buyer policy of a snapshot. ``backend`` (an episode's handle on the process's
    shared batching backend) serves an LLM buyer instead of a backend of its own."""
    params = dict(snapshot.get("params") or {})
    if snapshot.get("backend"):
        params.setdefault("backend", snapshot["backend"])
        params.setdefault("model", snapshot.get("model", ""))
    if backend is not None and "backend" in params:
        params["backend"] = backend
    return get_policy(snapshot["policy"], seed=seed, **params)


class _Thinking(LLMBackend):
    """An episode's model handle that says so before each call (the episode is thinking)."""

    name = "thinking"

    def __init__(self, inner: LLMBackend, on_call: Callable[[], None]) -> None:
        super().__init__()
        self.inner, self.stats, self._on_call = inner, inner.stats, on_call

    def generate(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        self._on_call()
        return self.inner.generate(requests)


def _phase(episode: Episode, phase: Phase | None, publish: bool) -> None:
    """Record what the episode waits for; its page hears of each change."""
    if phase_set(episode.pk, phase) and publish:
        live.publish_episode_waiting(episode)


@contextmanager
def llm_handle(
    episode: Episode, attempt: int, *, publish: bool = False
) -> Iterator[LLMBackend | None]:
    """For an LLM episode, its participant handle on this process's shared batching
    backend (buyer and suppliers both use it), and a heartbeat while it plays (a decision
    may take minutes); None for rule-only episodes. Meanwhile the episode's phase says
    "loading model" until its model is there, then "thinking" from its first call on
    (``publish``: live too)."""
    spec = episode_llm_spec(episode)
    if spec is None:
        yield None
        return
    try:
        with Heartbeat(lambda: episode_touch(episode=episode, attempt=attempt)):
            if not shared_batcher_loaded(spec):
                _phase(episode, LOADING_MODEL, publish)
            with shared_batcher(spec).join() as participant:
                yield _Thinking(participant, lambda: _phase(episode, THINKING, publish))
    finally:
        _phase(episode, None, publish)


class _BatchWriter:
    """Collects step records and writes them in batches (one INSERT each)."""

    def __init__(
        self, episode: Episode, attempt: int, resume_from: int, live_updates: bool
    ) -> None:
        self.episode = episode
        self.attempt = attempt
        self.resume_from = resume_from
        self.live_updates = live_updates
        self.buffer: list[dict[str, Any]] = []
        self.last_flush = time.monotonic()
        self.io_seconds = 0.0
        self.release_connection = False

    def __call__(self, record: StepRecord) -> None:
        if record.step < self.resume_from:
            return  # replayed: stored by an earlier attempt
        self.buffer.append(record.to_dict())
        paced = self.episode.step_delay > 0  # each decision stored and sent on its own
        full = len(self.buffer) >= BATCH_STEPS
        if paced or full or time.monotonic() - self.last_flush >= BATCH_SECONDS:
            self.flush()

    def flush(self) -> None:
        started = time.perf_counter()
        # raises AttemptSuperseded once a newer attempt has claimed the episode
        episode_decisions_append(episode=self.episode, records=self.buffer, attempt=self.attempt)
        if self.live_updates:
            live.publish_decisions(self.episode, [live.record_payload(r) for r in self.buffer])
        self.buffer = []
        if self.release_connection:
            connection.close()
        self.last_flush = time.monotonic()
        self.io_seconds += time.perf_counter() - started


class Paused(Exception):
    """A paced episode played its decision for this task; its continuation plays on."""


class _OneDecision:
    """A paced episode's buyer: it decides once per task, and pauses the run when asked
    again (before deciding, so no decision is made twice)."""

    def __init__(self, policy: Any) -> None:
        self._policy = policy
        self._decided = False

    def __getattr__(self, name: str) -> Any:  # name, stats, last_decision, reset...
        return getattr(self._policy, name)

    def act(self, observation) -> Any:
        if self._decided:
            raise Paused
        self._decided = True
        return self._policy.act(observation)


def episode_run(
    *, episode_id: int, live_updates: bool | None = None, attempt: int | None = None
) -> Episode:
    """Claim the episode and play it from its stored steps to the end (a paced episode:
    its next decision). ``attempt``: this task continues that claim of a paced episode
    instead of claiming anew; it stops at once if the claim is no longer the newest.

    Outcomes: finished; paused until its continuation; failed with the error (anything
    but an infrastructure error, which propagates to the task for a retry); or stopped
    early because it was cancelled or a newer attempt took it over, which then owns it.
    """
    episode = Episode.objects.get(pk=episode_id)
    live_updates = episode.sweep_id is None if live_updates is None else live_updates
    if attempt is None:
        attempt = None if episode.is_terminal else episode_claim(episode=episode)
        if attempt is None:
            return episode
        if live_updates:
            live.publish_episode_status(episode)
    elif not episode_touch(episode=episode, attempt=attempt):
        return episode  # cancelled or taken over during the pause

    stored_actions = list(episode.decisions.order_by("step").values_list("action", flat=True))
    writer = _BatchWriter(episode, attempt, len(stored_actions), live_updates)
    started = time.perf_counter()
    try:
        with llm_handle(episode, attempt, publish=live_updates) as backend:
            # An LLM episode waits on the model most of the time: it gives its database
            # connection back after each batch instead of holding it for minutes.
            writer.release_connection = backend is not None
            policy = policy_build(
                snapshot=episode.policy_snapshot, seed=episode.seed, backend=backend
            )
            if approvals.approval_required(episode=episode):
                policy = approvals.ApprovalGate(policy, episode)
            if episode.step_delay > 0:
                policy = _OneDecision(policy)
            result = run_episode(
                episode.scenario_snapshot,
                policy,
                episode.seed,
                on_step=writer,
                record_steps=False,
                actions_prefix=stored_actions,
                llm_backend=backend,
                world_key=episode_world_key(episode),
                supplier_seat=episode_supplier_seat(episode),
            )
        if writer.buffer:
            writer.flush()
    except Paused:
        dispatch.enqueue(
            dispatch.RUN_EPISODE,
            episode.pk,
            attempt,
            queue=episode.queue,
            countdown=episode.step_delay,
        )
        return episode
    except AwaitingSupplier as waiting:
        # The person answers the offer on the seat page; the answer sends the run on.
        with contextlib.suppress(AttemptSuperseded):
            writer.flush()
            supplier_seat.supplier_seat_wait(episode=episode, attempt=attempt, waiting=waiting)
        return episode
    except approvals.AwaitingApproval:
        # A person answers the escalation; the answer (or the timeout) sends the run on.
        with contextlib.suppress(AttemptSuperseded):
            writer.flush()  # the steps before it, for the page and the replay
        return episode
    except AttemptSuperseded:
        episode.refresh_from_db()
        if live_updates and episode.status == EpisodeStatus.CANCELLED:
            live.publish_episode_status(episode)
        return episode
    except Exception as exc:
        if is_infrastructure_error(exc):
            raise  # the task retries; the reconciler resumes if retries run out
        # The run's own failure (engine, policy, bad params, data the database refuses):
        # it fails visibly instead of staying "running".
        episode_fail(episode=episode, error=describe(exc), attempt=attempt)
        if live_updates:
            live.publish_episode_status(episode)
        return episode

    wall = time.perf_counter() - started
    if episode.step_delay > 0:  # paced: the whole run, pauses included, as it was watched
        wall = (timezone.now() - episode.started_at).total_seconds()
    metrics = {**result.metrics, "wall_seconds": round(wall, 6)}
    episode_finish(
        episode=episode,
        attempt=attempt,
        score=result.score,
        metrics=metrics,
        engine_seconds=wall - writer.io_seconds,
    )
    if live_updates:
        live.publish_episode_status(episode)
    return episode

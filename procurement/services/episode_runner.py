"""Run one stored episode through the engine: resume, batch-persist, publish, finish.

Idempotent: decisions are keyed by (episode, step). A re-delivered task replays the
stored actions through a fresh engine (deterministic) and continues from there.
"""

from __future__ import annotations

import time
from typing import Any

from negotiation import StepRecord, get_policy, run_episode
from procurement.models import Episode, EpisodeStatus
from procurement.services import live
from procurement.services.episodes import (
    append_decisions,
    fail_episode,
    finish_episode,
    mark_running,
)

BATCH_STEPS = 256  # rows per INSERT
BATCH_SECONDS = 0.05  # a slow (LLM) policy still streams each decision promptly


class EpisodeCancelled(Exception):
    pass


def build_policy(snapshot: dict[str, Any], seed: int):
    params = dict(snapshot.get("params") or {})
    if snapshot.get("backend"):
        params.setdefault("backend", snapshot["backend"])
        params.setdefault("model", snapshot.get("model", ""))
    return get_policy(snapshot["policy"], seed=seed, **params)


class _BatchWriter:
    """Collects step records and writes them in batches (one INSERT each)."""

    def __init__(self, episode: Episode, resume_from: int, live_updates: bool) -> None:
        self.episode = episode
        self.resume_from = resume_from
        self.live_updates = live_updates
        self.buffer: list[dict[str, Any]] = []
        self.last_flush = time.monotonic()
        self.io_seconds = 0.0

    def __call__(self, record: StepRecord) -> None:
        if record.step < self.resume_from:
            return  # replayed: stored by an earlier attempt
        self.buffer.append(record.to_dict())
        if len(self.buffer) >= BATCH_STEPS or time.monotonic() - self.last_flush >= BATCH_SECONDS:
            self.flush()

    def flush(self) -> None:
        started = time.perf_counter()
        append_decisions(self.episode, self.buffer)
        if self.live_updates:
            live.publish_decisions(
                self.episode, [live.record_payload(r, "policy") for r in self.buffer]
            )
        self.buffer = []
        status = Episode.objects.filter(pk=self.episode.pk).values_list("status", flat=True)[0]
        self.last_flush = time.monotonic()
        self.io_seconds += time.perf_counter() - started
        if status == EpisodeStatus.CANCELLED:
            raise EpisodeCancelled


def run_stored_episode(episode_id: int, *, live_updates: bool | None = None) -> Episode:
    episode = Episode.objects.get(pk=episode_id)
    if episode.is_terminal or not mark_running(episode):
        return episode
    live_updates = episode.sweep_id is None if live_updates is None else live_updates
    if live_updates:
        live.publish_episode_status(episode)

    stored_actions = list(episode.decisions.order_by("step").values_list("action", flat=True))
    writer = _BatchWriter(episode, len(stored_actions), live_updates)
    started = time.perf_counter()
    try:
        result = run_episode(
            episode.scenario_snapshot,
            build_policy(episode.policy_snapshot, episode.seed),
            episode.seed,
            on_step=writer,
            record_steps=False,
            actions_prefix=stored_actions,
        )
        if writer.buffer:
            writer.flush()
    except EpisodeCancelled:
        episode.refresh_from_db()
        if live_updates:
            live.publish_episode_status(episode)
        return episode
    except (ValueError, KeyError, TypeError, RuntimeError) as exc:
        # Engine or policy bug: the episode fails visibly. Infrastructure errors propagate
        # to the task, which retries them.
        fail_episode(episode, f"{type(exc).__name__}: {exc}")
        if live_updates:
            live.publish_episode_status(episode)
        return episode

    wall = time.perf_counter() - started
    metrics = {**result.metrics, "wall_seconds": round(wall, 6)}
    finish_episode(
        episode, score=result.score, metrics=metrics, engine_seconds=wall - writer.io_seconds
    )
    if live_updates:
        live.publish_episode_status(episode)
    return episode

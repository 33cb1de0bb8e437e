"""Reads for the live streams: the payloads events carry, and the snapshot a viewer gets
on connect (a late joiner misses nothing)."""

from __future__ import annotations

from typing import Any

from procurement import dispatch
from procurement.errors import NotFound
from procurement.models import Decision, Episode, EpisodeStatus, Sweep
from procurement.run_phases import LOADING_MODEL, THINKING, phase_of
from procurement.run_plan import HANDED_OVER, LANE_NAMES
from procurement.selectors.approvals import (
    approval_payload,
    episode_approvals,
    pending_approvals,
)

OVERVIEW_GROUP = "overview"
# The most decisions one stream message carries (about 1 kB each): the snapshot's latest
# on connect, or one page of a resume. Older ones come from the API, in pages.
STREAM_PAGE = 200


def decision_payload(decision: Decision) -> dict[str, Any]:
    return {f: getattr(decision, f) for f in Decision.STORED_FIELDS}


def decisions_after(*, episode_id: int, step: int) -> tuple[list[dict[str, Any]], int | None]:
    """One page of the stored decisions after ``step`` (the catch-up of a reconnecting
    client), at most STREAM_PAGE, and the step to resume after for the next page (None:
    nothing more is stored)."""
    rows = Decision.objects.filter(episode_id=episode_id, step__gt=step).order_by("step")
    page = [decision_payload(d) for d in rows[: STREAM_PAGE + 1]]
    if len(page) > STREAM_PAGE:
        return page[:STREAM_PAGE], page[STREAM_PAGE - 1]["step"]
    return page, None


PHASE_TEXT = {LOADING_MODEL: "loading model", THINKING: "thinking"}


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def waiting_payload(*, state: str, queue: str, position: int | None = None) -> dict[str, Any]:
    """What a run waits for, with the words a page shows: ``queued`` at ``position`` in
    its queue's lane ("2nd in the model lane"; no position: its lane is not in this
    process), or the model loading or thinking."""
    lane = LANE_NAMES.get(queue, queue)
    if state != "queued":
        text = PHASE_TEXT[state]
    elif position:
        text = f"{ordinal(position)} in the {lane} lane"
    else:
        text = f"waiting in the {lane} lane"
    return {"state": state, "lane": lane, "position": position, "text": text}


def episode_waiting(episode: Episode) -> dict[str, Any] | None:
    """What the episode waits for now: its place in its lane while queued, its model
    while running (``procurement.run_phases``); None when it waits for nothing."""
    if episode.status == EpisodeStatus.QUEUED:
        queue, position = dispatch.run_place(("episode", episode.pk)) or (episode.queue, None)
        return waiting_payload(state="queued", queue=queue, position=position)
    phase = phase_of(episode.pk) if episode.status == EpisodeStatus.RUNNING else None
    return waiting_payload(state=phase, queue=episode.queue) if phase else None


def episode_payload(episode: Episode) -> dict[str, Any]:
    return {
        "id": episode.pk,
        "status": episode.status,
        "scenario": episode.scenario_name,
        "policy": episode.policy_name,
        "seed": episode.shown_seed,  # None while a sealed episode plays
        "steps": episode.steps,
        "score": episode.score,
        "sweep": episode.sweep_id,
        "waiting": episode_waiting(episode),
        "handed_over": seat_handed_over(episode),
    }


def seat_handed_over(episode: Episode) -> dict[str, Any] | None:
    """When an idle human seat passed to its fallback: {to, at, idle_seconds, step}, or
    None. Listings that defer the snapshot get None rather than a query per row."""
    if "policy_snapshot" in episode.get_deferred_fields():
        return None
    return episode.policy_snapshot.get(HANDED_OVER)


def sweep_payload(sweep: Sweep) -> dict[str, Any]:
    return {
        "id": sweep.pk,
        "status": sweep.status,
        "name": sweep.name,
        "total_cells": sweep.total_cells,
        "done_cells": sweep.done_cells,
        "failed_cells": sweep.failed_cells,
        "progress": sweep.progress,
    }


def episode_snapshot(*, episode_id: int) -> tuple[str, dict[str, Any]]:
    """The episode's group and its snapshot: the episode, its latest decisions and its
    approvals (answered ones too). NotFound when there is no such episode."""
    episode = Episode.objects.filter(pk=episode_id).first()
    if episode is None:
        raise NotFound(f"No episode {episode_id}.")
    latest = list(episode.decisions.order_by("-step")[:STREAM_PAGE])
    return episode.group_name, {
        "type": "episode.snapshot",
        "episode": episode_payload(episode),
        "decisions": [decision_payload(d) for d in reversed(latest)],
        "approvals": [approval_payload(a) for a in episode_approvals(episode=episode)],
    }


def sweep_snapshot(*, sweep_id: int) -> tuple[str, dict[str, Any]]:
    """The sweep's group and its snapshot; NotFound when there is no such sweep."""
    sweep = Sweep.objects.filter(pk=sweep_id).first()
    if sweep is None:
        raise NotFound(f"No sweep {sweep_id}.")
    return sweep.group_name, {"type": "sweep.snapshot", "sweep": sweep_payload(sweep)}


def overview_snapshot() -> tuple[str, dict[str, Any]]:
    """The overview group and its snapshot: recent single episodes, open sweeps, and every
    approval waiting for an answer."""
    recent = Episode.objects.filter(sweep__isnull=True).order_by("-created_at")[:20]
    running = Sweep.objects.filter(status__in=["queued", "running"])[:20]
    return OVERVIEW_GROUP, {
        "type": "overview.snapshot",
        "episodes": [episode_payload(e) for e in recent],
        "sweeps": [sweep_payload(s) for s in running],
        "approvals": [approval_payload(a) for a in pending_approvals()],
    }

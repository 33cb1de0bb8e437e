"""Live events: what the dashboard's WebSocket groups receive, and when."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from procurement.dispatch import RunRef
from procurement.models import Episode, Evaluation, Sweep, TrainingRun
from procurement.publish import publish_many
from procurement.selectors.evaluations import evaluation_payload
from procurement.selectors.live import (
    OVERVIEW_GROUP,
    episode_payload,
    episode_waiting,
    sweep_payload,
    waiting_payload,
)
from procurement.selectors.training import training_payload
from procurement.services.decision_store import stored_values

log = logging.getLogger(__name__)


def encoded(event: dict[str, Any]) -> dict[str, Any]:
    """A live event as the channel layer carries it: its type (the consumers dispatch on
    it) and the JSON text each viewer is sent, encoded once here rather than once per
    viewer in the web process (as ``send_json`` would: the same text)."""
    return {"type": event["type"], "text": json.dumps(event)}


def event_content(message: dict[str, Any]) -> dict[str, Any]:
    """The event a viewer receives for a channel-layer message (see ``encoded``)."""
    text = message.get("text")
    return json.loads(text) if isinstance(text, str) else message


def _send(group: str, events: list[dict[str, Any]]) -> None:
    try:
        publish_many(group, [encoded(e) for e in events])
    except Exception:  # live updates are best effort: the stored data is the truth
        log.warning("could not publish %d event(s) to %s", len(events), group, exc_info=True)


def record_payload(record: dict[str, Any], actor: str | None = None) -> dict[str, Any]:
    """The same shape as selectors.live.decision_payload, straight from an engine step record."""
    return stored_values(record, actor)


def publish_decisions(episode: Episode, payloads: list[dict[str, Any]]) -> None:
    if payloads:
        event = {"type": "episode.decisions", "episode": episode.pk, "decisions": payloads}
        _send(episode.group_name, [event])


def publish_episode_status(episode: Episode) -> None:
    event = {"type": "episode.status", "episode": episode_payload(episode)}
    if episode.sweep_id is None:
        _send(episode.group_name, [event])
        _send(OVERVIEW_GROUP, [event])


def publish_episode_waiting(episode: Episode, waiting: dict[str, Any] | None = None) -> None:
    """What the episode waits for now (``waiting``, else read): its place in its lane,
    its model loading or thinking, or nothing (null)."""
    waiting = episode_waiting(episode) if waiting is None else waiting
    event = {"type": "episode.waiting", "episode": episode.pk, "waiting": waiting}
    _send(episode.group_name, [event])


def publish_line(queue: str, line: list[RunRef]) -> None:
    """Tell each episode waiting in ``queue``'s lane its place, after the line moved."""
    for position, (kind, pk) in enumerate(line, start=1):
        if kind == "episode":
            waiting = waiting_payload(state="queued", queue=queue, position=position)
            publish_episode_waiting(Episode(pk=pk), waiting)


def publish_approval(episode: Episode, approval: dict[str, Any]) -> None:
    """An escalation waiting for (or given) a person's answer: the episode page and the
    overview show it."""
    event = {"type": "episode.approval", "approval": approval}
    _send(episode.group_name, [event])
    _send(OVERVIEW_GROUP, [event])


def publish_sweep_progress(sweep: Sweep) -> None:
    event = {
        "type": "sweep.progress",
        "sweep": sweep_payload(sweep),
        "sent_at": time.time(),  # lets clients (and the throttle test) see message spacing
    }
    _send(sweep.group_name, [event])
    _send(OVERVIEW_GROUP, [event])


def publish_training_progress(run: TrainingRun, points: list[dict[str, Any]]) -> None:
    """A training run's state and its metric points logged since the last event (the
    snapshot on connect holds all of them; clients key points by step)."""
    event = {"type": "training.progress", "run": training_payload(run), "metrics": points}
    _send(run.group_name, [event])


def publish_evaluation_progress(evaluation: Evaluation) -> None:
    """An evaluation run's state: status, episodes done, the cell playing now."""
    event = {"type": "evaluation.progress", "evaluation": evaluation_payload(evaluation)}
    _send(evaluation.group_name, [event])

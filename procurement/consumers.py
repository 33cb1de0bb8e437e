"""Read-only live streams over WebSocket: one episode, one sweep, or the overview.

A client gets a snapshot on connect (so a late joiner misses nothing), then every event
the workers publish to the group. Login and a role are required, as for the pages.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from procurement.heap import freeze_startup_heap
from procurement.limits import InputError, decode_json
from procurement.models import Episode, Sweep
from procurement.roles import has_role
from procurement.services import live
from procurement.services.approvals import approval_payload, pending_approvals

SNAPSHOT_DECISIONS = 500  # the latest decisions sent on connect; older ones via the API

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
# The group events a stream forwards to its client as they are (see live.encoded).
FORWARDED_EVENTS = frozenset(
    {"episode.decisions", "episode.status", "sweep.progress", "episode.approval"}
)
READ_ONLY = (
    "This stream is read-only: use the REST API to act. The one message it takes is "
    '{"type": "resume", "after_step": N}, on an episode stream.'
)


class LiveStreamConsumer(AsyncJsonWebsocketConsumer, ABC):
    """Subscribe to one group after checking the user; forward its events as JSON."""

    group: str = ""

    async def connect(self) -> None:
        # Accept first, then refuse with a close code: a close before accept() becomes an
        # HTTP 403 in daphne, and the browser never sees why.
        await self.accept()
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        if not await database_sync_to_async(has_role)(user, "analyst"):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        snapshot = await database_sync_to_async(self.snapshot)()
        if snapshot is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        # Join before sending the snapshot: an event in between arrives twice at worst
        # (clients key decisions by step), never not at all.
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.send_json(snapshot)
        freeze_startup_heap()

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None):
        # The stream is read-only but for "resume"; anything else gets a clear error and the
        # socket stays open (a frame that breaks the decoder must not close it 1011).
        try:
            message = decode_json(text_data or "")
        except InputError as exc:
            await self.send_error(f"{exc} Messages must be JSON, and this stream is read-only.")
            return
        if isinstance(message, dict) and message.get("type") == "resume":
            await self.resume(message)
            return
        await self.send_error(READ_ONLY)

    async def resume(self, message: dict) -> None:
        await self.send_error("Only episode streams resume.")

    async def send_error(self, message: str) -> None:
        await self.send_json({"type": "error", "message": message})

    @abstractmethod
    def snapshot(self) -> dict[str, Any] | None:
        """The current state to send on connect (and set ``self.group``); None: not found."""

    async def dispatch(self, message: dict) -> None:
        # Group events go straight out. Channels' dispatch would first run
        # close_old_connections in the one thread serving sync_to_async: a thread hop per
        # viewer per event, one after another, most of a 100-viewer fan-out. Forwarding
        # touches no database (every query here goes through database_sync_to_async,
        # which closes old connections itself).
        if message["type"] in FORWARDED_EVENTS:
            await self.forward(message)
        else:
            await super().dispatch(message)

    async def forward(self, event: dict) -> None:
        """Send a group event to the client: its text as published (encoded once for all
        viewers, see live.encoded), or, from an older publisher, the event itself."""
        text = event.get("text")
        if isinstance(text, str):
            await self.send(text_data=text)
        else:
            await self.send_json(event)


class EpisodeConsumer(LiveStreamConsumer):
    def snapshot(self) -> dict[str, Any] | None:
        episode = Episode.objects.filter(pk=self.scope["url_route"]["kwargs"]["episode_id"]).first()
        if episode is None:
            return None
        self.group = episode.group_name
        latest = list(episode.decisions.order_by("-step")[:SNAPSHOT_DECISIONS])
        return {
            "type": "episode.snapshot",
            "episode": live.episode_payload(episode),
            "decisions": [live.decision_payload(d) for d in reversed(latest)],
            "approvals": [approval_payload(a) for a in pending_approvals(episode)],
        }

    async def resume(self, message: dict) -> None:
        """After a reconnect: the decisions after the client's last step, in order, so
        that nothing is missed and nothing is sent twice."""
        after = message.get("after_step")
        if isinstance(after, bool) or not isinstance(after, int) or after < -1:
            await self.send_error('"after_step" must be a whole number, -1 for all.')
            return
        episode_id = self.scope["url_route"]["kwargs"]["episode_id"]
        decisions = await database_sync_to_async(live.decisions_after)(episode_id, after)
        await self.send_json(
            {"type": "episode.decisions", "episode": episode_id, "decisions": decisions}
        )


class SweepConsumer(LiveStreamConsumer):
    def snapshot(self) -> dict[str, Any] | None:
        sweep = Sweep.objects.filter(pk=self.scope["url_route"]["kwargs"]["sweep_id"]).first()
        if sweep is None:
            return None
        self.group = sweep.group_name
        return {"type": "sweep.snapshot", "sweep": live.sweep_payload(sweep)}


class OverviewConsumer(LiveStreamConsumer):
    def snapshot(self) -> dict[str, Any] | None:
        self.group = live.OVERVIEW_GROUP
        recent = Episode.objects.filter(sweep__isnull=True).order_by("-created_at")[:20]
        running = Sweep.objects.filter(status__in=["queued", "running"])[:20]
        return {
            "type": "overview.snapshot",
            "episodes": [live.episode_payload(e) for e in recent],
            "sweeps": [live.sweep_payload(s) for s in running],
            "approvals": [approval_payload(a) for a in pending_approvals()],
        }


class NotFoundConsumer(AsyncJsonWebsocketConsumer):
    """Any other /ws/ path: refused with 4404, not a server error."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)

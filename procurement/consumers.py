"""Read-only live streams over WebSocket: one episode, one sweep, one training run, one
evaluation, or the overview.

A client gets a snapshot on connect (so a late joiner misses nothing), then every event
the workers publish to the group. Login and a role are required, as for the pages.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from procurement.api.errors import http_status
from procurement.errors import ApplicationError, Forbidden, NotAuthenticated, NotFound
from procurement.heap import freeze_startup_heap
from procurement.limits import InputError, decode_json
from procurement.models import Episode
from procurement.roles import has_role
from procurement.selectors import live
from procurement.selectors.evaluations import evaluation_snapshot
from procurement.selectors.training import training_snapshot
from procurement.services.supplier_seat import SEAT_CLOSED, seat_hides_record

# The group events a stream forwards to its client as they are (see live.encoded).
FORWARDED_EVENTS = frozenset(
    {
        "episode.decisions",
        "episode.status",
        "episode.waiting",
        "sweep.progress",
        "episode.approval",
        "training.progress",
        "evaluation.progress",
    }
)


def close_code(refused: ApplicationError) -> int:
    """The close code of a refusal: 4000 + its HTTP status (4401, 4403, 4404), so the one
    status table (procurement.api.errors) serves the API and the streams."""
    return 4000 + http_status(refused)


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
        # The first read checks the stream exists and names its group; the snapshot sent is
        # read again after joining it, so an event published before the join (a fast run's
        # finish) is in the snapshot and one after it arrives on the group: twice at worst
        # (clients key decisions by step), never not at all.
        try:
            await database_sync_to_async(self.check_user)()
            await database_sync_to_async(self.snapshot)()
            await self.channel_layer.group_add(self.group, self.channel_name)
            snapshot = await database_sync_to_async(self.snapshot)()
        except ApplicationError as refused:
            await self.close(code=close_code(refused))
            return
        await self.send_json(snapshot)
        freeze_startup_heap()

    def check_user(self) -> None:
        """Login and the analyst role, as for the pages: NotAuthenticated or Forbidden."""
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            raise NotAuthenticated("Log in to watch live streams.")
        if not has_role(user, "analyst"):
            raise Forbidden("Your role does not allow this.")

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
    def snapshot(self) -> dict[str, Any]:
        """The current state to send on connect (and set ``self.group``); NotFound when
        what the path names does not exist."""

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
    def check_user(self) -> None:
        """... and never the holder of its supplier seat while it runs: the stream is the
        buyer's side (services.supplier_seat.seat_hides_record)."""
        super().check_user()
        episode_id = self.scope["url_route"]["kwargs"]["episode_id"]
        episode = Episode.objects.filter(pk=episode_id).first()
        if episode is not None and seat_hides_record(episode, self.scope["user"]):
            raise Forbidden(SEAT_CLOSED)

    def snapshot(self) -> dict[str, Any]:
        episode_id = self.scope["url_route"]["kwargs"]["episode_id"]
        self.group, snapshot = live.episode_snapshot(episode_id=episode_id)
        return snapshot

    async def resume(self, message: dict) -> None:
        """After a reconnect: the decisions after the client's last step, in order, so
        that nothing is missed and nothing is sent twice; one page (live.STREAM_PAGE) per
        message. ``next_after_step`` says where the next page starts (the client resumes
        after it), null when the client has caught up."""
        after = message.get("after_step")
        if isinstance(after, bool) or not isinstance(after, int) or after < -1:
            await self.send_error('"after_step" must be a whole number, -1 for all.')
            return
        episode_id = self.scope["url_route"]["kwargs"]["episode_id"]
        decisions, next_after = await database_sync_to_async(live.decisions_after)(
            episode_id=episode_id, step=after
        )
        await self.send_json(
            {
                "type": "episode.decisions",
                "episode": episode_id,
                "decisions": decisions,
                "next_after_step": next_after,
            }
        )


class SweepConsumer(LiveStreamConsumer):
    def snapshot(self) -> dict[str, Any]:
        sweep_id = self.scope["url_route"]["kwargs"]["sweep_id"]
        self.group, snapshot = live.sweep_snapshot(sweep_id=sweep_id)
        return snapshot


class TrainingConsumer(LiveStreamConsumer):
    def snapshot(self) -> dict[str, Any]:
        run_id = self.scope["url_route"]["kwargs"]["run_id"]
        self.group, snapshot = training_snapshot(run_id=run_id)
        return snapshot


class EvaluationConsumer(LiveStreamConsumer):
    def snapshot(self) -> dict[str, Any]:
        evaluation_id = self.scope["url_route"]["kwargs"]["evaluation_id"]
        self.group, snapshot = evaluation_snapshot(evaluation_id=evaluation_id)
        return snapshot


class OverviewConsumer(LiveStreamConsumer):
    def snapshot(self) -> dict[str, Any]:
        self.group, snapshot = live.overview_snapshot()
        return snapshot


class NotFoundConsumer(AsyncJsonWebsocketConsumer):
    """Any other /ws/ path: refused with 4404, not a server error."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=close_code(NotFound("No such stream.")))

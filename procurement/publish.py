"""Publish live events to Channels groups from synchronous code (tasks, worker threads,
requests: an approval, a human seat's move, a cancel).

One event loop owns the channel layer's connections in each process:
* the web server's loop, when this process serves ASGI (the embedded default: the
  in-memory layer only delivers to consumers on its own loop);
* otherwise a private background loop thread (Celery workers), which keeps channels-redis
  pools alive between sends instead of the ``async_to_sync`` pattern that leaves pools on
  closed loops ("Event loop is closed").
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable
from typing import Any

from channels.layers import get_channel_layer

PUBLISH_TIMEOUT_S = 5.0

_server_loop: asyncio.AbstractEventLoop | None = None
_private_loop: asyncio.AbstractEventLoop | None = None
_private_pid: int | None = None
_lock = threading.Lock()


class LoopBindingMiddleware:
    """ASGI middleware that remembers the server's event loop for ``publish``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> Any:
        if _server_loop is None or _server_loop.is_closed():
            bind_server_loop(asyncio.get_running_loop())
        return await self.app(scope, receive, send)


def bind_server_loop(loop: asyncio.AbstractEventLoop | None) -> None:
    """Make ``loop`` (the one serving WebSockets) the owner of the channel layer here."""
    global _server_loop
    _server_loop = loop


def _owner_loop() -> asyncio.AbstractEventLoop:
    global _private_loop, _private_pid
    if _server_loop is not None and _server_loop.is_running():
        return _server_loop
    with _lock:
        # After a fork (prefork pool) the parent's thread does not exist: start anew.
        if _private_loop is None or _private_pid != os.getpid() or _private_loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="arena-publisher", daemon=True).start()
            _private_loop, _private_pid = loop, os.getpid()
        return _private_loop


async def _send_all(group: str, events: list[dict[str, Any]]) -> None:
    layer = get_channel_layer()
    for event in events:
        await layer.group_send(group, event)


def publish_many(group: str, events: Iterable[dict[str, Any]]) -> None:
    """Send events (each with a ``type``) to ``group`` and wait until they are sent."""
    batch = list(events)
    if not batch:
        return
    loop = _owner_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise RuntimeError("publish() blocks: call it from sync code, not the event loop")
    asyncio.run_coroutine_threadsafe(_send_all(group, batch), loop).result(PUBLISH_TIMEOUT_S)


def publish(group: str, event: dict[str, Any]) -> None:
    publish_many(group, [event])

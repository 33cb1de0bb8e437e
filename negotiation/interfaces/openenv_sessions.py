"""Who holds each OpenEnv session, how many one owner may hold, and when an idle one ends.

The ``openenv`` package's server keeps one environment per session: one per WebSocket
(``/ws``, ``/mcp``), and those opened over plain HTTP (``POST /mcp`` with
``openenv/session/create``), which the package keeps until they are closed. Here each
session belongs to the owner of the request that opened it: ``scope[OWNER]``, set by
whoever authenticated the request (the web app's /openenv/ mount puts its user there;
``serve_openenv`` has no login, hence no owner and no per-owner limit). Then:

* an owner holds at most ``per_owner`` sessions: a request that would open one more is
  refused before the package sees it, HTTP 429 or a WebSocket error frame and close
  4429, each saying the limit and how many the owner holds (two requests at once are
  held to it by the server itself, which refuses the second as the package refuses one
  beyond its capacity);
* a request that names another owner's session (``/ws?session_id=``, an HTTP MCP call)
  is refused (403 / 4403);
* a WebSocket that sends nothing for ``idle_s`` seconds is told so and closed (4408),
  which ends its session; a session opened over HTTP and unused for ``idle_s`` seconds
  is closed by the next request that reaches the server, so no call leaves a session
  held for good.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qs

from openenv.core.env_server.exceptions import SessionCapacityError
from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.types import ConcurrencyConfig

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OWNER = "arena.openenv_owner"  # the scope key an authenticating layer sets (a string)
CLOSE_LIMIT, CLOSE_NOT_YOURS, CLOSE_IDLE = 4429, 4403, 4408
SESSION_CREATE = "openenv/session/create"

_owner: ContextVar[str | None] = ContextVar("openenv_owner", default=None)
_on_socket: ContextVar[bool] = ContextVar("openenv_on_socket", default=False)


class SessionLimitReached(SessionCapacityError):
    """The owner already holds ``limit`` sessions."""

    def __init__(self, held: int, limit: int, idle_s: float | None) -> None:
        idle = f", or after {idle_s:g} s without a call" if idle_s else ""
        message = (
            f"You hold {held} OpenEnv session(s); the limit per user is {limit}. "
            f"A session ends when it is closed{idle}."
        )
        super().__init__(held, limit, message)
        self.held, self.limit = held, limit


class OwnedSessionServer(HTTPEnvServer):
    """The package's server, whose sessions each belong to an owner (see the module)."""

    def __init__(
        self,
        *args: Any,
        max_sessions: int,
        per_owner: int | None = None,
        idle_s: float | None = None,
        **kwargs: Any,
    ) -> None:
        config = ConcurrencyConfig(max_concurrent_envs=max_sessions)
        super().__init__(*args, concurrency_config=config, **kwargs)
        self.per_owner = per_owner
        self.idle_s = idle_s
        self._owners: dict[str, tuple[str | None, bool]] = {}  # session -> (owner, socket?)
        self._opening: Counter[str | None] = Counter()  # sessions being created, per owner

    def owner_of(self, session_id: str) -> str | None:
        return self._owners.get(session_id, (None, False))[0]

    def held(self, owner: str | None) -> int:
        """Sessions ``owner`` holds, those being opened included."""
        live = [o for sid, (o, _) in self._owners.items() if sid in self._sessions]
        return live.count(owner) + self._opening[owner]

    def check(self, owner: str | None) -> None:
        """SessionLimitReached when ``owner`` may open no more sessions."""
        if owner is not None and self.per_owner is not None:
            held = self.held(owner)
            if held >= self.per_owner:
                raise SessionLimitReached(held, self.per_owner, self.idle_s)

    async def _create_session(self) -> tuple[str, Any]:
        # Check and reserve with no await in between: one event loop serves every
        # request, so two openings of one owner cannot both take the last place.
        owner = _owner.get()
        self.check(owner)
        self._opening[owner] += 1
        try:
            session_id, env = await super()._create_session()
        finally:
            self._opening[owner] -= 1
        self._owners[session_id] = (owner, _on_socket.get())
        return session_id, env

    async def expire_idle(self) -> None:
        """Close the sessions opened over HTTP that no call used for ``idle_s`` (those of
        a WebSocket end with it: ``SessionGuard`` closes an idle socket)."""
        for sid in [s for s in self._owners if s not in self._sessions]:
            del self._owners[sid]  # closed meanwhile (by the package or by us)
        if self.idle_s is None:
            return
        deadline = time.time() - self.idle_s
        for sid, (_, socket) in list(self._owners.items()):
            info = self._session_info.get(sid)
            if socket or info is None or sid in self._session_websocket_attachments:
                continue
            if info.last_activity_at < deadline:
                await self._destroy_session(sid)
                self._owners.pop(sid, None)


class _Refused(Exception):
    def __init__(self, status: int, close: int, code: str, body: dict[str, Any]) -> None:
        super().__init__(body["detail"])
        self.status, self.close, self.code, self.body = status, close, code, body


class SessionGuard:
    """ASGI: the OpenEnv app behind the rules of the module (owner from ``scope[OWNER]``)."""

    def __init__(self, app: ASGIApp, server: OwnedSessionServer) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)  # lifespan
        await self.server.expire_idle()
        owner = scope.get(OWNER)
        route = scope["path"].removeprefix(scope.get("root_path", ""))
        try:
            if scope["type"] == "websocket":
                self._admit_socket(scope, route, owner)
            elif scope["method"] == "POST" and route == "/mcp":
                receive = await self._admit_mcp_call(receive, owner)
        except _Refused as refused:
            return await _refuse(scope, receive, send, refused)
        _owner.set(owner)  # this request's context: _create_session reads them
        _on_socket.set(scope["type"] == "websocket")
        if scope["type"] == "websocket" and self.server.idle_s is not None:
            socket = _IdleSocket(receive, send, self.server.idle_s)
            return await self.app(scope, socket.receive, socket.send)
        return await self.app(scope, receive, send)

    def _admit_socket(self, scope: Scope, route: str, owner: str | None) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin1"))
        attach = (query.get("session_id") or [None])[0]
        if route == "/ws" and attach:
            self._own(attach, owner)
        elif route in ("/ws", "/mcp"):
            self._limit(owner)

    async def _admit_mcp_call(self, receive: Receive, owner: str | None) -> Receive:
        body, receive = await buffered_body(receive)
        try:
            call = json.loads(body or b"")
        except (ValueError, RecursionError):
            return receive  # the package answers a parse error (or the client left)
        if isinstance(call, dict):
            params = call.get("params")
            session_id = params.get("session_id") if isinstance(params, dict) else None
            if isinstance(session_id, str):
                self._own(session_id, owner)
            if call.get("method") == SESSION_CREATE:
                self._limit(owner)
        return receive

    def _limit(self, owner: str | None) -> None:
        try:
            self.server.check(owner)
        except SessionLimitReached as exc:
            body = {"detail": str(exc), "limit": exc.limit, "held": exc.held}
            raise _Refused(429, CLOSE_LIMIT, "SESSION_LIMIT", body) from None

    def _own(self, session_id: str, owner: str | None) -> None:
        if session_id in self.server._sessions and self.server.owner_of(session_id) != owner:
            body = {"detail": "That OpenEnv session belongs to someone else."}
            raise _Refused(403, CLOSE_NOT_YOURS, "FORBIDDEN", body)


async def buffered_body(receive: Receive) -> tuple[bytes | None, Receive]:
    """An HTTP request's whole body (None: the client went away first), and a receive
    that hands it to the app again."""
    chunks, more = [], True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return None, receive
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    body = b"".join(chunks)
    replayed = False

    async def replay() -> dict:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return body, replay


async def _refuse(scope: Scope, receive: Receive, send: Send, refused: _Refused) -> None:
    if scope["type"] == "http":
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": refused.status, "headers": headers})
        await send({"type": "http.response.body", "body": json.dumps(refused.body).encode()})
        return
    # Accept, then say why in the package's error frame (its client raises with it).
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    await _close_with(
        send, refused.close, {"message": refused.body["detail"], "code": refused.code}
    )


async def _close_with(send: Send, close: int, error: dict[str, Any]) -> None:
    await send({"type": "websocket.send", "text": json.dumps({"type": "error", "data": error})})
    await send({"type": "websocket.close", "code": close})


class _IdleSocket:
    """A WebSocket's receive and send, closed (4408) after ``idle_s`` without a frame
    from the client; the app then sees the client leave, and ends the session."""

    def __init__(self, receive: Receive, send: Send, idle_s: float) -> None:
        self._receive, self._send, self.idle_s = receive, send, idle_s
        self._accepted = self._closed = False
        self._pending: asyncio.Future | None = None

    async def receive(self) -> dict:
        if self._closed:
            return {"type": "websocket.disconnect", "code": CLOSE_IDLE}
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._receive())
        timeout = self.idle_s if self._accepted else None
        done, _ = await asyncio.wait({self._pending}, timeout=timeout)
        if not done:
            self._pending.cancel()
            self._closed = True
            message = f"No call for {self.idle_s:g} s: the session has ended."
            await _close_with(self._send, CLOSE_IDLE, {"message": message, "code": "IDLE"})
            return {"type": "websocket.disconnect", "code": CLOSE_IDLE}
        message, self._pending = self._pending.result(), None
        return message

    async def send(self, message: dict) -> None:
        if self._closed:
            return  # the app's goodbye to a socket closed for idling
        if message["type"] == "websocket.accept":
            self._accepted = True
        await self._send(message)

"""The cap on what one request may send, at the ASGI edge: before authentication, before
Django (or the OpenEnv app) reads a byte of the body.

Django reads a whole request body into a temporary file before any middleware or view
runs, so without this an anonymous client could make the web process store any amount
just to be told 401. Here:

* an HTTP request whose Content-Length is over ``REQUEST_BODY_MAX_BYTES`` is answered
  413 at once, its body never read;
* a body without a length (chunked) is counted as it arrives; at the first chunk over the
  cap the client gets the 413 and the app sees the client gone (``http.disconnect``), so
  it stops reading and answers nothing;
* a WebSocket message over the cap is not passed on: the socket closes with 1009
  (message too big, RFC 6455).

The 413 is JSON, as every API error: ``{"detail": ..., "max_bytes": N}``. The cap fits
the largest legitimate body (see the setting).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MESSAGE_TOO_BIG = 1009  # the WebSocket close code for a message over the limit


def too_large_message(limit: int) -> str:
    return (
        f"The request body is larger than this site accepts ({limit} bytes, "
        "REQUEST_BODY_MAX_BYTES). Send less: page or split what you send."
    )


def too_large_body(limit: int) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The refusal: status, headers and JSON body."""
    body = json.dumps({"detail": too_large_message(limit), "max_bytes": limit}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    return 413, headers, body


async def send_too_large(send: Send, limit: int) -> None:
    status, headers, body = too_large_body(limit)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def declared_length(scope: Scope) -> int | None:
    """The request's Content-Length, or None when it has none (or not a number: the
    server refuses those)."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class BodyLimit:
    """ASGI middleware: the cap above, around the whole site."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = settings.REQUEST_BODY_MAX_BYTES
        if scope["type"] == "http":
            length = declared_length(scope)
            if length is not None and length > limit:
                return await send_too_large(send, limit)
            return await _CountedBody(self.app, limit)(scope, receive, send)
        if scope["type"] == "websocket":
            return await self.app(scope, _small_messages(receive, send, limit), send)
        return await self.app(scope, receive, send)


class _CountedBody:
    """One HTTP request whose body is counted as the app reads it."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit
        self.received = 0
        self.refused = False
        self.started = False  # the app began its response: too late for a 413

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def counted_receive() -> Message:
            if self.refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                self.received += len(message.get("body", b""))
                if self.received > self.limit:
                    self.refused = True
                    if not self.started:
                        await send_too_large(send, self.limit)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if self.refused:
                return  # the client has its 413; nothing the app says now reaches it
            self.started = True
            await send(message)

        await self.app(scope, counted_receive, guarded_send)


def _small_messages(receive: Receive, send: Send, limit: int) -> Receive:
    async def checked() -> Message:
        message = await receive()
        if message["type"] == "websocket.receive":
            # bytes, or characters of a text frame (at least as many bytes)
            size = len(message.get("bytes") or b"") + len(message.get("text") or "")
            if size > limit:
                await send({"type": "websocket.close", "code": MESSAGE_TOO_BIG})
                return {"type": "websocket.disconnect", "code": MESSAGE_TOO_BIG}
        return message

    return checked

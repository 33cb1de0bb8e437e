"""Whether a browser's request comes from this site: one rule for forms, the API's Basic
auth, the live streams and /openenv/.

It is Django's own CSRF origin rule, so every way in agrees with the forms: the Origin
header must be this site exactly as the request reached it (scheme, host and port, from
the Host header, the host in ALLOWED_HOSTS), or one of CSRF_TRUSTED_ORIGINS. A page on
the same host but another port is another site (channels' AllowedHostsOriginValidator,
which compares host names only, let ``http://localhost:9999`` open the streams of a site
on port 8000).
"""

from __future__ import annotations

import io
from typing import Any

from channels.security.websocket import WebsocketDenier
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware

Scope = dict[str, Any]


def scope_request(scope: Scope) -> ASGIRequest:
    """The scope as Django sees an HTTP request, without its body (a WebSocket handshake
    is a GET, over http or https)."""
    if scope["type"] == "websocket":
        scheme = "https" if scope.get("scheme") == "wss" else "http"
        scope = {**scope, "type": "http", "method": "GET", "scheme": scheme}
    return ASGIRequest(scope, io.BytesIO())


def _unused(request: HttpRequest) -> HttpResponse:
    raise AssertionError("only the origin check is used")


def trusted_origin(request: HttpRequest) -> bool:
    """True when the request has an Origin header and it is this site or a trusted one."""
    if "HTTP_ORIGIN" not in request.META:
        return False
    # The check CsrfViewMiddleware makes of every unsafe request with an Origin header.
    return CsrfViewMiddleware(_unused)._origin_verified(request)


class SameOriginValidator:
    """ASGI middleware for WebSockets: only pages of this site may open a stream (a
    handshake without an Origin header is refused too, as channels' validator does)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if trusted_origin(scope_request(scope)):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)

"""/openenv/ on the main ASGI app: the OpenEnv server behind the API's own login.

A request or WebSocket under the prefix is authenticated exactly as the API does it (its
DRF authentication classes: HTTP Basic with the axes lockout, or the session cookie with
CSRF on unsafe HTTP methods: the ``csrftoken`` cookie's value in ``X-CSRFToken``), must
hold the analyst role (who may run episodes), and is then handed to the OpenEnv app with
``root_path`` set to the prefix. Everything else goes to the wrapped app untouched. The
sessions a request opens are its user's: at most OPENENV_MAX_SESSIONS_PER_USER at once,
each ended after OPENENV_SESSION_IDLE_SECONDS without a call
(``negotiation.interfaces.openenv_sessions``).

Refusals: HTTP gets DRF's status and JSON body (401 with a Basic challenge, 403, or 429
with Retry-After); a WebSocket is accepted, told why in the package's error frame (so
``GenericEnvClient`` raises with the reason) and closed with 4401 / 4403 / 4429 / 4503,
as the dashboard streams close. A WebSocket from a browser page (it has an Origin header)
must come from this site (procurement.origins), as the dashboard streams must: a session
cookie is ambient, so without that check any site could open a session in the user's name.

The OpenEnv app (and openenv itself, 4-6 s to import) is built on first use, so that
importing ``config.asgi`` stays light.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from importlib import import_module
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth import get_user
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.settings import api_settings

from procurement.origins import scope_request, trusted_origin
from procurement.roles import has_role

PREFIX = "/openenv"
ROLE = "analyst"  # may run single episodes (procurement.roles.CAPABILITIES)
# A refusal's HTTP status -> the WebSocket close code and the error frame's code.
WS_REFUSAL = {
    401: (4401, "UNAUTHENTICATED"),
    403: (4403, "FORBIDDEN"),
    429: (4429, "LOCKED_OUT"),
    503: (4503, "UNAVAILABLE"),
}
BODY_HEADERS = frozenset({b"content-type", b"content-length", b"transfer-encoding"})
NOT_INSTALLED = (
    "The OpenEnv server is not installed here: pip install -r requirements/research.txt."
)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Refusal(Exception):
    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers or {}


def _django_request(scope: Scope) -> HttpRequest:
    """The scope as Django sees an HTTP request (a WebSocket handshake is a GET), with the
    session and lazy user that SessionMiddleware and AuthenticationMiddleware would set.

    Without its body: that stays unread for the OpenEnv app. So the request says it has
    none, and the CSRF check (which looks at a POST's form fields before the X-CSRFToken
    header) finds none instead of failing to parse a JSON body with a 415."""
    headers = [(k, v) for k, v in scope.get("headers", []) if k not in BODY_HEADERS]
    request = scope_request({**scope, "headers": headers})
    engine = import_module(settings.SESSION_ENGINE)
    request.session = engine.SessionStore(request.COOKIES.get(settings.SESSION_COOKIE_NAME))
    request.user = SimpleLazyObject(lambda: get_user(request))
    return request


@database_sync_to_async
def authenticate(scope: Scope) -> Any:
    """The user the API would see for this request, or Refusal with the API's answer."""
    authenticators = [cls() for cls in api_settings.DEFAULT_AUTHENTICATION_CLASSES]
    request = Request(_django_request(scope), authenticators=authenticators)
    try:
        user = request.user
    except exceptions.Throttled as exc:  # an axes lockout
        retry = {"Retry-After": str(int(exc.wait))} if exc.wait else {}
        raise Refusal(exc.status_code, str(exc.detail), retry) from None
    except exceptions.APIException as exc:  # wrong password, CSRF failure
        challenge = _challenge(authenticators, request) if exc.status_code == 401 else {}
        raise Refusal(exc.status_code, str(exc.detail), challenge) from None
    if not user.is_authenticated:
        detail = str(exceptions.NotAuthenticated.default_detail)
        raise Refusal(401, detail, _challenge(authenticators, request))
    if not has_role(user, ROLE):
        raise Refusal(403, "Your role does not allow this.")
    return user


def _challenge(authenticators: list, request: Request) -> dict[str, str]:
    header = authenticators[0].authenticate_header(request) if authenticators else None
    return {"WWW-Authenticate": header} if header else {}


def _origin_allowed(scope: Scope) -> bool:
    request = scope_request(scope)
    # No Origin: not a browser, so no ambient cookie to abuse.
    return "HTTP_ORIGIN" not in request.META or trusted_origin(request)


class OpenEnvMount:
    """ASGI middleware: ``PREFIX`` and below to the OpenEnv app, the rest to ``app``."""

    def __init__(self, app: ASGIApp, *, build: Callable[[], ASGIApp] | None = None) -> None:
        self.app = app
        self._build = build or _build_openenv_app
        self._openenv: ASGIApp | None = None
        self._lock = threading.Lock()  # not asyncio's: tests call in from several loops

    def _mounted(self, scope: Scope) -> bool:
        if scope["type"] not in ("http", "websocket"):
            return False
        path = scope["path"]
        return path == PREFIX or path.startswith(PREFIX + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._mounted(scope):
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket" and not _origin_allowed(scope):
            # As AllowedHostsOriginValidator refuses: the handshake itself (HTTP 403).
            await receive()  # websocket.connect
            await send({"type": "websocket.close"})
            return
        try:
            user = await authenticate(scope)
            app = await self._openenv_app()
        except Refusal as refusal:
            return await self._refuse(scope, receive, send, refusal)
        from negotiation.interfaces.openenv_sessions import OWNER  # loaded with the app

        # Per the ASGI spec the path stays whole; root_path says where the app is mounted.
        # The sessions the request opens are the user's.
        root_path = scope.get("root_path", "") + PREFIX
        scope = {**scope, "root_path": root_path, OWNER: f"user:{user.pk}"}
        return await app(scope, receive, send)

    async def _openenv_app(self) -> ASGIApp:
        if self._openenv is not None:
            return self._openenv
        try:  # off the event loop: the import takes seconds
            return await asyncio.to_thread(self._load)
        except ImportError:
            raise Refusal(503, NOT_INSTALLED) from None

    def _load(self) -> ASGIApp:
        with self._lock:
            if self._openenv is None:
                self._openenv = self._build()
            return self._openenv

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, refusal: Refusal) -> None:
        if scope["type"] == "http":
            body = json.dumps({"detail": refusal.detail}).encode()
            headers = [(b"content-type", b"application/json")]
            headers += [(k.lower().encode(), v.encode()) for k, v in refusal.headers.items()]
            await send(
                {"type": "http.response.start", "status": refusal.status, "headers": headers}
            )
            await send({"type": "http.response.body", "body": body})
            return
        # Accept, then say why: a close before accept becomes a bare HTTP 403 in daphne.
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        close, code = WS_REFUSAL.get(refusal.status, WS_REFUSAL[403])
        frame = {"type": "error", "data": {"message": refusal.detail, "code": code}}
        await send({"type": "websocket.send", "text": json.dumps(frame)})
        await send({"type": "websocket.close", "code": close})


def _build_openenv_app() -> ASGIApp:
    from negotiation.interfaces.openenv_server import build_app

    return build_app(
        settings.OPENENV_MAX_SESSIONS,
        per_owner=settings.OPENENV_MAX_SESSIONS_PER_USER,
        idle_s=settings.OPENENV_SESSION_IDLE_SECONDS,
    )

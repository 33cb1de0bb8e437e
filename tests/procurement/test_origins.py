"""Only this site's pages open WebSockets: the origin must match scheme, host and port."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client

from config.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

SITE = b"localhost:8000"  # the Host header: the site is served on port 8000


@pytest.fixture(autouse=True)
async def _close_thread_connections():
    yield
    await sync_to_async(connections.close_all)()


@sync_to_async
def _cookie(user_with_role) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user_with_role("ops"))
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def opens(path: str, origin: bytes, *headers, scheme: str = "ws") -> bool:
    communicator = WebsocketCommunicator(
        application, path, headers=[(b"origin", origin), (b"host", SITE), *headers]
    )
    communicator.scope["scheme"] = scheme
    accepted, _ = await communicator.connect()
    await communicator.disconnect()
    return accepted


async def test_a_page_on_another_port_cannot_open_a_stream(user_with_role) -> None:
    # Before: channels' AllowedHostsOriginValidator compared host names only, so a page
    # served on http://localhost:9999 opened the streams of the site on port 8000.
    cookie = await _cookie(user_with_role)
    assert await opens("/ws/overview/", b"http://localhost:8000", cookie)
    assert not await opens("/ws/overview/", b"http://localhost:9999", cookie)
    assert not await opens("/ws/overview/", b"http://localhost", cookie)
    assert not await opens("/ws/overview/", b"https://localhost:8000", cookie)  # scheme too
    assert await opens("/ws/overview/", b"https://localhost:8000", cookie, scheme="wss")


async def test_trusted_origins_open_streams(user_with_role, settings) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://dashboard.example"]
    cookie = await _cookie(user_with_role)
    assert await opens("/ws/overview/", b"https://dashboard.example", cookie)


async def test_openenv_sockets_check_the_port_too() -> None:
    # Refused on the origin, before any login or the OpenEnv import.
    assert not await opens("/openenv/ws", b"http://localhost:9999")

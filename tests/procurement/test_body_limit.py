"""The request body cap at the ASGI edge, through the real application (config.asgi):
an oversized body is refused with a JSON 413 before authentication, and no more of it is
read than the cap (plus the chunk that crossed it)."""

from __future__ import annotations

import httpx
import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client

from config.asgi import application
from procurement.body_limit import MESSAGE_TOO_BIG
from tests.websockets import HOST, ORIGIN

pytestmark = pytest.mark.django_db(transaction=True)

CAP = 4096
CHUNK = 1024


@pytest.fixture(autouse=True)
async def _small_cap(settings):
    settings.REQUEST_BODY_MAX_BYTES = CAP  # read per request: a small one keeps it quick
    yield
    await sync_to_async(connections.close_all)()


class Reading:
    """The real application, counting the body bytes it pulls from the server."""

    def __init__(self) -> None:
        self.read = 0

    async def __call__(self, scope, receive, send) -> None:
        async def counted():
            message = await receive()
            self.read += len(message.get("body", b""))
            return message

        await application(scope, counted, send)


async def post(app, path: str, content, **headers) -> httpx.Response:
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        return await client.post(
            path, content=content, headers={"content-type": "application/json", **headers}
        )


def assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 413  # not the 401 an anonymous client gets otherwise
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["max_bytes"] == CAP and "REQUEST_BODY_MAX_BYTES" in body["detail"]


@pytest.mark.parametrize("path", ["/api/episodes/", "/accounts/login/", "/openenv/step"])
async def test_a_declared_length_over_the_cap_is_a_413_and_nothing_is_read(path) -> None:
    # Before: the whole body was read (a 400 MB POST in full), then came the 401 (or 403).
    app = Reading()
    assert_refused(await post(app, path, b"x" * (CAP + 1)))
    assert app.read == 0


async def test_a_chunked_body_is_cut_at_the_first_chunk_over_the_cap() -> None:
    app = Reading()

    async def chunks():
        for _ in range(100):
            yield b"x" * CHUNK

    assert_refused(await post(app, "/api/episodes/", chunks()))
    assert app.read == CAP + CHUNK  # of 100 kB: the cap, and the chunk that crossed it


async def test_a_body_at_the_cap_goes_through() -> None:
    app = Reading()
    response = await post(app, "/api/episodes/", b"x" * CAP)
    assert response.status_code == 401 and app.read == CAP


@sync_to_async
def _session_cookie(user) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def test_a_websocket_message_over_the_cap_closes_the_socket(user_with_role) -> None:
    cookie = await _session_cookie(await sync_to_async(user_with_role)("ops"))
    headers = [ORIGIN, HOST, cookie]
    communicator = WebsocketCommunicator(application, "/ws/overview/", headers=headers)
    assert (await communicator.connect())[0]
    await communicator.receive_json_from()  # the snapshot
    await communicator.send_to(text_data="x" * CAP)  # at the cap: read, refused as usual
    assert (await communicator.receive_json_from())["type"] == "error"
    await communicator.send_to(text_data="x" * (CAP + 1))
    closed = await communicator.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": MESSAGE_TOO_BIG}
    await communicator.wait()

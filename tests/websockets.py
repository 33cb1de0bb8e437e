"""WebSocket helpers shared by the stream tests."""

from __future__ import annotations

from channels.testing import WebsocketCommunicator

from procurement.asgi import application

ORIGIN = (b"origin", b"http://localhost")


async def refused_code(path: str, *headers: tuple[bytes, bytes], origin=ORIGIN) -> int | None:
    """Connect, expect a refusal, and return its close code.

    A refused consumer keeps running until the client's disconnect arrives (as daphne
    sends it); without one it is cancelled at loop shutdown in the middle of a
    channels-redis receive, which can hang the loop's close for good.
    """
    communicator = WebsocketCommunicator(application, path, headers=[origin, *headers])
    connected, code = await communicator.connect()
    await communicator.disconnect()
    assert not connected, path
    return code

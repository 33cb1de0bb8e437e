"""WebSocket helpers shared by the stream tests."""

from __future__ import annotations

from channels.testing import WebsocketCommunicator

from config.asgi import application

ORIGIN = (b"origin", b"http://localhost")
HOST = (b"host", b"localhost")  # the site as the browser reached it: ORIGIN is this site


async def refused_code(path: str, *headers: tuple[bytes, bytes], origin=ORIGIN) -> int | None:
    """Connect, expect a refusal, and return its close code: the consumers accept, then
    close with a code a browser can read (the origin check refuses the handshake itself).

    A refused consumer keeps running until the client's disconnect arrives (as daphne
    sends it); without one it is cancelled at loop shutdown in the middle of a
    channels-redis receive, which can hang the loop's close for good.
    """
    communicator = WebsocketCommunicator(application, path, headers=[origin, HOST, *headers])
    accepted, code = await communicator.connect()
    if accepted:
        message = await communicator.receive_output(timeout=5)
        assert message["type"] == "websocket.close", (path, message)
        code = message.get("code")
    await communicator.disconnect()
    return code

"""The body cap inside daphne itself, where a request's body is first stored.

daphne (through Twisted) stores a whole request body, in memory or a temporary file,
before the ASGI application is called, then queues all of it for the application in
memory: an ASGI middleware (procurement.body_limit) can refuse to read it, but not keep
the server from holding it. So daphne's request class is replaced by one that keeps no
more than ``REQUEST_BODY_MAX_BYTES`` of a body: at once when the declared Content-Length is
over it, or when a chunked body grows over it, the client gets the same JSON 413 as from
the middleware (``Connection: close``); the rest of the body is read off the connection
and dropped, and the application is never called.

``install`` is called where the web process builds its application (config.asgi); other
ASGI servers are left to the middleware (and their own limits).
"""

from __future__ import annotations

import io

from daphne import http_protocol
from django.conf import settings

from procurement.body_limit import too_large_body


class CappedWebRequest(http_protocol.WebRequest):
    """daphne's WebRequest, keeping at most the cap of a body (see the module)."""

    over_cap = False

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > settings.REQUEST_BODY_MAX_BYTES:
            self.content = io.BytesIO()  # not the temporary file Twisted makes for it
            self._refuse()
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self.over_cap:
            return  # read off the connection, dropped
        if self.content.tell() + len(data) > settings.REQUEST_BODY_MAX_BYTES:
            self.content.close()
            self.content = io.BytesIO()
            self._refuse()
            return
        super().handleContentChunk(data)

    def _refuse(self) -> None:
        """Answer 413 now, while the client may still be sending, and nothing more on
        this connection. Only the sending side closes: closing the socket with a body
        still arriving would reset the connection before the client read the answer."""
        self.over_cap = True
        status, headers, body = too_large_body(settings.REQUEST_BODY_MAX_BYTES)
        head = b"HTTP/1.1 %d Content Too Large\r\n" % status
        head += b"".join(b"%s: %s\r\n" % header for header in headers)
        self.channel.transport.write(head + b"\r\n" + body)
        self.channel.transport.loseWriteConnection()

    def process(self):
        if not self.over_cap:
            return super().process()
        self.channel.transport.loseConnection()  # the body is over: the client has its 413
        return None


def install() -> None:
    """Make daphne build CappedWebRequest for every HTTP request (its HTTPFactory looks
    the class up by name on each connection)."""
    http_protocol.WebRequest = CappedWebRequest

"""The errors services raise when a request cannot be done: one family, mapped once.

A service raises an ``ApplicationError`` subclass with a message a person can act on
(and, in ``extra``, fields a client can read); it never builds a response. The API maps
the family to HTTP statuses in one place (``procurement.api.errors``), the live streams
to WebSocket close codes from that same mapping, the pages put the message on the form.
Field validation stays Django's ``ValidationError`` (keyed by field), mapped beside it.
"""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """A request the service refuses (a 400 unless a subclass says more)."""

    def __init__(self, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}


class NotAuthenticated(ApplicationError):
    """Nobody is logged in."""


class Forbidden(ApplicationError):
    """The user may not do this (their role, or not their episode)."""


class NotFound(ApplicationError):
    """What the request names does not exist."""


class Conflict(ApplicationError):
    """Not now: the object's state does not allow it (over, in use, nothing waiting)."""


class QuotaExceeded(ApplicationError):
    """More than the user's share allows (services.quotas); ``extra`` says the limit."""

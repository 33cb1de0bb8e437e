"""Which failures are the infrastructure's (retry, resume) and which are the run's own.

A lost database or broker connection says nothing about the run: its task retries with
backoff and, failing that, the reconciler resumes it. Anything else (an engine or policy
error, bad stored parameters, a value the database refuses) belongs to the run: it fails
visibly, alone, with its error recorded.
"""

from __future__ import annotations

from django.db import InterfaceError, OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

INFRASTRUCTURE_ERRORS: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    RedisConnectionError,
    RedisTimeoutError,
)


def is_infrastructure_error(exc: BaseException) -> bool:
    return isinstance(exc, INFRASTRUCTURE_ERRORS)


def describe(exc: BaseException, limit: int = 5000) -> str:
    """The error as a person reads it on the run: type and message."""
    return f"{type(exc).__name__}: {exc}"[:limit]

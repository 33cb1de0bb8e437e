"""Every API error is a 4xx: the ApplicationError family and field validation, mapped once.

An ApplicationError answers ``{"detail": message, **extra}`` with its class's status; a
Django ValidationError (a service's field checks) answers ``{field: [messages]}``.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from procurement import errors

# The one ApplicationError -> HTTP status table (the live streams close with 4000 + it).
HTTP_STATUS: dict[type[errors.ApplicationError], int] = {
    errors.NotAuthenticated: 401,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.QuotaExceeded: 429,
}


def http_status(exc: errors.ApplicationError) -> int:
    """The status of ``exc``'s nearest class in HTTP_STATUS; 400 for any other."""
    return next((HTTP_STATUS[c] for c in type(exc).__mro__ if c in HTTP_STATUS), 400)


def exception_handler(exc, context):
    if isinstance(exc, errors.ApplicationError):
        return Response({"detail": exc.message, **exc.extra}, status=http_status(exc))
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        exc = exceptions.ValidationError(detail)
    return drf_exception_handler(exc, context)

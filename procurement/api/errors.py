"""Every API error is a 4xx with field-level messages; service validation included."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler

from procurement.services.protection import InUseError
from procurement.services.quotas import QuotaExceeded


class Conflict(exceptions.APIException):
    status_code = 409
    default_code = "conflict"


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        exc = exceptions.ValidationError(detail)
    elif isinstance(exc, InUseError):
        exc = Conflict(str(exc))
    elif isinstance(exc, QuotaExceeded):
        exc = exceptions.Throttled(detail=str(exc))
    return drf_exception_handler(exc, context)

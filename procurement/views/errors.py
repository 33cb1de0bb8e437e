"""Server errors: a database that cannot serve right now is a 503 with Retry-After.

When every pooled connection stays busy past ``DB_POOL_TIMEOUT`` (psycopg_pool's
PoolTimeout), or PostgreSQL refuses clients ("too many clients already") or went away,
Django raises ``OperationalError`` / ``InterfaceError`` from wherever the first query ran:
a view, DRF's authentication or a middleware loading the session. Django hands all of them
to ``handler500``, so this one place turns them into a retryable 503 instead of a 500;
every other error keeps Django's own 500 page.
"""

from __future__ import annotations

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

RETRY_AFTER_S = 5
MESSAGE = "The database is busy or unavailable. Please retry in a few seconds."


def server_error(request: HttpRequest) -> HttpResponse:
    # Django calls handler500 inside its ``except`` block (asgiref re-raises it in the
    # worker thread under ASGI), so the exception is at hand here.
    if not isinstance(sys.exc_info()[1], OperationalError | InterfaceError):
        return defaults.server_error(request)
    headers = {"Retry-After": str(RETRY_AFTER_S)}
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": MESSAGE}, status=503, headers=headers)
    return HttpResponse(MESSAGE, status=503, content_type="text/plain", headers=headers)

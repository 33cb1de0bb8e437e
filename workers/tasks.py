"""Celery tasks. Tasks stay thin: they take ids, load, and call a service."""

from __future__ import annotations

import os
import socket

from celery import shared_task
from django.db import connection


@shared_task(name="workers.tasks.ping")
def ping(payload: str = "ping") -> dict[str, object]:
    """Liveness probe that also proves the worker has Django and a database connection."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return {
        "echo": payload,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "db_vendor": connection.vendor,
    }

"""Enqueue a task the way the current mode wants: Celery, or the in-process thread."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task
from django.conf import settings
from django.db import transaction
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import RedisError

log = logging.getLogger(__name__)


def enqueue(task: Task, *args: Any, queue: str | None = None, **kwargs: Any) -> None:
    """Send ``task`` after the current transaction commits, so it finds its rows.

    A broker that is down does not fail the caller: the run is committed and queued, and
    the reconciler sends its task once the broker is back (publishing gives up within
    about two seconds, see CELERY_TASK_PUBLISH_RETRY_POLICY).
    """

    def send() -> None:
        if settings.TASK_RUNNER == "thread":
            from workers.inprocess import get_runner

            get_runner().submit(task, args, kwargs)
            return
        options = {"queue": queue} if queue else {}
        try:
            task.apply_async(args=args, kwargs=kwargs, **options)
        except (BrokerError, RedisError, OSError):
            log.warning("broker unavailable: %s%r left for the reconciler", task.name, args)

    transaction.on_commit(send)

"""Enqueue a task the way the current mode wants: Celery, or the in-process thread."""

from __future__ import annotations

from typing import Any

from celery import Task
from django.conf import settings
from django.db import transaction


def enqueue(task: Task, *args: Any, queue: str | None = None, **kwargs: Any) -> None:
    """Send ``task`` after the current transaction commits, so it finds its rows."""

    def send() -> None:
        if settings.TASK_RUNNER == "thread":
            from workers.inprocess import get_runner

            get_runner().submit(task, args, kwargs)
        else:
            options = {"queue": queue} if queue else {}
            task.apply_async(args=args, kwargs=kwargs, **options)

    transaction.on_commit(send)

"""The Celery app's configuration, and a task executed by a real worker process."""

import os

import pytest

from workers import app
from workers.tasks import ping


def test_app_is_json_only_with_late_acks_and_cpu_default() -> None:
    conf = app.conf
    assert conf.task_serializer == "json"
    assert conf.result_serializer == "json"
    assert conf.accept_content == ["json"]
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_default_queue == "cpu"


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_real_worker_process_executes_a_task_through_redis(celery_worker_process) -> None:
    result = ping.delay("hello").get(timeout=30)
    assert result["echo"] == "hello"
    assert result["pid"] != os.getpid()
    assert result["pid"] in celery_worker_process.child_pids()
    assert result["heap_frozen"] is True  # no full collections over Django's startup heap
    from django.db import connection

    assert result["db_vendor"] == connection.vendor

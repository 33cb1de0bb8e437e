"""The Celery application: JSON only, late acks, queues ``cpu`` (default) and ``gpu``."""

import os

from celery import Celery
from celery.signals import worker_process_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("procurement_arena")
# Every Celery option lives in Django settings under the CELERY_ prefix.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers"], related_name="tasks")


@worker_ready.connect
def _start_reconciler(**_: object) -> None:
    """Every worker looks for stalled runs periodically (claims make it safe in many)."""
    from workers.reconciler import start_reconciler

    start_reconciler()


@worker_process_init.connect  # each prefork child
@worker_ready.connect  # the main process (solo and thread pools run tasks there)
def _freeze_heap(**_: object) -> None:
    """A full collection over the startup heap stalled a runner ~100 ms between storing a
    decision and publishing it; see procurement.heap."""
    from procurement.heap import freeze_startup_heap

    freeze_startup_heap()

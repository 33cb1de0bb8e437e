"""The Celery application: JSON only, late acks, queues ``cpu`` (default) and ``gpu``."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procurement.settings")

app = Celery("procurement_arena")
# Every Celery option lives in Django settings under the CELERY_ prefix.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers"], related_name="tasks")

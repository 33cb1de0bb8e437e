"""Worker processes: the Celery app and its tasks, the embedded default's in-process
runner and web entry point, and the reconciler's loop. Arrows go one way: workers import
the Django side (its services, procurement.dispatch's task names); the Django side names
tasks and never imports this package.

``celery -A workers worker -Q cpu`` finds ``app`` here.
"""

from workers.celery_app import app

__all__ = ["app"]

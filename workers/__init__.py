"""Celery workers: run episodes and sweeps, persist decisions, publish live events.

``celery -A workers worker -Q cpu`` finds ``app`` here.
"""

from workers.celery_app import app

__all__ = ["app"]

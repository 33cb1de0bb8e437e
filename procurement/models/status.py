from datetime import datetime

from django.db import models


class RunStatus(models.TextChoices):
    """Life cycle of anything a worker runs (episodes and sweeps)."""

    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_STATUSES = frozenset({RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED})


def run_seconds(started_at: datetime | None, finished_at: datetime | None) -> float | None:
    """How long a run took, start to finish (None until both are known)."""
    if started_at and finished_at:
        return (finished_at - started_at).total_seconds()
    return None

from django.db import models


class RunStatus(models.TextChoices):
    """Life cycle of anything a worker runs (episodes and sweeps)."""

    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_STATUSES = frozenset({RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED})

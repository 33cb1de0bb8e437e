"""Status transitions shared by everything a worker runs (episodes and sweeps)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from procurement.models.status import RunStatus


def cancel_run(obj: models.Model) -> bool:
    """Queued or running -> cancelled, atomically in one UPDATE; False when already over."""
    cancelled = (
        type(obj)
        .objects.filter(pk=obj.pk, status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
        .update(status=RunStatus.CANCELLED, finished_at=timezone.now())
    )
    obj.refresh_from_db()
    return bool(cancelled)

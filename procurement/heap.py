"""One-off tuning of the cyclic garbage collector for long-lived server processes."""

from __future__ import annotations

import gc

_frozen = False


def freeze_startup_heap() -> None:
    """Once per process, when it is up (its stack imported, serving): put what exists by
    then (Django, Twisted or Celery, channels-redis, every module: over 100,000 objects
    that live as long as the process) out of the cyclic collector's reach. Otherwise each
    full collection walks them all: a ~45 ms stall every few seconds under live load, in
    which no viewer gets anything (the p95 of bench/live.py). Reference counting still
    frees them; only cycles among them stay."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
        gc.freeze()

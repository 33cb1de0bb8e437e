"""Rate limits shared by every worker process (Redis) or within one process (embedded)."""

from __future__ import annotations

import threading
import time

from django.conf import settings

_local: dict[str, float] = {}
_lock = threading.Lock()
_client = None


def _redis():
    global _client
    if _client is None:
        import redis

        _client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2)
    return _client


def allow(key: str, interval_s: float) -> bool:
    """True at most once per ``interval_s`` for ``key`` across all processes."""
    if settings.REDIS_URL:
        try:
            return bool(
                _redis().set(f"arena:throttle:{key}", 1, nx=True, px=int(interval_s * 1000))
            )
        except Exception:  # Redis hiccup: fall back to the per-process limit
            pass
    now = time.monotonic()
    with _lock:
        if now - _local.get(key, -1e9) >= interval_s:
            _local[key] = now
            return True
        return False

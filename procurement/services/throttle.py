"""Rate limits shared by every worker process (Redis) or within one process (embedded)."""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import deque

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


# --- recent events: what happened to a key in the last window_s seconds ----------------
_events: dict[str, deque[float]] = {}  # key -> times (time.time()), oldest first
_pruned = 0.0
_longest = 0.0  # the longest window asked for: keys idle for longer are forgotten


def events(key: str, window_s: float) -> list[float]:
    """When ``key`` was counted (``count``) in the last ``window_s`` seconds, oldest
    first, in all processes (Redis) or in this one."""
    now = time.time()
    if settings.REDIS_URL:
        try:
            found = _redis().zrangebyscore(
                f"arena:events:{key}", now - window_s, "+inf", withscores=True
            )
            return [score for _, score in found]
        except Exception:  # Redis hiccup: this process's own record
            pass
    with _lock:
        return [t for t in _events.get(key, ()) if t > now - window_s]


def count(key: str, window_s: float) -> None:
    """Record one event for ``key``, kept for ``window_s`` seconds."""
    global _pruned, _longest
    now = time.time()
    if settings.REDIS_URL:
        try:
            name = f"arena:events:{key}"
            pipe = _redis().pipeline()
            pipe.zadd(name, {f"{now}:{uuid.uuid4().hex}": now})
            pipe.zremrangebyscore(name, "-inf", now - window_s)
            pipe.expire(name, math.ceil(window_s) + 1)
            pipe.execute()
            return
        except Exception:  # Redis hiccup: record in this process
            pass
    with _lock:
        times = _events.setdefault(key, deque())
        times.append(now)
        while times[0] <= now - window_s:
            times.popleft()
        _longest = max(_longest, window_s)
        if now - _pruned >= 1:  # forget idle keys, at most once a second
            _pruned = now
            for idle in [k for k, t in _events.items() if t[-1] <= now - _longest]:
                del _events[idle]

"""What the broker (Redis) holds for each run: the reconciler's "is a task still coming?".

Celery's Redis transport keeps waiting messages in one list per queue (and priority), and
messages a worker has taken but not acknowledged in the ``unacked`` hash, timed in the
``unacked_index`` sorted set. A run with a waiting message will be run; one whose message
a live worker took recently is being run. A run with neither has lost its task (broker
restarted without persistence, message dropped, worker killed with the message).
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterable

import redis
from django.conf import settings

from procurement.dispatch import RUN_OF_TASK, RunRef

log = logging.getLogger(__name__)

QUEUES = ("cpu", "gpu")
PRIORITY_SEP = "\x06\x16"  # kombu's separator between a queue and a priority level
PRIORITY_STEPS = (3, 6, 9)  # level 0 is the queue's own list
UNACKED, UNACKED_INDEX = "unacked", "unacked_index"


def run_ref(payload: dict) -> RunRef | None:
    """The run a serialized Celery message is for, or None (other tasks, foreign data)."""
    kind = RUN_OF_TASK.get((payload.get("headers") or {}).get("task", ""))
    if kind is None:
        return None
    try:
        body = payload["body"]
        if (payload.get("properties") or {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        return kind, int(args[0])
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def _loads(raw: bytes | str) -> object:
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return None


def _refs(payloads: Iterable[object]) -> set[RunRef]:
    return {ref for p in payloads if isinstance(p, dict) and (ref := run_ref(p))}


def runs_with_messages(*, taken_within_s: float, url: str | None = None) -> set[RunRef]:
    """Runs with a message waiting in a queue, or taken by a worker within the last
    ``taken_within_s`` seconds (older unacknowledged ones belong to dead workers)."""
    client = redis.Redis.from_url(url or settings.CELERY_BROKER_URL, socket_timeout=5)
    try:
        lists = [*QUEUES, *(f"{q}{PRIORITY_SEP}{p}" for q in QUEUES for p in PRIORITY_STEPS)]
        refs = _refs(_loads(raw) for name in lists for raw in client.lrange(name, 0, -1))
        recent = client.zrangebyscore(UNACKED_INDEX, time.time() - taken_within_s, "+inf")
        if recent:
            # an unacked entry is [payload, exchange, routing_key]
            entries = (_loads(raw) for raw in client.hmget(UNACKED, recent) if raw)
            refs |= _refs(e[0] for e in entries if isinstance(e, list) and e)
        return refs
    finally:
        client.close()

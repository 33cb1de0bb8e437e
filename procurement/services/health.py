"""Health checks of the service's dependencies, for /healthz and operators.

Anyone may ask whether each dependency is up (load balancers, docker-compose), but the
details (error text with hosts and ports, backends, queue lengths) are for admins only.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import redis.asyncio as aioredis
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection

from procurement import dispatch

CHECK_TIMEOUT_S = 2.0


def _check_database() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"vendor": connection.vendor}


async def _check_channel_layer() -> dict[str, Any]:
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "health.ping"})
    message = await layer.receive(channel)
    if message.get("type") != "health.ping":
        raise RuntimeError("channel layer returned an unexpected message")
    return {"backend": type(layer).__name__}


async def _check_broker() -> dict[str, Any]:
    if settings.TASK_RUNNER == "thread":
        runner = dispatch.local_runner()
        if runner is None:
            raise RuntimeError("no in-process runner in this process")
        return {"backend": "in-process thread", **runner.status()}
    client = aioredis.from_url(settings.CELERY_BROKER_URL, socket_timeout=CHECK_TIMEOUT_S)
    try:
        await client.ping()
        queued = {q: await client.llen(q) for q in ("cpu", "gpu")}
    finally:
        await client.aclose()
    return {"backend": "redis", "queued": queued}


async def _timed(name: str, check) -> tuple[str, dict[str, Any]]:
    started = time.perf_counter()
    try:
        detail = await asyncio.wait_for(check(), CHECK_TIMEOUT_S)
        result = {"ok": True, **detail}
    except Exception as exc:  # a health check reports failures, it never raises
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    result["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return name, result


async def check_all(*, detailed: bool = True) -> dict[str, Any]:
    """Run every check concurrently; status is "ok" only when all pass.

    ``detailed=False`` keeps only the status and each component's ``ok``.
    """
    checks = {
        "database": sync_to_async(_check_database),
        "channel_layer": _check_channel_layer,
        "broker": _check_broker,
    }
    results = dict(await asyncio.gather(*(_timed(n, c) for n, c in checks.items())))
    status = "ok" if all(r["ok"] for r in results.values()) else "degraded"
    if not detailed:
        return {"status": status, **{name: {"ok": r["ok"]} for name, r in results.items()}}
    return {"status": status, "mode": "embedded" if settings.EMBEDDED else "full", **results}

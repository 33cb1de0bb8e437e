"""Bounded PostgreSQL connections for every process: web (daphne), Celery child, command.

Under ASGI every request may run in a thread of its own, so persistent connections
(``CONN_MAX_AGE > 0``) pile up, one per thread, until PostgreSQL refuses new clients and
every request fails. ``CONN_MAX_AGE = 0`` alone does not bound them either: 200 concurrent
requests still open 200 connections. So each process gets psycopg's pool with a fixed
``max_size``: a request beyond it waits (up to ``timeout``) for a connection another
request returns, and connections idle for ``max_idle`` are closed again.

A Celery prefork child runs one task at a time in one thread, so it needs one connection.
The parent that forks the children never queries, and Celery's Django fixup closes a
child's pool after every task: no pool crosses a fork, and an idle worker holds no
connection (the pool is per process, so the parent must keep it that way).

The sizes come from the environment per process role (docker-compose.yml sets them per
service); ``DB_POOL_MAX_SIZE=0`` turns the pool off for deployments behind an external
pooler such as PgBouncer, where ``CONN_MAX_AGE`` applies.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class PoolSettings(BaseModel):
    """The ``DB_POOL_*`` environment variables; ``max_size=0`` means no pool."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_size: int = Field(default=10, ge=0, le=1000)
    min_size: int = Field(default=0, ge=0)  # opened on demand: a Celery child needs one
    timeout: float = Field(default=20.0, gt=0)  # seconds a request waits for a connection
    max_idle: float = Field(default=60.0, gt=0)  # seconds before an unused one is closed

    @model_validator(mode="after")
    def _min_within_max(self) -> PoolSettings:
        if self.max_size and self.min_size > self.max_size:
            raise ValueError("DB_POOL_MIN_SIZE must not exceed DB_POOL_MAX_SIZE")
        return self


POOL_ENV = {name: f"DB_POOL_{name.upper()}" for name in PoolSettings.model_fields}


def postgres_database(
    db: dict[str, Any], *, pool: dict[str, str | None], conn_max_age: int
) -> dict[str, Any]:
    """Return the PostgreSQL ``DATABASES`` entry ``db`` with bounded connections.

    ``pool`` maps :class:`PoolSettings` fields to the raw ``DB_POOL_*`` values (``None``:
    not set, use the default). With a pool, Django requires ``CONN_MAX_AGE = 0``: the
    pool, not the request thread, keeps connections open.
    """
    try:
        config = PoolSettings(**{name: value for name, value in pool.items() if value is not None})
    except ValidationError as exc:
        errors = "; ".join(
            f"{POOL_ENV[e['loc'][0]] if e['loc'] else 'DB_POOL'}: {e['msg']}" for e in exc.errors()
        )
        raise ImproperlyConfigured(f"Invalid connection pool settings: {errors}") from None
    db = {**db, "CONN_HEALTH_CHECKS": True, "OPTIONS": dict(db.get("OPTIONS", {}))}
    if not config.max_size:
        db["CONN_MAX_AGE"] = conn_max_age
        return db
    if conn_max_age:
        raise ImproperlyConfigured(
            "CONN_MAX_AGE must be 0 while the connection pool is on (DB_POOL_MAX_SIZE > 0)."
        )
    db["CONN_MAX_AGE"] = 0
    db["OPTIONS"]["pool"] = config.model_dump()
    return db

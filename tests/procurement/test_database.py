"""The database connection: psycopg 3, and a bounded pool configured per process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.postgres
@pytest.mark.django_db
def test_runs_on_postgresql_through_psycopg3() -> None:
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        assert "PostgreSQL" in cursor.fetchone()[0]
    import psycopg

    assert connection.connection.__class__.__module__.startswith("psycopg")
    assert psycopg.__version__.startswith("3.")


PROBE = """
import json, django
from django.conf import settings
django.setup()
db = settings.DATABASES["default"]
print(json.dumps({"max_age": db["CONN_MAX_AGE"], "pool": db["OPTIONS"].get("pool")}))
"""


def _database_settings(**env: str) -> subprocess.CompletedProcess[str]:
    """The DATABASES entry a fresh full-mode process builds from ``env`` alone."""
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings"}
    base |= {"DATABASE_URL": "postgres://u:p@db.example:5432/arena", "SECRET_KEY": "k" * 60}
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**base, "DATA_DIR": str(ROOT / "data"), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_every_process_gets_a_bounded_pool_and_no_persistent_connections() -> None:
    out = _database_settings()
    assert out.returncode == 0, out.stderr
    # The fault: CONN_MAX_AGE=60 kept one connection per daphne thread, unbounded.
    assert json.loads(out.stdout) == {
        "max_age": 0,
        "pool": {"max_size": 10, "min_size": 0, "timeout": 20.0, "max_idle": 60.0},
    }


def test_pool_sizes_come_from_the_environment_per_process_role() -> None:
    out = _database_settings(DB_POOL_MAX_SIZE="2", DB_POOL_MIN_SIZE="1", DB_POOL_TIMEOUT="2.5")
    assert json.loads(out.stdout)["pool"] == {
        "max_size": 2,
        "min_size": 1,
        "timeout": 2.5,
        "max_idle": 60.0,
    }


def test_pool_off_behind_an_external_pooler_honours_conn_max_age() -> None:
    out = _database_settings(DB_POOL_MAX_SIZE="0", CONN_MAX_AGE="30")
    assert json.loads(out.stdout) == {"max_age": 30, "pool": None}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DB_POOL_MAX_SIZE": "lots"}, "DB_POOL_MAX_SIZE: Input should be a valid integer"),
        ({"DB_POOL_MAX_SIZE": "-1"}, "DB_POOL_MAX_SIZE: Input should be greater than or equal"),
        ({"DB_POOL_TIMEOUT": "0"}, "DB_POOL_TIMEOUT: Input should be greater than 0"),
        ({"DB_POOL_MIN_SIZE": "5", "DB_POOL_MAX_SIZE": "2"}, "must not exceed DB_POOL_MAX_SIZE"),
        ({"CONN_MAX_AGE": "60"}, "CONN_MAX_AGE must be 0 while the connection pool is on"),
    ],
)
def test_bad_pool_settings_stop_the_process_with_a_clear_message(
    env: dict[str, str], message: str
) -> None:
    out = _database_settings(**env)
    assert out.returncode != 0
    assert "ImproperlyConfigured" in out.stderr
    assert message in out.stderr

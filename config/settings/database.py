"""The database: PostgreSQL behind a bounded psycopg pool in full mode, SQLite under
DATA_DIR on the embedded default."""

from __future__ import annotations

from config.settings.base import DATA_DIR, DATABASE_URL, env

if DATABASE_URL:
    _db = env.db_url_config(DATABASE_URL)
    if _db["ENGINE"] == "django.db.backends.postgresql":
        # A bounded psycopg pool per process (procurement/database.py says why).
        from procurement.database import postgres_database

        _db = postgres_database(
            _db,
            pool={
                "max_size": env.str("DB_POOL_MAX_SIZE", default=None),
                "min_size": env.str("DB_POOL_MIN_SIZE", default=None),
                "timeout": env.str("DB_POOL_TIMEOUT", default=None),
                "max_idle": env.str("DB_POOL_MAX_IDLE", default=None),
            },
            conn_max_age=env.int("CONN_MAX_AGE", default=0),
        )
else:
    _db = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(DATA_DIR / "arena.sqlite3"),
        # The in-process worker thread writes while requests read: WAL + a busy timeout.
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

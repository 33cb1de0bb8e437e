"""Both runtime modes' settings, read in fresh interpreters with controlled environments."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, django
from django.conf import settings
django.setup()
print(json.dumps({
    "engine": settings.DATABASES["default"]["ENGINE"],
    "db_name": str(settings.DATABASES["default"]["NAME"]),
    "health_checks": settings.DATABASES["default"].get("CONN_HEALTH_CHECKS", False),
    "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "runner": settings.TASK_RUNNER,
    "broker": settings.CELERY_BROKER_URL,
    "debug": settings.DEBUG,
    "embedded": settings.EMBEDDED,
    "secret_len": len(settings.SECRET_KEY),
    "acks_late": settings.CELERY_TASK_ACKS_LATE,
    "default_queue": settings.CELERY_TASK_DEFAULT_QUEUE,
}))
"""


def _settings(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "procurement.settings"}
    base["DATA_DIR"] = str(tmp_path / "data")
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_embedded_default_needs_no_configuration(tmp_path: Path) -> None:
    out = _settings({}, tmp_path)
    assert out.returncode == 0, out.stderr
    cfg = json.loads(out.stdout)
    assert cfg["engine"] == "django.db.backends.sqlite3"
    assert cfg["db_name"].startswith(str(tmp_path / "data"))
    assert cfg["layer"] == "channels.layers.InMemoryChannelLayer"
    assert cfg["runner"] == "thread"
    assert cfg["embedded"] is True
    assert cfg["debug"] is False
    assert cfg["secret_len"] >= 50
    # The generated key persists, so sessions survive a restart.
    key_file = tmp_path / "data" / "secret_key"
    assert key_file.exists()
    again = _settings({}, tmp_path)
    assert json.loads(again.stdout)["secret_len"] == cfg["secret_len"]
    assert key_file.stat().st_mode & 0o077 == 0


def test_full_mode_uses_postgres_redis_and_celery(tmp_path: Path) -> None:
    out = _settings(
        {
            "DATABASE_URL": "postgres://u:p@db.example:5432/arena",
            "REDIS_URL": "redis://cache.example:6379/0",
            "SECRET_KEY": "k" * 60,
            "DEBUG": "true",
        },
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    cfg = json.loads(out.stdout)
    assert cfg["engine"] == "django.db.backends.postgresql"
    assert cfg["health_checks"] is True
    assert cfg["layer"] == "channels_redis.core.RedisChannelLayer"
    assert cfg["runner"] == "celery"
    assert cfg["broker"] == "redis://cache.example:6379/0"
    assert cfg["debug"] is True
    assert cfg["embedded"] is False
    assert cfg["acks_late"] is True
    assert cfg["default_queue"] == "cpu"


def test_full_mode_refuses_to_start_without_secret_key(tmp_path: Path) -> None:
    out = _settings({"DATABASE_URL": "postgres://u:p@db:5432/arena"}, tmp_path)
    assert out.returncode != 0
    assert "SECRET_KEY must be set" in out.stderr


def test_celery_runner_without_broker_is_a_clear_error(tmp_path: Path) -> None:
    out = _settings({"TASK_RUNNER": "celery"}, tmp_path)
    assert out.returncode != 0
    assert "TASK_RUNNER=celery needs REDIS_URL" in out.stderr


def test_unknown_task_runner_is_rejected(tmp_path: Path) -> None:
    out = _settings({"TASK_RUNNER": "magic"}, tmp_path)
    assert out.returncode != 0
    assert "TASK_RUNNER must be" in out.stderr

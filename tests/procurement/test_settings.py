"""Both runtime modes' settings, read in fresh interpreters with controlled environments."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

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
    "ssl_redirect": settings.SECURE_SSL_REDIRECT,
    "hsts": settings.SECURE_HSTS_SECONDS,
    "secure_cookies": [settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE],
    "proxy_header": settings.SECURE_PROXY_SSL_HEADER,
}))
"""
STRONG_KEY = secrets.token_urlsafe(50)
PRODUCTION = {
    "DATABASE_URL": "postgres://u:p@db.example:5432/arena",
    "REDIS_URL": "redis://cache.example:6379/0",
    "SECRET_KEY": STRONG_KEY,
    "ALLOWED_HOSTS": "arena.example.com",
}
TRANSPORT_WARNINGS = ("security.W004", "security.W008", "security.W012", "security.W016")


def _settings(
    env: dict[str, str], tmp_path: Path, argv: tuple[str, ...] = ("-c", PROBE)
) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings"}
    base["DATA_DIR"] = str(tmp_path / "data")
    return subprocess.run(
        [sys.executable, *argv],
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


def test_importing_the_settings_writes_nothing(tmp_path: Path) -> None:
    # Before: the import made DATA_DIR and STATIC_ROOT and wrote the embedded secret key.
    probe = "import config.settings as s; print(s.EMBEDDED)"
    out = _settings({}, tmp_path, ("-c", probe))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
    assert not (tmp_path / "data").exists()
    # Django's set-up makes the folders; the key is written when it is first used.
    setup = "import django; django.setup()"
    assert _settings({}, tmp_path, ("-c", setup)).returncode == 0
    assert (tmp_path / "data" / "static").is_dir()
    assert not (tmp_path / "data" / "secret_key").exists()


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


@pytest.mark.parametrize(
    "kind, backend",
    [("pubsub", "channels_redis.pubsub.RedisPubSubChannelLayer"), ("fast", None)],
)
def test_the_channel_layer_can_be_redis_pubsub(tmp_path: Path, kind: str, backend) -> None:
    env = {"REDIS_URL": "redis://cache.example:6379/0", "CHANNEL_LAYER": kind}
    out = _settings({**env, "SECRET_KEY": "k" * 60}, tmp_path)
    if backend is None:
        assert out.returncode != 0 and "CHANNEL_LAYER must be one of" in out.stderr
    else:
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["layer"] == backend


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


def _check_deploy(env: dict[str, str], tmp_path: Path) -> str:
    out = _settings(env, tmp_path, ("manage.py", "check", "--deploy"))
    assert out.returncode == 0, out.stderr
    return out.stdout + out.stderr


def test_production_settings_pass_the_deploy_check(tmp_path: Path) -> None:
    # Before: W004, W008, W012 and W016 with exactly this environment.
    report = _check_deploy(PRODUCTION, tmp_path)
    assert not [w for w in TRANSPORT_WARNINGS if w in report], report
    cfg = json.loads(_settings(PRODUCTION, tmp_path).stdout)
    assert cfg["ssl_redirect"] is True and cfg["hsts"] >= 31_536_000
    assert cfg["secure_cookies"] == [True, True]
    assert cfg["proxy_header"] == ["HTTP_X_FORWARDED_PROTO", "https"]


def test_each_transport_setting_can_be_turned_off(tmp_path: Path) -> None:
    env = {**PRODUCTION, "SECURE_SSL_REDIRECT": "false", "SECURE_HSTS_SECONDS": "0"}
    env |= {"SESSION_COOKIE_SECURE": "no", "CSRF_COOKIE_SECURE": "0"}
    report = _check_deploy(env, tmp_path)
    assert all(w in report for w in TRANSPORT_WARNINGS), report
    assert (
        json.loads(_settings({**env, "SECURE_PROXY_SSL_HEADER": "off"}, tmp_path).stdout)[
            "proxy_header"
        ]
        is None
    )


@pytest.mark.parametrize(
    "env",
    [
        {},  # make run: embedded, loopback
        {**PRODUCTION, "ALLOWED_HOSTS": "localhost,127.0.0.1"},  # docker-compose
        {**PRODUCTION, "DEBUG": "true"},
    ],
    ids=["embedded", "loopback-full", "debug"],
)
def test_loopback_and_debug_runs_keep_plain_http(tmp_path: Path, env: dict[str, str]) -> None:
    out = _settings(env, tmp_path)
    assert out.returncode == 0, out.stderr
    cfg = json.loads(out.stdout)
    assert cfg["ssl_redirect"] is False and cfg["hsts"] == 0
    assert cfg["secure_cookies"] == [False, False] and cfg["proxy_header"] is None


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("", "SECRET_KEY must be set"),
        ("   ", "SECRET_KEY must be set"),
        ("change-me", "published placeholder"),
        ("CHANGE_ME", "published placeholder"),
        ("django-insecure-" + "x" * 50, "published placeholder"),
        ("0123456789abcdefghijklmnopqrstu", "at least 32 characters"),
    ],
    ids=["empty", "blank", "change-me", "CHANGE_ME", "django-insecure", "31-chars"],
)
def test_full_mode_refuses_a_weak_secret_key(tmp_path: Path, key: str, message: str) -> None:
    # Before: every one of these keys started the service.
    out = _settings({**PRODUCTION, "SECRET_KEY": key}, tmp_path)
    assert out.returncode != 0
    assert "ImproperlyConfigured" in out.stderr and message in out.stderr
    assert "secrets.token_urlsafe" in out.stderr  # the fix is in the message


def test_embedded_mode_refuses_placeholders_and_short_keys_beyond_loopback(
    tmp_path: Path,
) -> None:
    assert _settings({"SECRET_KEY": "x"}, tmp_path).returncode == 0  # local test runs
    refused = _settings({"SECRET_KEY": "change-me"}, tmp_path)
    assert refused.returncode != 0 and "published placeholder" in refused.stderr
    public = _settings({"SECRET_KEY": "x", "ALLOWED_HOSTS": "arena.example.com"}, tmp_path)
    assert public.returncode != 0 and "at least 32 characters" in public.stderr

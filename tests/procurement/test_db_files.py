"""The embedded SQLite database (password hashes, sessions) is readable by its owner only."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Keeps a connection open after a write, so the -wal and -shm files exist when listed.
PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.contrib.auth.models import Group
from django.db import connection
Group.objects.get_or_create(name="probe")
db = settings.DATABASES["default"]["NAME"]
print(json.dumps({s: oct(__import__("os").stat(db + s).st_mode & 0o777)
                  for s in ("", "-wal", "-shm")}))
connection.close()
"""


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings"}
    env["DATA_DIR"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        umask=0o022,  # the usual default, under which SQLite makes a world-readable file
    )
    assert out.returncode == 0, out.stderr
    return out


def test_migrate_creates_the_database_owner_only(tmp_path: Path) -> None:
    # Before: arena.sqlite3 was -rw-r--r-- (0644) after `migrate`.
    _run(tmp_path, "manage.py", "migrate", "--noinput", "-v", "0")
    db = tmp_path / "arena.sqlite3"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    modes = json.loads(_run(tmp_path, "-c", PROBE).stdout)
    assert modes == {"": "0o600", "-wal": "0o600", "-shm": "0o600"}

    # A database left world-readable by an older version is tightened on the next start.
    db.chmod(0o644)
    assert json.loads(_run(tmp_path, "-c", PROBE).stdout)[""] == "0o600"

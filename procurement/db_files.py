"""Keep the embedded SQLite database owner-only: it holds password hashes and sessions.

SQLite creates the database with the process umask (usually 0644, world-readable) and gives
its -wal/-shm files the database's mode. Tightening the files whenever a connection opens
covers a fresh database (before any row is written), WAL files made meanwhile, and a
database created 0644 by an older version.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

OWNER_ONLY = 0o600
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def restrict_sqlite_files(sender, connection, **kwargs) -> None:
    """``connection_created`` receiver: chmod 0600 a file-backed SQLite database."""
    if connection.vendor != "sqlite":
        return
    name = str(connection.settings_dict["NAME"])
    if connection.is_in_memory_db() or name.startswith("file:"):
        return
    for suffix in SQLITE_SUFFIXES:
        path = Path(name + suffix)
        try:
            if stat.S_IMODE(path.stat().st_mode) & 0o077:
                os.chmod(path, OWNER_ONLY)
        except FileNotFoundError:
            continue

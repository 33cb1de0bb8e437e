"""Private PostgreSQL and Redis servers on spare loopback ports, for fault-injection tests.

Tests that stop, restart or starve a database or a broker must never touch the machine's
shared servers (5432, 6379): they start their own here, from the same binaries, and do to
them whatever the fault needs. PostgreSQL refuses to run as root, so when the tests run as
root the server runs as the ``postgres`` system user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port: int, *, up: bool = True, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            is_up = True
        except OSError:
            is_up = False
        if is_up == up:
            return
        time.sleep(0.05)
    raise TimeoutError(f"port {port} still {'down' if up else 'up'} after {timeout}s")


def terminate(proc: subprocess.Popen, grace: float = 15) -> None:
    """SIGTERM, then SIGKILL if it has not exited after ``grace`` seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextlib.contextmanager
def serve_asgi(app) -> Iterator[str]:
    """uvicorn serving ``app`` in a thread on a spare port ("127.0.0.1:PORT"); always shut
    down, never left hanging."""
    import threading

    import uvicorn

    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"asgi-{port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        assert not thread.is_alive(), "uvicorn did not stop"


def postgres_bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


class RedisServer:
    """``redis-server`` on its own port; ``appendonly`` as docker-compose.yml runs it."""

    def __init__(self, *, port: int | None = None, appendonly: bool = True) -> None:
        self.port = port or free_port()
        self.appendonly = appendonly
        self.dir = Path(tempfile.mkdtemp(prefix="arena-redis-"))
        self.proc: subprocess.Popen | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> RedisServer:
        cmd = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port)]
        cmd += ["--dir", str(self.dir), "--save", ""]
        cmd += ["--appendonly", "yes" if self.appendonly else "no", "--appendfsync", "always"]
        log = (self.dir / "redis.log").open("a")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        wait_port(self.port)
        return self

    def kill(self) -> None:
        """SIGKILL: what a crashed or restarted container does to an unpersisted broker."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        wait_port(self.port, up=False)

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class PostgresServer:
    """A throwaway PostgreSQL cluster (trust auth on loopback) that a test may stop."""

    def __init__(self, *, port: int | None = None, max_connections: int = 40) -> None:
        self.bindir = postgres_bindir()
        if self.bindir is None:
            raise RuntimeError("PostgreSQL server binaries not found under /usr/lib/postgresql")
        self.port = port or free_port()
        self.max_connections = max_connections
        self.dir = Path(tempfile.mkdtemp(prefix="arena-pg-"))
        self.data = self.dir / "data"
        self._user = "postgres" if os.geteuid() == 0 else None
        if self._user:
            ids = pwd.getpwnam(self._user)
            os.chown(self.dir, ids.pw_uid, ids.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self._user:
            cmd = ["runuser", "-u", self._user, "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)

    def url(self, db: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{db}"

    def start(self) -> PostgresServer:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir} "
            f"-c max_connections={self.max_connections} -c fsync=off"
        )
        log = str(self.dir / "postgres.log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start")
        return self

    def stop(self, mode: str = "immediate") -> None:
        """``immediate`` drops every connection at once, like a crash or a network cut."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")
        wait_port(self.port, up=False)

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, TimeoutError):
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

"""A real web process under a burst of concurrent clients, and the PostgreSQL connections
it holds meanwhile: shared by the connection load test and bench/connections.py.

Everything here is real: a private PostgreSQL (tests/servers.py), ``manage.py`` to
migrate it, ``daphne`` serving ``workers.embedded``, one login through the login form, then
N client threads firing at once while a separate connection samples ``pg_stat_activity``.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from tests.servers import PostgresServer, free_port, terminate, wait_port

ROOT = Path(__file__).resolve().parent.parent
USERNAME = "loadtester"
PASSWORD = "load-test-password-1234"
DB_NAME = "arena_load"
BURST_PATHS = ("/api/scenarios/", "/api/episodes/", "/healthz")

SETUP = f"""
from django.core.management import call_command
from procurement.services.accounts import user_create
call_command("migrate", verbosity=0)
call_command("seed_presets", verbosity=0)
user_create(username="{USERNAME}", role="analyst", password="{PASSWORD}")
"""


def app_env(database_url: str, **overrides: str) -> dict[str, str]:
    """The environment of a full-mode process on ``database_url`` (no Redis: thread runner)."""
    inherited = ("REDIS_URL", "CONN_MAX_AGE", "DB_POOL_")  # only what the caller asks for
    env = {k: v for k, v in os.environ.items() if not k.startswith(inherited)}
    env.update(
        DATABASE_URL=database_url,
        SECRET_KEY="load-test-key-not-for-production",
        DJANGO_SETTINGS_MODULE="config.settings",
        DATA_DIR=str(ROOT / "data" / "load"),
        LOG_LEVEL="WARNING",
        PYTHONPATH=str(ROOT),
    )
    env.update(overrides)
    return env


def prepare_database(pg: PostgresServer) -> str:
    """Create, migrate and seed ``arena_load`` on ``pg`` with one analyst; return its URL."""
    with psycopg.connect(pg.url(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")
    url = pg.url(DB_NAME)
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SETUP],
        cwd=ROOT,
        env=app_env(url),
        check=True,
        capture_output=True,
        timeout=180,
    )
    return url


class WebProcess:
    """daphne on a spare port serving ``workers.embedded:application``: config.asgi's
    application plus, since these processes have no Redis (tasks run in a thread), the
    in-process runner that /healthz reports as the broker."""

    def __init__(self, database_url: str, *, port: int | None = None, **env: str) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = ROOT / "data" / f"load-daphne-{self.port}.log"
        self.log_path.parent.mkdir(exist_ok=True)
        self._log = self.log_path.open("w")
        cmd = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port)]
        self.proc = subprocess.Popen(
            [*cmd, "workers.embedded:application"],
            cwd=ROOT,
            env=app_env(database_url, **env),
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_port(self.port, timeout=60)
        except TimeoutError:
            self.stop()
            raise

    def log_tail(self) -> str:
        return self.log_path.read_text()[-3000:]

    def stop(self) -> None:
        terminate(self.proc)
        self._log.close()


def login(base_url: str) -> str:
    """Log in once through /accounts/login/ (one password hash); return the session id."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{base_url}/accounts/login/", timeout=30).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": token}
    opener.open(
        urllib.request.Request(
            f"{base_url}/accounts/login/",
            data=urllib.parse.urlencode(form).encode(),
            headers={"Referer": f"{base_url}/accounts/login/"},
        ),
        timeout=30,
    )
    session = {c.name: c.value for c in jar}.get("sessionid")
    if not session:
        raise RuntimeError("login failed: no session cookie")
    return session


def fetch(
    url: str, *, session: str = "", data: bytes | None = None, headers: dict | None = None
) -> tuple[int, dict, bytes]:
    """One request (a POST when ``data`` is given); returns (status, headers, body), HTTP
    errors included; status 0 means no answer at all."""
    headers = {**({"Cookie": f"sessionid={session}"} if session else {}), **(headers or {})}
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()
    except OSError as exc:
        return 0, {}, str(exc).encode()


class ConnectionSampler:
    """Samples the server's connections to one database every ``interval`` seconds."""

    def __init__(self, pg: PostgresServer, database: str, *, interval: float = 0.02) -> None:
        self._conn = psycopg.connect(pg.url(), autocommit=True)
        self.database = database
        self.interval = interval
        self.samples: list[int] = []
        self.peak_rows: list[tuple] = []  # (pid, state, backend_start) at the peak
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rows(self) -> list[tuple]:
        sql = "SELECT pid, state, backend_start FROM pg_stat_activity WHERE datname = %s"
        return self._conn.execute(sql, (self.database,)).fetchall()

    def count(self, *, state: str | None = None) -> int:
        return sum(1 for row in self.rows() if state in (None, row[1]))

    def _run(self) -> None:
        while not self._stop.is_set():
            rows = self.rows()
            if len(rows) > self.peak:
                self.peak_rows = rows
            self.samples.append(len(rows))
            self._stop.wait(self.interval)

    def __enter__(self) -> ConnectionSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    @property
    def peak(self) -> int:
        return max(self.samples, default=0)

    def close(self) -> None:
        self._conn.close()


@dataclass(frozen=True)
class Answer:
    path: str
    status: int  # 0: no answer at all
    ms: float
    body: bytes


@dataclass
class BurstResult:
    answers: list[Answer] = field(default_factory=list)
    seconds: float = 0.0

    def by_status(self, path: str | None = None) -> Counter:
        return Counter(a.status for a in self.answers if path in (None, a.path))

    @property
    def failures(self) -> list[Answer]:
        """5xx answers and requests that got no answer at all."""
        return [a for a in self.answers if a.status >= 500 or a.status == 0]

    def percentile_ms(self, q: float) -> float:
        cuts = statistics.quantiles([a.ms for a in self.answers], n=100, method="inclusive")
        return cuts[round(q * 100) - 1]


def burst(base_url: str, session: str, *, clients: int = 200, paths=BURST_PATHS) -> BurstResult:
    """``clients`` threads, released together, each sending one request (paths in turn)."""
    result = BurstResult()
    lock = threading.Lock()
    gate = threading.Barrier(clients)

    def client(i: int) -> None:
        path = paths[i % len(paths)]
        gate.wait()
        started = time.perf_counter()
        status, _, body = fetch(base_url + path, session=session)
        answer = Answer(path, status, (time.perf_counter() - started) * 1000, body[:300])
        with lock:
            result.answers.append(answer)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    result.seconds = time.perf_counter() - started
    return result


def wait_for(predicate, *, timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()

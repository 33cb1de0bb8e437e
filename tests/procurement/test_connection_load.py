"""Bounded database connections, shown on real processes against a small PostgreSQL.

The fault (issue 11): with ``CONN_MAX_AGE=60`` under daphne every request thread kept its
own connection, so 20 clients filled a ``max_connections=40`` server, most requests got a
500 and /healthz stayed 503 until a restart. Here a private PostgreSQL with
``max_connections=30`` serves a real daphne and a real Celery worker; a separate
connection samples ``pg_stat_activity`` while they work.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import psycopg
import pytest
from celery import Celery

from procurement import dispatch
from procurement.database import PoolSettings
from procurement.views.errors import MESSAGE, RETRY_AFTER_S
from tests import load
from tests.conftest import WorkerProcess, _is_postgres, _unavailable
from tests.servers import PostgresServer, RedisServer, postgres_bindir

pytestmark = [
    pytest.mark.postgres,
    # one worker: one private server for the module, and no sibling worker's load in the
    # burst it measures
    pytest.mark.xdist_group("connection_load"),
    pytest.mark.skipif(postgres_bindir() is None, reason="needs PostgreSQL server binaries"),
]

MAX_CONNECTIONS = 30
DEFAULTS = PoolSettings()  # what a web process gets when the environment sets nothing


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    if not _is_postgres():  # before the per-test marker check: don't start a server to skip
        _unavailable("needs PostgreSQL: set DATABASE_URL")
    server = PostgresServer(max_connections=MAX_CONNECTIONS).start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def database_url(pg: PostgresServer) -> str:
    return load.prepare_database(pg)


@pytest.fixture
def sampler(pg: PostgresServer) -> Iterator[load.ConnectionSampler]:
    sampler = load.ConnectionSampler(pg, load.DB_NAME)
    try:
        yield sampler
    finally:
        sampler.close()


@pytest.fixture
def web(request: pytest.FixtureRequest, database_url: str) -> Iterator[load.WebProcess]:
    """daphne with the shipped pool settings, plus the environment a test parametrizes."""
    env = getattr(request, "param", {})
    process = load.WebProcess(database_url, **env)
    try:
        yield process
    finally:
        process.stop()


# Idle connections are closed one per DB_POOL_MAX_IDLE; a short one lets the test watch
# the pool shrink back instead of waiting the default minute per connection.
@pytest.mark.parametrize("web", [{"DB_POOL_MAX_IDLE": "0.3"}], indirect=True)
def test_200_concurrent_clients_get_no_5xx_and_connections_stay_bounded(
    web: load.WebProcess, sampler: load.ConnectionSampler
) -> None:
    session = load.login(web.url)
    with sampler:
        result = load.burst(web.url, session, clients=200)

    assert result.failures == [], f"{result.by_status()}\n{web.log_tail()}"
    assert result.by_status() == {200: 200}
    # The pool is the bound: 200 waiting requests never open a 31st (or an 11th) connection.
    assert 0 < sampler.peak <= DEFAULTS.max_size < MAX_CONNECTIONS, sampler.peak_rows
    # After the burst every connection is returned, then the pool shrinks to min_size.
    assert load.wait_for(lambda: sampler.count() <= DEFAULTS.min_size, timeout=20), sampler.count()
    assert sampler.count() == sampler.count(state="idle")
    assert load.fetch(f"{web.url}/healthz")[0] == 200


def _episodes(pg: PostgresServer) -> int:
    with psycopg.connect(pg.url(load.DB_NAME)) as conn:
        return conn.execute("SELECT count(*) FROM procurement_episode").fetchone()[0]


def _fill_server(pg: PostgresServer) -> list[psycopg.Connection]:
    """Take every connection slot the server has left (superuser slots included)."""
    held = []
    while True:
        try:
            held.append(psycopg.connect(pg.url(), autocommit=True))
        except psycopg.OperationalError as exc:
            assert "too many clients" in str(exc)
            return held


def _basic_auth() -> str:
    return "Basic " + base64.b64encode(f"{load.USERNAME}:{load.PASSWORD}".encode()).decode()


@pytest.mark.parametrize("web", [{"DB_POOL_TIMEOUT": "1"}], indirect=True)
def test_a_full_database_is_a_503_with_retry_after_and_changes_nothing(
    web: load.WebProcess, pg: PostgresServer
) -> None:
    session = load.login(web.url)
    episodes_before = _episodes(pg)
    # The web process loses its connections and the server has no slot left for new ones:
    # what another process hogging PostgreSQL looks like from here.
    with psycopg.connect(pg.url(), autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (load.DB_NAME,),
        )
    held = _fill_server(pg)
    try:
        status, headers, body = load.fetch(f"{web.url}/api/scenarios/", session=session)
        assert (status, headers.get("Retry-After")) == (503, str(RETRY_AFTER_S))
        assert json.loads(body) == {"detail": MESSAGE}
        # A write: Basic auth must reach the user table first; nothing is stored.
        status, _, body = load.fetch(
            f"{web.url}/api/episodes/",
            data=json.dumps({"scenario": 1, "policy": "expert", "seed": 7}).encode(),
            headers={"Authorization": _basic_auth(), "Content-Type": "application/json"},
        )
        assert (status, json.loads(body)) == (503, {"detail": MESSAGE})
        # A dashboard page loads the session in a middleware, before any view runs.
        status, _, body = load.fetch(f"{web.url}/", session=session)
        assert (status, body.decode()) == (503, MESSAGE)
        assert load.fetch(f"{web.url}/healthz")[0] == 503
    finally:
        for conn in held:
            conn.close()
    # Slots are back: the same process recovers without a restart.
    assert load.wait_for(lambda: load.fetch(f"{web.url}/healthz")[0] == 200, timeout=20)
    assert load.fetch(f"{web.url}/api/scenarios/", session=session)[0] == 200
    assert _episodes(pg) == episodes_before


@pytest.mark.celery_worker
def test_a_prefork_worker_holds_one_connection_per_child_and_none_between_tasks(
    database_url: str, sampler: load.ConnectionSampler
) -> None:
    # The module's earlier tests stop their processes; on a loaded machine their server
    # backends can outlive them for a moment, and must not count as this worker's.
    assert load.wait_for(lambda: sampler.count() == 0, timeout=30), sampler.rows()
    redis = RedisServer(appendonly=False).start()
    # As docker-compose.yml runs worker-cpu: a pool of one per prefork child.
    env = load.app_env(database_url, REDIS_URL=redis.url(), DB_POOL_MAX_SIZE="1")
    worker = WorkerProcess(env, name="conn-load", concurrency=2)
    # not the current app: a later test in this process must not send to this Redis
    client = Celery(broker=redis.url(), backend=redis.url(), set_as_current=False)
    try:
        with sampler:
            results = [client.send_task(dispatch.PING, queue="cpu") for _ in range(40)]
            pids = {r.get(timeout=60)["pid"] for r in results}
        assert len(pids) <= 2
        # concurrency x DB_POOL_MAX_SIZE, plus one in the parent while its reconciler makes
        # a pass (it closes that connection and its pool after each pass).
        assert 0 < sampler.peak <= 2 + 1, sampler.peak_rows
        # Celery closes the pool after each task, so an idle worker holds nothing. (Workers
        # were not the faulty role: this guards the pool there; a min_size of 1 gave 4.)
        assert load.wait_for(lambda: sampler.count() == 0, timeout=10), sampler.count()
    finally:
        client.close()
        worker.stop()
        redis.close()

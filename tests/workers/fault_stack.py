"""A full-mode stack of its own for fault-injection tests: a private PostgreSQL and Redis
(tests/servers.py), real Celery worker processes and management commands pointed at them.

The test process's own Django stays on the session's database; everything of the stack
is reached through subprocesses (``manage.py shell``), its database through psycopg and
its broker through redis-py, so a test can stop, kill and restart any part of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import psycopg

from tests.conftest import ROOT, WorkerProcess
from tests.servers import PostgresServer, RedisServer

PASSWORD = "stack-ops-password-8c1f"

# How fast the stack notices a stalled run: short, so the tests stay short.
STACK_SETTINGS = {
    "RUN_STALL_SECONDS": "4",
    "RECONCILE_INTERVAL_SECONDS": "1",
    "SWEEP_CHUNK_CELLS": "5",
    "VISIBILITY_TIMEOUT": "3600",  # recovery must not wait for it
    "SECURE_SSL_REDIRECT": "false",  # the test client speaks plain http to "testserver"
}


def wait_until(check: Callable[[], Any], *, timeout: float, what: str, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Stack:
    def __init__(self, pg: PostgresServer) -> None:
        self.pg = pg
        self.redis = RedisServer()
        self.workers: list[WorkerProcess] = []
        self.env = {
            **os.environ,
            **STACK_SETTINGS,
            "DATABASE_URL": pg.url("arena"),
            "REDIS_URL": self.redis.url(0),
            "SECRET_KEY": "fault-stack-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
            "ALLOWED_HOSTS": "testserver,127.0.0.1,localhost",
            "DATA_DIR": tempfile.mkdtemp(prefix="arena-stack-"),
            "PYTHONPATH": str(ROOT),
        }

    def manage(self, *args: str, timeout: float = 120) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode:
            raise AssertionError(f"manage.py {args[0]} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def django(self, code: str) -> Any:
        """Run Python in a Django process of the stack; it prints one JSON value."""
        return json.loads(self.manage("shell", "-c", code).strip().splitlines()[-1])

    def sql(self, query: str, *params: Any) -> list[tuple]:
        with psycopg.connect(self.pg.url("arena"), connect_timeout=3) as conn:
            return conn.execute(query, params).fetchall()

    def worker(self, name: str, concurrency: int = 2, **options: str) -> WorkerProcess:
        """A worker of the stack (``queues``, ``pool`` as WorkerProcess takes them)."""
        worker = WorkerProcess(dict(self.env), name=name, concurrency=concurrency, **options)
        self.workers.append(worker)
        worker.wait_ready(via_log=True)
        return worker

    def start_sweep(self, scenario: str, policy: str, seeds: int) -> int:
        return self.django(
            "import json\n"
            "from procurement.models import PolicyConfig, Scenario\n"
            "from procurement.services.sweeps import sweep_create\n"
            f"s = sweep_create(scenarios=[Scenario.objects.get(name={scenario!r})],"
            f" policies=[PolicyConfig.objects.get(name={policy!r})], seeds={seeds})\n"
            "print(json.dumps(s.pk))"
        )

    def start_episode(self, scenario: str, policy: str, seed: int) -> int:
        return self.django(
            "import json\n"
            "from procurement.models import PolicyConfig, Scenario\n"
            "from procurement.services.episodes import episode_create\n"
            f"e = episode_create(scenario=Scenario.objects.get(name={scenario!r}),"
            f" policy=PolicyConfig.objects.get(name={policy!r}), seed={seed})\n"
            "print(json.dumps(e.pk))"
        )

    def finished_cells(self, sweep_id: int) -> int:
        query = "SELECT count(*) FROM procurement_sweepcell WHERE sweep_id=%s AND status='finished'"
        return self.sql(query, sweep_id)[0][0]

    def status(self, table: str, pk: int) -> str:
        return self.sql(f"SELECT status FROM procurement_{table} WHERE id=%s", pk)[0][0]

    def wait_finished(self, *, sweeps: tuple[int, ...] = (), episodes: tuple[int, ...] = ()):
        def done() -> bool:
            return all(self.status("sweep", s) == "finished" for s in sweeps) and all(
                self.status("episode", e) == "finished" for e in episodes
            )

        wait_until(done, timeout=150, what=f"sweeps {sweeps} and episodes {episodes} to finish")

    def assert_one_result_per_cell(self, sweep_id: int) -> None:
        total, done, failed = self.sql(
            "SELECT total_cells, done_cells, failed_cells FROM procurement_sweep WHERE id=%s",
            sweep_id,
        )[0]
        cells = self.sql(
            "SELECT status, count(*), count(DISTINCT episode_id) FROM procurement_sweepcell"
            " WHERE sweep_id=%s GROUP BY status",
            sweep_id,
        )
        assert cells == [("finished", total, total)], cells
        assert (done, failed) == (total, 0)
        episodes = self.sql("SELECT count(*) FROM procurement_episode WHERE sweep_id=%s", sweep_id)
        assert episodes[0][0] == total  # no orphans from chunks played twice
        gaps = self.sql(
            "SELECT e.id FROM procurement_episode e JOIN procurement_decision d"
            " ON d.episode_id = e.id WHERE e.sweep_id=%s"
            " GROUP BY e.id, e.steps HAVING count(*) <> e.steps OR max(d.step) <> e.steps - 1",
            sweep_id,
        )
        assert gaps == [], f"episodes with missing or extra decisions: {gaps[:5]}"

    def assert_contiguous(self, episode_id: int) -> None:
        steps, count, top = self.sql(
            "SELECT e.steps, count(d.id), max(d.step) FROM procurement_episode e"
            " JOIN procurement_decision d ON d.episode_id = e.id WHERE e.id=%s GROUP BY e.steps",
            episode_id,
        )[0]
        assert steps == count == top + 1

    def close(self) -> None:
        for worker in self.workers:
            worker.kill()
            worker.stop()
        self.redis.close()

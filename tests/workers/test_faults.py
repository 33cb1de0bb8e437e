"""Fault injection in full mode: every ordinary infrastructure fault that used to leave a
run queued or running forever, reproduced against real processes, and the run ending.

Each test gets its own PostgreSQL and Redis (spare ports; the machine's shared servers are
never touched), real Celery workers and management commands (tests/workers/fault_stack.py).
Workers reconcile every second and call a run stalled after 4 s without progress.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator

import pytest

from tests.conftest import ROOT
from tests.servers import PostgresServer, free_port, wait_port
from tests.workers.fault_stack import PASSWORD, Stack, wait_until

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.celery_worker,
    pytest.mark.xdist_group("fault_stack"),  # one worker: one private PostgreSQL (stack_pg)
]


@pytest.fixture
def stack(stack_pg: PostgresServer) -> Iterator[Stack]:
    stack = Stack(stack_pg)
    stack.manage("migrate", "--noinput")
    stack.manage("seed_presets")
    try:
        yield stack
    finally:
        stack.close()


def test_broker_down_when_runs_are_created(stack: Stack) -> None:
    """Before: the rows were committed `queued`, the client got a 500 after 19 s, and
    nothing ever ran them. After: 201 at once, and they run once the broker is back."""
    created = stack.django(
        "import json, time\n"
        "from rest_framework.test import APIClient\n"
        "from procurement.models import Scenario\n"
        "from procurement.services.accounts import user_create\n"
        f"user, _ = user_create(username='ops1', role='ops', password={PASSWORD!r})\n"
        "client = APIClient(); client.force_authenticate(user)\n"
        "easy = Scenario.objects.get(name='easy_negotiation')\n"
        "t = time.monotonic()\n"
        "e = client.post('/api/episodes/', {'scenario': easy.pk, 'policy': 'expert',"
        " 'seed': 3}, format='json')\n"
        "s = client.post('/api/sweeps/', {'scenarios': ['easy_negotiation'],"
        " 'policies': ['expert', 'random'], 'seeds': 4}, format='json')\n"
        "print(json.dumps({'codes': [e.status_code, s.status_code],"
        " 'seconds': time.monotonic() - t, 'episode': e.json()['id'],"
        " 'sweep': s.json()['id']}))"
    )
    assert created["codes"] == [201, 201]
    assert created["seconds"] < 6, "creating runs must not wait for a dead broker"
    episode, sweep = created["episode"], created["sweep"]
    assert (stack.status("episode", episode), stack.status("sweep", sweep)) == ("queued",) * 2

    stack.redis.start()
    stack.worker("late")
    stack.wait_finished(sweeps=(sweep,), episodes=(episode,))
    stack.assert_one_result_per_cell(sweep)
    stack.assert_contiguous(episode)


def test_redis_restarts_empty_mid_sweep(stack: Stack) -> None:
    """Before: queued and unacked chunks vanished with Redis, the sweep stayed `running`.
    After: the reconciler finds the sweep (and a queued episode) without a message and
    resumes them; exactly one result per cell."""
    stack.redis.appendonly = False  # the old compose file: no persistence at all
    stack.redis.start()
    stack.worker("w1")
    sweep = stack.start_sweep("hard_arena", "expert", 300)
    episode = stack.start_episode("medium_adversarial", "expert", 11)  # queued behind it
    wait_until(lambda: stack.finished_cells(sweep) >= 20, timeout=60, what="sweep progress")
    stack.redis.kill()
    stack.redis.start()  # empty: every queued and unacked message is gone
    stack.wait_finished(sweeps=(sweep,), episodes=(episode,))
    stack.assert_one_result_per_cell(sweep)
    stack.assert_contiguous(episode)
    assert "reconciler" in stack.workers[0].log_path.read_text()


def test_postgresql_unreachable_for_20_seconds(stack: Stack) -> None:
    """Before: five quick retries were used up within seconds; the sweep stayed `running`
    and an episode `queued`. After: backoff rides the outage out, the reconciler covers
    the rest."""
    stack.redis.start()
    stack.worker("w1")
    sweep = stack.start_sweep("hard_arena", "expert", 300)
    episode = stack.start_episode("medium_adversarial", "expert", 12)
    wait_until(lambda: stack.finished_cells(sweep) >= 20, timeout=60, what="sweep progress")
    stack.pg.stop()  # immediate: every connection drops, new ones are refused
    time.sleep(20)
    stack.pg.start()
    stack.wait_finished(sweeps=(sweep,), episodes=(episode,))
    stack.assert_one_result_per_cell(sweep)
    stack.assert_contiguous(episode)
    log = stack.workers[0].log_path.read_text()
    assert "OperationalError" in log  # the outage really hit the tasks


def test_celery_main_process_sigkilled(stack: Stack) -> None:
    """Before: the chunks its pool had taken waited an hour (the visibility timeout).
    After: a new worker's reconciler resumes the sweep within seconds of the stall."""
    stack.redis.start()
    first = stack.worker("doomed")
    sweep = stack.start_sweep("hard_arena", "expert", 300)
    wait_until(lambda: stack.finished_cells(sweep) >= 20, timeout=60, what="sweep progress")
    first.kill()
    killed_at = time.monotonic()
    stack.worker("rescuer")
    stack.wait_finished(sweeps=(sweep,))
    assert time.monotonic() - killed_at < 150  # far below the 3600 s visibility timeout
    stack.assert_one_result_per_cell(sweep)


def test_celery_worker_sigkilled_mid_evaluation_resumes_where_it_stopped(stack: Stack) -> None:
    """Before: a restarted evaluation played every episode again from 0. After: the lane
    a new worker takes plays only the episodes the killed one had not stored, and the
    run seals with every episode once."""
    stack.redis.start()
    first = stack.worker("doomed")
    evaluation = stack.django(
        "import json\n"
        "from procurement.services.evaluations import start_evaluation\n"
        "e = start_evaluation(policies='expert,always_accept,random', scenarios='bilateral',"
        " seeds=200)\n"
        "print(json.dumps(e.pk))"
    )
    stored_sql = (
        "SELECT coalesce(sum(episodes), 0) FROM procurement_evaluationpiece WHERE evaluation_id=%s"
    )
    wait_until(
        lambda: stack.sql(stored_sql, evaluation)[0][0] >= 60, timeout=90, what="stored outcomes"
    )
    first.kill()
    stored = stack.sql(stored_sql, evaluation)[0][0]
    assert 60 <= stored < 600
    killed_at = time.monotonic()
    stack.worker("rescuer")
    seen: list[int] = []

    def finished() -> bool:
        status, done = stack.sql(
            "SELECT status, done_episodes FROM procurement_evaluation WHERE id=%s", evaluation
        )[0]
        if status == "running":
            seen.append(done)
        return status == "finished"

    wait_until(finished, timeout=150, what="the resumed evaluation", every=0.05)
    assert time.monotonic() - killed_at < 150
    # progress went on from what was stored: never back to 0
    assert seen and min(seen) >= stored, (stored, seen[:10])
    (rows,) = stack.sql("SELECT outcomes FROM procurement_evaluation WHERE id=%s", evaluation)[0]
    keys = [tuple(r[:6]) for r in rows]
    assert len(keys) == len(set(keys)) == 600  # every episode once
    print(f"\nkilled with {stored} of 600 episodes stored; resumed from {min(seen)}")


class EmbeddedServer:
    """``daphne`` on the embedded default (SQLite, in-process worker thread)."""

    def __init__(self, data_dir: str) -> None:
        self.port = free_port()
        self.env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("DATABASE_URL", "REDIS_URL", "TASK_RUNNER")
        }
        self.env.update(
            DATA_DIR=data_dir,
            SECRET_KEY="embedded-restart-secret-key-0123456789abcdefghijklmnop",
            RECONCILE_ON_START="1",
            PYTHONPATH=str(ROOT),
        )
        self.proc: subprocess.Popen | None = None
        self.auth = "Basic " + base64.b64encode(f"ops1:{PASSWORD}".encode()).decode()

    def manage(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, check=True, timeout=120
        )

    def start(self) -> None:
        argv = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port)]
        log = open(os.path.join(self.env["DATA_DIR"], "daphne.log"), "a")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [*argv, "workers.embedded:application"],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_port(self.port)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def call(self, path: str, body: dict | None = None) -> dict:
        """GET, or POST a JSON body, as the ops user; the decoded JSON answer."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": self.auth, "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())


def test_embedded_web_process_restarts_mid_sweep() -> None:
    """Before: after a restart of the embedded web process, its sweep and a queued episode
    were never resumed. After: the new process resumes both at start-up."""
    server = EmbeddedServer(tempfile.mkdtemp(prefix="arena-embedded-"))
    server.manage("migrate", "--noinput", "-v", "0")
    server.manage("seed_presets")
    server.manage("create_user", "ops1", "--role", "ops", "--password", PASSWORD)
    server.start()
    try:
        sweep = server.call(
            "/api/sweeps/", {"scenarios": ["hard_arena"], "policies": ["expert"], "seeds": 300}
        )["id"]
        scenarios = server.call("/api/scenarios/")["results"]
        easy = next(s["id"] for s in scenarios if s["name"] == "easy_negotiation")
        episode = server.call("/api/episodes/", {"scenario": easy, "policy": "expert", "seed": 4})[
            "id"
        ]
        wait_until(
            lambda: server.call(f"/api/sweeps/{sweep}/")["done_cells"] >= 20,
            timeout=90,
            what="embedded sweep progress",
        )
        server.kill()
        server.start()  # a new process: its runner knows nothing of the old one's work

        def finished() -> bool:
            s, e = server.call(f"/api/sweeps/{sweep}/"), server.call(f"/api/episodes/{episode}/")
            return s["status"] == "finished" and e["status"] == "finished"

        wait_until(finished, timeout=150, what="the resumed sweep and episode")
        result = server.call(f"/api/sweeps/{sweep}/")
        assert (result["done_cells"], result["failed_cells"]) == (300, 0)
        episodes = server.call(f"/api/episodes/?sweep={sweep}&page_size=1")["count"]
        assert episodes == 300  # exactly one episode per cell
    finally:
        server.kill()

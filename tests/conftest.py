"""Shared fixtures: real PostgreSQL, Redis and Celery worker processes when available.

Tests marked ``postgres`` / ``redis`` / ``celery_worker`` are skipped on the embedded
default. CI sets ARENA_REQUIRE_SERVICES=1, which turns such a skip into a failure, so a
green CI run really exercised the services.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

# The embedded web process resumes stalled runs when workers.embedded is imported; tests
# must not have a reconciler thread racing them (tests that want one start it themselves,
# or a daphne process with RECONCILE_ON_START=1).
os.environ.setdefault("RECONCILE_ON_START", "0")

from django.conf import settings

from workers.commands import worker_argv
from workers.inprocess import install_local_runner

# Tests play the embedded web process's part: runs started here on the thread runner run
# in this process's worker thread.
install_local_runner()

ROOT = Path(__file__).resolve().parent.parent
REQUIRE_SERVICES = os.environ.get("ARENA_REQUIRE_SERVICES") == "1"


def xdist_worker_env(index: int, workers: int, environ: Mapping[str, str]) -> dict[str, str]:
    """What xdist worker ``gw<index>`` must not share with its siblings: a Redis DB of its
    own (Celery's queues, channels-redis groups, health keys), so one worker's celery
    process never takes another's tasks, a data folder of its own, and its share of the
    cores for torch's threads (each process would otherwise start one per core, and the
    oversubscribed model tests crawl). PostgreSQL needs nothing here: pytest-django already
    names each worker's test database ``..._gw<index>``.
    """
    base_dir = environ.get("DATA_DIR") or str(ROOT / "data")
    env = {"DATA_DIR": str(Path(base_dir) / f"gw{index}")}
    if "OMP_NUM_THREADS" not in environ:
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))
    if redis_url := environ.get("REDIS_URL"):
        head, _, db = redis_url.rstrip("/").rpartition("/")
        if not db.isdigit() or head.endswith(":/"):  # redis://host:port (no DB) is DB 0
            head, db = redis_url.rstrip("/"), "0"
        number = int(db) + index
        if number > 15:  # Redis' default 16 databases
            raise pytest.UsageError(f"REDIS_URL {redis_url}: no Redis DB {number} for gw{index}")
        env["REDIS_URL"] = f"{head}/{number}"
    return env


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: list) -> None:
    """Set each worker's isolation in its environment before it starts, since Django's
    settings read REDIS_URL and DATA_DIR once, before any conftest of the worker runs."""
    for spec in specs:
        index = int(spec.id.removeprefix("gw"))
        spec.env.update(xdist_worker_env(index, len(specs), os.environ))


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own, which tags the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests (a real model, minutes each) first: under xdist they start at once and
    the other worker takes the many short tests meanwhile, instead of one of them being
    the last thing left to wait for. A stable sort: the rest keep their order.

    Under ``--dist loadgroup`` a worker tags each test of an ``xdist_group`` with an
    ``@group`` suffix on its node id, which the scheduler reads to keep a group on one
    worker. pytest-xdist 3.8 writes the suffix to ``Item._nodeid``, which pytest 9 no
    longer reads (it builds ``nodeid`` from ``Item._id``), so every group was spread over
    both workers and a module's costly fixture (a vLLM engine, a browser test's site) ran
    on each. The suffix is copied to where pytest 9 reads it."""
    from _pytest.nodeid import NodeId

    for item in items:
        tagged = getattr(item, "_nodeid", None)
        if isinstance(tagged, str) and tagged != item.nodeid:
            item._id = NodeId.parse(tagged)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failing test's report carries the log tail of every browser-test site still up:
    a page that waited in vain says no more than "timeout", its server often says why."""
    report = yield
    if report.failed:
        from tests.browser import RUNNING

        for site in RUNNING:
            report.sections.append((f"daphne log ({site.url})", site.log_tail()))
    return report


def _unavailable(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (ARENA_REQUIRE_SERVICES=1 forbids skipping)")
    pytest.skip(reason)


def _is_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


@pytest.fixture(autouse=True)
def _service_markers(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("postgres") and not _is_postgres():
        _unavailable("needs PostgreSQL: set DATABASE_URL")
    needs_redis = request.node.get_closest_marker("redis") or request.node.get_closest_marker(
        "celery_worker"
    )
    if needs_redis and not settings.REDIS_URL:
        _unavailable("needs Redis: set REDIS_URL")
    if request.node.get_closest_marker("browser") and not Path("/usr/bin/chromium").exists():
        _unavailable("needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)")


@pytest.fixture(autouse=True)
def _celery_current_app_kept() -> Iterator[None]:
    """A test that leaves another Celery app current (``Celery(...)`` without
    ``set_as_current=False``) errors here, at its own teardown: otherwise every shared task
    (workers.tasks.ping) resolves to that app in each later test of the process and sends
    to its broker, which the test has usually stopped by then."""
    from celery import current_app

    before = current_app._get_current_object()
    yield
    after = current_app._get_current_object()
    if after is not before:
        from workers import app  # the first import of the project's app makes it current

        if after is app:
            return
        before.set_current()  # the next tests keep the app they expect
        pytest.fail(
            f"this test left Celery app {after.main or after!r} current; create a client"
            " app with set_as_current=False"
        )


def worker_env(db_name: str | None = None) -> dict[str, str]:
    """Environment for a child process that must see this test session's database."""
    env = dict(os.environ)
    if db_name and settings.DATABASE_URL:
        db = settings.DATABASES["default"]
        auth = f"{db['USER']}:{db.get('PASSWORD') or ''}"
        env["DATABASE_URL"] = f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db_name}"
    env.setdefault("SECRET_KEY", str(settings.SECRET_KEY))
    env["PYTHONPATH"] = str(ROOT)
    return env


class WorkerProcess:
    """A real ``celery worker`` child process consuming the ``cpu`` and ``gpu`` queues."""

    def __init__(
        self,
        env: dict[str, str],
        name: str,
        concurrency: int = 2,
        *,
        queues: str = "cpu,gpu",
        pool: str = "prefork",
    ) -> None:
        self.name = name
        # DATA_DIR is this xdist worker's own: the fault tests' worker names repeat.
        self.log_path = Path(settings.DATA_DIR) / f"test-worker-{name}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        cmd = worker_argv(queues, concurrency=concurrency, name=name, pool=pool)
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60, *, via_log: bool = False) -> None:
        """Until the worker answers a ping through this session's broker, or (a worker
        on another broker) until it logs that it is ready."""
        from workers import app

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log_tail()}")
            if via_log:
                if f"{self.name}@" in self.log_tail(100_000) and " ready." in self.log_tail(
                    100_000
                ):
                    return
                time.sleep(0.2)
                continue
            replies = app.control.ping(timeout=0.5) or []
            if any(self.name in key for reply in replies for key in reply):
                return
        raise TimeoutError(f"worker not ready:\n{self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text()[-chars:]

    def kill(self) -> None:
        """SIGKILL the main process and its pool at once, as a killed container."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def child_pids(self) -> list[int]:
        out = subprocess.run(
            ["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True, check=False
        ).stdout
        return [int(p) for p in out.split()]

    def busy_child_pids(self) -> list[int]:
        """Pool processes running a task right now (so a SIGKILL lands mid-task)."""
        from workers import app

        replies = app.control.inspect(timeout=0.5).active() or {}
        return [
            task["worker_pid"]
            for worker, tasks in replies.items()
            if self.name in worker
            for task in tasks
            if task.get("worker_pid")
        ]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._log.close()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny GPT-2 of tests/llm_models.py, built once per session (per xdist worker)
    for every test that plays or serves a language model without loading a real one."""
    from tests.llm_models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "gpt2")


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker) -> Iterator[WorkerProcess]:
    """One real worker for the session, connected to the test database and Redis."""
    if not settings.REDIS_URL:
        _unavailable("needs Redis: set REDIS_URL")
    from django.db import connection

    from workers import app

    app.control.purge()  # stale messages of an earlier run must not reach this worker
    with django_db_blocker.unblock():
        db_name = connection.settings_dict["NAME"]
    env = worker_env(db_name)
    env["SWEEP_CHUNK_CELLS"] = "5"  # many small tasks: kill tests hit one mid-sweep
    worker = WorkerProcess(env, name=f"test{os.getpid()}")
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()

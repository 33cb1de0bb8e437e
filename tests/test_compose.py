"""docker-compose.yml is checked by reading it (no Docker engine here), and its web
command is run for real."""

from __future__ import annotations

import ast
import importlib
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
APP_SERVICES = [name for name, svc in SERVICES.items() if "build" in svc]


def settings_variables() -> set[str]:
    """Names of the environment variables config/settings/ reads via django-environ."""
    trees = [ast.parse(p.read_text()) for p in sorted((ROOT / "config" / "settings").glob("*.py"))]
    names = set()
    for node in (node for tree in trees for node in ast.walk(tree)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "env"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.add(node.args[0].value)
    return names


def command_parts(service: dict) -> list[list[str]]:
    command = service["command"]
    argv = command if isinstance(command, list) else shlex.split(command)
    if argv[:2] == ["sh", "-c"]:
        return [shlex.split(part) for part in argv[2].split("&&")]
    return [argv]


def test_expected_services_exist() -> None:
    assert {"postgres", "redis", "web", "worker-cpu", "worker-gpu"} <= set(SERVICES)
    assert SERVICES["postgres"]["volumes"] and SERVICES["postgres"]["healthcheck"]


def test_redis_keeps_the_broker_queues_across_a_restart() -> None:
    """Without persistence a Redis restart dropped every queued and unacked task."""
    redis = SERVICES["redis"]
    argv = command_parts(redis)[0]
    assert argv[argv.index("--appendonly") + 1] == "yes"
    assert any(v.endswith(":/data") for v in redis["volumes"])


def test_every_app_variable_is_one_the_settings_read() -> None:
    known = settings_variables()
    assert {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS"} <= known
    for name in APP_SERVICES:
        env = SERVICES[name]["environment"]
        assert set(env) <= known, f"{name}: unknown variables {set(env) - known}"
        assert {"DATABASE_URL", "REDIS_URL", "SECRET_KEY"} <= set(env)


@pytest.mark.parametrize("name", APP_SERVICES)
def test_every_command_names_a_real_module(name: str) -> None:
    for argv in command_parts(SERVICES[name]):
        if argv[0] == "daphne":
            module, attr = argv[-1].split(":")
            assert callable(getattr(importlib.import_module(module), attr))
        elif argv[0] == "celery":
            app = importlib.import_module(argv[argv.index("-A") + 1]).app
            assert app.main == "procurement_arena"
            queues = set(argv[argv.index("-Q") + 1].split(","))
            assert queues <= {"cpu", "gpu"}
        elif argv[:2] == ["python", "manage.py"]:
            assert argv[2] in get_commands(), f"{name}: no management command {argv[2]}"
        else:
            pytest.fail(f"{name}: unexpected command {argv}")


def test_gpu_worker_is_one_threaded_process_and_reserves_a_gpu() -> None:
    """One process (never forked: CUDA), whose task threads share one batching backend."""
    gpu = SERVICES["worker-gpu"]
    argv = command_parts(gpu)[0]
    assert "--pool=threads" in argv and int(argv[argv.index("-c") + 1]) > 1
    assert argv[argv.index("-Q") + 1] == "gpu"
    assert gpu["build"]["dockerfile"] == "Dockerfile.gpu"
    assert "requirements/gpu.txt" in (ROOT / "Dockerfile.gpu").read_text()
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]
    cpu_argv = command_parts(SERVICES["worker-cpu"])[0]
    assert cpu_argv[cpu_argv.index("-Q") + 1] == "cpu"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.django_db(transaction=True)
def test_web_command_serves_healthz(django_db_setup) -> None:
    """Run the compose web command itself (bound to loopback) and ask it for /healthz."""
    from django.db import connection

    from tests.conftest import worker_env

    argv = command_parts(SERVICES["web"])[0]
    port = _free_port()
    argv[argv.index("-b") + 1] = "127.0.0.1"
    argv[argv.index("-p") + 1] = str(port)
    executable = Path(sys.executable).parent / argv[0]
    env = worker_env(connection.settings_dict["NAME"])
    proc = subprocess.Popen(
        [str(executable), *argv[1:]],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                    assert r.status == 200
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.3)
    finally:
        proc.terminate()
        proc.wait(10)


def test_tests_and_benchmarks_start_the_worker_compose_runs() -> None:
    from workers.commands import worker_argv

    ours = worker_argv("cpu", concurrency=2, name="t")[3:]  # after "python -m celery"
    compose = command_parts(SERVICES["worker-cpu"])[0][1:]  # after "celery"
    assert ours[: ours.index("-Q") + 2] == compose[: compose.index("-Q") + 2]

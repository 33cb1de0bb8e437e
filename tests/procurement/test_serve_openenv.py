"""manage.py serve_openenv: the OpenEnv server in its own process, with its session limit
and the site's body cap."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from openenv.core import GenericEnvClient

from tests.conftest import worker_env
from tests.servers import free_port, terminate, wait_port

ROOT = Path(__file__).resolve().parent.parent.parent


def get(url: str) -> tuple[int, dict]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, json.loads(response.read())


def test_serve_openenv_serves_health_and_holds_its_session_limit(tmp_path: Path) -> None:
    port = free_port()
    cmd = [sys.executable, "manage.py", "serve_openenv", "--port", str(port)]
    log = tmp_path / "serve_openenv.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*cmd, "--host", "127.0.0.1", "--max-sessions", "1"],
            cwd=ROOT,
            env={**worker_env(), "REQUEST_BODY_MAX_BYTES": "1024"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_port(port, timeout=60)
        url = f"http://127.0.0.1:{port}"
        assert get(url + "/health") == (200, {"status": "healthy"})
        assert get(url + "/metadata")[1]["name"] == "procurement_arena"
        oversized = urllib.request.Request(url + "/reset", data=b" " * 1025, method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:  # the main site's body cap
            urllib.request.urlopen(oversized, timeout=30)
        assert refused.value.code == 413 and json.load(refused.value)["max_bytes"] == 1024
        timeouts = {"connect_timeout_s": 10.0, "message_timeout_s": 30.0}
        with GenericEnvClient(base_url=url, **timeouts) as first:
            assert first.reset(scenario="bilateral", seed=1).done is False
            with (
                GenericEnvClient(base_url=url, **timeouts) as second,
                pytest.raises(RuntimeError, match="CAPACITY_REACHED"),
            ):
                second.reset(scenario="bilateral", seed=2)
    finally:
        terminate(proc)
    output = log.read_text()
    # uvicorn shuts down cleanly on SIGTERM, then re-raises the signal.
    assert proc.returncode in (0, -signal.SIGTERM), output
    assert "Finished server process" in output
    assert f"OpenEnv on http://127.0.0.1:{port} (ws /ws), at most 1 sessions, each" in output
    assert "ended after 600 s without a call." in output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-sessions", "0"], "--max-sessions: must be at least 1; got 0."),
        (["--max-sessions", "many"], "'many' is not a whole number."),
        (["--port", "70000"], "a port is between 1 and 65535; got 70000."),
    ],
)
def test_bad_arguments_are_refused_before_anything_starts(args: list[str], message: str) -> None:
    with pytest.raises(CommandError) as err:
        call_command("serve_openenv", *args)
    assert message in str(err.value)

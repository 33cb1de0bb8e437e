"""openenv (gradio, fastmcp: 4-6 s to import) stays out of the web and worker start-up
path: only the OpenEnv server module and its first request under /openenv/ load it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ["openenv", "gradio", "fastmcp", "fastapi", "uvicorn"]
# The start-up modules of every process role (config.wsgi where the project has one).
START_UP = ["config.asgi", "workers.embedded", "config.wsgi", "workers.celery_app", "negotiation"]

PROBE = """
import importlib, importlib.util, json, sys
for name in {modules!r}:
    if importlib.util.find_spec(name) is not None:
        importlib.import_module(name)
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r}))
print(json.dumps(loaded))
"""


def _loaded_after_importing(*modules: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RECONCILE_ON_START": "0"}
    env.setdefault("SECRET_KEY", "import-test-key-not-for-production-0123456789")
    code = PROBE.format(modules=list(modules), heavy=HEAVY)
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_web_and_worker_start_up_do_not_import_openenv() -> None:
    assert _loaded_after_importing(*START_UP) == []


def test_the_probe_sees_openenv_when_the_server_module_is_imported() -> None:
    # The control: the same probe does report openenv once the server module is loaded.
    assert "openenv" in _loaded_after_importing("negotiation.interfaces.openenv_server")

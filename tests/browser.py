"""The service as `make run` serves it (daphne, embedded default: SQLite, in-memory
channel layer, in-process runner) in a private data folder, driven by Debian's Chromium
through Playwright. Never a browser download: the executable is /usr/bin/chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.servers import free_port, terminate, wait_port

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = ROOT / "data" / "screenshots"
PASSWORD = "browser-test-password-1234"
APP = "workers.embedded:application"
RUNNING: list[EmbeddedSite] = []  # sites up now; a failing test's report shows their logs
USERS = {"analyst": "analyst", "ops": "ops", "norole": None}
CHROMIUM_ARGS = [  # as the machine's probe runs it: no background traffic to a closed network
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

SETUP = f"""
from django.contrib.auth import get_user_model
from django.core.management import call_command
from procurement.services.accounts import user_create
call_command("migrate", verbosity=0)
call_command("seed_presets", verbosity=0)
from negotiation import load_scenario
from procurement.services.scenarios import scenario_create
config = load_scenario("easy_negotiation").model_dump()
scenario_create(name="approvals_demo", config={{**config, "escalation_approver": "human"}})
for name, role in {USERS!r}.items():
    if role:
        user_create(username=name, role=role, password="{PASSWORD}")
    else:
        get_user_model().objects.create_user(name, password="{PASSWORD}")
"""


class EmbeddedSite:
    """daphne serving workers.embedded on a spare port, with its own data folder."""

    def __init__(
        self, settings: dict[str, str] | None = None, *, checkout: Path = ROOT, setup: str = SETUP
    ) -> None:
        """``settings``: environment variables of the site's own (its limits); ``checkout``:
        the code it serves (bench/abuse.py measures an earlier one too); ``setup``: the
        Python that migrates and makes its users."""
        self.checkout = checkout
        self.data_dir = Path(tempfile.mkdtemp(prefix="arena-browser-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        keep = ("DATABASE_URL", "REDIS_URL", "CHANNEL_PREFIX", "DJANGO_SETTINGS_MODULE")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(keep)}
        self.env.update(
            DATA_DIR=str(self.data_dir),
            SECRET_KEY="browser-test-key-not-for-production-0123456789",
            PYTHONPATH=str(checkout),
            RECONCILE_ON_START="0",
        )
        self.env.update(settings or {})
        self.shell(setup)
        self.log_path = self.data_dir / "daphne.log"
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), APP],
            cwd=checkout,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        wait_port(self.port, timeout=60)
        RUNNING.append(self)

    def shell(self, code: str) -> None:
        """Run Python code in the site's Django (``manage.py shell -c``)."""
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=self.checkout,
            env=self.env,
            check=True,
            capture_output=True,
            timeout=300,
        )

    def log_tail(self) -> str:
        return self.log_path.read_text()[-3000:]

    def stop(self) -> None:
        if self in RUNNING:
            RUNNING.remove(self)
        terminate(self.proc)
        self._log.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)


def login(page, site: EmbeddedSite, username: str) -> None:
    page.goto(f"{site.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(f"{site.url}/")


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot as a test artifact (data/screenshots/NAME.png)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def has_horizontal_scroll(page) -> bool:
    return page.evaluate(
        "document.documentElement.scrollWidth > document.documentElement.clientWidth + 1"
    )

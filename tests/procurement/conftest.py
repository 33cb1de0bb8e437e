"""Fixtures for the Django domain: users with roles, API clients, seeded presets."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from procurement.models import (
    Decision,
    Episode,
    Evaluation,
    PolicyConfig,
    Scenario,
    Sweep,
    SweepCell,
    TrainingRun,
)
from procurement.services.accounts import user_create

PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings) -> None:
    """PBKDF2 costs ~0.3 s per user; these tests are about roles, not hashing strength."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _login_budget_apart(settings) -> None:
    """Every test's client logs in from 127.0.0.1: together they would spend the address's
    budget of failed logins (procurement.login_budget) for the tests after them. The
    budget's own tests use addresses and a limit of their own."""
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 10_000


@pytest.fixture
def seeded(db) -> None:
    """The built-in presets, catalogue and rule policies, loaded the way operators do."""
    call_command("seed_presets", stdout=io.StringIO())


@pytest.fixture
def user_with_role(db) -> Callable:
    """``user_with_role("ops")`` -> a user in that group; ``None`` -> a user with no role."""
    counter = iter(range(10_000))

    def make(role: str | None, username: str | None = None):
        username = username or f"{role or 'norole'}{next(counter)}"
        user, _ = user_create(username=username, role=role, password=PASSWORD)
        return user

    return make


@pytest.fixture
def api_client_for(user_with_role) -> Callable:
    """``api_client_for("analyst")`` -> an APIClient logged in (session) as such a user;
    ``api_client_for("anonymous")`` -> not logged in; ``"none"`` -> logged in, no role."""

    def make(role: str) -> APIClient:
        client = APIClient()
        if role == "anonymous":
            return client
        user = user_with_role(None if role == "none" else role)
        client.force_login(user)
        client.user = user
        return client

    return make


@pytest.fixture
def snapshot_counts() -> Callable[[], dict[str, int]]:
    """Row counts of every domain table, to show a bad request changed nothing."""

    def counts() -> dict[str, int]:
        return {
            m.__name__: m.objects.count()
            for m in (
                Scenario,
                PolicyConfig,
                Episode,
                Decision,
                Sweep,
                SweepCell,
                TrainingRun,
                Evaluation,
            )
        }

    return counts


@pytest.fixture
def preset(seeded) -> Scenario:
    return Scenario.objects.get(name="easy_negotiation")


@pytest.fixture
def expert(seeded) -> PolicyConfig:
    return PolicyConfig.objects.get(name="expert")


@pytest.fixture
def admin_client(client, user_with_role, seeded):
    """Logged in as a user of the admin role (staff, group permissions; not a superuser)."""
    user = user_with_role("admin")
    client.force_login(user)
    client.user = user
    return client


# --- the browser tests (tests/browser.py): each module serves its own ``site`` ----------


@pytest.fixture(scope="module")
def browser(site) -> Iterator:
    """Debian's Chromium, headless, once the module's site is up."""
    from playwright.sync_api import sync_playwright

    from tests.browser import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser) -> Iterator:
    """A 1366 px page in a fresh context; the test fails on any JavaScript error."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, errors

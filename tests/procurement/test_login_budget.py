"""Password guessing with rotating usernames: a budget of failed checks per address,
shared by the login form and API Basic auth, spent before any password is hashed."""

from __future__ import annotations

import random

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.test import Client

from tests.procurement.api.test_authentication import basic
from tests.procurement.conftest import PASSWORD

LIMIT = 6
URL = "/api/scenarios/"


class CountingHasher(MD5PasswordHasher):
    """The fast test hasher, counting the hashes it makes (a check of an unknown user
    makes one too, so that it takes as long as a known one)."""

    hashes = 0

    def encode(self, password, salt):
        CountingHasher.hashes += 1
        return super().encode(password, salt)


@pytest.fixture
def address(settings) -> str:
    """A client address of this test's own (the tallies live for a minute, in Redis
    when configured), with a small budget, and the counting hasher."""
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = LIMIT
    settings.PASSWORD_HASHERS = [f"{__name__}.CountingHasher"]
    return "10." + ".".join(str(random.randrange(1, 255)) for _ in range(3))


@pytest.mark.django_db
def test_rotating_usernames_over_basic_auth_get_429_before_any_hash(
    user_with_role, address
) -> None:
    # Before: 100 guesses with 100 usernames made 100 hashes (0.25 s of CPU each) and
    # never tripped the per-account lockout.
    user_with_role("analyst", username="bob")
    CountingHasher.hashes = 0
    statuses = [basic(f"user{i}", f"guess{i}", address).get(URL).status_code for i in range(20)]
    assert statuses == [401] * LIMIT + [429] * (20 - LIMIT)
    assert CountingHasher.hashes == LIMIT

    right = basic("bob", PASSWORD, address).get(URL)  # refused too, and not checked
    assert right.status_code == 429 and CountingHasher.hashes == LIMIT
    assert "from your address" in right.json()["detail"]
    assert 0 < int(right["Retry-After"]) <= 60
    # Another address is not affected.
    assert basic("bob", PASSWORD, "192.0.2.1").get(URL).status_code == 200


@pytest.mark.django_db
def test_the_login_form_shares_the_budget(user_with_role, address) -> None:
    user_with_role("analyst", username="alice")
    CountingHasher.hashes = 0
    for i in range(LIMIT):
        basic(f"user{i}", "guess", address).get(URL)
    form = Client(REMOTE_ADDR=address)
    guess = form.post("/accounts/login/", {"username": "carol", "password": "guess"})
    assert guess.status_code == 429 and b"from your address" in guess.content
    right = form.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert right.status_code == 429 and form.get("/").status_code == 302  # not logged in
    assert CountingHasher.hashes == LIMIT


@pytest.mark.django_db
def test_ipv6_addresses_count_per_64_block(address) -> None:
    CountingHasher.hashes = 0
    block = f"2001:db8:{random.randrange(1 << 16):x}:{random.randrange(1 << 16):x}"
    for i in range(LIMIT):
        basic(f"user{i}", "guess", f"{block}::{i + 1}").get(URL)
    assert basic("anyone", "guess", f"{block}::ffff").get(URL).status_code == 429
    assert CountingHasher.hashes == LIMIT

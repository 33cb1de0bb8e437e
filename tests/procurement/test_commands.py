"""Management commands: seed_presets, create_user, export_sweep."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from negotiation import list_presets
from procurement.models import PolicyConfig, Scenario, SweepCell
from procurement.services.sweeps import sweep_create


@pytest.mark.django_db
def test_seed_presets_twice_is_idempotent() -> None:
    out = io.StringIO()
    call_command("seed_presets", stdout=out)
    assert f"{len(list_presets())} created" in out.getvalue()
    state = list(Scenario.objects.values_list("pk", "name", "version").order_by("pk"))
    policies = PolicyConfig.objects.count()
    out = io.StringIO()
    call_command("seed_presets", stdout=out)
    assert "0 created, 0 updated" in out.getvalue()
    assert list(Scenario.objects.values_list("pk", "name", "version").order_by("pk")) == state
    assert PolicyConfig.objects.count() == policies


@pytest.mark.django_db
def test_create_user_with_a_role(django_user_model) -> None:
    out = io.StringIO()
    call_command("create_user", "bob", "--role", "ops", stdout=out)
    bob = django_user_model.objects.get(username="bob")
    assert list(bob.groups.values_list("name", flat=True)) == ["ops"]
    assert "role ops" in out.getvalue() and "Password: " in out.getvalue()
    password = out.getvalue().split("Password: ")[1].split()[0]
    assert bob.check_password(password)

    out = io.StringIO()
    call_command("create_user", "bob", "--role", "admin", "--password", "s3cret-pw", stdout=out)
    bob.refresh_from_db()
    assert list(bob.groups.values_list("name", flat=True)) == ["admin"]
    assert bob.check_password("s3cret-pw") and "s3cret-pw" not in out.getvalue()


@pytest.mark.django_db
def test_create_user_with_role_none_makes_or_leaves_a_user_without_one(django_user_model) -> None:
    call_command("create_user", "bob", "--role", "admin", stdout=io.StringIO())
    out = io.StringIO()
    call_command("create_user", "bob", "--role", "none", stdout=out)
    call_command("create_user", "eve", "--role", "none", stdout=io.StringIO())
    for user in django_user_model.objects.filter(username__in=["bob", "eve"]):
        assert not user.groups.exists() and not user.is_staff
    assert "has no role" in out.getvalue()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bob", "--role", "boss"], "invalid choice: 'boss'"),
        (["bob"], "--role"),
        (["", "--role", "ops"], "username"),
        (["bad name", "--role", "ops"], "username"),
    ],
)
def test_create_user_errors_are_clear(django_user_model, args, message) -> None:
    with pytest.raises(CommandError) as err:
        call_command("create_user", *args, stdout=io.StringIO())
    assert message in str(err.value)
    assert not django_user_model.objects.exists()


@pytest.mark.django_db
def test_create_user_refuses_a_weak_password(django_user_model) -> None:
    # Before: `create_user bob --role ops --password a` created bob with the password "a".
    with pytest.raises(CommandError) as err:
        call_command("create_user", "bob", "--role", "ops", "--password", "a", stdout=io.StringIO())
    assert "This password is too short. It must contain at least 8 characters." in str(err.value)
    assert not django_user_model.objects.exists()


@pytest.fixture
def finished_sweep(preset, expert):
    sweep = sweep_create(scenarios=[preset], policies=[expert], seeds=2, enqueue=False)
    SweepCell.objects.filter(sweep=sweep, seed=0).update(
        status="finished", score=0.5, metrics={"deal_rate": 1.0, "buyer_share": 0.4}
    )
    return sweep


@pytest.mark.django_db
def test_export_sweep_csv_and_json(finished_sweep, tmp_path) -> None:
    out = io.StringIO()
    call_command("export_sweep", str(finished_sweep.pk), stdout=out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [r["seed"] for r in rows] == ["0", "1"]
    assert rows[0]["deal_rate"] == "1.0" and rows[0]["scenario"] == "easy_negotiation"
    assert rows[1]["status"] == "pending" and rows[1]["deal_rate"] == ""

    out = io.StringIO()
    call_command("export_sweep", str(finished_sweep.pk), "--format", "json", stdout=out)
    body = json.loads(out.getvalue())
    assert body["sweep"]["id"] == finished_sweep.pk and len(body["cells"]) == 2
    assert body["cells"][0]["metrics"]["buyer_share"] == 0.4

    path = tmp_path / "out.csv"
    call_command(
        "export_sweep",
        str(finished_sweep.pk),
        "--output",
        str(path),
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert path.read_text().splitlines()[0].startswith("scenario,policy,seed,status,score")


@pytest.mark.django_db
def test_export_sweep_unknown_id_is_a_clear_error() -> None:
    with pytest.raises(CommandError, match="No sweep with id 424242"):
        call_command("export_sweep", "424242")
    with pytest.raises(CommandError):
        call_command("export_sweep", "abc")

"""Bad input anywhere gets a clear 4xx, error frame or CommandError, and changes nothing.

Every API operation is taken from the OpenAPI schema, every WebSocket route from the
routing table and every command from the app's commands folder, so a new one cannot be
forgotten: each walk first checks that it knows how to reach everything there is.
On PostgreSQL a NUL character used to be a 500 (text and jsonb refuse it); on SQLite it
was stored. Deeply nested JSON was a 500 on every database. A lone surrogate ("\\ud800")
was stored on SQLite and every later read that carried it was a 500; a number of 400
digits was a 500 in the engine. Whatever was stored before these rules still reads.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command, find_commands
from django.db import DataError, connections, transaction
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

import procurement
from config.asgi import application
from config.routing import websocket_urlpatterns
from procurement.consumers import NotFoundConsumer
from procurement.limits import (
    DEPTH_PROBLEM,
    MAX_JSON_DEPTH,
    MAX_SEED,
    NUL_PROBLEM,
    NUMBER_PROBLEM,
    SURROGATE_PROBLEM,
)
from procurement.models import Episode, PolicyConfig, Scenario, Sweep, TrainingRun
from procurement.services.episodes import episode_create
from procurement.services.evaluations import evaluation_create, start_evaluation
from procurement.services.sweeps import sweep_create
from tests.websockets import HOST, ORIGIN, refused_code

NUL = "\u0000"
DEEP = "[" * 100_000  # the decoder's recursion, not the depth rule, gives up first
NUL_JSON = json.dumps({"name": f"x{NUL}y", "config": {"description": NUL}, "params": {NUL: 1}})
SURROGATE_JSON = json.dumps({"name": "x\ud800", "action": {"message": "\udfff"}})  # escaped
HUGE_JSON = '{"seed": 1e400, "price": 1' + "0" * 400 + "}"  # infinity; 400 digits


@pytest.fixture
def rows(seeded) -> dict[str, int]:
    """One row of every kind a path parameter can name."""
    scenario = Scenario.objects.get(name="easy_negotiation")
    expert = PolicyConfig.objects.get(name="expert")
    episode = episode_create(scenario=scenario, policy=expert, seed=1, enqueue=False)
    sweep = sweep_create(scenarios=[scenario], policies=[expert], seeds=2, enqueue=False)
    evaluation = evaluation_create(policies="expert", scenarios="bilateral", seeds=2)
    return {"episodes": episode.pk, "sweeps": sweep.pk, "scenarios": scenario.pk,
            "policies": expert.pk, "presets": "easy_negotiation",
            "evaluations": evaluation.pk, "datasets": "", "notifications": ""}  # fmt: skip


def _operations() -> Iterator[tuple[str, str, bool]]:
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    for path, ops in paths.items():
        for method, op in ops.items():
            yield method, path, "requestBody" in op
    yield "get", "/api/schema/", False  # served, though not listed in itself


def _request(client, method: str, url: str, counts: Callable, **kwargs):
    """One request in a savepoint: a database error cannot spoil the next request."""
    with transaction.atomic():
        before = counts()
        response = getattr(client, method)(url, **kwargs)
        after = counts()
        transaction.set_rollback(True)
    return response, before, after


def _bad_requests(has_body: bool) -> Iterator[tuple[str, dict, str]]:
    yield "query", {"QUERY_STRING": f"page=1&status=a%00b&x{NUL}=1"}, NUL_PROBLEM
    if has_body:
        yield "json nul", {"data": NUL_JSON, "content_type": "application/json"}, NUL_PROBLEM
        yield "json deep", {"data": DEEP, "content_type": "application/json"}, DEPTH_PROBLEM
        yield (
            "json surrogate",
            {"data": SURROGATE_JSON, "content_type": "application/json"},
            (SURROGATE_PROBLEM),
        )
        yield "json huge", {"data": HUGE_JSON, "content_type": "application/json"}, NUMBER_PROBLEM
        yield "form nul", {"data": {"name": f"x{NUL}"}}, NUL_PROBLEM


@pytest.mark.django_db
def test_every_api_operation_refuses_nul_surrogates_huge_numbers_and_deep_json(
    api_client_for, rows, snapshot_counts
) -> None:
    client = api_client_for("admin")
    client.raise_request_exception = False
    operations = list(_operations())
    assert {p.split("/")[2] for _, p, _ in operations} - {"schema"} == set(rows)
    failures = []
    for method, path, has_body in operations:
        url = path.replace("{id}", str(rows.get(path.split("/")[2])))
        for label, kwargs, problem in _bad_requests(has_body):
            response, before, after = _request(client, method, url, snapshot_counts, **kwargs)
            detail = response.json().get("detail", "") if response.status_code < 500 else ""
            if response.status_code != 400 or problem not in detail or before != after:
                failures.append((method, path, label, response.status_code, detail))
    assert failures == []


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["put", "patch"])
def test_form_bodies_of_put_and_patch_are_checked_by_the_parser(
    api_client_for, seeded, snapshot_counts, method
) -> None:
    client = api_client_for("admin")
    policy = PolicyConfig.objects.get(name="expert")
    before = snapshot_counts()
    response = getattr(client, method)(
        f"/api/policies/{policy.pk}/",
        data="name=expert&policy=expert&description=a%00b",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 400
    assert response.json() == {
        "detail": f"Form parse error - description: {NUL_PROBLEM}",
        "field": "description",
    }
    assert snapshot_counts() == before
    policy.refresh_from_db()
    assert "\x00" not in policy.description


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (DEEP, DEPTH_PROBLEM),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), DEPTH_PROBLEM),
        (json.dumps({"scenarios": ["hard_arena"], "policies": [f"exp{NUL}ert"]}), NUL_PROBLEM),
        (json.dumps({f"seeds{NUL}": 1}), NUL_PROBLEM),
        ('{"scenarios": ["hard_arena"], "name": "\\udc00"}', SURROGATE_PROBLEM),
        ('{"seeds": 2, "seed_start": 1e400}', NUMBER_PROBLEM),
        ('{"seeds": -' + "9" * 400 + "}", NUMBER_PROBLEM),
    ],
    ids=["100000-deep", "one-too-deep", "nul-value", "nul-key", "surrogate", "inf", "huge"],
)
def test_the_json_parser_names_the_problem_and_the_field(
    api_client_for, seeded, snapshot_counts, body, problem
) -> None:
    before = snapshot_counts()
    response = api_client_for("ops").post(
        "/api/sweeps/", data=body, content_type="application/json"
    )
    assert response.status_code == 400
    field = {
        NUL_PROBLEM: "policies[0]" if "policies" in body else None,
        SURROGATE_PROBLEM: "name",
        NUMBER_PROBLEM: "seed_start" if "seed_start" in body else "seeds",
    }.get(problem)
    where = f"{field}: " if field else ""
    assert response.json() == {
        "detail": f"JSON parse error - {where}{problem}",
        **({"field": field} if field else {}),
    }
    assert snapshot_counts() == before


@pytest.mark.django_db
def test_json_exactly_at_the_depth_limit_is_parsed(api_client_for, seeded) -> None:
    nested: object = "x"
    for _ in range(MAX_JSON_DEPTH - 2):  # the body and "params" are two levels
        nested = [nested]
    body = {"name": "deep-ok", "policy": "expert", "params": {"a": nested}}
    response = api_client_for("admin").post("/api/policies/", body, format="json")
    # parsed: what answers is the policy's own params schema, not the parser
    assert response.status_code == 400
    assert response.json() == {"params": ["a: Unknown parameter."]}


# The Django admin: list filters and JSON typed into forms.


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "/admin/procurement/episode/?status=a%00b",
        "/admin/procurement/episode/?scenario_name=a%00b",
        "/admin/procurement/scenario/?q=a%00b",
        "/accounts/login/?next=/%00",
    ],
)
def test_nul_in_a_query_string_is_a_400_everywhere(admin_client, url) -> None:
    admin_client.raise_request_exception = False
    response = admin_client.get(url)
    assert response.status_code == 400
    assert NUL_PROBLEM in response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "params",
    ['{"a": "\\u0000"}', DEEP, '{"a": "\\ud800"}', '{"a": 1e400}'],
    ids=["nul", "deep", "surrogate", "infinite"],
)
def test_admin_json_fields_refuse_bad_json(admin_client, snapshot_counts, params):
    admin_client.raise_request_exception = False
    before = snapshot_counts()
    response = admin_client.post(
        "/admin/procurement/policyconfig/add/",
        {"name": "typed", "policy": "expert", "params": params, "backend": "", "model": ""},
    )
    assert response.status_code == 200  # the form again, with the error on the field
    assert "free of NUL characters" in response.content.decode()
    assert snapshot_counts() == before


@pytest.mark.django_db
def test_a_login_form_with_nul_is_a_400(db) -> None:
    users = get_user_model().objects.count()
    response = Client().post("/accounts/login/", {"username": f"a{NUL}", "password": "x"})
    assert response.status_code == 400
    assert get_user_model().objects.count() == users


# WebSocket: every route, every kind of bad frame; the socket stays open.

BAD_FRAMES = {
    "malformed": ("{not json", "Malformed JSON"),
    "deep": (DEEP, DEPTH_PROBLEM),
    "nul": (json.dumps({"action_type": NUL}), NUL_PROBLEM),
    "surrogate": ('{"type": "resume", "after_step": 1, "x": "\\ud800"}', SURROGATE_PROBLEM),
    "infinite": ('{"type": "resume", "after_step": 1e400}', f"after_step: {NUMBER_PROBLEM}"),
    "5000 digits": ('{"type": "resume", "after_step": 1' + "0" * 5000 + "}", NUMBER_PROBLEM),
    "valid": (json.dumps({"action_type": "award_contract"}), "read-only"),
}


@pytest.mark.django_db(transaction=True)
async def test_every_websocket_route_answers_bad_frames_with_an_error_frame(
    user_with_role, snapshot_counts
) -> None:
    @sync_to_async
    def setup() -> tuple[tuple[bytes, bytes], dict[str, str], dict[str, int]]:
        from procurement.services.scenarios import presets_seed

        presets_seed()
        client = Client()
        client.force_login(user_with_role("ops"))
        scenario = Scenario.objects.get(name="easy_negotiation")
        expert = PolicyConfig.objects.get(name="expert")
        episode = episode_create(scenario=scenario, policy=expert, seed=1, enqueue=False)
        sweep = sweep_create(scenarios=[scenario], policies=[expert], seeds=1, enqueue=False)
        run = TrainingRun.objects.create(
            name="ws", kind="sft", base="smollm2", episodes=1, max_steps=1, learning_rate=1e-5
        )
        evaluation = start_evaluation(
            policies="expert", scenarios="easy_negotiation", seeds=1, enqueue=False
        )
        paths = {
            "episode_id": f"/ws/episodes/{episode.pk}/",
            "sweep_id": f"/ws/sweeps/{sweep.pk}/",
            "run_id": f"/ws/training/{run.pk}/",
            "evaluation_id": f"/ws/evaluations/{evaluation.pk}/",
        }
        cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
        return cookie, paths, snapshot_counts()

    cookie, paths, before = await setup()
    routes = []
    for pattern in websocket_urlpatterns:
        if pattern.callback.consumer_class is NotFoundConsumer:
            continue
        params = list(pattern.pattern.converters)
        routes.append(paths[params[0]] if params else "/" + str(pattern.pattern))
    try:
        for path in routes:
            communicator = WebsocketCommunicator(application, path, headers=[ORIGIN, HOST, cookie])
            connected, _ = await communicator.connect()
            assert connected, path
            await communicator.receive_json_from()  # the snapshot
            for label, (frame, problem) in BAD_FRAMES.items():
                await communicator.send_to(text_data=frame)
                answer = await communicator.receive_json_from(timeout=5)
                assert answer["type"] == "error" and problem in answer["message"], (path, label)
            await communicator.send_to(bytes_data=b"\x00\xff")
            assert (await communicator.receive_json_from())["type"] == "error"
            assert await communicator.receive_nothing()  # still open: no close frame
            await communicator.disconnect()
        assert await sync_to_async(snapshot_counts)() == before
    finally:
        await sync_to_async(connections.close_all)()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "path",
    [
        "/ws/episodes/99999999999999999999999/",
        "/ws/sweeps/0/",
        "/ws/training/0/",
        "/ws/evaluations/0/",
    ],
)
async def test_absurd_ids_in_websocket_urls_are_not_found(user_with_role, path) -> None:
    @sync_to_async
    def cookie() -> tuple[bytes, bytes]:
        client = Client()
        client.force_login(user_with_role("analyst"))
        return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())

    try:
        assert await refused_code(path, await cookie()) == 4404
    finally:
        await sync_to_async(connections.close_all)()


# Commands: every command of the app, with the inputs a person can really type.

HUGE = "9" * 26


def _command_cases(tmp_path: Path, sweep_id: int) -> list[tuple[list[str], str]]:
    grid = ["--scenarios", "easy_negotiation", "--policies", "expert"]
    train = ["--scenarios", "easy_negotiation", "--episodes", "2"]
    return [
        (["run_episode", "--seed", HUGE, "--save"], f"between 0 and {MAX_SEED}"),
        (["run_episode", "--seed", HUGE], f"between 0 and {MAX_SEED}"),
        (["run_episode", "--seed", "-1", "--save"], f"between 0 and {MAX_SEED}"),
        (["run_episode", "--seed", "seven"], "not a whole number"),
        (["run_sweep", *grid, "--seeds", "2", "--seed-start", HUGE], "--seed-start: Every seed"),
        (["run_sweep", *grid, "--seeds", "2", "--seed-start", "-1"], "--seed-start: Every seed"),
        (["run_sweep", *grid, "--seeds", "2", "--seed-start", str(MAX_SEED)], "--seed-start"),
        (["run_sweep", *grid, "--seeds", "1000000"], "--seeds: Seeds per cell must be between"),
        (["run_sweep", *grid, "--seeds", HUGE], "--seeds: Seeds per cell must be between"),
        (["run_sweep", *grid, "--seeds", "-5"], "--seeds: Seeds per cell must be between"),
        (
            [
                "run_sweep",
                "--scenarios",
                "easy_negotiation,medium_adversarial,hard_arena",
                "--policies",
                "expert,random",
                "--seeds",
                "5000",
            ],
            "--seeds: 30000 cells is too many; the limit is 20000.",
        ),
        (["run_sweep", *grid, "--seeds", "2", "--timeout", "-1"], "positive number of seconds"),
        (["run_sweep", *grid, "--seeds", "2", "--timeout", "0"], "positive number of seconds"),
        (["run_sweep", *grid, "--seeds", "2", "--timeout", "nan"], "positive number of seconds"),
        (["run_sweep", *grid, "--seeds", "2", "--name", "n" * 201], "--name: at most 200"),
        (["export_sweep", str(sweep_id), "--output", "/nonexistent/dir/x.csv"], "Cannot write"),
        (["export_sweep", str(sweep_id), "--output", str(tmp_path)], "Is a directory"),
        (["export_sweep", HUGE], "an id is between 1 and"),
        (["export_sweep", "424242"], "No sweep with id 424242"),
        (["create_user", "bad name!", "--role", "analyst"], "username"),
        (["create_user", "alice", "--role", "overlord"], "invalid choice"),
        (["create_local_admin", "--username", "bad name!"], "username"),
        (["reconcile", "--stall-seconds", "-1"], "zero or a positive number of seconds"),
        (["reconcile", "--stall-seconds", "inf"], "zero or a positive number of seconds"),
        (
            ["evaluate", "--policies", "expert", "--scenarios", "bilateral", "--seeds", HUGE],
            "seeds",
        ),
        (
            ["evaluate", "--policies", "oracle", "--scenarios", "bilateral", "--seeds", "2"],
            "oracle",
        ),
        (["evaluate", "--policies", "human", "--scenarios", "bilateral", "--seeds", "2"], "human"),
        (["evaluate", "--policies", "expert", "--scenarios", "nope", "--seeds", "2"], "nope"),
        (["export_dataset", "--min-score", "7"], "--min-score"),
        (["export_dataset", "--policy", f"exp{NUL}ert"], "--policy"),
        (["export_dataset", "--output", str(tmp_path)], "directory"),
        (["train", "dpo", *train, "--name", "x"], "invalid choice"),
        (["train", "sft", *train, "--name", "bad name!"], "--name"),
        (["train", "sft", *train, "--name", "expert"], "--name: A policy is called"),
        (["train", "sft", *train, "--name", "x", "--base", "gpt-9"], "--base"),
        (["train", "sft", *train, "--name", "x", "--scenarios", "nope"], "--scenarios"),
        (["train", "sft", *train, "--name", "x", "--episodes", "0"], "--episodes"),
        (["train", "sft", *train, "--name", "x", "--episodes", HUGE], "--episodes"),
        (["train", "sft", *train, "--name", "x", "--max-steps", "-1"], "--max-steps"),
        (["train", "sft", *train, "--name", "x", "--min-score", "7"], "--min-score"),
        (["train", "sft", *train, "--name", "x", "--learning-rate", "nan"], "--learning-rate"),
        (["train", "sft", *train, "--name", "x", "--source-policy", "nobody"], "--source-policy"),
        (["serve_openenv", "--port", "99999"], "--port"),
        (["serve_openenv", "--max-sessions", "0"], "--max-sessions"),
    ]


@pytest.mark.django_db
def test_every_command_refuses_bad_arguments_and_changes_nothing(
    rows, snapshot_counts, tmp_path, settings
) -> None:
    settings.DATA_DIR = tmp_path
    cases = _command_cases(tmp_path, rows["sweeps"])
    takes_no_input = {"seed_presets"}
    commands = set(find_commands(str(Path(procurement.__file__).parent / "management")))
    assert {args[0] for args, _ in cases} | takes_no_input == commands
    users = get_user_model().objects.count()
    before = snapshot_counts()
    failures = []
    for args, message in cases:
        try:
            call_command(*args, stdout=io.StringIO(), stderr=io.StringIO())
        except CommandError as exc:
            if message not in str(exc):
                failures.append((args[:3], str(exc)))
        except Exception as exc:  # the fault: a traceback instead of a clear error
            failures.append((args[:3], repr(exc)))
        else:
            failures.append((args[:3], "no error"))
    assert failures == []
    assert snapshot_counts() == before
    assert get_user_model().objects.count() == users
    assert list(tmp_path.iterdir()) == []  # nothing written (no password file either)


@pytest.mark.django_db
def test_run_sweep_with_a_bad_timeout_leaves_no_queued_sweep(seeded) -> None:
    with pytest.raises(CommandError, match="positive number of seconds"):
        call_command(
            "run_sweep", "--scenarios", "easy_negotiation", "--policies", "expert",
            "--seeds", "2", "--timeout", "-1", stdout=io.StringIO(),
        )  # fmt: skip
    assert not Sweep.objects.exists()
    assert not Episode.objects.exists()


# The human seat: bad moves, and what was stored before these rules.

MOVE = '{"step": 0, "action": {"action_type": "negotiate", "supplier_id": "S01", '
MOVE += '"requirement_id": "R01", %s}}'


@pytest.fixture(autouse=True)
def _world_key(settings) -> None:
    settings.WORLD_KEY = "the test server's world key"


def _seat(user) -> Episode:
    episode = episode_create(
        scenario=Scenario.objects.get(name="bilateral_hardball"),
        policy=PolicyConfig.objects.get(name="human"),
        user=user,
    )
    # the server drew the seat's seed at random: these tests play one known sealed world
    Episode.objects.filter(pk=episode.pk).update(seed=0)
    episode.refresh_from_db()
    return episode


def _seat_holder(user_with_role) -> tuple[Client, Episode]:
    """An admin-role seat holder (who may read the admin pages too), logged in."""
    holder = user_with_role("admin")
    client = Client()
    client.force_login(holder)
    client.raise_request_exception = False
    return client, _seat(holder)


def _failed_reads(client, episode: Episode) -> dict[str, int]:
    """Every HTTP read of the episode (the API, its page, its admin pages) that did not
    answer 200, with its status."""
    episode.refresh_from_db()
    decisions = episode.decisions.values_list("pk", flat=True)
    urls = [
        f"/api/episodes/{episode.pk}/",
        f"/api/episodes/{episode.pk}/decisions/",
        *(f"/api/episodes/{episode.pk}/state/?step={s}" for s in range(-1, episode.steps)),
        f"/episodes/{episode.pk}/",
        f"/admin/procurement/episode/{episode.pk}/change/",
        *(f"/admin/procurement/decision/{pk}/change/" for pk in decisions),
    ]
    statuses = {url: client.get(url).status_code for url in urls}
    return {url: status for url, status in statuses.items() if status != 200}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field", "problem"),
    [
        ('"price": 21, "message": "a\\ud800b"', "action.message", SURROGATE_PROBLEM),
        ('"price": 1e400', "action.price", NUMBER_PROBLEM),
        ('"price": 1' + "0" * 400, "action.price", NUMBER_PROBLEM),
    ],
    ids=["surrogate", "inf", "400 digits"],
)
def test_a_bad_move_is_a_400_naming_its_field_and_every_read_still_works(
    user_with_role, seeded, snapshot_counts, fields, field, problem
) -> None:
    client, episode = _seat_holder(user_with_role)
    before = snapshot_counts()
    url = f"/api/episodes/{episode.pk}/act/"
    refused = client.post(url, MOVE % fields, content_type="application/json")
    assert refused.status_code == 400
    assert refused.json()["field"] == field and problem in refused.json()["detail"]
    assert snapshot_counts() == before
    assert _failed_reads(client, episode) == {}
    played = client.post(url, MOVE % '"price": 21', content_type="application/json")
    assert played.status_code == 201
    assert _failed_reads(client, episode) == {}


@pytest.mark.django_db(transaction=True)
def test_a_lone_surrogate_stored_before_the_rules_reads_as_a_replacement_character(
    user_with_role, seeded
) -> None:
    """SQLite kept one inside JSON (escaped); every read that carried it was a 500 (the
    decisions, the admin, the dataset export). PostgreSQL's jsonb never stores one."""
    client, episode = _seat_holder(user_with_role)
    url = f"/api/episodes/{episode.pk}/act/"
    played = client.post(url, MOVE % '"price": 21', content_type="application/json")
    assert played.status_code == 201
    stored = json.dumps({**played.json()["action"], "message": "a\ud800b"})
    assert "\\ud800" in stored  # as json.dumps (and Django's JSONField) escape it
    with connections["default"].cursor() as cursor:
        write = "UPDATE procurement_decision SET action = %s WHERE episode_id = %s"
        if connections["default"].vendor == "postgresql":
            with pytest.raises(DataError), transaction.atomic():
                cursor.execute(write, [stored, episode.pk])
            return
        cursor.execute(write, [stored, episode.pk])
    assert episode.decisions.get().action["message"] == "a\ufffdb"
    assert _failed_reads(client, episode) == {}
    decisions = client.get(f"/api/episodes/{episode.pk}/decisions/").json()["results"]
    assert decisions[0]["action"]["message"] == "a\ufffdb"
    assert async_to_sync(_stream_reads)(client, episode.pk) == ["a\ufffdb", "a\ufffdb"]
    Episode.objects.filter(pk=episode.pk).update(status="finished", score=0.5)
    export = client.get("/api/datasets/export/?policy=human")
    assert export.status_code == 200
    assert "a\ufffdb" in b"".join(export.streaming_content).decode()


async def _stream_reads(client: Client, episode_id: int) -> list[str]:
    """The first decision's message, from the episode stream's snapshot and a resume."""
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    path = f"/ws/episodes/{episode_id}/"
    communicator = WebsocketCommunicator(application, path, headers=[ORIGIN, HOST, cookie])
    try:
        assert (await communicator.connect())[0]
        snapshot = await communicator.receive_json_from(timeout=5)
        await communicator.send_json_to({"type": "resume", "after_step": -1})
        resumed = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return [m["decisions"][0]["action"]["message"] for m in (snapshot, resumed)]
    finally:
        await sync_to_async(connections.close_all)()

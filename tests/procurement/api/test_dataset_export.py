"""GET /api/datasets/export/: the training records of export_dataset, streamed."""

from __future__ import annotations

import json
import re
import warnings

import pytest

from tests.procurement.test_export_dataset import export, play

URL = "/api/datasets/export/"


@pytest.fixture
def played(seeded):
    return [play("easy_negotiation", "expert", 1), play("bilateral_cooperative", "random", 2)]


def body(response) -> list[dict]:
    assert response.streaming
    text = b"".join(response.streaming_content).decode()
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "code"), [("anonymous", 401), ("none", 403)])
def test_it_needs_a_login_and_a_role(api_client_for, played, role, code) -> None:
    response = api_client_for(role).get(URL)
    assert response.status_code == code and "detail" in response.json()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["analyst", "ops", "admin"])
def test_it_streams_the_commands_records_as_an_ndjson_download(
    api_client_for, played, role
) -> None:
    response = api_client_for(role).get(URL, {"format": "jsonl"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"] == 'attachment; filename="dataset.jsonl"'
    records = body(response)
    assert records == [json.loads(line) for line in export()[0].splitlines()]
    assert len(records) == sum(e.steps for e in played)
    first = records[0]
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant"]
    assert first["prompt"] + first["completion"] == first["messages"]
    assert (first["episode_id"], first["step"], first["seed"]) == (played[0].pk, 0, 1)


@pytest.mark.django_db
def test_filters_narrow_the_records(api_client_for, played) -> None:
    client = api_client_for("analyst")
    by_name = body(client.get(URL, {"scenario": ["bilateral_cooperative", "hard_arena"]}))
    assert {r["episode_id"] for r in by_name} == {played[1].pk}
    by_policy = body(client.get(URL, {"policy": "expert", "min_score": "0"}))
    assert {r["episode_id"] for r in by_policy} == {played[0].pk}
    assert body(client.get(URL, {"min_score": "1"})) == []
    assert len(body(client.get(URL, {"scenario": "", "policy": ""}))) == sum(
        e.steps for e in played
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "params, field",
    [
        ({"format": "csv"}, "format"),
        ({"format": "json"}, "format"),  # DRF's own renderer name is no dataset format
        ({"scenario": "nope"}, "scenario"),
        ({"policy": ["expert", "ghost"]}, "policy"),
        ({"min_score": "x"}, "min_score"),
        ({"min_score": "1.01"}, "min_score"),
        ({"min_score": ""}, "min_score"),
        ({"limit": "0"}, "limit"),
        ({"limit": "1000000"}, "limit"),  # over DATASET_EXPORT_MAX_RECORDS
        ({"limit": "ten"}, "limit"),
        ({"after": "7"}, "after"),
        ({"after": "7:x"}, "after"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(api_client_for, played, params, field) -> None:
    response = api_client_for("analyst").get(URL, params, HTTP_ACCEPT="application/x-ndjson")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    errors = response.json()
    assert list(errors) == [field] and isinstance(errors[field][0], str)


@pytest.mark.django_db
def test_a_request_streams_at_most_the_cap_and_links_the_next_page(
    api_client_for, played, settings
) -> None:
    # Before: one request streamed every record (543 MB for one export).
    settings.DATASET_EXPORT_MAX_RECORDS = 7
    client = api_client_for("analyst")
    pages, url = [], URL + "?policy=expert&policy=random"
    while url:
        response = client.get(url)
        assert response.status_code == 200
        pages.append(body(response))
        link = response.get("Link")
        url = re.fullmatch(r'<http://testserver(.+)>; rel="next"', link)[1] if link else None
    assert [len(page) for page in pages[:-1]] == [7] * (len(pages) - 1)
    assert 0 < len(pages[-1]) <= 7
    # Followed to the end, the pages are the whole export, in order, each record once.
    whole = [json.loads(line) for line in export()[0].splitlines()]
    assert [record for page in pages for record in page] == whole
    smaller = client.get(URL, {"limit": "3"})
    assert len(body(smaller)) == 3 and "after=" in smaller["Link"]


@pytest.mark.django_db(transaction=True)  # the async client's requests run in other threads
async def test_under_asgi_the_records_stream_without_being_collected_first(
    async_client, user_with_role, seeded
) -> None:
    from asgiref.sync import sync_to_async
    from django.db import connections

    episode = await sync_to_async(play)("easy_negotiation", "expert", 1)
    await async_client.aforce_login(await sync_to_async(user_with_role)("analyst"))
    response = await async_client.get(URL)
    assert response.status_code == 200 and response.is_async
    with warnings.catch_warnings():  # Django warns when it must collect a sync iterator
        warnings.filterwarnings("error", message="StreamingHttpResponse must consume")
        chunks = [chunk async for chunk in response.streaming_content]
    records = [json.loads(line) for line in b"".join(chunks).decode().splitlines()]
    assert [r["step"] for r in records] == list(range(episode.steps))
    await sync_to_async(connections.close_all)()  # the test database can then be dropped


@pytest.mark.django_db
def test_the_openapi_schema_documents_it(api_client_for) -> None:
    schema = api_client_for("analyst").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    get = schema["paths"][URL]["get"]
    names = {p["name"] for p in get["parameters"]}
    assert names == {"format", "scenario", "policy", "min_score", "limit", "after"}
    assert set(get["responses"]) == {"200", "400"}
    record = get["responses"]["200"]["content"]["application/x-ndjson"]["schema"]["$ref"]
    fields = schema["components"]["schemas"][record.rsplit("/", 1)[-1]]["properties"]
    assert {"messages", "prompt", "completion", "reward", "score", "episode_id"} <= set(fields)

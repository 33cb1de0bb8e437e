"""The project's OpenAI-compatible server process: routes, and bad input answered with a
clear 4xx in OpenAI's error shape (the server keeps serving)."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.xdist_group("tiny_server")  # one server process (conftest.py)


def test_models_and_health(tiny_server):
    models = httpx.get(f"{tiny_server}/v1/models").json()
    assert models["object"] == "list" and len(models["data"]) == 1
    health = httpx.get(f"{tiny_server}/health").json()
    assert health["status"] == "ok" and health["calls"] <= health["requests"]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"{not json", 400, "body: Invalid JSON"),
        (b'{"messages": []}', 400, "messages: List should have at least 1 item"),
        (
            b'{"messages": [{"role": "robot", "content": "x"}]}',
            400,
            "messages.0.role: Input should be",
        ),
        (
            b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}',
            400,
            "max_tokens: Input should",
        ),
        (
            b'{"messages": [{"role": "user", "content": "x"}], '
            b'"response_format": {"type": "json_schema"}}',
            400,
            "response_format json_schema needs a json_schema object",
        ),
        (
            b'{"messages": [{"role": "user", "content": "' + b"long " * 600 + b'"}]}',
            422,
            "exceeds the model's context of 512 tokens",
        ),
    ],
)
def test_bad_requests_get_a_clear_4xx(tiny_server, body, status, message):
    reply = httpx.post(
        f"{tiny_server}/v1/chat/completions",
        content=body,
        headers={"Content-Type": "application/json"},
    )
    assert reply.status_code == status
    assert message in reply.json()["error"]["message"]
    ok = httpx.post(
        f"{tiny_server}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "still there?"}], "max_tokens": 3},
    )
    assert ok.status_code == 200 and ok.json()["usage"]["completion_tokens"] == 3


def test_unknown_routes_are_404(tiny_server):
    assert httpx.get(f"{tiny_server}/v2/models").status_code == 404
    assert httpx.post(f"{tiny_server}/v1/completions", json={}).status_code == 404

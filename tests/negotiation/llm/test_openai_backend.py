"""The openai_compatible backend against real HTTP servers: the project's own model server
(happy path, batching, the served model found from the URL alone), and servers that are
slow, overloaded, down or answer garbage: each becomes that request's error result."""

from __future__ import annotations

import time

import httpx
import pytest

from negotiation.llm.openai_backend import OpenAICompatibleBackend
from tests.negotiation.llm.conftest import chat
from tests.negotiation.llm.servers import completion, free_port, scripted_server
from tests.negotiation.llm.test_transformers_backend import OFFER_SCHEMA, Offer

pytestmark = pytest.mark.xdist_group("tiny_server")  # one server process (conftest.py)


@pytest.fixture
def client_for():
    made = []

    def make(url: str, model: str = "", **options) -> OpenAICompatibleBackend:
        backend = (
            OpenAICompatibleBackend(model, base_url=url, **options)
            if model
            else (OpenAICompatibleBackend(url, **options))
        )
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()


def test_replies_match_the_in_process_backend(tiny_server, tiny_backend, client_for):
    requests = [
        chat("hello", max_tokens=12),
        chat("offer please", max_tokens=80, json_schema=OFFER_SCHEMA),
        chat("stop early", max_tokens=20, stop=("}",)),
        chat("sample", temperature=0.9, seed=5, max_tokens=10),
    ]
    remote = client_for(f"{tiny_server}/v1", "tiny").generate(requests)
    local = tiny_backend.generate(requests)
    assert all(r.ok for r in remote), [r.error for r in remote]
    assert [r.text for r in remote] == [r.text for r in local]
    assert [r.finish_reason for r in remote] == [r.finish_reason for r in local]
    assert [r.completion_tokens for r in remote] == [r.completion_tokens for r in local]
    Offer.model_validate_json(remote[1].text)  # response_format json_schema reached it


def test_a_batch_arrives_concurrently_and_is_generated_together(
    tiny_server, tiny_model, client_for
):
    before = httpx.get(f"{tiny_server}/health").json()
    backend = client_for(tiny_server)  # the URL alone: the model name is asked of /v1/models
    results = backend.generate([chat(f"item {n}", max_tokens=8) for n in range(12)])
    after = httpx.get(f"{tiny_server}/health").json()
    assert all(r.ok for r in results)
    assert backend.served_model == str(tiny_model)
    assert after["requests"] - before["requests"] == 12
    assert after["calls"] - before["calls"] <= 4  # not 12 one-request generates
    assert backend.stats.calls == 1 and backend.stats.requests == 12


def test_a_slow_server_is_a_timeout_result(client_for):
    with scripted_server(lambda n: completion("late"), delay_s=2.0) as url:
        backend = client_for(url, "m", timeout_s=0.3, max_retries=2, backoff_s=0.01)
        started = time.perf_counter()
        [result] = backend.generate([chat("hi")])
    assert result.finish_reason == "timeout"
    assert result.error == "no reply within 0.3 s"
    assert result.text == ""
    assert time.perf_counter() - started < 1.5  # a timeout is not retried


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ((200, b"<html>gateway</html>"), "malformed reply: ValidationError"),
        ((200, b'{"choices": []}'), "malformed reply"),
        ((200, b'{"choices": [{"message": {"content": null}}]}'), "malformed reply"),
        ((400, b'{"error": {"message": "bad model"}}'), "HTTP 400: "),
    ],
)
def test_a_malformed_or_refused_reply_is_an_error_result(client_for, reply, message):
    with scripted_server(lambda n: reply) as url:
        backend = client_for(url, "m", max_retries=3, backoff_s=0.01)
        results = backend.generate([chat("hi"), chat("ho")])
    assert [r.finish_reason for r in results] == ["error", "error"]
    assert all(message in r.error for r in results)
    assert backend.stats.errors == 2


def test_server_errors_are_retried_with_backoff(client_for):
    replies = {1: (503, b"busy"), 2: (502, b"bad gateway")}
    with scripted_server(lambda n: replies.get(n, completion('{"ok": true}'))) as url:
        backend = client_for(url, "m", max_retries=2, backoff_s=0.05)
        started = time.perf_counter()
        [result] = backend.generate([chat("hi")])
    assert result.ok and result.text == '{"ok": true}'
    assert time.perf_counter() - started >= 0.05 + 0.1  # backoff 0.05 s, then 0.1 s


def test_a_server_that_stays_down_is_an_error_after_the_retries(client_for):
    with scripted_server(lambda n: (503, b"overloaded")) as url:
        [result] = client_for(url, "m", max_retries=2, backoff_s=0.01).generate([chat("x")])
    assert result.finish_reason == "error"
    assert result.error == "HTTP 503: overloaded (after 3 attempts)"

    nobody = f"http://127.0.0.1:{free_port()}/v1"
    [result] = client_for(nobody, "m", max_retries=1, backoff_s=0.01).generate([chat("x")])
    assert result.finish_reason == "error"
    assert result.error.startswith("ConnectError: ") and "(after 2 attempts)" in result.error


def test_an_invalid_request_fails_alone_without_a_call(client_for):
    with scripted_server(lambda n: completion("fine")) as url:
        backend = client_for(url, "m")
        results = backend.generate([chat("ok"), chat("none", max_tokens=0)])
    assert results[0].ok and results[0].text == "fine"
    assert results[1].error == "ValueError: max_tokens must be at least 1, not 0"

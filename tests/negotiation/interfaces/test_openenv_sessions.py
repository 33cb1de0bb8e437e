"""OpenEnv sessions have owners, limits and an end: served for real (uvicorn), played with
the package's GenericEnvClient and raw WebSocket frames. The owner comes from a header
here (a stand-in for the web app's login, which puts its user in the same scope key)."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from openenv.core import GenericEnvClient
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from negotiation.interfaces.openenv_server import build_app
from negotiation.interfaces.openenv_sessions import OWNER
from tests.servers import serve_asgi

TIMEOUTS = {"connect_timeout_s": 10.0, "message_timeout_s": 30.0}
CREATE = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}


def owned_by_header(app: Any) -> Any:
    """The app, with ``X-Owner`` as the owner of each request."""

    async def asgi(scope: dict, receive: Callable, send: Callable) -> None:
        owner = dict(scope.get("headers", [])).get(b"x-owner")
        if owner is not None:
            scope = {**scope, OWNER: owner.decode()}
        await app(scope, receive, send)

    return asgi


def serve(max_sessions: int, **limits: Any) -> contextlib.AbstractContextManager[str]:
    return serve_asgi(owned_by_header(build_app(max_sessions, **limits)))


def client(host: str, owner: str | None = None) -> GenericEnvClient:
    headers = {"X-Owner": owner} if owner else {}
    return GenericEnvClient(base_url=f"http://{host}", headers=headers, **TIMEOUTS)


def mcp(host: str, call: dict, owner: str | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", **({"X-Owner": owner} if owner else {})}
    request = urllib.request.Request(
        f"http://{host}/mcp", data=json.dumps(call).encode(), headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def refused_socket(host: str, owner: str, query: str = "") -> tuple[dict, int]:
    """The error frame and close code a WebSocket gets when it is refused."""
    with connect(
        f"ws://{host}/ws{query}", additional_headers={"X-Owner": owner}, open_timeout=10
    ) as ws:
        frame = json.loads(ws.recv(timeout=30))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
    return frame["data"], closed.value.rcvd.code


def eventually(attempt: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout  # a bound on a hang, not a speed figure
    while not attempt():
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.05)


def test_an_owner_holds_at_most_their_share_and_a_refusal_changes_nothing() -> None:
    with serve(8, per_owner=2) as host:
        mine = [client(host, "alice"), client(host, "alice")]
        try:
            for seed, env in enumerate(mine, start=1):
                env.reset(scenario="bilateral", seed=seed)
            third = client(host, "alice")
            with pytest.raises(RuntimeError, match="SESSION_LIMIT") as refused, third:
                third.reset(scenario="bilateral", seed=3)
            assert "You hold 2 OpenEnv session(s); the limit per user is 2" in str(refused.value)
            error, code = refused_socket(host, "alice")
            assert (error["code"], code) == ("SESSION_LIMIT", 4429)
            status, body = mcp(host, CREATE, "alice")  # plain HTTP opens none either
            assert status == 429 and (body["limit"], body["held"]) == (2, 2)
            assert "the limit per user is 2" in body["detail"]
            # Her two sessions go on; someone else has a share of their own.
            assert [env.state()["seed"] for env in mine] == [1, 2]
            with client(host, "bob") as bob:
                assert bob.reset(scenario="bilateral", seed=4).done is False
            mine.pop().close()  # a place comes back when one of hers ends

            def reopened() -> bool:
                try:
                    with client(host, "alice") as again:
                        return again.reset(scenario="bilateral", seed=5).done is False
                except RuntimeError:
                    return False

            eventually(reopened, "a freed place being taken again")
        finally:
            for env in mine:
                env.close()


def test_a_session_opened_over_http_is_its_owners_and_counts_against_them() -> None:
    with serve(8, per_owner=1) as host:
        status, body = mcp(host, CREATE, "alice")
        session = body["result"]["session_id"]
        error, code = refused_socket(host, "alice")  # she holds her one session
        assert (error["code"], code) == ("SESSION_LIMIT", 4429)
        close = {**CREATE, "method": "openenv/session/close", "params": {"session_id": session}}
        status, body = mcp(host, close, "bob")
        assert status == 403 and "belongs to someone else" in body["detail"]
        error, code = refused_socket(host, "bob", f"?session_id={session}")
        assert (error["code"], code) == ("FORBIDDEN", 4403)
        assert mcp(host, close, "alice")[1]["result"] == {"session_id": session, "closed": True}
        with client(host, "alice") as env:
            assert env.reset(scenario="bilateral", seed=1).done is False


def test_an_idle_websocket_session_is_closed_and_frees_its_place() -> None:
    with serve(1, idle_s=0.5) as host:
        with connect(f"ws://{host}/ws", open_timeout=10) as idle:
            idle.send(json.dumps({"type": "reset", "data": {"scenario": "bilateral"}}))
            assert json.loads(idle.recv(timeout=30))["type"] == "observation"
            frame = json.loads(idle.recv(timeout=30))  # then it says nothing
            assert frame["data"]["code"] == "IDLE" and "0.5 s" in frame["data"]["message"]
            with pytest.raises(ConnectionClosed) as closed:
                idle.recv(timeout=30)
            assert closed.value.rcvd.code == 4408

        def place_free() -> bool:
            try:
                with client(host) as env:
                    return env.reset(scenario="bilateral", seed=2).done is False
            except RuntimeError:  # CAPACITY_REACHED until the server has let it go
                return False

        eventually(place_free, "the idle session's place coming back")


def test_a_session_opened_over_http_and_left_ends_at_a_later_request() -> None:
    with serve(1, idle_s=0.5) as host:
        assert "result" in mcp(host, CREATE)[1]
        assert "at capacity" in mcp(host, CREATE)[1]["error"]["message"]  # it is held ...
        eventually(lambda: "result" in mcp(host, CREATE)[1], "the abandoned session ending")


def test_a_call_too_deep_to_read_gets_the_packages_parse_error_not_a_500() -> None:
    with serve(2, per_owner=1) as host:
        request = urllib.request.Request(
            f"http://{host}/mcp",
            data=b"[" * 100_000 + b"]" * 100_000,
            headers={"Content-Type": "application/json", "X-Owner": "alice"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.loads(response.read())["error"]["code"] == -32700  # parse error

"""/openenv/ on the real site (daphne serving workers.embedded, as `make run` does): the
OpenEnv server behind the API's own login, over HTTP and WebSocket, with the package's
GenericEnvClient."""

from __future__ import annotations

import base64
import http.cookiejar
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from openenv.core import GenericEnvClient
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from negotiation.interfaces.session import TrainingSession
from negotiation.policies import get_policy
from tests.browser import PASSWORD, EmbeddedSite

pytestmark = pytest.mark.xdist_group("openenv_mount")  # one site for the module

TIMEOUTS = {"connect_timeout_s": 10.0, "message_timeout_s": 60.0}  # first use imports openenv


@pytest.fixture(scope="module")
def site() -> Iterator[EmbeddedSite]:
    site = EmbeddedSite({"OPENENV_MAX_SESSIONS_PER_USER": "2"})
    try:
        yield site
    finally:
        site.stop()


def basic(username: str, password: str = PASSWORD) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def fetch(
    url: str, *, headers: dict[str, str] | None = None, body: dict | None = None
) -> tuple[int, dict[str, str], Any]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **(headers or {})}
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


def login(site: EmbeddedSite, username: str) -> dict[str, str]:
    """Log in through the login form; return the cookies (sessionid, csrftoken)."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{site.url}/accounts/login/", timeout=30).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token}
    opener.open(
        urllib.request.Request(
            f"{site.url}/accounts/login/",
            data=urllib.parse.urlencode(form).encode(),
            headers={"Referer": f"{site.url}/accounts/login/"},
        ),
        timeout=30,
    )
    cookies = {c.name: c.value for c in jar}
    assert "sessionid" in cookies, "login failed: no session cookie"
    return cookies


def ws_url(site: EmbeddedSite) -> str:
    return site.url.replace("http://", "ws://") + "/openenv/ws"


def play_expert(env: GenericEnvClient, scenario: str, seed: int) -> float:
    """The expert's episode (decided in process on the same seed) through the client;
    returns the score the server reports, checked against the in-process one."""
    session = TrainingSession()
    obs = session.reset(scenario=scenario, seed=seed)
    policy = get_policy("expert", seed=seed)
    result = env.reset(scenario=scenario, seed=seed)
    while True:
        action = policy.act(obs)
        step = session.step(action)
        result = env.step(action)
        assert result.reward == step.reward and result.done == step.done
        obs = step.observation
        if step.done:
            break
    assert result.observation["metadata"]["score"] == session.score()
    return result.observation["metadata"]["score"]


# ----------------------------------------------------------------------------- refusals
def test_without_login_http_is_a_401_with_a_basic_challenge(site: EmbeddedSite) -> None:
    for path, body in (("/openenv/health", None), ("/openenv/reset", {"seed": 1})):
        status, headers, answer = fetch(site.url + path, body=body)
        assert status == 401, (path, answer)
        assert answer == {"detail": "Authentication credentials were not provided."}
        assert headers["WWW-Authenticate"].startswith("Basic")


def test_wrong_password_no_role_and_lockout_are_refused_as_the_api_does(
    site: EmbeddedSite,
) -> None:
    url = site.url + "/openenv/health"
    status, _, answer = fetch(url, headers={"Authorization": basic("norole")})
    assert (status, answer) == (403, {"detail": "Your role does not allow this."})
    # axes counts failures here as on the API (limit 5): then even the password is refused.
    wrong = [fetch(url, headers={"Authorization": basic("ops", "x")}) for _ in range(5)]
    assert wrong[0][::2] == (401, {"detail": "Invalid username/password."})
    assert [status for status, _, _ in wrong] == [401, 401, 401, 401, 429]
    status, headers, answer = fetch(url, headers={"Authorization": basic("ops")})
    assert status == 429 and "locked" in answer["detail"].lower()
    assert int(headers["Retry-After"]) > 0


def test_without_login_the_websocket_is_told_why_and_closed_4401(site: EmbeddedSite) -> None:
    refused = pytest.raises(RuntimeError, match=r"Authentication credentials.*UNAUTHENTICATED")
    with GenericEnvClient(base_url=site.url + "/openenv", **TIMEOUTS) as env, refused:
        env.reset(scenario="bilateral", seed=1)
    with connect(ws_url(site), open_timeout=10, close_timeout=5) as ws:
        frame = json.loads(ws.recv(timeout=30))
        assert frame["data"]["code"] == "UNAUTHENTICATED"
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
    assert closed.value.rcvd.code == 4401
    with connect(
        ws_url(site), additional_headers={"Authorization": basic("norole")}, open_timeout=10
    ) as ws:
        assert json.loads(ws.recv(timeout=30))["data"]["code"] == "FORBIDDEN"
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
    assert closed.value.rcvd.code == 4403


# ----------------------------------------------------------------------------- logged in
def test_basic_auth_serves_http_and_a_whole_episode_over_the_websocket(
    site: EmbeddedSite,
) -> None:
    auth = {"Authorization": basic("analyst")}
    status, _, answer = fetch(site.url + "/openenv/health", headers=auth)
    assert (status, answer) == (200, {"status": "healthy"})
    status, _, schema = fetch(site.url + "/openenv/schema", headers=auth)
    assert status == 200 and "action_type" in schema["action"]["properties"]
    status, _, answer = fetch(
        site.url + "/openenv/reset", headers=auth, body={"scenario": "bilateral", "seed": 4}
    )
    assert status == 200 and answer["observation"]["metadata"]["seed"] == 4
    with GenericEnvClient(base_url=site.url + "/openenv", headers=auth, **TIMEOUTS) as env:
        play_expert(env, "medium_adversarial", 5)
        result = env.step({"action_type": "fly"})  # after the end: the engine's coded error
        assert result.observation["metadata"]["error"]["code"] == "episode_done"
        assert env.state()["scenario"] == "medium_adversarial"


def test_a_session_login_serves_http_and_the_websocket(site: EmbeddedSite) -> None:
    cookies = login(site, "analyst")
    cookie = {"Cookie": f"sessionid={cookies['sessionid']}"}
    status, _, answer = fetch(site.url + "/openenv/metadata", headers=cookie)
    assert status == 200 and answer["name"] == "procurement_arena"
    # As on the API: a cookie alone does not authorise an unsafe request (CSRF)...
    status, _, answer = fetch(site.url + "/openenv/reset", headers=cookie, body={"seed": 1})
    assert status == 403 and "CSRF" in answer["detail"]
    # ...with the CSRF token it does (it was a 415: the check tried to parse the JSON body).
    csrf = {
        "Cookie": f"sessionid={cookies['sessionid']}; csrftoken={cookies['csrftoken']}",
        "X-CSRFToken": cookies["csrftoken"],
    }
    status, _, answer = fetch(site.url + "/openenv/reset", headers=csrf, body={"seed": 1})
    assert status == 200 and answer["observation"]["metadata"]["seed"] == 1
    with GenericEnvClient(base_url=site.url + "/openenv", headers=cookie, **TIMEOUTS) as env:
        play_expert(env, "bilateral_cooperative", 2)
    # A page of this site may open it; a page of another site may not (the cookie is ambient).
    own = {**cookie, "Origin": site.url}
    with GenericEnvClient(base_url=site.url + "/openenv", headers=own, **TIMEOUTS) as env:
        assert env.reset(scenario="bilateral", seed=3).done is False
    with pytest.raises(InvalidStatus) as refused:
        connect(ws_url(site), additional_headers={**cookie, "Origin": "http://evil.example"})
    assert refused.value.response.status_code == 403


def test_the_rest_of_the_site_is_untouched(site: EmbeddedSite) -> None:
    request = urllib.request.Request(site.url + "/healthz")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
    status, _, answer = fetch(site.url + "/api/scenarios/")
    assert status == 401 and "detail" in answer


def test_each_user_holds_at_most_their_share_of_sessions(site: EmbeddedSite) -> None:
    auth = {"Authorization": basic("analyst")}
    assert fetch(site.url + "/openenv/health", headers=auth)[0] == 200  # openenv loaded
    mine = [
        GenericEnvClient(base_url=site.url + "/openenv", headers=auth, **TIMEOUTS) for _ in range(2)
    ]
    try:
        for seed, env in enumerate(mine, start=1):
            env.reset(scenario="bilateral", seed=seed)
        with connect(ws_url(site), additional_headers=auth, open_timeout=10) as ws:
            error = json.loads(ws.recv(timeout=30))["data"]
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=30)
        assert error["code"] == "SESSION_LIMIT" and closed.value.rcvd.code == 4429
        assert "You hold 2 OpenEnv session(s); the limit per user is 2" in error["message"]
        create = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
        status, _, answer = fetch(site.url + "/openenv/mcp", headers=auth, body=create)
        assert status == 429 and (answer["limit"], answer["held"]) == (2, 2)
        assert [env.state()["seed"] for env in mine] == [1, 2]  # hers go on
        site.shell(
            "from procurement.services.accounts import user_create; "
            f"user_create(username='analyst2', role='analyst', password='{PASSWORD}')"
        )
        other = {"Authorization": basic("analyst2")}
        with GenericEnvClient(base_url=site.url + "/openenv", headers=other, **TIMEOUTS) as env:
            assert env.reset(scenario="bilateral", seed=3).done is False
    finally:
        for env in mine:
            env.close()

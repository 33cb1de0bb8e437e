"""The OpenEnv server, served for real (uvicorn on a spare port) and played with the
package's own GenericEnvClient: whole episodes, invalid actions, bad resets, concurrent
sessions that must not see each other, the capacity refusal, and the HTTP routes."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from openenv.core import GenericEnvClient
from websockets.sync.client import connect

from negotiation.action_spec import ACTION_TYPES
from negotiation.interfaces.openenv_server import build_app
from negotiation.interfaces.session import TrainingSession
from negotiation.limits import MAX_SEED
from negotiation.policies import get_policy
from tests.servers import serve_asgi

TIMEOUTS = {"connect_timeout_s": 10.0, "message_timeout_s": 30.0}


@contextlib.contextmanager
def serve(max_sessions: int) -> Iterator[str]:
    """uvicorn serving build_app() in a thread; always shut down, never left hanging."""
    with serve_asgi(build_app(max_sessions)) as host:
        yield f"http://{host}"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve(max_sessions=8) as base:
        yield base


def client(url: str, **kwargs: Any) -> GenericEnvClient:
    return GenericEnvClient(base_url=url, **TIMEOUTS, **kwargs)


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def wire(observation: dict) -> dict:
    """What the client receives of an engine observation: to_dict() without ``done`` (the
    package's own field) and without the package's metadata."""
    return {k: v for k, v in observation.items() if k not in ("done", "metadata")}


def in_process(scenario: str, seed: int, actions: list[dict] | None = None) -> dict[str, Any]:
    """The same episode in process: the expert's actions (or the given ones), every
    observation, reward, and the final score."""
    session = TrainingSession()
    obs = session.reset(scenario=scenario, seed=seed)
    observations = [as_json(wire(obs.to_dict()))]
    policy = get_policy("expert", seed=seed)
    played, rewards, done = [], [], False
    for i in range(10_000):
        if done or (actions is not None and i == len(actions)):
            break
        action = policy.act(obs) if actions is None else actions[i]
        result = session.step(action)
        obs, done = result.observation, result.done
        played.append(action)
        rewards.append(result.reward)
        observations.append(as_json(wire(obs.to_dict())))
    return {
        "actions": as_json(played),
        "observations": observations,
        "rewards": rewards,
        "done": done,
        "score": session.score(),
    }


def http(url: str, path: str, body: dict | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url + path, data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


# ----------------------------------------------------------------------------- episodes
@pytest.mark.parametrize(("scenario", "seed"), [("medium_adversarial", 7), ("bilateral", 3)])
def test_the_expert_plays_a_whole_episode_with_the_in_process_score(
    url: str, scenario: str, seed: int
) -> None:
    expected = in_process(scenario, seed)
    assert expected["done"] and len(expected["actions"]) > 3
    with client(url) as env:
        result = env.reset(scenario=scenario, seed=seed)
        assert result.observation["metadata"]["seed"] == seed
        assert wire(result.observation) == expected["observations"][0]
        assert result.done is False and result.reward is None
        for i, action in enumerate(expected["actions"]):
            assert not result.done
            result = env.step(action)
            # Every step: the same observation, reward and validity as in process.
            assert wire(result.observation) == expected["observations"][i + 1]
            assert result.reward == expected["rewards"][i]
            assert result.observation["metadata"]["error"] is None
        assert result.done
        meta = result.observation["metadata"]
        assert meta["score"] == expected["score"]
        assert (meta["scenario"], meta["seed"], meta["step"]) == (
            scenario,
            seed,
            len(expected["actions"]),
        )
        state = env.state()
        assert state["step_count"] == len(expected["actions"])
        assert (state["scenario"], state["seed"], state["done"]) == (scenario, seed, True)
        assert state["episode_id"]


def test_a_reset_without_seed_draws_one_and_reports_it(url: str) -> None:
    with client(url) as env:
        first = env.reset(scenario="easy_negotiation", episode_id="run-1")
        seed = first.observation["metadata"]["seed"]
        assert isinstance(seed, int)
        assert env.state()["episode_id"] == "run-1"
        # The reported seed reproduces the episode.
        again = env.reset(scenario="easy_negotiation", seed=seed)
        assert wire(again.observation) == wire(first.observation)
        assert again.observation["metadata"]["episode"] == 2


def test_tier_and_automatic_curriculum_reach_the_session(url: str) -> None:
    with client(url) as env:
        master = env.reset(scenario="medium_adversarial", seed=1, tier="master")
        assert master.observation["metadata"]["tier"] == "master"
        assert env.state()["tier"] == "master"
        auto = env.reset(scenario="medium_adversarial", seed=1, curriculum="auto")
        meta = auto.observation["metadata"]
        assert meta["tier"] == "novice" and meta["curriculum"]["mode"] == "auto"
        assert meta["curriculum"]["episodes_in_window"] == 0


# ----------------------------------------------------------------------------- bad input
INVALID = [
    ({"action_type": "fly"}, "unknown_action_type"),
    ({}, "missing_field"),
    ({"action_type": "defer", "bogus": 1}, "unknown_field"),
    (
        {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01", "price": "1"},
        "wrong_type",
    ),
    (
        {"action_type": "award_contract", "supplier_id": "NOPE", "requirement_id": "R01"}
        | {"quantity": 1},
        "unknown_supplier",
    ),
]


def test_invalid_actions_get_the_engines_coded_error_and_the_session_goes_on(url: str) -> None:
    scenario, seed = "medium_adversarial", 11
    expert = in_process(scenario, seed)["actions"]
    # Invalid actions interleaved with the expert's; the engine counts each as a step.
    script = [a for pair in zip(expert, [i[0] for i in INVALID], strict=False) for a in pair]
    script += expert[len(INVALID) :]
    expected = in_process(scenario, seed, script)
    codes = iter(code for _, code in INVALID)
    with client(url) as env:
        env.reset(scenario=scenario, seed=seed)
        for i, action in enumerate(script):
            result = env.step(action)
            # The same world as in process, step by step (last_action included).
            assert wire(result.observation) == expected["observations"][i + 1]
            assert result.reward == expected["rewards"][i]
            error = result.observation["metadata"]["error"]
            if i % 2 == 1 and i < 2 * len(INVALID):
                assert error["code"] == next(codes), error
                assert error["message"]
                assert result.observation["last_action"] == {"valid": False, "error": error}
                assert result.reward < 0  # the engine's penalty
            if result.done:
                break
        assert result.observation["metadata"]["score"] == expected["score"]


def test_a_frame_the_package_cannot_parse_is_refused_and_the_session_goes_on(url: str) -> None:
    with client(url) as env:
        env.reset(scenario="easy_negotiation", seed=2)
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"action_type": "defer", "metadata": "not an object"})
        result = env.step({"action_type": "defer"})
        assert result.observation["metadata"]["error"] is None
        assert env.state()["step_count"] == 1


# Frames the package's own loop ended the whole session on, or whose answer could not be
# sent (a lone surrogate has no UTF-8 form), or that broke the input rules.
BAD_FRAMES = {
    "binary": (b"\x00\xff", "INVALID_JSON"),
    "array": ("[1, 2]", "VALIDATION_ERROR"),
    "number": ("7", "VALIDATION_ERROR"),
    "null": ("null", "VALIDATION_ERROR"),
    "deep": ("[" * 100_000, "nested deeper"),
    "huge int": ('{"type": "reset", "data": {"seed": 1' + "0" * 5000 + "}}", "finite"),
    "infinite seed": ('{"type": "reset", "data": {"seed": 1e400}}', "data.seed: Numbers"),
    "surrogate": (
        '{"type": "step", "data": {"action_type": "defer", "rationale": "\\ud800"}}',
        "data.rationale: Lone surrogate",
    ),
    "malformed": ("{not json", "Malformed JSON"),
}


def test_a_malformed_frame_gets_an_error_frame_and_the_session_goes_on(url: str) -> None:
    with connect(url.replace("http://", "ws://") + "/ws", open_timeout=10) as ws:

        def call(frame: dict) -> dict:
            ws.send(json.dumps(frame))
            return json.loads(ws.recv(timeout=30))

        call({"type": "reset", "data": {"scenario": "easy_negotiation", "seed": 2}})
        call({"type": "step", "data": {"action_type": "defer"}})
        before = call({"type": "state"})["data"]
        for label, (frame, expected) in BAD_FRAMES.items():
            ws.send(frame)
            answer = json.loads(ws.recv(timeout=30))
            assert answer["type"] == "error" and expected in json.dumps(answer), label
        assert call({"type": "state"})["data"] == before  # nothing reached the session
        step = call({"type": "step", "data": {"action_type": "defer"}})["data"]["observation"]
        assert step["metadata"]["step"] == 2 and step["metadata"]["error"] is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"scenario": "nope"}, "Unknown scenario 'nope'; use one of easy_negotiation"),
        ({"tier": "grandmaster"}, "Unknown tier 'grandmaster'; use one of novice"),
        ({"curriculum": "manual"}, "Unknown curriculum 'manual'"),
        ({"seed": -1}, "seed must be a whole number from 0 to"),
        ({"seed": "7"}, "seed must be a whole number from 0 to"),
        ({"seed": MAX_SEED + 1}, f"seed must be a whole number from 0 to {MAX_SEED}"),
        ({"scenaro": "bilateral"}, "Unknown reset option 'scenaro'"),
        ({"episode_id": ""}, "episode_id must be a string"),
    ],
)
def test_a_bad_reset_is_a_clear_error_and_changes_nothing(
    url: str, options: dict, message: str
) -> None:
    with client(url) as env:
        env.reset(scenario="easy_negotiation", seed=5)
        env.step({"action_type": "defer"})
        before = env.state()
        with pytest.raises(RuntimeError, match=message) as err:
            env.reset(**options)
        assert "EXECUTION_ERROR" in str(err.value)
        assert env.state() == before  # the running episode goes on
        result = env.step({"action_type": "defer"})
        assert result.observation["metadata"]["step"] == 2
        assert result.observation["metadata"]["scenario"] == "easy_negotiation"


def test_a_step_before_reset_says_to_reset(url: str) -> None:
    with client(url) as env:
        with pytest.raises(RuntimeError, match=r"Call reset\(\) before step\(\)"):
            env.step({"action_type": "defer"})
        assert env.reset(scenario="bilateral", seed=1).done is False


# ----------------------------------------------------------------------------- sessions
def test_concurrent_sessions_do_not_see_each_other(url: str) -> None:
    games = [("medium_adversarial", 21), ("bilateral_hardball", 4), ("medium_adversarial", 22)]
    expected = [in_process(s, seed) for s, seed in games]
    clients = [client(url) for _ in games]
    try:
        for c, (scenario, seed) in zip(clients, games, strict=True):
            c.reset(scenario=scenario, seed=seed)
        results = [None] * len(games)
        steps = [0] * len(games)
        # Interleaved, one step each in turn, until every episode is over.
        while any(steps[i] < len(e["actions"]) for i, e in enumerate(expected)):
            for i, (c, e) in enumerate(zip(clients, expected, strict=True)):
                if steps[i] < len(e["actions"]):
                    results[i] = c.step(e["actions"][steps[i]])
                    steps[i] += 1
                    assert wire(results[i].observation) == e["observations"][steps[i]]
        for i, e in enumerate(expected):
            assert results[i].done
            assert results[i].observation["metadata"]["score"] == e["score"]
            assert clients[i].state()["seed"] == games[i][1]
        # Same scenario, different seeds: different episodes.
        assert expected[0]["score"] != expected[2]["score"]
    finally:
        for c in clients:
            c.close()


def test_beyond_max_sessions_the_package_refuses_with_capacity_reached() -> None:
    with serve(max_sessions=2) as base:
        first, second, third = client(base), client(base), client(base)
        try:
            first.reset(scenario="bilateral", seed=1)
            second.reset(scenario="bilateral", seed=2)
            with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
                third.reset(scenario="bilateral", seed=3)
            third.close()
            # The two sessions in use are untouched; a freed slot is taken again.
            assert first.state()["seed"] == 1 and second.state()["seed"] == 2
            second.close()
            deadline = time.monotonic() + 10
            while True:
                late = client(base)
                try:
                    assert late.reset(scenario="bilateral", seed=4).done is False
                    break
                except RuntimeError:  # the server may not have freed the slot yet
                    assert time.monotonic() < deadline, "the freed slot never came back"
                    time.sleep(0.1)
                finally:
                    late.close()
        finally:
            for c in (first, second, third):
                c.close()


# ----------------------------------------------------------------------------- HTTP
def test_health_schema_and_metadata(url: str) -> None:
    assert http(url, "/health") == (200, {"status": "healthy"})
    status, schema = http(url, "/schema")
    assert status == 200
    action = schema["action"]["properties"]
    assert action["action_type"]["enum"] == list(ACTION_TYPES)
    assert action["price"]["type"] == "number" and action["quantity"]["type"] == "integer"
    assert "negotiate: price, requirement_id, supplier_id" in schema["action"]["description"]
    for field in ("requirements", "suppliers", "threads", "budget", "done", "metadata"):
        assert field in schema["observation"]["properties"]
    assert {"episode_id", "step_count", "scenario", "seed", "tier"} <= set(
        schema["state"]["properties"]
    )
    status, meta = http(url, "/metadata")
    assert status == 200 and meta["name"] == "procurement_arena"
    assert "medium_adversarial" in meta["description"] and "master" in meta["description"]


def test_http_reset_answers_and_http_step_explains_it_is_stateless(url: str) -> None:
    status, body = http(url, "/reset", {"scenario": "bilateral", "seed": 9})
    assert status == 200
    assert body["done"] is False and body["observation"]["metadata"]["seed"] == 9
    first = TrainingSession().reset(scenario="bilateral", seed=9).to_dict()
    assert wire(body["observation"]) == as_json(wire(first))
    status, body = http(url, "/reset", {"scenario": "nope"})
    assert status == 400 and "Unknown scenario 'nope'" in body["detail"]
    status, body = http(url, "/step", {"action": {"action_type": "defer"}})
    assert status == 400 and "play episodes over the WebSocket /ws" in body["detail"]
    status, body = http(url, "/reset", {"scenario": "\ud800"})  # was a 500: no UTF-8 form
    assert status == 400 and body["detail"].startswith("scenario: Lone surrogate")
    status, body = http(url, "/reset", {"seed": MAX_SEED + 1})
    assert status == 400 and f"from 0 to {MAX_SEED}" in body["detail"]

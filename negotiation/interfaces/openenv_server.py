"""The arena under the ``openenv`` package's own contract (its types, ``create_app``, /ws).

One ``ProcurementOpenEnv`` per WebSocket session wraps one ``TrainingSession``, so scenario,
seed, tier and ``curriculum="auto"`` mean what they mean in the TRL environment.

Choices worth knowing:

* The action model documents the seven actions' fields with their JSON types (see
  ``/schema``) but does not enforce them: every action reaches the engine, which stays the
  one validator, so a wrong type, an unknown field or a missing ``action_type`` comes back
  as the engine's coded error (and its penalty) in the observation, exactly as in process.
* The observation's fields are the engine's ``Observation.to_dict()`` keys at the top level
  (``done`` is the package's own field), so code written against ``obs.to_dict()`` in
  process reads ``result.observation`` unchanged; fields the engine may add later pass
  through rather than break the server.
* A request the session cannot honour (unknown scenario or tier, bad seed, step before
  reset) raises ``SessionError``: over /ws the package answers it as an error frame and
  the session stays usable; over HTTP it is a 400.
* What a client sends passes ``InputGate`` first (the input rules of ``negotiation.limits``):
  a frame the package's loop would die on, or that would store what no answer can carry,
  gets an error frame and the session goes on.

openenv is heavy to import (gradio, fastmcp): only this module and the ``serve_openenv``
command import it, never the web or worker start-up path.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from openenv.core.env_server import (
    Action,
    Environment,
    Observation,
    State,
)
from openenv.core.env_server.types import EnvironmentMetadata, WSErrorCode, WSErrorResponse
from pydantic import ConfigDict, Field, create_model

from ..action_spec import ACTION_TYPES, FIELD_SPECS, MAX_MESSAGE, MAX_QUANTITY
from ..actions import FIELDS
from ..config import TIERS
from ..limits import InputError, decode_json, json_problem
from .openenv_sessions import ASGIApp, OwnedSessionServer, SessionGuard, buffered_body
from .session import CURRICULUM_MODES, DEFAULT_SCENARIO, SessionError, TrainingSession, rule_presets

ENV_NAME = "procurement_arena"
RESET_OPTIONS = ("scenario", "tier", "curriculum")  # besides the package's seed, episode_id
EPISODE_ID_MAX = 255  # as the package's HTTP ResetRequest bounds it


def _documented(schema: dict[str, Any], description: str) -> Any:
    """A field whose JSON schema says what the engine expects while any value is let
    through to the engine (pydantic would otherwise answer first, without the engine's
    error code and penalty)."""
    return Field(default=None, description=description, json_schema_extra=schema)


def _fields_doc() -> str:
    lines = []
    for name, (required, optional) in FIELDS.items():
        opt = f"; optional: {', '.join(sorted(optional))}" if optional else ""
        lines.append(f"{name}: {', '.join(sorted(required)) or 'nothing'}{opt}")
    return "Required fields per action_type - " + " | ".join(lines) + "."


# A field's kind (action_spec.FieldSpec) as the JSON schema the OpenEnv action shows.
_SCHEMAS: dict[str, dict[str, Any]] = {
    "id": {"type": "string", "minLength": 1},
    "price": {"type": "number", "exclusiveMinimum": 0},
    "quantity": {"type": "integer", "minimum": 1, "maximum": MAX_QUANTITY},
    "share": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "text": {"type": "string", "maxLength": MAX_MESSAGE},
}


class _ArenaActionBase(Action):
    model_config = ConfigDict(extra="allow", json_schema_extra={"description": _fields_doc()})

    def to_engine(self) -> dict[str, Any]:
        """The action dict as the client sent it (``metadata`` is the package's, not the
        engine's), in a stable order so the engine reports the same first error."""
        given = self.model_fields_set
        extra = self.model_extra or {}
        out = {k: getattr(self, k) for k in type(self).model_fields if k in given}
        out.update(extra)
        out.pop("metadata", None)
        return out


# One buyer action: ``action_type`` and that action's fields (``rationale`` anywhere),
# every field as action_spec declares it.
ArenaAction = create_model(
    "ArenaAction",
    __base__=_ArenaActionBase,
    __module__=__name__,
    __doc__="One buyer action: ``action_type`` and that action's fields (``rationale`` anywhere).",
    action_type=(Any, _documented({"enum": list(ACTION_TYPES)}, "Which of the seven actions.")),
    **{
        name: (Any, _documented(_SCHEMAS[spec.kind], spec.doc))
        for name, spec in FIELD_SPECS.items()
    },
)


class ArenaObservation(Observation):
    """The engine's observation (``to_dict()``), plus the package's done/reward/metadata.

    ``metadata``: the session's scenario, seed, tier, episode, step, running_score (and
    curriculum progress under ``curriculum="auto"``), the step's ``error`` ({code,
    message} or None), its ``info`` (events, supplier response, state) and, once the
    episode is over, its final ``score``.
    """

    model_config = ConfigDict(extra="allow")

    step: int = 0
    week: int = 0
    weeks: int = 0
    actions_per_week: int = 0
    actions_left_this_week: int = 0
    escalations_left: int = 0
    budget: dict[str, float] = Field(default_factory=dict)
    requirements: list[dict[str, Any]] = Field(default_factory=list)
    suppliers: list[dict[str, Any]] = Field(default_factory=list)
    threads: list[dict[str, Any]] = Field(default_factory=list)
    contracts: list[dict[str, Any]] = Field(default_factory=list)
    purchase_requisitions: list[dict[str, Any]] = Field(default_factory=list)
    market: dict[str, Any] = Field(default_factory=dict)
    events: list[dict[str, Any]] = Field(default_factory=list)
    last_action: dict[str, Any] = Field(default_factory=dict)
    rules: dict[str, Any] = Field(default_factory=dict)


class ArenaState(State):
    """Where the session stands: the package's episode_id and step_count, and what a
    trainer needs to reproduce the episode."""

    scenario: str | None = None
    seed: int | None = None
    tier: str | None = None
    done: bool = False


class ProcurementOpenEnv(Environment[ArenaAction, ArenaObservation, ArenaState]):
    """One session's environment. The server keeps one per WebSocket connection and runs
    it on that session's own thread, so sessions share nothing."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self.session = TrainingSession(scenario=DEFAULT_SCENARIO)
        self.episode_id: str | None = None

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        scenario: str | None = None,
        tier: str | None = None,
        curriculum: str | None = None,
        **unknown: Any,
    ) -> ArenaObservation:
        """``scenario``: a rule preset (default medium_adversarial); ``seed=None`` draws a
        fresh seed (reported in metadata); ``tier``: novice..master; ``curriculum="auto"``
        advances the tier on this session's own scores. A bad value raises before anything
        changes: the running episode goes on. (``**unknown`` is there so that a misspelt
        option is refused: the package drops what the signature does not name.)"""
        if unknown:
            raise SessionError(
                f"Unknown reset option {', '.join(map(repr, sorted(unknown)))}; use seed, "
                f"episode_id, {', '.join(RESET_OPTIONS)}."
            )
        if episode_id is not None and (
            not isinstance(episode_id, str) or not 0 < len(episode_id) <= EPISODE_ID_MAX
        ):
            raise SessionError(f"episode_id must be a string of 1 to {EPISODE_ID_MAX} characters.")
        obs = self.session.reset(scenario=scenario, seed=seed, tier=tier, curriculum=curriculum)
        self.episode_id = episode_id or uuid.uuid4().hex
        return self._observation(obs.to_dict(), reward=None, error=None, info={})

    def step(
        self, action: ArenaAction, timeout_s: float | None = None, **kwargs: Any
    ) -> ArenaObservation:
        if self.session.env is None:
            raise SessionError(
                "Call reset() before step(). HTTP /step is stateless (a fresh environment "
                "per request): play episodes over the WebSocket /ws."
            )
        result = self.session.step(action.to_engine())
        return self._observation(
            result.observation.to_dict(),
            reward=float(result.reward),
            error=result.info.get("error"),
            info=result.info,
        )

    @property
    def state(self) -> ArenaState:
        env = self.session.env
        meta = self.session.metadata()
        return ArenaState(
            episode_id=self.episode_id,
            step_count=0 if env is None else env.world.steps_taken,
            scenario=meta["scenario"],
            seed=meta["seed"],
            tier=meta["tier"],
            done=False if env is None else env.done,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=ENV_NAME,
            description=(
                "Procurement Arena: a buyer negotiates with and awards contracts to "
                "suppliers over simulated weeks. reset(scenario=..., seed=..., tier=..., "
                f"curriculum='auto'). Scenarios: {', '.join(rule_presets())}. "
                f"Tiers: {', '.join(TIERS)}. Curriculum modes: {', '.join(CURRICULUM_MODES)}. "
                f"Default scenario: {DEFAULT_SCENARIO}."
            ),
            version="1.0.0",
        )

    def _observation(
        self,
        data: dict[str, Any],
        *,
        reward: float | None,
        error: dict[str, Any] | None,
        info: dict[str, Any],
    ) -> ArenaObservation:
        data = dict(data)
        done = bool(data.pop("done", False))
        metadata = {**self.session.metadata(), "error": error, "info": info}
        if done:
            metadata["score"] = self.session.score()
        return ArenaObservation(**data, done=done, reward=reward, metadata=metadata)


Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]
FRAME_SHAPE = "A frame is a JSON object with a type: reset, step, state or close."
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH"})


def frame_problem(message: dict) -> tuple[str, WSErrorCode] | None:
    """Why a ``websocket.receive`` message must not reach the package, and the code of
    the error frame that says so; None when it may."""
    text = message.get("text")
    if text is None:
        return f"Binary frames are not read. {FRAME_SHAPE}", WSErrorCode.INVALID_JSON
    try:
        document = decode_json(text)
    except InputError as exc:
        return str(exc), WSErrorCode.INVALID_JSON
    if not isinstance(document, dict):
        return FRAME_SHAPE, WSErrorCode.VALIDATION_ERROR
    return None


class InputGate:
    """ASGI middleware in front of the package's app, for what its own parsing misses.

    WebSocket: every frame must be a JSON object under the input rules; any other is
    answered with the package's error frame and never reaches the package, whose loop ends
    the whole session on a binary frame, a JSON array, a 100,000-deep document or a
    5,000-digit number, and whose answers fail on a lone surrogate. HTTP: a JSON body that
    breaks a rule is a 400 naming where (a body that is not JSON is the package's to
    refuse).
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            return await self.app(scope, self._frames(receive, send), send)
        if scope["type"] == "http" and scope["method"] in UNSAFE_METHODS:
            return await self._http(scope, receive, send)
        return await self.app(scope, receive, send)

    @staticmethod
    def _frames(receive: Receive, send: Send) -> Receive:
        async def gated() -> dict:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                problem = frame_problem(message)
                if problem is None:
                    return message
                text, code = problem
                error = WSErrorResponse(data={"message": text, "code": code})
                await send({"type": "websocket.send", "text": error.model_dump_json()})

        return gated

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        body, replay = await buffered_body(receive)
        if body is None:
            return  # the client went away
        try:
            problem = json_problem(json.loads(body)) if body else None
        except (ValueError, RecursionError):
            problem = None  # not JSON: the package answers it
        if problem:
            response = JSONResponse({"detail": str(problem)}, status_code=400)
            return await response(scope, receive, send)
        return await self.app(scope, replay, send)


async def _session_error(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=400)


def build_app(
    max_sessions: int, *, per_owner: int | None = None, idle_s: float | None = None
) -> ASGIApp:
    """The OpenEnv app: HTTP /reset /step /state /schema /metadata /health and WebSocket
    /ws, at most ``max_sessions`` sessions at once (the package refuses the next with
    CAPACITY_REACHED), ``per_owner`` of them per owner and each ended after ``idle_s``
    seconds without a call (``openenv_sessions``; None: no such limit)."""
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise ValueError(f"max_sessions must be a whole number >= 1, not {max_sessions!r}.")
    app = FastAPI(title="Procurement Arena (OpenEnv)")
    server = OwnedSessionServer(
        ProcurementOpenEnv,
        ArenaAction,
        ArenaObservation,
        max_sessions=max_sessions,
        per_owner=per_owner,
        idle_s=idle_s,
        env_name=ENV_NAME,
        state_cls=ArenaState,
    )
    server.register_routes(app)
    app.add_exception_handler(SessionError, _session_error)
    app.add_middleware(InputGate)
    return SessionGuard(app, server)

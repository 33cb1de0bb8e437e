"""What a language model may answer, as pydantic models and as a JSON schema.

The seven buyer actions mirror ``negotiation/actions.py`` field by field (names, types,
ranges), so a reply that passes here is well-formed for the engine; the engine's own
validation stays the authority for everything that depends on the world (ids,
agreements, budget). The schema handed to constrained decoding is flattened on purpose:
``anyOf`` of closed objects with ``const`` tags, no ``$ref``, ``discriminator`` or
titles, which grammar compilers such as xgrammar handle without surprises.

``parse_json_reply`` is the one parser for every model reply (buyer actions, narrations,
supplier decisions): the first JSON object in the text, validated by a model; it returns
an error string instead of raising, so the caller counts the failure and falls back.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

from ..actions import MAX_MESSAGE, MAX_QUANTITY

ID_MAX = 64  # ids are short ("S03", "R01"); a bound keeps decoding finite
TEXT_MAX = 400  # message / rationale length asked of a model (the engine allows 2000)

Id = Annotated[str, Field(min_length=1, max_length=ID_MAX)]
Price = Annotated[float, Field(gt=0.0)]
Text = Annotated[str, Field(max_length=MAX_MESSAGE)]


def _whole_float_to_int(v: Any) -> Any:
    # The engine takes 40.0 units as 40 (JSON has one number type); nothing else is coerced.
    return int(v) if type(v) is float and v.is_integer() else v


Quantity = Annotated[int, Field(ge=1, le=MAX_QUANTITY), BeforeValidator(_whole_float_to_int)]


class ReplyModel(BaseModel):
    """Strict, closed: what a model writes is validated, never coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Negotiate(ReplyModel):
    action_type: Literal["negotiate"]
    supplier_id: Id
    requirement_id: Id
    price: Price
    message: Text | None = None
    rationale: Text | None = None


class AwardContract(ReplyModel):
    action_type: Literal["award_contract"]
    supplier_id: Id
    requirement_id: Id
    quantity: Quantity
    price: Price | None = None
    rationale: Text | None = None


class RaisePR(ReplyModel):
    action_type: Literal["raise_pr"]
    requirement_id: Id
    amount: Price
    rationale: Text | None = None


class Defer(ReplyModel):
    action_type: Literal["defer"]
    requirement_id: Id | None = None
    rationale: Text | None = None


class Reject(ReplyModel):
    action_type: Literal["reject"]
    supplier_id: Id
    requirement_id: Id | None = None
    rationale: Text | None = None


class Hedge(ReplyModel):
    action_type: Literal["hedge"]
    requirement_id: Id
    supplier_id: Id
    hedge_supplier_id: Id
    split: Annotated[float, Field(gt=0.0, lt=1.0)]
    rationale: Text | None = None


class Escalate(ReplyModel):
    action_type: Literal["escalate"]
    requirement_id: Id
    supplier_id: Id | None = None
    rationale: Text | None = None


ACTION_MODELS: tuple[type[ReplyModel], ...] = (
    Negotiate,
    AwardContract,
    RaisePR,
    Defer,
    Reject,
    Hedge,
    Escalate,
)
BuyerAction = Annotated[
    Negotiate | AwardContract | RaisePR | Defer | Reject | Hedge | Escalate,
    Field(discriminator="action_type"),
]
ACTION_ADAPTER: TypeAdapter[Any] = TypeAdapter(BuyerAction)


class Narration(ReplyModel):
    """Narrator mode: the rule policy chose the action; the model only words it."""

    message: Text
    rationale: Text


class Rationale(ReplyModel):
    """Narrator mode for actions that carry no message to a supplier."""

    rationale: Text


R = TypeVar("R")


def _flatten(schema: dict[str, Any], text_max: int) -> dict[str, Any]:
    """Inline $refs, drop titles/defaults/discriminators, turn ``X | None`` optionals into
    plain (non-required) X, and cap free-text lengths for decoding."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
        branches = node.get("anyOf")
        if branches and any(b == {"type": "null"} for b in branches):
            (only,) = [b for b in branches if b != {"type": "null"}]
            return walk(only)
        out = {
            k: walk(v)
            for k, v in node.items()
            if k not in ("title", "default", "discriminator", "$defs", "description")
        }
        if out.get("type") == "string" and out.get("maxLength", 0) > text_max:
            out["maxLength"] = text_max
        if "oneOf" in out:
            out["anyOf"] = out.pop("oneOf")
        return out

    return walk(schema)


def text_max_for(max_tokens: int, text_fields: int) -> int:
    """The longest string a reply's schema may allow so that the whole JSON still fits in
    ``max_tokens``: a reply cut off at the token limit is unparseable, so a schema must be
    completable. About 24 tokens of JSON structure and fields, and at worst about two
    characters a token for the text."""
    return max(16, min(TEXT_MAX, (max_tokens - 24) * 2 // max(1, text_fields)))


@cache
def action_json_schema(text_max: int = TEXT_MAX) -> dict[str, Any]:
    """JSON schema of one buyer action, for constrained decoding (cached; treat as
    read-only)."""
    return _flatten(ACTION_ADAPTER.json_schema(), text_max)


@cache
def reply_json_schema(model: type[BaseModel], text_max: int = TEXT_MAX) -> dict[str, Any]:
    """JSON schema of any other reply model (narration, supplier decision)."""
    return _flatten(model.model_json_schema(), text_max)


def first_json_object(text: str) -> Any:
    """The first JSON object in ``text`` (models wrap JSON in prose or code fences);
    raises ValueError when there is none."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(obj, dict):
            return obj
        start = text.find("{", start + 1)
    raise ValueError("no JSON object in the reply")


def _describe(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors(include_url=False)[:3]:
        loc = ".".join(str(p) for p in e.get("loc", ()))
        parts.append(f"{loc}: {e.get('msg')}" if loc else str(e.get("msg")))
    return "; ".join(parts)


def parse_json_reply(text: str, adapter: TypeAdapter[R]) -> tuple[R | None, str | None]:
    """(validated value, None) or (None, a short reason)."""
    try:
        obj = first_json_object(text)
    except ValueError as exc:
        return None, str(exc)
    try:
        return adapter.validate_python(obj), None
    except ValidationError as exc:
        return None, _describe(exc)


def parse_action(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """(action dict as the engine takes it, None) or (None, why the reply is unusable)."""
    model, error = parse_json_reply(text, ACTION_ADAPTER)
    if model is None:
        return None, error
    return model.model_dump(exclude_none=True), None


@cache
def adapter_for(model: type[R]) -> TypeAdapter[R]:
    return TypeAdapter(model)

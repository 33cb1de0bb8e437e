"""What a language model may answer: strict reply models, their JSON schema for
constrained decoding, and the one parser for every reply.

The schema handed to constrained decoding is flattened on purpose: ``anyOf`` of closed
objects with ``const`` tags, no ``$ref``, ``discriminator`` or titles, which grammar
compilers such as xgrammar handle without surprises.

``parse_json_reply`` is the one parser for every model reply (buyer actions, narrations,
supplier decisions): the first JSON object in the text, validated by a model; it returns
an error string instead of raising, so the caller counts the failure and falls back.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from functools import cache
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..action_spec import MAX_MESSAGE, RATIONALE
from .backend import ChatResult

# The buyer's free text: its reply schemas write it last, after every field that decides
# (not the LLM supplier's decision, whose counter price follows its message).
TEXT_KEYS = ("message", RATIONALE)
TEXT_MAX = 400  # message / rationale length asked of a model (the engine allows 2000)

Price = Annotated[float, Field(gt=0.0)]
Text = Annotated[str, Field(max_length=MAX_MESSAGE)]


class ReplyModel(BaseModel):
    """Strict, closed: what a model writes is validated, never coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


R = TypeVar("R")


def flatten_schema(schema: dict[str, Any], text_max: int) -> dict[str, Any]:
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
def reply_json_schema(model: type[BaseModel], text_max: int = TEXT_MAX) -> dict[str, Any]:
    """JSON schema of any other reply model (narration, supplier decision)."""
    return flatten_schema(model.model_json_schema(), text_max)


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


def close_cut_reply(text: str, text_keys: Collection[str]) -> str | None:
    """A JSON reply that the token limit cut inside the value of one of ``text_keys``
    (free text), closed where it stopped: that string ends there (less any half-written
    escape) and every open object closes. Where a schema puts that text last, after every
    field that decides (``TEXT_KEYS``), such a cut only shortens words. None when the cut
    is anywhere else (another value, a key, a number, the structure)."""
    start = text.find("{")
    if start < 0:
        return None
    cut = text[start:]
    closers: list[str] = []
    key, opened, in_string, value, escaped, after_colon = None, 0, False, False, False, False
    for i, char in enumerate(cut):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if not value:  # a key: remember it for its value
                    key = cut[opened + 1 : i]
            continue
        if char == '"':
            in_string, value, opened = True, after_colon, i
        elif char in "{[":
            closers.append("}" if char == "{" else "]")
        elif char in "}]" and closers:
            closers.pop()
        if not char.isspace():
            after_colon = char == ":"
    if not (in_string and value and key in text_keys and closers):
        return None
    for drop in range(7):  # a half-written escape: at most a backslash and "u" + 4 digits
        candidate = cut[: len(cut) - drop] + '"' + "".join(reversed(closers))
        try:
            json.loads(candidate)
        except json.JSONDecodeError:
            continue
        return candidate
    return None


def reply_text(result: ChatResult) -> tuple[str, bool]:
    """The reply to parse, and whether it is one the token limit cut inside its free text
    and ``close_cut_reply`` closed (only a ``length`` finish is closed: other broken JSON
    is the model's own)."""
    if result.finish_reason == "length" and (closed := close_cut_reply(result.text, TEXT_KEYS)):
        return closed, True
    return result.text, False


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


@cache
def adapter_for(model: type[R]) -> TypeAdapter[R]:
    return TypeAdapter(model)

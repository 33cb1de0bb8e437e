"""What the LLM buyer may answer: the seven actions and the narrator's replies, as
pydantic models and as the JSON schema handed to constrained decoding.

The seven buyer actions are derived from ``negotiation/action_spec.py`` field by field
(names, order, required or not, kinds), so a reply that passes here is well-formed for
the engine; the engine's own
validation stays the authority for everything that depends on the world (ids,
agreements, budget).
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal, Union

from pydantic import BeforeValidator, Field, TypeAdapter, create_model

from ..action_spec import ACTIONS, FIELD_SPECS, MAX_QUANTITY, RATIONALE, ActionSpec
from ..llm.replies import (
    TEXT_MAX,
    Price,
    ReplyModel,
    Text,
    flatten_schema,
    parse_json_reply,
)

ID_MAX = 64  # ids are short ("S03", "R01"); a bound keeps decoding finite

Id = Annotated[str, Field(min_length=1, max_length=ID_MAX)]


def _whole_float_to_int(v: Any) -> Any:
    # The engine takes 40.0 units as 40 (JSON has one number type); nothing else is coerced.
    return int(v) if type(v) is float and v.is_integer() else v


Quantity = Annotated[int, Field(ge=1, le=MAX_QUANTITY), BeforeValidator(_whole_float_to_int)]


# A field's kind (action_spec.FieldSpec) as the type a model's reply must have.
_TYPES: dict[str, Any] = {
    "id": Id,
    "price": Price,
    "quantity": Quantity,
    "share": Annotated[float, Field(gt=0.0, lt=1.0)],
    "text": Text,
}


def _action_model(spec: ActionSpec) -> type[ReplyModel]:
    """The reply model of one action, field for field as action_spec declares it."""
    fields: dict[str, Any] = {"action_type": (Literal[spec.action_type], ...)}
    for name in spec.required:
        fields[name] = (_TYPES[FIELD_SPECS[name].kind], ...)
    for name in (*spec.optional, RATIONALE):
        fields[name] = (_TYPES[FIELD_SPECS[name].kind] | None, None)
    return create_model(spec.model_name, __base__=ReplyModel, __module__=__name__, **fields)


ACTION_MODELS: tuple[type[ReplyModel], ...] = tuple(_action_model(a) for a in ACTIONS)
BuyerAction = Annotated[Union[ACTION_MODELS], Field(discriminator="action_type")]  # noqa: UP007
ACTION_ADAPTER: TypeAdapter[Any] = TypeAdapter(BuyerAction)


class Narration(ReplyModel):
    """Narrator mode: the rule policy chose the action; the model only words it."""

    message: Text
    rationale: Text


class Rationale(ReplyModel):
    """Narrator mode for actions that carry no message to a supplier."""

    rationale: Text


@cache
def action_json_schema(text_max: int = TEXT_MAX) -> dict[str, Any]:
    """JSON schema of one buyer action, for constrained decoding (cached; treat as
    read-only)."""
    return flatten_schema(ACTION_ADAPTER.json_schema(), text_max)


def parse_action(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """(action dict as the engine takes it, None) or (None, why the reply is unusable)."""
    model, error = parse_json_reply(text, ACTION_ADAPTER)
    if model is None:
        return None, error
    return model.model_dump(exclude_none=True), None

"""What the LLM buyer may answer: the seven actions and the narrator's replies, as
pydantic models and as the JSON schema handed to constrained decoding.

The seven buyer actions mirror ``negotiation/actions.py`` field by field (names, types,
ranges), so a reply that passes here is well-formed for the engine; the engine's own
validation stays the authority for everything that depends on the world (ids,
agreements, budget).
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, TypeAdapter

from ..actions import MAX_QUANTITY
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

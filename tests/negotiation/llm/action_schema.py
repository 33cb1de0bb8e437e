"""A buyer-action schema for backend tests: the seven action types and their fields as a
pydantic discriminated union. Backends only need *a* realistic schema; when the policies'
own action schema lands, point ``ACTION`` at it and these tests use it unchanged."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

Id = Annotated[str, Field(pattern=r"^[A-Z][0-9]{2}$")]
Price = Annotated[float, Field(gt=0, lt=1_000_000)]


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Negotiate(_Action):
    action_type: Literal["negotiate"]
    supplier_id: Id
    requirement_id: Id
    price: Price
    message: Annotated[str, Field(max_length=160)]


class AwardContract(_Action):
    action_type: Literal["award_contract"]
    supplier_id: Id
    requirement_id: Id
    quantity: Annotated[int, Field(ge=1, le=100_000)]


class RaisePR(_Action):
    action_type: Literal["raise_pr"]
    requirement_id: Id
    amount: Price


class Defer(_Action):
    action_type: Literal["defer"]
    requirement_id: Id


class Reject(_Action):
    action_type: Literal["reject"]
    supplier_id: Id
    requirement_id: Id


class Hedge(_Action):
    action_type: Literal["hedge"]
    requirement_id: Id
    supplier_id: Id
    hedge_supplier_id: Id
    split: Annotated[float, Field(ge=0, le=1)]


class Escalate(_Action):
    action_type: Literal["escalate"]
    requirement_id: Id


ACTION: TypeAdapter[Any] = TypeAdapter(
    Annotated[
        Negotiate | AwardContract | RaisePR | Defer | Reject | Hedge | Escalate,
        Field(discriminator="action_type"),
    ]
)
ACTION_SCHEMA: dict[str, Any] = ACTION.json_schema()


def parse_action(text: str) -> Any:
    """The action, or raises (pydantic.ValidationError) for anything else."""
    return ACTION.validate_json(text)

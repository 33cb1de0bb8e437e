"""The seven buyer actions, declared once: each action's fields in order, which are
required, and what kind of value each field holds.

Everything else is derived from here: the engine's allowed-field table
(``actions.FIELDS``, ``actions.ALLOWED``), the LLM buyer's pydantic models and JSON schema
(``policies/action_schema.py``) and the OpenEnv action (``interfaces/openenv_server.py``).
Each of those maps a field's kind to its own types; none lists fields again.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_MESSAGE = 2000
MAX_QUANTITY = 10**9


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """``kind``: "id" (a supplier or requirement id), "price" (a positive amount),
    "quantity" (whole units, 1..MAX_QUANTITY), "share" (strictly between 0 and 1) or
    "text" (at most MAX_MESSAGE characters).

    A field that holds a number people read (a figure) also has ``label``, how a page
    heads it, and ``unit``, a pattern over ``{currency}`` (the scenario's) and ``{unit}``
    (the requirement's item unit, e.g. "box"); "%" means a share shown in per cent."""

    kind: str
    doc: str
    label: str = ""
    unit: str = ""


# Every field any action may carry, in the order the OpenEnv action lists them.
FIELD_SPECS: dict[str, FieldSpec] = {
    "supplier_id": FieldSpec("id", "A supplier id from the observation, e.g. 'S03'."),
    "requirement_id": FieldSpec("id", "A requirement id from the observation, e.g. 'R01'."),
    "price": FieldSpec(
        "price", "Unit price offered (negotiate, award).", "Price / unit", "{currency} / {unit}"
    ),
    "quantity": FieldSpec("quantity", "Units to award.", "Qty", "{unit}"),
    "amount": FieldSpec("price", "Purchase requisition sum.", "Amount", "{currency}"),
    "hedge_supplier_id": FieldSpec("id", "The second supplier of a hedge."),
    "split": FieldSpec("share", "Share of the hedge that goes to supplier_id.", "Split", "%"),
    "message": FieldSpec("text", "Words to the supplier (negotiate)."),
    "rationale": FieldSpec("text", "Why: recorded for analysts, no effect on the world."),
}
# Allowed on every action: an agent may record why (shown to analysts); no effect.
RATIONALE = "rationale"
# The fields whose numbers pages show, labelled with their unit, in FIELD_SPECS order.
FIGURES: tuple[str, ...] = tuple(name for name, spec in FIELD_SPECS.items() if spec.label)
# What an item's quantity is counted in when its requirement is not known.
DEFAULT_ITEM_UNIT = "unit"


def field_unit(name: str, currency: str, item_unit: str = DEFAULT_ITEM_UNIT) -> str:
    """The unit of figure ``name`` in a scenario with ``currency``, on a requirement whose
    item is counted in ``item_unit``: "USD / box" for a price, "box" for a quantity."""
    return FIELD_SPECS[name].unit.format(currency=currency, unit=item_unit)


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """One action: its ``action_type``, the name of its schema model, and its fields in
    order (required first, then optional; ``rationale`` follows on every action)."""

    action_type: str
    model_name: str
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()


ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("negotiate", "Negotiate", ("supplier_id", "requirement_id", "price"), ("message",)),
    ActionSpec(
        "award_contract", "AwardContract", ("supplier_id", "requirement_id", "quantity"), ("price",)
    ),
    ActionSpec("raise_pr", "RaisePR", ("requirement_id", "amount")),
    ActionSpec("defer", "Defer", (), ("requirement_id",)),
    ActionSpec("reject", "Reject", ("supplier_id",), ("requirement_id",)),
    ActionSpec("hedge", "Hedge", ("requirement_id", "supplier_id", "hedge_supplier_id", "split")),
    ActionSpec("escalate", "Escalate", ("requirement_id",), ("supplier_id",)),
)
ACTION_TYPES: tuple[str, ...] = tuple(a.action_type for a in ACTIONS)

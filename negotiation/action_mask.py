"""Action masking: the actions valid now, and a JSON schema that admits only them.

An RL agent is kept to legal moves by masking its action space; a language model is kept
to them by constraining its decoding to a schema of the legal actions. The mask is read
off an Observation by the engine's own precondition code (``actions.check_action``, run on
``PublicWorld``, the observation's state shaped as the checks read a world), never by a
second copy of the rules, so the two cannot drift apart.

Rules of the mask:
- Sound: every action it admits passes ``check_action`` (a property test plays random
  admitted actions on every preset). The engine still validates what is played.
- Ids fit each other: a negotiate names a supplier and a requirement it supplies on a
  thread that is not agreed or closed; an award names a thread with an agreed or standing,
  unexpired price; escalations name what can be escalated.
- Numbers: a negotiate price is any positive unit price up to the engine's absurd-price
  limit (strategy stays the model's: no "smart" range); an award's quantity runs from 1 to
  the most the engine accepts now (need, capacity, budget, PR cover), found by bisection on
  the check itself; an award never names a price (awards use the agreed one); a PR's amount
  runs up to the most the checks accept; hedge splits are offered in tenths.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .action_spec import ACTIONS, RATIONALE, ActionSpec
from .actions import ActionError, check_action, max_offer_price
from .observation import Observation

SPEC_BY_TYPE: dict[str, ActionSpec] = {a.action_type: a for a in ACTIONS}
HEDGE_SPLITS = tuple(k / 10 for k in range(1, 10))
CENT = 0.01


class _Rules(NamedTuple):
    pr_threshold: float
    pr_guardrail: float
    max_deferrals: int
    weeks: int
    holding_cost_rate: float


class PublicWorld:
    """The public state an Observation shows, with the attributes the engine's precondition
    checks read on a World (records have the entities' field names)."""

    __slots__ = (
        "budget_remaining",
        "cfg",
        "contracts_by_req",
        "escalations_left",
        "prs",
        "req_by_id",
        "sup_by_id",
        "threads",
        "week",
    )

    def __init__(self, obs: Observation) -> None:
        self.week = obs.week
        self.sup_by_id = {s.id: s for s in obs.suppliers}
        self.req_by_id = {r.id: r for r in obs.requirements}
        self.threads = obs.threads
        self.budget_remaining = obs.budget_remaining
        self.prs = obs.purchase_requisitions
        self.escalations_left = obs.escalations_left
        self.contracts_by_req: dict[str, list[Any]] = {r.id: [] for r in obs.requirements}
        for c in obs.contracts:
            self.contracts_by_req.setdefault(c.requirement_id, []).append(c)
        self.cfg = _Rules(
            obs.pr_threshold,
            obs.pr_guardrail,
            obs.max_deferrals,
            obs.weeks,
            obs.holding_cost_rate,
        )


@dataclass(frozen=True, slots=True)
class Allowed:
    """What one field of an option may hold: one of ``values``, or a number in
    (low, high] (``integer``: a whole number in [low, high])."""

    values: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    integer: bool = False
    required: bool = True

    def schema(self) -> dict[str, Any]:
        if self.values:
            if len(self.values) == 1:
                return {"const": self.values[0]}
            return {"enum": list(self.values)}
        if self.integer:
            return {"type": "integer", "minimum": int(self.low), "maximum": int(self.high)}
        return {"type": "number", "exclusiveMinimum": self.low, "maximum": self.high}

    def admits(self, value: Any) -> bool:
        if self.values:
            return value in self.values
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.integer:
            return float(value).is_integer() and self.low <= value <= self.high
        return self.low < value <= self.high


def one(value: Any) -> Allowed:
    return Allowed(values=(value,))


@dataclass(frozen=True, slots=True)
class Option:
    """A family of valid actions: one action type and what each of its fields may hold."""

    action_type: str
    fields: tuple[tuple[str, Allowed], ...]
    note: str = ""  # what a reader needs to pick from it (an agreed price, a cost)

    def schema(self, text_max: int) -> dict[str, Any]:
        spec = SPEC_BY_TYPE[self.action_type]
        allowed = dict(self.fields)
        props: dict[str, Any] = {"action_type": {"const": self.action_type}}
        required = ["action_type"]
        for name in (*spec.required, *spec.optional):
            if name in allowed:
                props[name] = allowed[name].schema()
                if allowed[name].required:
                    required.append(name)
            elif name == "message":
                props[name] = {"type": "string", "maxLength": text_max}
        props[RATIONALE] = {"type": "string", "maxLength": text_max}
        return {
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": False,
        }

    def admits(self, action: dict[str, Any]) -> bool:
        if action.get("action_type") != self.action_type:
            return False
        allowed = dict(self.fields)
        texts = {"message", RATIONALE}
        for name, value in action.items():
            if name == "action_type" or name in texts:
                continue
            if name not in allowed or not allowed[name].admits(value):
                return False
        return all(name in action for name, a in allowed.items() if a.required)

    def to_dict(self) -> dict[str, Any]:
        """JSON for a form: each field's allowed ``values``, or its numeric range."""
        fields = {}
        for name, a in self.fields:
            if a.values:
                fields[name] = {"values": list(a.values), "required": a.required}
            else:
                fields[name] = {"low": a.low, "high": a.high, "integer": a.integer}
        return {"action_type": self.action_type, "fields": fields, "note": self.note}

    def text(self) -> str:
        parts = []
        for name, a in self.fields:
            if a.values:
                shown = a.values[0] if len(a.values) == 1 else "|".join(map(str, a.values))
                parts.append(f"{name}={shown}" if a.required else f"[{name}={shown}]")
            elif a.integer:
                parts.append(f"{name} {int(a.low)}-{int(a.high)}")
            else:
                parts.append(f"{name} up to {a.high:,.2f}")
        note = f" ({self.note})" if self.note else ""
        return f"{self.action_type} {', '.join(parts)}{note}".rstrip()


@dataclass(frozen=True, slots=True)
class ActionMask:
    """The valid actions of one observation, as options."""

    options: tuple[Option, ...] = field(default=())

    def json_schema(self, text_max: int) -> dict[str, Any]:
        """One JSON object that is one of the options (flat ``anyOf``, as grammar compilers
        such as xgrammar take it)."""
        return {"anyOf": [o.schema(text_max) for o in self.options]}

    def admits(self, action: Any) -> bool:
        return isinstance(action, dict) and any(o.admits(action) for o in self.options)

    def to_list(self) -> list[dict[str, Any]]:
        return [o.to_dict() for o in self.options]

    def lines(self) -> list[str]:
        return [f"- {o.text()}" for o in self.options]

    @property
    def action_types(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(o.action_type for o in self.options))


def _passes(world: PublicWorld, action: dict[str, Any]) -> bool:
    try:
        check_action(world, action)
    except ActionError:
        return False
    return True


def _cents_below(x: float) -> float:
    """The largest whole-cent amount at or under x (a schema bound the check accepts)."""
    cents = math.floor(x * 100)
    return cents / 100 if cents / 100 <= x else (cents - 1) / 100


def _largest(passes: Callable[[int], bool], low: int, high: int) -> int:
    """The largest n in [low, high] with passes(n), given passes(low) and that passing is
    monotone (once n fails, every larger n fails)."""
    while low < high:
        mid = (low + high + 1) // 2
        if passes(mid):
            low = mid
        else:
            high = mid - 1
    return low


def valid_actions(obs: Observation) -> ActionMask:
    """The actions valid in ``obs`` (see the module docstring)."""
    world = PublicWorld(obs)
    sups = obs.suppliers
    reqs = [r for r in obs.requirements if not r.decided]
    options: list[Option] = []
    ok = _passes

    for r in reqs:
        high = _cents_below(max_offer_price(r))
        for s in sups:
            pair = {"supplier_id": s.id, "requirement_id": r.id}
            if ok(world, {"action_type": "negotiate", **pair, "price": high}):
                fields = (("supplier_id", one(s.id)), ("requirement_id", one(r.id)))
                price = Allowed(low=0.0, high=high)
                list_price = s.list_prices.get(r.id)
                note = f"list {list_price:,.2f}" if list_price is not None else ""
                options.append(Option("negotiate", (*fields, ("price", price)), note))
    options.extend(_awards(world, obs, reqs))
    options.extend(_hedges(world, obs, reqs))
    for r in reqs:
        pr = {"action_type": "raise_pr", "requirement_id": r.id}
        if ok(world, {**pr, "amount": CENT}):
            cents = _largest(
                lambda n, pr=pr: ok(world, {**pr, "amount": n / 100}),
                1,
                max(1, math.floor(obs.budget_remaining * 100)),
            )
            amount = Allowed(low=0.0, high=cents / 100)
            options.append(Option("raise_pr", (("requirement_id", one(r.id)), ("amount", amount))))
    options.extend(_escalations(world, sups, reqs))
    options.extend(_rejections(world, sups, obs.requirements))
    deferrable = tuple(
        r.id for r in reqs if ok(world, {"action_type": "defer", "requirement_id": r.id})
    )
    defer_fields = (("requirement_id", Allowed(deferrable, required=False)),) if deferrable else ()
    options.append(Option("defer", defer_fields, "closes the week"))
    return ActionMask(tuple(options))


def _awards(world: PublicWorld, obs: Observation, reqs: Iterable[Any]) -> list[Option]:
    out = []
    for r in reqs:
        for s in obs.suppliers:
            base = {"action_type": "award_contract", "supplier_id": s.id, "requirement_id": r.id}
            if not _passes(world, {**base, "quantity": 1}):
                continue
            most = _largest(
                lambda q, base=base: _passes(world, {**base, "quantity": q}),
                1,
                max(1, r.quantity_needed),
            )
            price = obs.threads[(s.id, r.id)].awardable_price(obs.week)
            fields = (
                ("supplier_id", one(s.id)),
                ("requirement_id", one(r.id)),
                ("quantity", Allowed(low=1, high=most, integer=True)),
            )
            out.append(Option("award_contract", fields, f"at {price:,.2f} per unit"))
    return out


def _hedges(world: PublicWorld, obs: Observation, reqs: Iterable[Any]) -> list[Option]:
    out = []
    for r in reqs:
        ids = [s for (s, rid) in obs.threads if rid == r.id]
        for first in ids:
            for second in ids:
                if first == second:
                    continue
                base = {
                    "action_type": "hedge",
                    "requirement_id": r.id,
                    "supplier_id": first,
                    "hedge_supplier_id": second,
                }
                splits = tuple(x for x in HEDGE_SPLITS if _passes(world, {**base, "split": x}))
                if splits:
                    fields = (
                        ("requirement_id", one(r.id)),
                        ("supplier_id", one(first)),
                        ("hedge_supplier_id", one(second)),
                        ("split", Allowed(splits)),
                    )
                    out.append(Option("hedge", fields))
    return out


def _escalations(world: PublicWorld, sups: Iterable[Any], reqs: Iterable[Any]) -> list[Option]:
    out = []
    for r in reqs:
        base = {"action_type": "escalate", "requirement_id": r.id}
        bare = _passes(world, base)
        via = tuple(s.id for s in sups if _passes(world, {**base, "supplier_id": s.id}))
        if not bare and not via:
            continue
        fields: tuple[tuple[str, Allowed], ...] = (("requirement_id", one(r.id)),)
        if via:
            fields += (("supplier_id", Allowed(via, required=not bare)),)
        note = "approves its pending PR" if bare else "management call on the thread"
        out.append(Option("escalate", fields, note))
    return out


def _rejections(world: PublicWorld, sups: Iterable[Any], reqs: Iterable[Any]) -> list[Option]:
    out = []
    for s in sups:
        base = {"action_type": "reject", "supplier_id": s.id}
        if not _passes(world, base):
            continue
        rids = tuple(r.id for r in reqs if _passes(world, {**base, "requirement_id": r.id}))
        fields: tuple[tuple[str, Allowed], ...] = (("supplier_id", one(s.id)),)
        if rids:
            fields += (("requirement_id", Allowed(rids, required=False)),)
        out.append(Option("reject", fields))
    return out

"""Prompts: what the buyer model reads (the supplier's private prompt is in
``suppliers/prompts.py``).

The buyer prompt is built from the public Observation only, as a procurement manager
would read it (week, budget, open requirements, suppliers, open threads with their last
rounds and tells, agreements, PRs, the rules in a few lines and the seven actions). It is
deterministic (same observation, same text) so temperature-0 runs replay exactly, and it
is capped: the oldest negotiation rounds go first, then old events, so a long episode
never outgrows a small model's context.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..llm.backend import ChatMessage
from ..observation import Observation
from ..suppliers.guard import fmt_price
from ..world.entities import TELL_NAMES, Round, Thread
from ..world.records import (
    ContractRecord,
    PurchaseRequisitionRecord,
    RequirementRecord,
    SupplierRecord,
)
from .action_schema import ACTION_MODELS

ROUNDS_PER_THREAD = 3  # the last rounds of each thread a buyer sees
EVENTS_SHOWN = 6
MAX_PROMPT_CHARS = 12_000  # about 3,000 tokens: inside a small model's 8k context
TRUNCATED = "\n[... state truncated to fit the prompt limit]"

_FIELD_HINTS = {
    "price": "unit price",
    "amount": "total money",
    "quantity": "units",
    "split": "share 0-1 for supplier_id",
    "message": "text to the supplier",
}


def _action_lines() -> list[str]:
    """The seven actions and their fields, read off the reply models (one source)."""
    lines = []
    for model in ACTION_MODELS:
        fields = []
        for name, info in model.model_fields.items():
            if name in ("action_type", "rationale"):
                continue
            hint = f" ({_FIELD_HINTS[name]})" if name in _FIELD_HINTS else ""
            fields.append(f"{name}{'' if info.is_required() else '?'}{hint}")
        tag = model.model_fields["action_type"].annotation.__args__[0]
        lines.append(f"- {tag}: {', '.join(fields) or '(no fields)'}")
    return lines


_ACTIONS = "\n".join(_action_lines())


def buyer_rules(obs: Observation) -> str:
    """The rules of the buyer's world, whatever the reply format (JSON or tool calls)."""
    return (
        "You are the buyer of a company's procurement team, negotiating with suppliers.\n"
        "Goal: every requirement delivered by its deadline (critical ones first), at the "
        "lowest unit price you can get, never above its ceiling, within the budget.\n"
        "Rules:\n"
        f"- Each action uses one of {obs.actions_per_week} slots of the week; when they run "
        "out, or on defer, the week closes (deliveries, deadlines, market moves).\n"
        "- A supplier answers an offer with accept (an agreed price), counter (a standing "
        "price you take by awarding) or walk_away. Quotes stay valid "
        f"{obs.quote_validity_weeks} week(s). Counters only come down; suppliers never go "
        "below a hidden floor, and a lowball far below it can end the thread.\n"
        "- award_contract buys at the agreed or standing price only, quantity <= still "
        "needed and <= the supplier's capacity, cost <= budget remaining.\n"
        f"- Once a requirement's spend (its awards together) passes "
        f"{fmt_price(obs.pr_threshold)}, its approved purchase requisitions must cover all "
        f"of it (raise_pr: approved after {obs.pr_lead_weeks} week(s); a requirement's PRs "
        f"together ask <= {obs.pr_guardrail} x ceiling x quantity).\n"
        + _escalation_terms(obs)
        + "- Invalid actions waste the slot and cost score. Tells are noisy signals in 0-1.\n"
        + _bilateral_terms(obs)
    )


def _escalation_terms(obs: Observation) -> str:
    """What an escalation does, with the published range of its hidden fraction."""
    low, high = obs.escalation_range
    return (
        "- escalate approves a pending PR now or, naming a supplier, has management call it: "
        f"its standing counter moves {low:.0%}-{high:.0%} of the way to its hidden floor "
        "(a fresh hidden share each call). Each escalation costs score.\n"
    )


def _bilateral_terms(obs: Observation) -> str:
    """A bilateral game's public terms: the seller's round limit and unit cost."""
    if obs.max_rounds is None or obs.seller_cost is None:
        return ""
    return (
        f"- One seller: it stops conceding after {obs.max_rounds} offers (then it takes an "
        f"offer at its ask or walks); its unit cost is {fmt_price(obs.seller_cost)}.\n"
    )


@cache
def _system_prompt(rules: str, narrator: bool) -> str:
    if narrator:
        return rules + (
            "Your colleague has already chosen the next action. Write what goes with it: "
            "reply with one JSON object only."
        )
    return rules + (
        "Actions (? = optional; every action may add rationale?: one sentence why):\n"
        f"{_ACTIONS}\n"
        "Each turn lists what is valid now. Reply with ONE JSON object, one of those "
        "actions, and nothing else, e.g. "
        '{"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01", '
        '"price": <your unit price>, "message": "<a short note to the supplier>", '
        '"rationale": "<one sentence>"}'
    )


def buyer_system_prompt(obs: Observation, *, narrator: bool = False) -> str:
    """The system prompt: the same text for every episode with the same rules, built once
    per process (backends then cache its tokens' keys and values once too)."""
    return _system_prompt(buyer_rules(obs), narrator)


@dataclass(frozen=True, slots=True)
class _Line:
    text: str
    age: tuple[int, int, int] | None = None  # (week, round, order) for droppable rounds
    event: bool = False


def budget_text(obs: Observation) -> str:
    """The budget as a buyer weighs it: what is left, and per unit still needed."""
    needed = sum(r.quantity_needed for r in obs.requirements)
    per_unit = (
        f", {fmt_price(obs.budget_remaining / needed)} per unit still needed" if needed else ""
    )
    return (
        f"Budget: {fmt_price(obs.budget_remaining)} left of {fmt_price(obs.budget_total)}"
        f"{per_unit}."
    )


def requirement_text(r: RequirementRecord) -> str:
    if r.decided:
        return f"- {r.id} {r.name}: {r.status}"
    crit = ", CRITICAL" if r.critical else ""
    return (
        f"- {r.id} {r.name} ({r.category}): {r.quantity_needed} of {r.quantity} {r.unit} "
        f"still needed by week {r.deadline_week}{crit}; reference "
        f"{fmt_price(r.reference_price)}/{r.unit}, ceiling {fmt_price(r.ceiling_unit_price)}; "
        f"{r.status}"
    )


def supplier_text(s: SupplierRecord) -> str:
    flags = ("" if s.active else " INACTIVE") + (" REJECTED" if s.rejected else "")
    prices = ", ".join(f"{rid} {fmt_price(p)}" for rid, p in s.list_prices.items())
    caps = ", ".join(f"{c} {n}" for c, n in s.capacity.items())
    return (
        f"- {s.id} {s.name}: list price {prices}; capacity {caps}; lead "
        f"{s.lead_time_weeks} wk, rating {s.rated_reliability:.2f}{flags}"
    )


def contract_text(c: ContractRecord) -> str:
    return (
        f"- {c.id} {c.supplier_id}/{c.requirement_id} {c.quantity} x "
        f"{fmt_price(c.unit_price)} due week {c.due_week}, {c.status}"
    )


def pr_text(p: PurchaseRequisitionRecord) -> str:
    return (
        f"- {p.id} {p.requirement_id} {fmt_price(p.amount)} {p.status}"
        f" (decided after week {p.matures_week})"
    )


def round_text(rd: Round, with_tells: bool) -> str:
    offer = "management call" if rd.buyer_offer is None else f"you {fmt_price(rd.buyer_offer)}"
    price = "" if rd.supplier_price is None else f" {fmt_price(rd.supplier_price)}"
    text = f"    r{rd.round} wk{rd.week}: {offer} -> {rd.response}{price}"
    if rd.message:
        text += f' "{rd.message}"'
    if with_tells and rd.tells:
        tells = (f"{k} {rd.tells[k]:.2f}" for k in TELL_NAMES if k in rd.tells)
        text += "; tells " + ", ".join(tells)
    return text


def thread_head(th: Thread) -> str:
    head = f"- {th.supplier_id}/{th.requirement_id} {th.status}, {len(th.rounds)} rounds"
    if th.status == "agreed" and th.agreed_price is not None:
        head += f", AGREED {fmt_price(th.agreed_price)} valid to week {th.valid_until_week}"
    elif th.counter_price is not None:
        head += (
            f", standing counter {fmt_price(th.counter_price)} "
            f"valid to week {th.counter_valid_until}"
        )
    return head


NEXT_JSON = "Your next action (one JSON object):"


def state_lines(
    obs: Observation, next_line: str = NEXT_JSON, *, with_error: bool = True
) -> list[_Line]:
    """The whole public state as lines (droppable rounds and events marked), ending with
    ``next_line``; ``with_error=False`` leaves out the last action's error."""
    last_week = obs.weeks - 1
    out = [
        _Line(
            f"Week {obs.week} (weeks 0-{last_week}), {obs.actions_left_this_week} of "
            f"{obs.actions_per_week} slots left this week, {obs.escalations_left} "
            "escalations left."
        ),
        _Line(budget_text(obs)),
        _Line("Requirements:"),
    ]
    out.extend(_Line(requirement_text(r)) for r in obs.requirements)
    out.append(_Line("Suppliers:"))
    out.extend(_Line(supplier_text(s)) for s in obs.suppliers)
    out.append(_Line("Threads:" if obs.threads else "Threads: none yet."))
    order = 0
    for th in obs.threads.values():
        out.append(_Line(thread_head(th)))
        if th.status not in ("open", "agreed"):
            continue
        shown = th.rounds[-ROUNDS_PER_THREAD:]
        for i, rd in enumerate(shown):
            order += 1
            out.append(_Line(round_text(rd, i == len(shown) - 1), (rd.week, rd.round, order)))
    _section(
        out,
        "Contracts:",
        [contract_text(c) for c in obs.contracts],
    )
    _section(
        out,
        "Purchase requisitions:",
        [pr_text(p) for p in obs.purchase_requisitions],
    )
    _section(
        out,
        "Recent events:",
        [f"- wk{e.week} {e.kind}: {e.text}" for e in obs.events[-EVENTS_SHOWN:]],
        event=True,
    )
    err = obs.last_action.get("error") if obs.last_action and with_error else None
    if err:
        out.append(
            _Line(
                f"Your previous action was INVALID ({err['code']}): {err['message']} "
                "Fix it or choose another action."
            )
        )
    out.append(_Line(next_line))
    return out


def _section(out: list[_Line], title: str, texts: list[str], *, event: bool = False) -> None:
    if texts:
        out.append(_Line(title, event=event))
        out.extend(_Line(t, event=event) for t in texts)


def _compact(action: dict[str, Any]) -> str:
    return json.dumps(action, separators=(",", ":"), sort_keys=True)[:300]


def fit_lines(lines: Sequence[_Line], max_chars: int) -> str:
    """Join the lines, dropping the oldest rounds, then old events, until the text fits;
    as a last resort the text is cut (the head, with the requirements, survives)."""
    keep = list(lines)
    size = sum(len(x.text) + 1 for x in keep)
    if size > max_chars:
        rounds = sorted((x for x in keep if x.age is not None), key=lambda x: x.age)
        events = [x for x in keep if x.event]
        events = events[1:] + events[:1]  # oldest events first, their heading last
        dropped: set[int] = set()
        for x in [*rounds, *events]:
            if size <= max_chars:
                break
            dropped.add(id(x))
            size -= len(x.text) + 1
        keep = [x for x in keep if id(x) not in dropped]
    text = "\n".join(x.text for x in keep)
    if len(text) > max_chars:
        text = text[: max(0, max_chars - len(TRUNCATED))] + TRUNCATED
    return text


def buyer_state_text(
    obs: Observation,
    *,
    max_chars: int = MAX_PROMPT_CHARS,
    next_line: str = NEXT_JSON,
    with_error: bool = True,
) -> str:
    """The public state as the buyer reads it, ending with ``next_line`` (what to do);
    ``with_error=False`` leaves out the previous action's error where the caller has
    already reported it."""
    return fit_lines(state_lines(obs, next_line, with_error=with_error), max_chars)


def narrator_messages(
    obs: Observation, action: dict[str, Any], *, max_chars: int = MAX_PROMPT_CHARS
) -> tuple[ChatMessage, ...]:
    """The chat for a narrator turn: the state, the chosen action, and what to write."""
    if action.get("action_type") == "negotiate":
        ask = (
            'Reply {"message": ..., "rationale": ...}: message = a short, polite note to the '
            "supplier that states the offered unit price exactly; rationale = one sentence "
            "on why this offer."
        )
    else:
        ask = 'Reply {"rationale": ...}: one sentence on why this action now.'
    state = fit_lines(state_lines(obs)[:-1], max_chars)
    return (
        ChatMessage("system", buyer_system_prompt(obs, narrator=True)),
        ChatMessage("user", f"{state}\nChosen action: {_compact(action)}\n{ask}"),
    )

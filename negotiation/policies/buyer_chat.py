"""The LLM buyer's episode as one multi-turn chat: what the model reads and answers.

The first turn is the whole public state (``prompts``) and the actions valid now; each
later turn appends only what changed since the model's last action (its result, the
supplier's answer, new rounds, events, changed requirements, contracts and PRs; at a new
week the suppliers' moved list prices), the slots left (the week, escalations and budget
where they changed) and what is valid now against the last turn's list (as before, the
lines that changed, what is no longer valid), so a backend that keeps the chat's
key/value cache computes few new tokens (every token appended is prefill at the next
step). The model's own replies are kept as assistant turns exactly as it wrote them.
When the chat outgrows ``max_chars`` it starts again from the whole state (the system
prompt, the same for every episode with the same rules, stays the shared prefix).

This is the one renderer of the buyer's chat: play and training data both use it, so a
model is trained in exactly the format it plays in. It is deterministic (same
observations and replies, same text).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from ..action_mask import SPEC_BY_TYPE, ActionMask, Option, valid_actions
from ..action_spec import RATIONALE
from ..llm.backend import ChatMessage
from ..llm.replies import text_max_for
from ..observation import Observation
from ..suppliers.guard import fmt_price
from .prompts import (
    MAX_PROMPT_CHARS,
    NEXT_JSON,
    ROUNDS_PER_THREAD,
    budget_text,
    buyer_system_prompt,
    contract_text,
    fit_lines,
    pr_text,
    requirement_text,
    round_text,
    state_lines,
    supplier_text,
    thread_head,
)

FIRST_TURN_SHARE = 2  # a restart's whole-state turn may take 1/2 of the chat's limit
MAX_NOT_ACTION_CHARS = 300  # how much of a stored non-action a chat keeps
TEXT_FIELDS = 2  # an action's free-text fields (message, rationale) share its reply budget


def action_reply(action: Any, *, max_tokens: int) -> str:
    """The JSON a constrained decoder writes for ``action``: ``action_type``, then the
    action's fields in schema order, free text cut to the schema's ``maxLength``. The
    ``rationale`` is left out (optional, and it never changes the world): shorter replies
    train and play faster. Raises ValueError for what is no buyer action."""
    spec = SPEC_BY_TYPE.get(action.get("action_type")) if isinstance(action, dict) else None
    if spec is None:
        raise ValueError(f"not a buyer action: {str(action)[:200]}")
    text_max = text_max_for(max_tokens, TEXT_FIELDS)
    out: dict[str, Any] = {"action_type": spec.action_type}
    for name in (*spec.required, *spec.optional):
        if name in action and action[name] is not None and name != RATIONALE:
            value = action[name]
            out[name] = value[:text_max] if isinstance(value, str) else value
    return json.dumps(out)


def valid_now(mask: ActionMask) -> dict[str, str]:
    """The valid actions as a buyer reads them, every id and limit named (list prices are
    in the state): one line per key (an action on its ids), in a fixed order."""
    by_type: dict[str, list[Option]] = defaultdict(list)
    for option in mask.options:
        by_type[option.action_type].append(option)
    lines: dict[str, str] = {}
    offers: dict[tuple[str, float], list[str]] = defaultdict(list)
    for o in by_type.pop("negotiate", []):
        f = dict(o.fields)
        offers[(f["requirement_id"].values[0], f["price"].high)].append(f["supplier_id"].values[0])
    for (rid, high), sids in offers.items():
        lines[f"negotiate {rid} with {', '.join(sids)}"] = (
            f"- negotiate {rid} (unit price up to {fmt_price(high)}) with {', '.join(sids)}"
        )
    for o in by_type.pop("award_contract", []):
        f = dict(o.fields)
        q = f["quantity"]
        pair = f"{f['supplier_id'].values[0]}/{f['requirement_id'].values[0]}"
        lines[f"award_contract {pair}"] = (
            f"- award_contract {pair} {o.note}: quantity {int(q.low)}-{int(q.high)}"
        )
    prs = [dict(o.fields) for o in by_type.pop("raise_pr", [])]
    if prs:
        limits = "; ".join(
            f"{f['requirement_id'].values[0]} {fmt_price(f['amount'].high)}" for f in prs
        )
        lines["raise_pr"] = f"- raise_pr, amount up to: {limits}"
    rejects = [dict(o.fields)["supplier_id"].values[0] for o in by_type.pop("reject", [])]
    if rejects:
        lines["reject"] = f"- reject {', '.join(rejects)} (a whole supplier, or one requirement_id)"
    for o in by_type.pop("defer", []):
        some = dict(o.fields).get("requirement_id")
        moved = (
            f" (with requirement_id {'|'.join(some.values)}: moves that deadline)" if some else ""
        )
        lines["defer"] = f"- defer: closes the week{moved}"
    for options in by_type.values():
        lines.update((o.text(), f"- {o.text()}") for o in options)
    return lines


def valid_now_lines(mask: ActionMask) -> list[str]:
    """The whole list of valid actions, under its heading."""
    return ["Valid now:", *valid_now(mask).values()]


def valid_changes(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """What is valid now, said against the last turn's list: the whole list when nothing
    of it is left as it was, else only the lines that are new or changed and the actions
    no longer valid."""
    if now == before:
        return ["Valid now: as before."]
    changed = [text for key, text in now.items() if before.get(key) != text]
    if len(changed) == len(now):
        return ["Valid now:", *changed]
    gone = [key for key in before if key not in now]
    lines = ["Valid now: as before, except", *changed]
    if gone:
        lines.append(f"- no longer: {'; '.join(gone)}")
    return lines


def _changes(prev: Observation, obs: Observation) -> list[str]:
    """What changed between two observations, as the buyer needs to hear it."""
    out = []
    err = obs.last_action.get("error")
    if err:
        out.append(f"That action was INVALID ({err['code']}): {err['message']}")
    for key, th in obs.threads.items():
        before = prev.threads.get(key)
        if before == th:
            continue
        out.append(thread_head(th))
        seen = len(before.rounds) if before is not None else 0
        new = th.rounds[seen:][-ROUNDS_PER_THREAD:]
        out.extend(round_text(rd, i == len(new) - 1) for i, rd in enumerate(new))
    if obs.week != prev.week:
        out.append(f"Week {obs.week} began. Suppliers now:")
        out.extend(supplier_text(s) for s in obs.suppliers)
    else:
        before_sup = {s.id: s for s in prev.suppliers}
        out.extend(supplier_text(s) for s in obs.suppliers if before_sup.get(s.id) != s)
    before_req = {r.id: r for r in prev.requirements}
    out.extend(requirement_text(r) for r in obs.requirements if before_req.get(r.id) != r)
    old_contracts = set(prev.contracts)
    out.extend(contract_text(c) for c in obs.contracts if c not in old_contracts)
    old_prs = set(prev.purchase_requisitions)
    out.extend(pr_text(p) for p in obs.purchase_requisitions if p not in old_prs)
    old_events = set(prev.events)
    out.extend(f"- wk{e.week} {e.kind}: {e.text}" for e in obs.events if e not in old_events)
    return out


def _status(prev: Observation, obs: Observation) -> str:
    """The slots left, and the week, escalations and budget where they changed."""
    if obs.week != prev.week:
        text = (
            f"Week {obs.week} of 0-{obs.weeks - 1}, {obs.actions_left_this_week} of "
            f"{obs.actions_per_week} slots left"
        )
    else:
        text = f"{obs.actions_left_this_week} of {obs.actions_per_week} slots left this week"
    if obs.escalations_left != prev.escalations_left:
        text += f", {obs.escalations_left} escalations left"
    budget = budget_text(obs)
    return f"{text}. {budget}" if budget != budget_text(prev) else f"{text}."


class BuyerChat:
    """One episode's chat. ``prompt(obs, mask)`` gives the messages for the next turn;
    ``answer(text)`` records what the model answered (or the action played for it)."""

    def __init__(self, *, max_chars: int) -> None:
        self.max_chars = max_chars
        self.reset()

    def reset(self) -> None:
        self.messages: list[ChatMessage] = []
        self._last: Observation | None = None
        self._valid: dict[str, str] = {}  # what the last turn said is valid
        self.restarts = 0

    def prompt(self, obs: Observation, mask: ActionMask) -> tuple[ChatMessage, ...]:
        valid = valid_now(mask)
        if self._last is not None and self.messages[-1].role == "assistant":
            changes = "\n".join(_changes(self._last, obs)) or "Nothing changed."
            said = "\n".join(valid_changes(self._valid, valid))
            turn = f"Result:\n{changes}\n{_status(self._last, obs)}\n{said}\n{NEXT_JSON}"
            if self._size() + len(turn) <= self.max_chars:
                self.messages.append(ChatMessage("user", turn))
                self._last, self._valid = obs, valid
                return tuple(self.messages)
            self.restarts += 1
        self.messages = [
            ChatMessage("system", buyer_system_prompt(obs)),
            first_turn(obs, mask, self.max_chars // FIRST_TURN_SHARE),
        ]
        self._last, self._valid = obs, valid
        return tuple(self.messages)

    def answer(self, text: str) -> None:
        self.messages.append(ChatMessage("assistant", text))

    def answer_action(self, action: Any, *, max_tokens: int) -> None:
        """Record an action the model did not write itself (a fallback's, or a stored one
        replayed) as its turn: the reply a constrained decoder writes for it, as training
        data writes every turn; what is no buyer action, as its text."""
        try:
            self.answer(action_reply(action, max_tokens=max_tokens))
        except ValueError:
            self.answer(str(action)[:MAX_NOT_ACTION_CHARS])

    def _size(self) -> int:
        return sum(len(m.content) for m in self.messages[1:])


def first_turn(obs: Observation, mask: ActionMask, max_chars: int) -> ChatMessage:
    """The whole public state, what is valid now, and what to answer."""
    valid = valid_now_lines(mask)
    tail = "\n".join([*valid, NEXT_JSON])
    state = fit_lines(state_lines(obs)[:-1], max(200, max_chars - len(tail) - 1))
    return ChatMessage("user", f"{state}\n{tail}")


def buyer_messages(
    obs: Observation, *, max_chars: int = MAX_PROMPT_CHARS
) -> tuple[ChatMessage, ...]:
    """A chat's opening for ``obs`` alone: the system prompt and the whole-state turn."""
    return ChatMessage("system", buyer_system_prompt(obs)), first_turn(
        obs, valid_actions(obs), max_chars
    )

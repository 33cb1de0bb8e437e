"""A deterministic test double for LLM backends, and scripted "models" for it.

``ScriptedBackend`` answers each request with ``reply(request)`` (a pure function of the
request, so batching and thread interleaving cannot change an answer) or with the next
text of a list; it counts generate() calls and batch sizes like a real backend, and it
refuses overlapping calls, as a real in-process model would corrupt them.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Sequence

from negotiation.llm import ChatRequest, ChatResult, LLMBackend
from negotiation.llm.backend import FinishReason

Reply = Callable[[ChatRequest], str]


class ScriptedBackend(LLMBackend):
    name = "scripted"

    def __init__(
        self,
        reply: Reply | Sequence[str],
        *,
        delay_s: float = 0.0,
        error: Callable[[ChatRequest], str | None] | None = None,
        finish: FinishReason = "stop",
    ) -> None:
        super().__init__()
        self._reply = reply
        self._queue = None if callable(reply) else list(reply)
        self.delay_s = delay_s
        self.error = error
        self.finish = finish  # "length": every reply is one the token limit cut
        self.requests: list[ChatRequest] = []
        self._busy = threading.Lock()

    def generate(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        if not self._busy.acquire(blocking=False):
            raise RuntimeError("overlapping generate() calls")
        try:
            if self.delay_s:
                time.sleep(self.delay_s)  # one "forward pass" per call, whatever the batch
            results = [self._one(r) for r in requests]
            self.requests.extend(requests)
            self.stats.record(results)
            return results
        finally:
            self._busy.release()

    def _one(self, request: ChatRequest) -> ChatResult:
        failure = self.error(request) if self.error else None
        if failure:
            return ChatResult("", "timeout", error=failure)
        text = self._queue.pop(0) if self._queue is not None else self._reply(request)
        return ChatResult(text, self.finish, prompt_tokens=len(request.messages[-1].content) // 4)


def prompt(request: ChatRequest) -> str:
    return "\n".join(m.content for m in request.messages)


N = r"(\d[\d,]*(?:\.\d+)?)"  # a formatted price: 1,234.50


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def is_supplier(request: ChatRequest) -> bool:
    return "sales representative" in request.messages[0].content


def fair_supplier(request: ChatRequest) -> str:
    """A well-behaved supplier model: accepts at or above its planned ask, else counters
    at it."""
    text = prompt(request)
    offer = _num(re.search(rf"The buyer offers {N} per unit", text).group(1))
    ask = _num(re.search(rf"planned ask now: {N}", text).group(1))
    if offer >= ask:
        return json.dumps({"decision": "accept", "price": offer, "message": "Deal."})
    return json.dumps({"decision": "counter", "price": ask, "message": "We can do {price}."})


_CEILING = re.compile(rf"^- (R\d+) .*? still needed by week \d+.*?ceiling {N};", re.M)
_AWARD = re.compile(rf"^- award_contract (S\d+)/(R\d+) at {N} per unit: quantity 1-(\d+)$", re.M)
_NEGOTIATE = re.compile(r"^- negotiate (R\d+) \(unit price up to [\d,.]+\) with (S\d+)", re.M)


def _valid_key(line: str) -> str:
    """The action a "Valid now" line is about, as the chat names it under "no longer"."""
    if m := re.match(r"- negotiate (R\d+) \(unit price up to [\d,.]+\) with (.+)$", line):
        return f"negotiate {m[1]} with {m[2]}"
    if m := re.match(r"- award_contract (S\d+/R\d+) ", line):
        return f"award_contract {m[1]}"
    if m := re.match(r"- (raise_pr|reject|defer)\b", line):
        return m[1]
    return line.removeprefix("- ")


def valid_now_text(request: ChatRequest) -> str:
    """The valid actions as a reader of the whole chat knows them now: each turn's list,
    or what it says changed ("as before, except", "- no longer: ...")."""
    known: dict[str, str] = {}
    for message in request.messages:
        if message.role != "user" or "Valid now:" not in message.content:
            continue
        head, *lines = message.content.split("Valid now:")[1].split("\n")
        lines = [x for x in lines if x.startswith("- ")]
        if not head.strip().startswith("as before"):
            known = {}
        for line in lines:
            if line.startswith("- no longer: "):
                for key in line.removeprefix("- no longer: ").split("; "):
                    known.pop(key, None)
            else:
                known[_valid_key(line)] = line
    return "\n".join(known.values())


def simple_buyer(request: ChatRequest) -> str:
    """A plain scripted buyer model that reads its latest turn: award the most it may of a
    price under the ceiling, else offer 85 % of the ceiling where it may negotiate; raise a
    PR when the engine asks for one; else defer."""
    text = prompt(request)
    turn = request.messages[-1].content
    ceilings = {m[1]: _num(m[2]) for m in _CEILING.finditer(text)}  # the latest wins
    pr = re.search(rf"INVALID \(pr_required\): Cost {N} .*? for (R\d+)", turn)
    if pr:
        return json.dumps(
            {
                "action_type": "raise_pr",
                "requirement_id": pr.group(2),
                "amount": _num(pr.group(1)),
                "rationale": "The award needs approval.",
            }
        )
    valid = valid_now_text(request)
    for sid, rid, price, most in _AWARD.findall(valid):
        if _num(price) <= ceilings.get(rid, 0.0):  # a ceiling the chat still shows
            return json.dumps(
                {
                    "action_type": "award_contract",
                    "supplier_id": sid,
                    "requirement_id": rid,
                    "quantity": int(most),
                    "rationale": "Price is under our ceiling.",
                }
            )
    for rid, sid in _NEGOTIATE.findall(valid):
        if rid not in ceilings:
            continue
        price = round(ceilings[rid] * 0.85, 2)
        return json.dumps(
            {
                "action_type": "negotiate",
                "supplier_id": sid,
                "requirement_id": rid,
                "price": price,
                "message": f"We can offer {price:.2f} per unit.",
                "rationale": "Opening below the ceiling.",
            }
        )
    return json.dumps({"action_type": "defer", "rationale": "Nothing to do this week."})


def narrator(request: ChatRequest) -> str:
    text = prompt(request)
    if '"message"' in request.messages[-1].content.split("Chosen action:")[-1]:
        price = re.search(r'"price":(\d+(?:\.\d+)?)', text)
        return json.dumps(
            {
                "message": f"Could you do {price.group(1)} per unit?",
                "rationale": "The offer generator's price.",
            }
        )
    return json.dumps({"rationale": "Following the plan."})


def both(buyer: Reply, supplier: Reply) -> Reply:
    """One model playing both sides, as one backend serves buyers and suppliers."""
    return lambda r: supplier(r) if is_supplier(r) else buyer(r)

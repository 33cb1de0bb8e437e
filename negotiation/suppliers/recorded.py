"""An episode's language-model suppliers, answered from its record instead of the model.

Replaying an episode re-runs its stored buyer actions through a fresh engine. Where a
model played a supplier the engine would ask the model again: minutes of model time to
check a record. ``RecordedReplies`` stands in for the model: before each step the caller
tells it what was stored for that step (the supplier's response and who answered), and
the LLM supplier gets that answer back as its reply. The answer passes the hard-rule
guard again unchanged (it was guarded when it was played), so the engine rebuilds the
same world; a step whose record says the rule persona answered in the model's place
(``fallback:...``) gets a failed reply, and the rule persona plays it again, as it did.
A request the record has no answer for gets a failed reply too: the replay then differs
from the record, which is what a replay is there to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..llm.backend import ChatRequest, ChatResult, LLMBackend
from .llm_supplier import SupplierReply

NO_ANSWER = ChatResult("", "error", error="The record holds no model answer for this step.")
RECORDED_FALLBACK = ChatResult("", "error", error="The record says the rule persona answered.")


class RecordedReplies(LLMBackend):
    """Not thread-safe: one per replay, told each step's record before the step."""

    name = "recorded"

    def __init__(self) -> None:
        super().__init__()
        self._answer = NO_ANSWER

    def expect(self, *, response: dict[str, Any] | None, supplier_actor: str | None) -> None:
        """The record of the step about to be replayed: its supplier ``response`` (the
        engine's ``info["response"]``) and who gave it (``StepRecord.supplier_actor``)."""
        if supplier_actor == "llm" and response:
            reply = SupplierReply(
                decision=response["response"],
                price=response.get("price"),
                message=response.get("message") or "",
            )
            self._answer = ChatResult(reply.model_dump_json())
        elif supplier_actor is not None and supplier_actor.startswith("fallback:"):
            self._answer = RECORDED_FALLBACK
        else:
            self._answer = NO_ANSWER

    def generate(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        # One supplier answers per step: a second request in the same step has no record.
        results = [self._answer if i == 0 else NO_ANSWER for i in range(len(requests))]
        self._answer = NO_ANSWER
        self.stats.record(results)
        return results

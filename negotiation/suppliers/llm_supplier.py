"""LLM supplier personas: a language model plays a supplier, inside the hard rules.

The model reads the private persona prompt (its style, floor price, stress, patience as
data; see prompts.supplier_prompt) and proposes accept / counter / walk_away with a price
and a message. It only *proposes*: the environment passes the proposal, with the brief
the model was given, through the same HardRuleGuard as every rule persona, which repairs
an accept below the floor, a counter under the floor or above the last counter, and
replaces a message that restates the brief, names a figure at or below the floor or
contradicts the decision, recording each repair with its reason. A reply that cannot be
used (backend error or timeout, no valid JSON) falls back to the rule persona's
decision, counted as an LLM fallback and recorded as the actor of that step, never
silently.
"""

from __future__ import annotations

import zlib
from typing import Literal

from ..llm.backend import ChatRequest, LLMBackend, generate_one
from ..llm.replies import (
    Price,
    ReplyModel,
    Text,
    adapter_for,
    parse_json_reply,
    reply_json_schema,
    text_max_for,
)
from .guard import ProposedDecision
from .prompts import supplier_prompt
from .rule import RULE_POLICY, SupplierContext, SupplierPolicy

FALLBACK_ACTOR = f"fallback:{RULE_POLICY.name}"


class SupplierReply(ReplyModel):
    decision: Literal["accept", "counter", "walk_away"]
    price: Price | None = None
    message: Text


def _request_seed(ctx: SupplierContext) -> int:
    """Reproducible per (thread, round) and different across episodes, without drawing
    from the world's generator: a fallback then plays exactly the rule persona's game."""
    key = f"{ctx.thread.reservation:.6f}/{ctx.thread.anchor:.6f}/{ctx.round}"
    return zlib.crc32(key.encode()) & 0x7FFFFFFF


class LLMSupplierPolicy(SupplierPolicy):
    name = "llm"

    def __init__(
        self, backend: LLMBackend, *, temperature: float = 0.0, max_tokens: int = 160
    ) -> None:
        self.backend = backend
        self.temperature = temperature
        self.max_tokens = max_tokens

    def respond(self, ctx: SupplierContext) -> ProposedDecision:
        prompt = supplier_prompt(ctx)
        request = ChatRequest(
            prompt.messages,
            seed=_request_seed(ctx),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            json_schema=reply_json_schema(SupplierReply, text_max_for(self.max_tokens, 1)),
        )
        result = generate_one(self.backend, request)
        if not result.ok:
            return self._fallback(ctx, "backend")
        reply, _ = parse_json_reply(result.text, adapter_for(SupplierReply))
        if reply is None:
            return self._fallback(ctx, "parse")
        if reply.decision == "accept":
            price = ctx.offer if reply.price is None else reply.price
        else:
            price = reply.price
        return ProposedDecision(
            reply.decision, price, reply.message, actor="llm", instructions=prompt.private
        )

    @staticmethod
    def _fallback(ctx: SupplierContext, failure: str) -> ProposedDecision:
        decision = RULE_POLICY.respond(ctx)
        decision.actor = FALLBACK_ACTOR
        decision.failure = failure
        return decision

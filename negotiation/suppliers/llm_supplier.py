"""LLM supplier personas: a language model plays a supplier, inside the hard rules.

The model reads the private persona prompt (its style, planned ask, stress, patience as
data, never its floor; see prompts.supplier_prompt) and proposes accept / counter /
walk_away with a price and a message; its reply's schema lists only the decisions the
hard rules allow for the offer (prompts.decision_schema: no accept under the floor). It
only *proposes*: the environment passes the proposal, with the brief the model was given,
through the same HardRuleGuard as every rule persona, which repairs
an accept below the floor, a counter under the floor or above the last counter, and
replaces a message that restates the brief, names a figure at or below the floor or
contradicts the decision, recording each repair with its reason. When the guard would
refuse the model's message (its decision breaks a price rule, so the message was
written for a decision that will not stand, or the message itself fails the screen), a
second, message-only call states the decision the guard holds and asks the model to
word it (prompts.message_prompt); that message is screened by the guard like the first,
and the guard's price repairs are counted as before. A reply that cannot be
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
from .guard import (
    ProposedDecision,
    fmt_price,
    hold_prices,
    public_figures,
    screen,
)
from .prompts import decision_schema, message_prompt, supplier_prompt
from .rule import RULE_POLICY, SupplierContext, SupplierPolicy

FALLBACK_ACTOR = f"fallback:{RULE_POLICY.name}"


class SupplierReply(ReplyModel):
    decision: Literal["accept", "counter", "walk_away"]
    price: Price | None = None
    message: Text


class SupplierMessage(ReplyModel):
    message: Text


def _request_seed(ctx: SupplierContext) -> int:
    """Reproducible per (thread, round) and different across episodes, without drawing
    from the world's generator: a fallback then plays exactly the rule persona's game."""
    key = f"{ctx.thread.reservation:.6f}/{ctx.thread.anchor:.6f}/{ctx.round}"
    return zlib.crc32(key.encode()) & 0x7FFFFFFF


class LLMSupplierPolicy(SupplierPolicy):
    name = "llm"

    def __init__(
        self,
        backend: LLMBackend,
        *,
        temperature: float = 0.0,
        max_tokens: int = 160,
        message_tokens: int = 96,
    ) -> None:
        self.backend = backend
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.message_tokens = message_tokens

    def respond(self, ctx: SupplierContext) -> ProposedDecision:
        seed = _request_seed(ctx)
        prompt = supplier_prompt(ctx, variant=seed)
        text_max = text_max_for(self.max_tokens, 1)
        request = ChatRequest(
            prompt.messages,
            seed=seed,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            json_schema=decision_schema(prompt.kinds, prompt.prices, text_max),
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
        proposal = ProposedDecision(
            reply.decision, price, reply.message, actor="llm", instructions=prompt.private
        )
        return self._worded(ctx, proposal)

    def _worded(self, ctx: SupplierContext, proposal: ProposedDecision) -> ProposedDecision:
        """The proposal, its message rewritten by a message-only call when the guard would
        refuse it: the held decision differs from the proposed one, or the screen refuses
        the message for the held decision. The new message is written for the held
        decision (``written_for``) and screened by the guard like any other; an unusable
        second reply keeps the first message."""
        th = ctx.thread
        kind, price, repairs = hold_prices(
            proposal.kind, proposal.price, ctx.offer, th.reservation, th.last_counter
        )
        shown = "" if price is None else fmt_price(price)
        refused = screen(
            proposal.message.replace("{price}", shown),
            kind,
            price,
            public_figures(ctx.offer, th.last_counter),
            th.reservation,
            proposal.instructions,
        )
        if not repairs and not refused:
            return proposal
        prompt = message_prompt(ctx, kind, price, variant=_request_seed(ctx) + 1)
        request = ChatRequest(
            prompt.messages,
            seed=_request_seed(ctx) + 1,
            temperature=self.temperature,
            max_tokens=self.message_tokens,
            json_schema=reply_json_schema(SupplierMessage, text_max_for(self.message_tokens, 1)),
        )
        result = generate_one(self.backend, request)
        reply, _ = parse_json_reply(result.text, adapter_for(SupplierMessage))
        if not result.ok or reply is None:
            return proposal
        proposal.message = reply.message
        proposal.written_for = (kind, price)
        proposal.instructions = f"{proposal.instructions}\n{prompt.private}"
        return proposal

    @staticmethod
    def _fallback(ctx: SupplierContext, failure: str) -> ProposedDecision:
        decision = RULE_POLICY.respond(ctx)
        decision.actor = FALLBACK_ACTOR
        decision.failure = failure
        return decision

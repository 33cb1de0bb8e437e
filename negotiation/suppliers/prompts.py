"""What a supplier model is told in private, for one buyer offer.

The persona prompt carries the supplier's hidden state (style, floor price, opening price,
planned ask, stress, patience) as data under "Private facts", and asks for a short
message in the seller's own voice, with one example of a good reply. It is handed to
the supplier's backend and nowhere else: it never enters an Observation, a step's info,
or a step record. Its private part (all but the example) goes to the guard with the
proposal, which refuses a message that restates it (guard.py).

The message prompt (message_prompt) asks for the words only, for a decision already
made: the one the guard holds when it would refuse the model's own message. It carries
the style and the public figures, never a private figure.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..llm.backend import ChatMessage
from .brief import FLOOR, OPENING, PATIENCE, PLANNED_ASK, PRIVATE_HEADER, STRESS, style_sentence
from .concession import next_ask
from .guard import fmt_price
from .rule import SupplierContext

HISTORY_ROUNDS = 3  # the last rounds of its thread a supplier model sees
REPLY_FORMAT = (
    'Reply with ONE JSON object: {"decision": "accept" | "counter" | "walk_away", '
    '"price": unit price, "message": what you say to the buyer}.'
)


@dataclass(frozen=True, slots=True)
class SupplierPrompt:
    messages: tuple[ChatMessage, ...]
    private: str  # the brief the message must not restate (the system text less its example)


def _planned_ask(ctx: SupplierContext) -> float:
    return next_ask(ctx.thread, ctx.supplier, ctx.offer, ctx.round, ctx.week).price


def _stress(level: float) -> str:
    return "high" if level >= 0.6 else "moderate" if level >= 0.3 else "low"


def supplier_prompt(ctx: SupplierContext) -> SupplierPrompt:
    """The private persona prompt of an LLM supplier for one buyer offer."""
    th, sh = ctx.thread, ctx.supplier
    item = ctx.requirement.name if ctx.requirement is not None else "the item"
    ask = fmt_price(_planned_ask(ctx))
    facts = [
        f"- style: {style_sentence(ctx.persona)}",
        f"- {FLOOR}: {fmt_price(th.reservation)} per unit; never accept or counter below it",
        f"- {OPENING}: {fmt_price(th.anchor)}; {PLANNED_ASK} now: {ask}",
        f"- {STRESS}: {_stress(sh.stress)}; {PATIENCE}: about {th.patience} offers, "
        f"this is offer {ctx.round}",
    ]
    if th.last_counter is not None:
        facts.append(f"- never counter above your last counter, {fmt_price(th.last_counter)}")
    private = (
        f"You are a sales representative of a supplier, selling {item} to a corporate buyer.\n"
        f"{PRIVATE_HEADER}:\n" + "\n".join(facts) + "\n"
        "Write to the buyer in the first person, as the seller, in one or two short "
        "sentences, without the private facts.\n" + REPLY_FORMAT
    )
    example = (
        f'Example: {{"decision": "counter", "price": {ask.replace(",", "")}, "message": '
        f'"Thank you for your offer. We can do {ask} per unit, a fair price for this '
        'quality."}'
    )
    history = []
    rounds = ctx.public_thread.rounds[-HISTORY_ROUNDS:] if ctx.public_thread else []
    for rd in rounds:
        offer = "-" if rd.buyer_offer is None else fmt_price(rd.buyer_offer)
        price = "" if rd.supplier_price is None else f" {fmt_price(rd.supplier_price)}"
        history.append(f"- buyer offered {offer}; you answered {rd.response}{price}")
    said = f' The buyer says: "{ctx.buyer_message[:500]}"' if ctx.buyer_message else ""
    user = (
        "Earlier rounds:\n" + "\n".join(history) + "\n" if history else ""
    ) + f"The buyer offers {fmt_price(ctx.offer)} per unit.{said}\nYour reply (JSON):"
    system = ChatMessage("system", f"{private}\n{example}")
    return SupplierPrompt((system, ChatMessage("user", user)), private)


MESSAGE_FORMAT = 'Reply with ONE JSON object: {"message": what you say to the buyer}.'


def decision_line(kind: str, price: float | None) -> str:
    """The decision a supplier model words, as the message prompt states it."""
    if kind == "accept":
        return f"You accept the buyer's offer of {fmt_price(price or 0.0)} per unit."
    if kind == "counter":
        return f"You counter at {fmt_price(price or 0.0)} per unit; name no other price."
    return "You end the negotiation now; name no price."


def message_prompt(ctx: SupplierContext, kind: str, price: float | None) -> SupplierPrompt:
    """The prompt of a message-only call: the decision already made (one the guard holds)
    and the buyer's offer; no private figure, only the seller's style. Its system text is
    the brief a message must not restate."""
    item = ctx.requirement.name if ctx.requirement is not None else "the item"
    private = (
        f"You are a sales representative of a supplier, selling {item} to a corporate buyer. "
        f"{style_sentence(ctx.persona)}\n"
        "Write to the buyer in the first person, as the seller, in one or two short "
        "sentences.\n" + MESSAGE_FORMAT
    )
    said = f' The buyer says: "{ctx.buyer_message[:500]}"' if ctx.buyer_message else ""
    user = (
        f"The buyer offers {fmt_price(ctx.offer)} per unit.{said}\n"
        f"{decision_line(kind, price)}\nYour message (JSON):"
    )
    return SupplierPrompt((ChatMessage("system", private), ChatMessage("user", user)), private)

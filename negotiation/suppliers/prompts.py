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

import json
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
# One worked turn per decision kind, of another sale: the buyer's words, the decision,
# and a seller's reply. Its figures are the real ones scaled by EXAMPLE_SCALE, so a reply
# that copies them names a price-like figure that is not the decision's (the guard
# refuses it) rather than one of another magnitude.
EXAMPLE_SCALE = 0.9
_EXAMPLES = {
    "accept": "Thank you, we have a deal at {price} per unit. We will confirm the order today.",
    "counter": "Thanks for the offer. The best we can do is {price} per unit, with fast delivery.",
    "walk_away": "I am sorry, we cannot work at that price. Thank you for your time.",
}


def decision_line(kind: str, price: float | None) -> str:
    """The decision a supplier model words, as the message prompt states it."""
    if kind == "accept":
        return f"Your decision: accept {fmt_price(price or 0.0)} per unit."
    if kind == "counter":
        return f"Your decision: ask {fmt_price(price or 0.0)} per unit, no less."
    return "Your decision: end the negotiation, with no price."


def _buyer_turn(offer: float, said: str, kind: str, price: float | None) -> str:
    words = said[:500] if said else f"We offer {fmt_price(offer)} per unit."
    return f'Buyer: "{words}"\n{decision_line(kind, price)}'


def message_prompt(ctx: SupplierContext, kind: str, price: float | None) -> SupplierPrompt:
    """The prompt of a message-only call: the decision already made (one the guard holds)
    and the buyer's words, after one worked turn of another sale; no private figure, only
    the seller's style. Its system text is the brief a message must not restate (the
    decision line holds only public figures, and a message naming its price may share
    its words)."""
    item = ctx.requirement.name if ctx.requirement is not None else "the item"
    system = (
        f"You are a sales representative of a supplier, selling {item} to a corporate buyer. "
        f"{style_sentence(ctx.persona)}\n"
        "Answer the buyer in the first person, as the seller, in one or two short "
        "sentences, naming no price but the one of your decision.\n" + MESSAGE_FORMAT
    )
    ex_offer = round(ctx.offer * EXAMPLE_SCALE, 2)
    ex_price = None if price is None else round(price * EXAMPLE_SCALE, 2)
    if kind == "accept":
        ex_price = ex_offer
    example = _EXAMPLES.get(kind, _EXAMPLES["walk_away"])
    example = example.replace("{price}", fmt_price(ex_price or 0.0))
    turn = _buyer_turn(ctx.offer, ctx.buyer_message, kind, price)
    messages = (
        ChatMessage("system", system),
        ChatMessage("user", _buyer_turn(ex_offer, "", kind, ex_price)),
        ChatMessage("assistant", json.dumps({"message": example})),
        ChatMessage("user", turn),
    )
    return SupplierPrompt(messages, system)

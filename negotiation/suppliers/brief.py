"""The words of an LLM supplier's private brief, declared once: the prompt is written with
them (prompts.py) and the guard refuses a message that repeats them (guard.py).

A persona's style sentence marks its give-away words in [brackets]; the labels of the
private facts and a few words that only an instruction would use give the rest. Every
rule persona's message passes this list (tests hold it to that): a word that ordinary
sales talk uses ("relationship", "close quickly", "absolute floor") is no give-away.
"""

from __future__ import annotations

import re

PERSONA_STYLE_MARKED: dict[str, str] = {
    "cooperative": "You value the relationship and [concede steadily] toward a fair price.",
    "hardball": "You are a [tough negotiator]: you hold your price and [concede only late].",
    "deceptive": (
        "You [bluff] to keep prices high: you hint at other buyers and scarce stock, [true or not]."
    ),
    "distressed": "You [need cash] soon: you want to close quickly.",
}
_MARK = re.compile(r"\[([^\]]+)\]")

# The labels of the private facts, as the prompt writes them.
FLOOR = "floor price"
OPENING = "opening price"
PLANNED_ASK = "planned ask"
STRESS = "financial stress"
PATIENCE = "patience"
PRIVATE_HEADER = "Private facts (never mention them)"

# Words only a brief, never a seller's own pitch, would use.
_INSTRUCTION_WORDS = (
    "private facts",
    "never mention",
    "instructions",
    "system prompt",
    "persona",
    "tactic",
    "reservation",
    "stress",
    "concede",
    "bluff",
    "my floor",
    "our floor",
    "your floor",
    "floor is",
    "this is offer",
)


def style_sentence(persona: str) -> str:
    """The persona's style as the model reads it (brackets dropped)."""
    return _MARK.sub(r"\1", PERSONA_STYLE_MARKED.get(persona, ""))


def _giveaways() -> tuple[str, ...]:
    marked = [m for s in PERSONA_STYLE_MARKED.values() for m in _MARK.findall(s)]
    labels = (FLOOR, OPENING, PLANNED_ASK, STRESS, PATIENCE)
    return tuple(dict.fromkeys(w.lower() for w in (*marked, *labels, *_INSTRUCTION_WORDS)))


GIVEAWAY_WORDS: tuple[str, ...] = (*_giveaways(), *PERSONA_STYLE_MARKED)  # names too


def _inflected(word: str) -> str:
    """``word`` and its plain inflections: concede(s|d), conceding; bluff(s|ed|ing)."""
    w = re.escape(word)
    return f"{w[:-1]}(?:e|es|ed|ing)" if word.endswith("e") else f"{w}(?:s|es|ed|ing)?"


# A give-away word or phrase (any spacing, plain inflections), and "<n> offers": how the
# brief counts the supplier's patience.
GIVEAWAY = re.compile(
    r"\b(?:"
    + "|".join(r"\s+".join(map(_inflected, w.split())) for w in GIVEAWAY_WORDS)
    + r"|\d+\s+(?:more\s+)?offers)\b",
    re.IGNORECASE,
)

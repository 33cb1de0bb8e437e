"""Stored episodes as training chats, rendered exactly as the LLM buyer plays them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from .contract import EpisodeSource


def chat_examples(
    sources: Iterable[EpisodeSource], *, mode: Literal["free"] = "free"
) -> list[dict[str, Any]]:
    """One ``{"messages": [{"role", "content"}, ...]}`` per episode: each source replayed
    in the engine and rendered with ``BuyerChat`` (the renderer ``LLMBuyerPolicy`` plays
    with, same ``max_prompt_chars``), each action written as the compact JSON reply the
    constrained LLM buyer writes. The chat restarts inside an episode when it outgrows the
    prompt budget, as at play time; each restart begins a new example. Only assistant
    turns carry loss. Raises TrainingError for an unknown scenario or an episode whose
    actions do not replay."""
    raise NotImplementedError

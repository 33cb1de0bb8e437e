"""Stored episodes as training chats, rendered exactly as the LLM buyer plays them.

One code path with play: the engine replays the episode, ``BuyerChat`` (the renderer
``LLMBuyerPolicy`` uses in free mode) writes every user turn, and each action becomes the
reply a constrained decoder writes for it (``action_reply``): the schema's key order, the
same ``json.dumps`` separators, free text cut to the schema's length. The LLM buyer
records that text as its assistant turn, so the next prompt is byte-identical too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from ..action_mask import SPEC_BY_TYPE, valid_actions
from ..action_spec import RATIONALE
from ..env import ProcurementEnv
from ..llm.backend import ChatMessage
from ..llm.replies import text_max_for
from ..policies.buyer_chat import BuyerChat
from ..policies.params import LLMParams
from ..scenarios import load_scenario
from .contract import EpisodeSource, TrainingError

_DEFAULTS = LLMParams()
PLAY_MAX_TOKENS = _DEFAULTS.max_tokens  # the LLM buyer's reply budget
PLAY_MAX_PROMPT_CHARS = _DEFAULTS.max_prompt_chars
TEXT_FIELDS = 2  # message and rationale: how LLMBuyerPolicy sizes an action's text


def action_reply(action: dict[str, Any], *, max_tokens: int = PLAY_MAX_TOKENS) -> str:
    """The JSON a constrained decoder writes for ``action``: ``action_type``, then the
    action's fields in schema order, free text cut to the schema's ``maxLength``. The
    ``rationale`` is left out (optional, and it never changes the world): shorter replies
    train and play faster."""
    spec = SPEC_BY_TYPE.get(action.get("action_type"))  # type: ignore[arg-type]
    if spec is None:
        raise TrainingError(f"not a buyer action: {str(action)[:200]}")
    text_max = text_max_for(max_tokens, TEXT_FIELDS)
    out: dict[str, Any] = {"action_type": spec.action_type}
    for name in (*spec.required, *spec.optional):
        if name in action and action[name] is not None and name != RATIONALE:
            value = action[name]
            out[name] = value[:text_max] if isinstance(value, str) else value
    return json.dumps(out)


def replay(
    source: EpisodeSource, max_prompt_chars: int, max_tokens: int
) -> Iterator[tuple[tuple[ChatMessage, ...], dict[str, Any]]]:
    """Replay one episode: for each action, the prompt the LLM buyer reads before it and
    the action (whose ``action_reply`` becomes the chat's next assistant turn)."""
    try:
        cfg = load_scenario(source.scenario)
    except Exception as exc:  # the scenario loader raises several kinds
        raise TrainingError(
            f"unknown or invalid scenario {str(source.scenario)[:80]}: {exc}"
        ) from exc
    env = ProcurementEnv(cfg)
    obs = env.reset(seed=source.seed)
    chat = BuyerChat(max_chars=max_prompt_chars)
    for i, action in enumerate(source.actions):
        if env.done:
            raise TrainingError(
                f"episode {cfg.name}/{source.seed} ended before its action {i + 1}: "
                "the stored actions do not replay"
            )
        if not isinstance(action, dict):
            raise TrainingError(f"episode {cfg.name}/{source.seed}: action {i + 1} is no object")
        messages = chat.prompt(obs, valid_actions(obs))
        yield messages, action
        chat.answer(action_reply(action, max_tokens=max_tokens))
        obs = env.step(action).observation


def _chats(
    source: EpisodeSource, max_prompt_chars: int, max_tokens: int
) -> Iterator[list[ChatMessage]]:
    """Each chat of one episode (one, or more when it restarts), with its last reply."""
    current: list[ChatMessage] = []
    for messages, action in replay(source, max_prompt_chars, max_tokens):
        if current and len(messages) <= len(current):  # the chat started again
            yield current
        current = [*messages, ChatMessage("assistant", action_reply(action, max_tokens=max_tokens))]
    if current:
        yield current


def chat_examples(
    sources: Iterable[EpisodeSource],
    *,
    mode: Literal["free"] = "free",
    max_prompt_chars: int = PLAY_MAX_PROMPT_CHARS,
    max_tokens: int = PLAY_MAX_TOKENS,
) -> list[dict[str, Any]]:
    """One ``{"messages": [{"role", "content"}, ...]}`` per episode: each source replayed
    in the engine and rendered with ``BuyerChat`` (the renderer ``LLMBuyerPolicy`` plays
    with; pass the policy's ``max_prompt_chars`` and ``max_tokens`` if not the defaults),
    each action written as the reply a constrained decoder writes (``action_reply``). A
    chat that outgrows the prompt budget restarts, as at play time; each restart begins a
    new example. Only assistant turns carry loss (``sft.py``). Raises TrainingError for an
    unknown scenario or an episode whose actions do not replay."""
    if mode != "free":
        raise TrainingError(f"only free mode is trained, not {mode!r}")
    out = []
    for source in sources:
        for chat in _chats(source, max_prompt_chars, max_tokens):
            out.append({"messages": [{"role": m.role, "content": m.content} for m in chat]})
    return out

"""Stored episodes as training chats, rendered exactly as the LLM buyer plays them.

One code path with play: the engine replays the episode, ``BuyerChat`` (the renderer
``LLMBuyerPolicy`` uses in free mode) writes every user turn, and each action becomes the
reply a constrained decoder writes for it (``action_reply``): the schema's key order, the
same ``json.dumps`` separators, free text cut to the schema's length. The LLM buyer
records that text as its assistant turn, so the next prompt is byte-identical too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Literal

from ..action_mask import valid_actions
from ..env import ProcurementEnv
from ..llm.backend import ChatMessage
from ..policies.buyer_chat import BuyerChat
from ..policies.buyer_chat import action_reply as reply_for
from ..policies.params import LLMParams
from ..scenarios import load_scenario
from .contract import EpisodeSource, TrainingError

_DEFAULTS = LLMParams()
PLAY_MAX_TOKENS = _DEFAULTS.max_tokens  # the LLM buyer's reply budget
PLAY_MAX_PROMPT_CHARS = _DEFAULTS.max_prompt_chars


def action_reply(action: dict[str, Any], *, max_tokens: int = PLAY_MAX_TOKENS) -> str:
    """``buyer_chat.action_reply``, refusing a non-action with a TrainingError."""
    try:
        return reply_for(action, max_tokens=max_tokens)
    except ValueError as exc:
        raise TrainingError(str(exc)) from exc


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


LEARN = "learn"  # a message key: False on an assistant turn that carries no loss


def _chats(
    source: EpisodeSource, max_prompt_chars: int, max_tokens: int
) -> Iterator[list[dict[str, Any]]]:
    """Each chat of one episode (one, or more when it restarts), with its last reply, as
    message dicts; a reply of ``source.untaught`` is marked ``learn: False``."""
    current: list[dict[str, Any]] = []
    untaught: set[int] = set()  # positions of the current chat's untaught replies
    for k, (messages, action) in enumerate(replay(source, max_prompt_chars, max_tokens)):
        if current and len(messages) <= len(current):  # the chat started again
            yield current
            untaught = set()
        if k in source.untaught:
            untaught.add(len(messages))
        current = [
            _message(m.role, m.content, i not in untaught)
            for i, m in enumerate(
                (*messages, ChatMessage("assistant", action_reply(action, max_tokens=max_tokens)))
            )
        ]
    if current:
        yield current


def _message(role: str, content: str, learn: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": content}
    return message if learn else {**message, LEARN: False}


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
    new example. Only assistant turns carry loss (``sft.py``), and not those of the
    source's ``untaught`` actions (marked ``"learn": False``). Raises TrainingError for an
    unknown scenario or an episode whose actions do not replay."""
    if mode != "free":
        raise TrainingError(f"only free mode is trained, not {mode!r}")
    return [
        {"messages": chat}
        for source in sources
        for chat in _chats(source, max_prompt_chars, max_tokens)
    ]

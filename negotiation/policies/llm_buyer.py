"""The LLM buyer: ``get_policy("llm", backend=..., model=..., fallback="expert", mode=...)``.

Two modes:
- ``free``: the episode is one chat (``buyer_chat``); at each step the model reads what
  changed and the actions valid now, and answers one JSON action. Decoding is constrained
  to the valid actions (``action_mask``: the JSON schema of exactly those, for xgrammar,
  vLLM structured outputs or an OpenAI ``response_format``), so a backend that honours the
  schema cannot send an invalid action; the reply is still validated, and the engine still
  checks what is played (its error is shown in the next turn, and the action costs its
  slot: no hidden repair). It picks the action and the price.
- ``narrator``: the fallback rule policy (the expert by default) picks action and price,
  and the model writes the message to the supplier and a one-sentence rationale: the
  "offer generator + narrator" design (OG-Narrator, Xia et al. 2024) that lifted LLM deal
  rates in published bargaining work.

A backend error or timeout, or a reply that is not a valid action, never passes silently:
the fallback policy's action is played, ``stats["llm_fallbacks"]`` (and
``stats["llm_parse_failures"]`` for unusable replies) grow, and the step's
``last_decision`` names the fallback as the actor.
"""

from __future__ import annotations

from typing import Any

from ..action_mask import valid_actions
from ..llm import resolve_backend
from ..llm.backend import ChatMessage, ChatRequest, ChatResult, generate_one
from ..llm.replies import (
    adapter_for,
    parse_json_reply,
    reply_json_schema,
    reply_text,
    text_max_for,
)
from ..observation import Observation
from .action_schema import Narration, Rationale, parse_action
from .base import DecisionMeta, Policy
from .buyer_chat import TEXT_FIELDS, BuyerChat
from .params import LLMParams
from .prompts import narrator_messages

ERROR_CHARS = 300  # how much of a backend or parse error a step record keeps


class LLMBuyerPolicy(Policy):
    name = "llm"
    Params = LLMParams

    def __init__(self, seed: int = 0, **params: Any) -> None:
        super().__init__(seed, **params)
        from . import get_policy  # the registry imports this module

        opts = LLMParams(**params)
        self.mode = opts.mode
        self.temperature = opts.temperature
        self.max_tokens = opts.max_tokens
        self.max_prompt_chars = opts.max_prompt_chars
        self.backend = resolve_backend(opts.backend, opts.model, **opts.backend_options)
        self.fallback = get_policy(opts.fallback, seed=seed)
        self.fallback_actor = f"fallback:{opts.fallback}"
        self.chat = BuyerChat(max_chars=self.max_prompt_chars)
        self._conversation: str | None = None  # the chat's cache key, for the backend
        self.stats = self._zero_stats()

    @staticmethod
    def _zero_stats() -> dict[str, int]:
        return {
            "llm_parse_failures": 0,
            "llm_fallbacks": 0,
            "llm_calls": 0,
            "llm_errors": 0,
            "llm_outside_mask": 0,
        }

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.fallback.reset(seed)
        self.chat.reset()
        if self._conversation is not None:  # that episode's chat is over
            self.backend.forget(self._conversation)
            self._conversation = None
        self.stats = self._zero_stats()
        self.last_decision = None

    def act(self, obs: Observation) -> dict[str, Any]:
        return self._narrate(obs) if self.mode == "narrator" else self._free(obs)

    def replayed(self, obs: Observation, action: Any) -> None:
        """Free mode: the stored action joins the chat as the reply a constrained decoder
        writes for it (``action_reply``, as training data writes it), so the next prompt
        is the chat of a model that played the prefix itself."""
        if self.mode != "free":
            return  # narrator mode keeps no chat
        self.chat.prompt(obs, valid_actions(obs))
        self.chat.answer_action(action, max_tokens=self.max_tokens)

    # ------------------------------------------------------------------ modes
    def _free(self, obs: Observation) -> dict[str, Any]:
        mask = valid_actions(obs)
        messages = self.chat.prompt(obs, mask)
        self._conversation = f"buyer/{obs.episode_key}"
        schema = mask.json_schema(text_max_for(self.max_tokens, TEXT_FIELDS))
        result = self._generate(obs, messages, schema)
        if not result.ok:
            action = self._fall_back(obs, None, result.error or "backend error", parse=False)
            self.chat.answer_action(action, max_tokens=self.max_tokens)
            return action
        text, cut = self._reply_text(result)
        action, error = parse_action(text)
        if action is None:
            action = self._fall_back(obs, None, error or "unusable reply", parse=True)
            self.chat.answer_action(action, max_tokens=self.max_tokens)
            return action
        # Only a backend that ignores the schema gets here; the engine will say why.
        self.stats["llm_outside_mask"] += int(not mask.admits(action))
        self.chat.answer(text.strip())
        self.last_decision = DecisionMeta(
            "llm", action.get("message"), action.get("rationale"), llm_error=cut
        )
        return action

    def _narrate(self, obs: Observation) -> dict[str, Any]:
        action = self.fallback.act(obs)
        reply_model = Narration if action.get("action_type") == "negotiate" else Rationale
        messages = narrator_messages(obs, action, max_chars=self.max_prompt_chars)
        texts = len(reply_model.model_fields)  # message and rationale, or rationale
        schema = reply_json_schema(reply_model, text_max_for(self.max_tokens, texts))
        result = self._generate(obs, messages, schema, conversation=False)
        if not result.ok:
            return self._fall_back(obs, action, result.error or "backend error", parse=False)
        text, cut = self._reply_text(result)
        reply, error = parse_json_reply(text, adapter_for(reply_model))
        if reply is None:
            return self._fall_back(obs, action, error or "unusable reply", parse=True)
        words = reply.model_dump()
        self.last_decision = DecisionMeta(
            "llm", words.get("message"), words["rationale"], llm_error=cut
        )
        return {**action, **words}

    # ------------------------------------------------------------------ plumbing
    def _reply_text(self, result: ChatResult) -> tuple[str, str | None]:
        """The reply, and the note for its row when the token limit cut its words."""
        text, cut = reply_text(result)
        return (
            text,
            f"reply cut at the {self.max_tokens}-token limit; its text closed there"
            if cut
            else None,
        )

    def _generate(
        self,
        obs: Observation,
        messages: tuple[ChatMessage, ...],
        schema: dict[str, Any],
        *,
        conversation: bool = True,
    ) -> ChatResult:
        request = ChatRequest(
            messages,
            # reproducible per (episode seed, step), different across episodes and steps
            seed=(self.seed * 1_000_003 + obs.step) % 2**31,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            json_schema=schema,
            # one chat per episode: a backend may keep its keys and values between steps
            cache_key=self._conversation if conversation else None,
        )
        self.stats["llm_calls"] += 1
        result = generate_one(self.backend, request)
        if not result.ok:
            self.stats["llm_errors"] += 1
        return result

    def _fall_back(
        self, obs: Observation, action: dict[str, Any] | None, error: str, *, parse: bool
    ) -> dict[str, Any]:
        """The fallback policy's action (already chosen in narrator mode), counted."""
        self.stats["llm_fallbacks"] += 1
        self.stats["llm_parse_failures"] += int(parse)
        if action is None:
            action = self.fallback.act(obs)
        # the fallback's own reason for its action (rule policies give one)
        why = self.fallback.last_decision
        self.last_decision = DecisionMeta(
            self.fallback_actor,
            rationale=None if why is None else why.rationale,
            llm_parse_failure=parse,
            llm_fallback=True,
            llm_error=error[:ERROR_CHARS],
        )
        return action

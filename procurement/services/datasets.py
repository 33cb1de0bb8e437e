"""Training data from stored episodes: one chat record per decision, for SFT and GRPO.

A record's prompt is what the LLM buyer reads at that step: the system prompt and the
state message of ``negotiation.policies.prompts``, rendered from the observation that replaying
the episode derives (the same replay as the dashboard's state view). Its completion is the
action the buyer took, as the JSON object the LLM buyer would have had to answer (the
buyer's own reply parser reads it back as that action). The shape loads directly in TRL:
``messages`` (system, user, assistant) for SFT, ``prompt`` + ``completion`` for
prompt-completion training and GRPO, and scalar columns: the step's ``reward``, the
episode's ``score``, whether the engine accepted the action (``valid``), who decided
(``actor``: policy, llm, fallback:..., human) and the ids (``episode_id``, ``step``,
``scenario``, ``policy``, ``seed``).

Left out, and counted: episodes whose suppliers are language models (their observations
cannot be derived again without the model), and steps whose action no reply could
express (a malformed action: a completion is always a well-formed reply).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from negotiation.actions import SERVICE_FIELDS
from negotiation.policies.action_schema import parse_action
from negotiation.policies.buyer_chat import buyer_messages
from negotiation.policies.prompts import MAX_PROMPT_CHARS
from procurement.limits import NUL_PROBLEM
from procurement.models import Episode
from procurement.selectors.episodes import (
    StateUnavailable,
    episode_decisions,
    finished_episode_list,
    replayed_observations,
    unknown_names,
)

FORMATS = ("jsonl",)
CONTENT_TYPES = {"jsonl": "application/x-ndjson"}


class DatasetFilterError(ValidationError):
    """Bad export filters (a 400 keyed by filter): ``errors`` maps each filter (format,
    scenario, policy, min_score) to what is wrong with it."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__({field: [message] for field, message in errors.items()})
        self.errors = errors


@dataclass
class DatasetExport:
    """The episodes one export covers and, as its lines are written, what it wrote."""

    format: str
    episode_ids: list[int]
    episodes: int = 0  # episodes whose steps were written
    records: int = 0
    skipped_llm_suppliers: int = 0
    skipped_steps: int = 0  # malformed actions, which no reply could express

    def lines(self, *, on_episode: Callable[[], None] | None = None) -> Iterator[str]:
        """The records as JSON lines; ``on_episode`` is called after each episode."""
        for episode_id in self.episode_ids:
            episode = Episode.objects.filter(pk=episode_id).first()
            if episode is not None:  # deleted since the export began: nothing to write
                for record in self._episode_records(episode):
                    self.records += 1
                    yield json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"
            if on_episode is not None:
                on_episode()

    def _episode_records(self, episode: Episode) -> Iterator[dict[str, Any]]:
        decisions = list(
            episode_decisions(episode).values_list("step", "action", "reward", "valid", "actor")
        )
        try:
            observations = replayed_observations(episode, (d[1] for d in decisions))
        except StateUnavailable:
            self.skipped_llm_suppliers += 1
            return
        self.episodes += 1
        max_chars = _prompt_chars(episode.policy_snapshot)
        ids = {
            "episode_id": episode.pk,
            "scenario": episode.scenario_name,
            "policy": episode.policy_name,
            "seed": episode.seed,
        }
        # one observation more than decisions (the one after the last): zip stops first
        for (step, action, reward, valid, actor), observation in zip(
            decisions, observations, strict=False
        ):
            system, user = buyer_messages(observation, max_chars=max_chars)
            played = _buyer_action(action)
            reply = parse_action(json.dumps(played))[0] if isinstance(played, dict) else None
            if reply is None:
                self.skipped_steps += 1
                continue
            prompt = [
                {"role": system.role, "content": system.content},
                {"role": user.role, "content": user.content},
            ]
            completion = [{"role": "assistant", "content": json.dumps(reply, ensure_ascii=False)}]
            yield {
                "messages": prompt + completion,
                "prompt": prompt,
                "completion": completion,
                "reward": reward,
                "score": episode.score,
                "valid": valid,
                "actor": actor,
                **ids,
                "step": step,
            }

    def summary(self, destination: str) -> str:
        text = f"Exported {self.records} records from {self.episodes} episodes to {destination}."
        if self.skipped_llm_suppliers:
            text += (
                f" Skipped {self.skipped_llm_suppliers} episodes whose suppliers are language "
                "models: their past steps cannot be replayed."
            )
        if self.skipped_steps:
            text += f" Skipped {self.skipped_steps} malformed actions."
        return text


def dataset_export(
    *,
    format: str = "jsonl",
    scenarios: Collection[str] = (),
    policies: Collection[str] = (),
    min_score: str | float | None = None,
) -> DatasetExport:
    """An export of the finished episodes that pass the filters (any scenario or policy
    when none is named). Every filter is checked first: DatasetFilterError names each bad
    one, and nothing has been read beyond the names."""
    errors = {}
    if format not in FORMATS:
        errors["format"] = f"Unknown format '{format}'; use {', '.join(FORMATS)}."
    # blank names (an empty form field) filter nothing; repeats count once
    scenarios = [n for n in dict.fromkeys(scenarios) if n]
    policies = [n for n in dict.fromkeys(policies) if n]
    for kind, names in (("scenario", scenarios), ("policy", policies)):
        if any("\x00" in n for n in names):  # PostgreSQL text cannot hold it: refuse first
            errors[kind] = NUL_PROBLEM
            continue
        unknown = unknown_names(kind, names) if names else []
        if unknown:
            errors[kind] = f"Unknown {kind} name(s): {', '.join(unknown)}."
    score = _score(min_score)
    if isinstance(score, str):
        errors["min_score"] = score
    if errors:
        raise DatasetFilterError(errors)
    episodes = finished_episode_list(scenarios=scenarios, policies=policies, min_score=score)
    return DatasetExport(format, list(episodes.values_list("pk", flat=True)))


def _score(value: str | float | None) -> float | str | None:
    """The minimum score, or what is wrong with it."""
    if value is None:
        return None
    problem = f"A number from 0 to 1; got '{value}'."
    if isinstance(value, bool):
        return problem
    try:
        number = float(value)
    except (TypeError, ValueError):
        return problem
    return number if math.isfinite(number) and 0 <= number <= 1 else problem


def _buyer_action(action: Any) -> Any:
    """The stored action as the buyer chose it: without what the service added (a
    person's answer to an escalation)."""
    if not isinstance(action, dict):
        return action
    added = SERVICE_FIELDS.get(str(action.get("action_type")), frozenset())
    return {k: v for k, v in action.items() if k not in added}


def _prompt_chars(policy_snapshot: dict[str, Any]) -> int:
    """The prompt cap an LLM buyer played with; the LLM buyer's default for the others."""
    if policy_snapshot.get("policy") == "llm":
        return (policy_snapshot.get("params") or {}).get("max_prompt_chars", MAX_PROMPT_CHARS)
    return MAX_PROMPT_CHARS

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

A rule policy's reason (the decision's ``rationale``, shown on the episode page) is not
in the records: it speaks of the rule's internals (its posterior, safe lines, slot plan),
which a model reading only the prompt cannot compute, so a completion that gave it would
teach a model to claim reasoning it did not do. An LLM buyer's own rationale is part of
its action, so its completion keeps it.

Left out, and counted: episodes that played a held-out world (a sealed evaluation's
scenario and seed range, drawn under the server's key: a person's seat episodes there,
exposed or not), so no model trains on the worlds it is evaluated on; episodes whose
suppliers are language models (their observations cannot be derived again without the
model); and steps whose action no reply could express (a malformed action: a
completion is always a well-formed reply).

An export can be paged: ``limit`` records at most (the API's ceiling is
``DATASET_EXPORT_MAX_RECORDS``; the command exports everything), and ``after`` a position
``EPISODE:STEP`` where the previous page ended. Pages are cut by the stored step counts
before anything is replayed, so the export knows where the next page starts
(``next_after``) before it writes a line, and a page may hold fewer records than
``limit`` (skipped steps), never more.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from negotiation.policies.action_schema import parse_action
from negotiation.policies.buyer_chat import buyer_messages
from negotiation.policies.prompts import MAX_PROMPT_CHARS
from procurement.limits import NUL_PROBLEM
from procurement.models import Episode
from procurement.selectors.episodes import (
    StateUnavailable,
    buyer_action,
    episode_decisions,
    finished_episode_list,
    replayed_observations,
    unknown_names,
)
from procurement.selectors.evaluations import held_out_episodes

FORMATS = ("jsonl",)
CONTENT_TYPES = {"jsonl": "application/x-ndjson"}


class DatasetFilterError(ValidationError):
    """Bad export filters (a 400 keyed by filter): ``errors`` maps each filter (format,
    scenario, policy, min_score) to what is wrong with it."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__({field: [message] for field, message in errors.items()})
        self.errors = errors


Position = tuple[int, int]  # (episode id, step): a page starts after it
AFTER_PATTERN = re.compile(r"([0-9]{1,18}):(-1|[0-9]{1,9})")


@dataclass(frozen=True)
class Span:
    """The steps of one episode a page covers: after ``after_step``, up to ``last_step``
    (None: to the end)."""

    episode_id: int
    after_step: int = -1
    last_step: int | None = None


@dataclass
class DatasetExport:
    """The episode steps one export covers and, as its lines are written, what it wrote."""

    format: str
    spans: list[Span]
    next_after: Position | None = None  # where the next page starts; None: no more
    episodes: int = 0  # episodes whose steps were written
    records: int = 0
    skipped_llm_suppliers: int = 0
    skipped_held_out: int = 0  # episodes on a sealed evaluation's worlds, never exported
    skipped_steps: int = 0  # malformed actions, which no reply could express

    def lines(self, *, on_episode: Callable[[], None] | None = None) -> Iterator[str]:
        """The records as JSON lines; ``on_episode`` is called after each episode."""
        for span in self.spans:
            episode = Episode.objects.filter(pk=span.episode_id).first()
            if episode is not None:  # deleted since the export began: nothing to write
                for record in self._episode_records(episode, span):
                    self.records += 1
                    yield json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n"
            if on_episode is not None:
                on_episode()

    def _episode_records(self, episode: Episode, span: Span) -> Iterator[dict[str, Any]]:
        decisions = episode_decisions(episode)
        if span.last_step is not None:
            decisions = decisions.filter(step__lte=span.last_step)
        decisions = list(decisions.values_list("step", "action", "reward", "valid", "actor"))
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
            if step <= span.after_step:  # on an earlier page: replayed, not written
                continue
            system, user = buyer_messages(observation, max_chars=max_chars)
            played = buyer_action(action)
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
        if self.skipped_held_out:
            text += (
                f" Left out {self.skipped_held_out} episodes on held-out worlds (sealed "
                "evaluations' scenarios and seeds)."
            )
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
    after: str | None = None,
    limit: str | int | None = None,
) -> DatasetExport:
    """An export of the finished episodes that pass the filters (any scenario or policy
    when none is named), from after ``after`` ("EPISODE:STEP"; None: the start), of at
    most ``limit`` records (1 to DATASET_EXPORT_MAX_RECORDS; None: all). Every filter is
    checked first: DatasetFilterError names each bad one, and nothing has been read beyond
    the names."""
    errors = {}
    position = _position(after)
    if isinstance(position, str):
        errors["after"] = position
    most = _limit(limit)
    if isinstance(most, str):
        errors["limit"] = most
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
    held_out = held_out_episodes()
    skipped_held_out = episodes.filter(held_out).count()
    episodes = episodes.exclude(held_out)
    if position is not None:
        episodes = episodes.filter(pk__gte=position[0])
    spans, next_after = _page(episodes.values_list("pk", "steps"), position, most)
    return DatasetExport(format, spans, next_after, skipped_held_out=skipped_held_out)


def _page(
    episode_steps: Iterable[tuple[int, int]], after: Position | None, limit: int | None
) -> tuple[list[Span], Position | None]:
    """The spans of one page of at most ``limit`` steps (None: all), from after ``after``,
    and where the next page starts (None: nothing is left)."""
    spans: list[Span] = []
    left = limit
    for episode_id, steps in episode_steps:
        start = after[1] if after is not None and episode_id == after[0] else -1
        remaining = steps - 1 - start
        if remaining <= 0:
            continue
        if left is None:
            spans.append(Span(episode_id, start))
            continue
        if left == 0:
            return spans, (episode_id, start)
        last = start + min(remaining, left)
        spans.append(Span(episode_id, start, last))
        left -= last - start
        if last - start < remaining:
            return spans, (episode_id, last)
    return spans, None


def _position(value: str | None) -> Position | str | None:
    """Where a page starts, or what is wrong with it."""
    if value is None:
        return None
    match = AFTER_PATTERN.fullmatch(str(value))
    if match is None:
        return f"EPISODE:STEP, as the previous page's next link has it; got '{value}'."
    return int(match[1]), int(match[2])


def _limit(value: str | int | None) -> int | str | None:
    """The most records of a page, or what is wrong with it."""
    if value is None:
        return None
    most = settings.DATASET_EXPORT_MAX_RECORDS
    problem = (
        f"A whole number from 1 to {most} (records per request; follow the response's "
        f"Link: rel=\"next\" for the rest); got '{value}'."
    )
    if isinstance(value, bool) or not re.fullmatch(r"[0-9]{1,9}", str(value)):
        return problem
    return int(value) if 1 <= int(value) <= most else problem


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


def _prompt_chars(policy_snapshot: dict[str, Any]) -> int:
    """The prompt cap an LLM buyer played with; the LLM buyer's default for the others."""
    if policy_snapshot.get("policy") == "llm":
        return (policy_snapshot.get("params") or {}).get("max_prompt_chars", MAX_PROMPT_CHARS)
    return MAX_PROMPT_CHARS

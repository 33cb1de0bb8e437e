"""Reads for episodes and decisions."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet

from negotiation.action_mask import valid_actions
from negotiation.llm.models import model_label
from negotiation.llm.shared import LLMSpec
from procurement.errors import Conflict
from procurement.models import Decision, Episode, EpisodeStatus, PolicyConfig, Scenario
from procurement.models.status import TERMINAL_STATUSES
from procurement.run_plan import RunPlan
from procurement.selectors.replay_checkpoints import observation_after
from procurement.worlds import episode_env

if TYPE_CHECKING:
    from negotiation import Observation


@dataclass(frozen=True)
class Pinned:
    """What an episode plays: a scenario config and a policy snapshot, each at a version."""

    scenario_config: dict[str, Any]
    scenario_version: int
    policy_snapshot: dict[str, Any]
    policy_version: int

    @classmethod
    def now(cls, scenario: Scenario, policy: PolicyConfig) -> Pinned:
        """The scenario and policy as they are stored at this moment."""
        return cls(scenario.engine_config(), scenario.version, policy.snapshot(), policy.version)

    @property
    def run_plan(self) -> RunPlan:
        return RunPlan.of(
            scenario_config=self.scenario_config, policy_snapshot=self.policy_snapshot
        )


def episode_llm_spec(episode: Episode) -> LLMSpec | None:
    """The model this episode talks to, by its run plan (None: rule-only). Buyer and
    suppliers share it: one handle on the process's batching backend serves both."""
    plan = episode.run_plan
    return LLMSpec.for_episode(
        episode.scenario_snapshot,
        episode.policy_snapshot,
        buyer_uses_llm=plan.buyer_uses_llm,
        suppliers_use_llm=plan.suppliers_use_llm,
    )


def episode_model_label(episode: Episode) -> str | None:
    """The short name of the episode's model ("smollm2"), for its LLM-played rows."""
    spec = episode_llm_spec(episode)
    return None if spec is None else model_label(spec.model)


def next_free_seed(*, scenario: Scenario, policy: PolicyConfig) -> int:
    """The smallest seed this scenario and policy have not played as a single public
    episode (a sealed one's seed is the server's draw, and no one's business)."""
    used = set(
        Episode.objects.filter(
            scenario=scenario, policy=policy, sweep__isnull=True, sealed=False
        ).values_list("seed", flat=True)
    )
    seed = 0
    while seed in used:
        seed += 1
    return seed


def episodes_on_seed(episodes: QuerySet[Episode], seed: int) -> QuerySet[Episode]:
    """Those of ``episodes`` played on ``seed`` whose seed is shown (Episode.shown_seed):
    a sealed episode that still plays is never found by its seed."""
    shown = Q(sealed=False) | Q(status__in=TERMINAL_STATUSES)
    return episodes.filter(shown, seed=seed)


def episode_list() -> QuerySet[Episode]:
    """Episodes for listings (the API's FilterSet narrows them): snapshots left out."""
    return Episode.objects.defer("scenario_snapshot", "policy_snapshot")


def episode_decisions(episode: Episode, *, after_step: int = -1) -> QuerySet[Decision]:
    """Its decisions in step order, those after ``after_step`` only (-1: all)."""
    decisions = episode.decisions.order_by("step")
    return decisions if after_step < 0 else decisions.filter(step__gt=after_step)


def finished_episode_list(
    *,
    scenarios: Collection[str] = (),
    policies: Collection[str] = (),
    min_score: float | None = None,
) -> QuerySet[Episode]:
    """Finished episodes, oldest first, of these scenario and policy names (empty: any)
    that scored at least ``min_score``."""
    episodes = Episode.objects.filter(status=EpisodeStatus.FINISHED, score__isnull=False)
    if scenarios:
        episodes = episodes.filter(scenario_name__in=scenarios)
    if policies:
        episodes = episodes.filter(policy_name__in=policies)
    if min_score is not None:
        episodes = episodes.filter(score__gte=min_score)
    return episodes.order_by("pk")


KNOWN_NAMES = {"scenario": (Scenario, "scenario_name"), "policy": (PolicyConfig, "policy_name")}


def unknown_names(kind: Literal["scenario", "policy"], names: Collection[str]) -> list[str]:
    """Those of ``names`` that no stored scenario (or policy) has and no episode was
    played under (an episode keeps the name it ran with)."""
    model, field = KNOWN_NAMES[kind]
    known = set(model.objects.filter(name__in=names).values_list("name", flat=True))
    known |= set(Episode.objects.filter(**{f"{field}__in": names}).values_list(field, flat=True))
    return [n for n in names if n not in known]


class StateUnavailable(Conflict):
    """The public state of a past step cannot be derived (the message says why)."""


def replayed_observations(episode: Episode, actions: Iterable[Any]) -> Iterator[Observation]:
    """What the buyer saw before the first decision, then after each of ``actions`` (the
    episode's stored ones, in step order), derived by replaying them through the pinned
    scenario and seed: the engine is deterministic, so nothing per step needs storing.
    Public state only: an observation never carries reservations, tactics or stress. Read
    each observation before asking for the next one (the engine steps in between).

    Raises StateUnavailable at once (before any replay) for LLM suppliers."""
    _refuse_llm_suppliers(episode)
    return _replay(episode, actions)


def _refuse_llm_suppliers(episode: Episode) -> None:
    if episode.run_plan.suppliers_use_llm:
        raise StateUnavailable(
            "Its suppliers are language models: a past step's boards would need the model "
            "again. The decision timeline holds every step."
        )


def _replay(episode: Episode, actions: Iterable[Any]) -> Iterator[Observation]:
    env = episode_env(episode)
    yield env.observation()
    for action in actions:
        yield env.step(action).observation


def public_state_at(episode: Episode, step: int) -> dict[str, Any]:
    """What the buyer saw after decision ``step`` (-1: before the first), for the replay
    boards: the same state ``replayed_observations`` gives, resumed from this process's
    nearest replay checkpoint (replay_checkpoints.py), so a request replays a bounded
    number of actions once the episode has been replayed that far. Language-model
    suppliers answer from the record, during the run and after (no model runs)."""
    if not -1 <= step < episode.steps:
        message = f"step must be between -1 and {episode.steps - 1}; got {step}."
        raise ValidationError({"step": [message]})
    observation = observation_after(episode, step)
    state = observation.to_dict()
    state["after_step"] = step
    if episode.run_plan.human_seat and step == episode.steps - 1:
        # The seat's form offers only what the engine admits now (1-100 ms: latest only).
        state["valid_actions"] = valid_actions(observation).to_list()
    return state

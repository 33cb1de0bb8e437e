"""Two episodes side by side: their final metrics with the difference, and their
decisions aligned by step (each row: what each run did at that step, in which week)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

from django.db.models import Case, IntegerField, QuerySet, Value, When

from negotiation.metrics import shown_metrics
from procurement.models import Decision, Episode, EpisodeStatus
from procurement.selectors.episodes import episode_list, episodes_on_seed

CANDIDATES = 20
SHOWN_FIELDS = ("supplier_id", "requirement_id", "price", "quantity", "amount", "split")


@dataclass(frozen=True)
class MetricRow:
    name: str
    a: Any
    b: Any

    @property
    def difference(self) -> float | None:
        """b - a when both are numbers (booleans are not)."""
        numbers = all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in (self.a, self.b)
        )
        return self.b - self.a if numbers else None


def action_text(action: Any) -> str:
    """A decision's action in one line: "negotiate S03 R01 price=12.5"."""
    if not isinstance(action, dict):
        return f"(malformed) {action}"
    parts = [str(action.get("action_type", "?"))]
    for field in SHOWN_FIELDS:
        value = action.get(field)
        if value is not None:
            parts.append(str(value) if field.endswith("_id") else f"{field}={value}")
    return " ".join(parts)


def metric_rows(a: Episode, b: Episode) -> list[MetricRow]:
    """Score first, then every metric either run has, by name."""
    ma, mb = shown_metrics(a.metrics or {}), shown_metrics(b.metrics or {})
    names = sorted((set(ma) | set(mb)) - {"score"})
    return [MetricRow("score", a.score, b.score)] + [
        MetricRow(n, ma.get(n), mb.get(n)) for n in names
    ]


def _steps(episode: Episode) -> QuerySet[Decision]:
    return episode.decisions.order_by("step").only(
        "step", "week", "action", "valid", "reward", "running_score", "actor"
    )


@dataclass(frozen=True)
class StepSide:
    week: int
    action: str
    valid: bool
    reward: float
    score: float
    actor: str

    @classmethod
    def of(cls, d: Decision | None) -> StepSide | None:
        if d is None:
            return None
        return cls(d.week, action_text(d.action), d.valid, d.reward, d.running_score, d.actor)


@dataclass(frozen=True)
class StepRow:
    step: int
    a: StepSide | None
    b: StepSide | None

    @property
    def same(self) -> bool:
        return self.a is not None and self.b is not None and self.a.action == self.b.action


def aligned_steps(a: Episode, b: Episode) -> list[StepRow]:
    """A row for every step either run played: step n of both is the n-th decision from
    the same starting world (same scenario and seed), so a row compares like with like
    until the runs' choices part them; each side names its week, since one run may move
    through the weeks faster."""
    pairs = zip_longest(_steps(a), _steps(b))
    return [StepRow(i, StepSide.of(da), StepSide.of(db)) for i, (da, db) in enumerate(pairs)]


def compare_candidates(episode: Episode) -> QuerySet[Episode]:
    """What an episode is best compared with: the same scenario on the same (shown) seed
    under other policies or again, finished ones first, then the newest."""
    seed = episode.shown_seed
    if seed is None:
        return Episode.objects.none()
    same = episodes_on_seed(episode_list().filter(scenario_name=episode.scenario_name), seed)
    finished_first = Case(
        When(status=EpisodeStatus.FINISHED, then=Value(0)),
        default=Value(1),
        output_field=IntegerField(),
    )
    return same.exclude(pk=episode.pk).order_by(finished_first, "-created_at")[:CANDIDATES]


def score_lines(a: Episode, b: Episode, rows: list[StepRow]) -> dict[str, Any]:
    """Each run's running score by step, for the page's chart (one line per run)."""

    def line(e: Episode, side: str) -> dict[str, Any]:
        points = [(r.step, getattr(r, side).score) for r in rows if getattr(r, side)]
        return {
            "name": f"{side.upper()}: #{e.pk} {e.policy_name}",
            "steps": [step for step, _ in points],
            "scores": [score for _, score in points],
        }

    return {"a": line(a, "a"), "b": line(b, "b")}

"""Writes for evaluations: run one (negotiation/evaluation.py does the engine work) and
store its leaderboard and ratings.

The run happens in the caller's process (and its worker processes): episodes take
milliseconds, so an evaluation of thousands of them is a command-line job, not a queue
of cells. Bad parameters raise ValidationError before anything runs or is stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO

from django.core.exceptions import ValidationError
from django.utils import timezone

from negotiation.evaluation import EvaluationError, build_spec, evaluate
from procurement.models import Evaluation, Scenario
from procurement.worlds import server_world_key

NAME_LENGTH = Evaluation._meta.get_field("name").max_length


def _validation_error(exc: EvaluationError) -> ValidationError:
    fields: dict[str, list[str]] = {}
    for e in exc.errors:
        fields.setdefault(e["field"], []).append(e["message"])
    return ValidationError(fields)


def evaluation_create(
    *,
    policies: str | Iterable[str],
    scenarios: str | Iterable[str],
    seeds: int,
    seed_start: int = 0,
    tiers: str | Iterable[str] = (),
    workers: int = 1,
    name: str = "",
    sealed: bool = False,
    user=None,
    progress: IO[str] | None = None,
) -> Evaluation:
    """Evaluate rule policies on preset (or stored) scenarios and store the result.
    ``sealed``: held-out worlds, drawn from the seeds under the server's key
    (procurement.worlds), so no one can rebuild them from the seeds. ``progress`` is a
    stream for a progress bar (None: no bar)."""
    if len(name) > NAME_LENGTH:
        raise ValidationError({"name": [f"At most {NAME_LENGTH} characters."]})
    wanted = scenarios.split(",") if isinstance(scenarios, str) else list(scenarios)
    stored = {
        s.name: s.engine_config()
        for s in Scenario.objects.filter(name__in=[str(n).strip() for n in wanted])
        if not s.is_preset
    }
    try:
        spec = build_spec(
            policies=policies,
            scenarios=scenarios,
            seeds=seeds,
            seed_start=seed_start,
            tiers=tiers,
            custom_scenarios=stored,
            world_key=server_world_key() if sealed else None,
        )
        started = timezone.now()
        result = evaluate(spec, workers=workers, progress=progress)
    except EvaluationError as exc:
        raise _validation_error(exc) from None
    return Evaluation.objects.create(
        name=name,
        policies=list(spec.policies),
        scenarios=list(spec.scenarios),
        tiers=list(spec.tiers),
        seeds=spec.seeds,
        seed_start=spec.seed_start,
        sealed=spec.sealed,
        workers=workers,
        episodes=spec.episodes,
        seconds=round(result.seconds, 3),
        leaderboard=result.leaderboard,
        ratings=result.ratings,
        created_by=user if getattr(user, "is_authenticated", False) else None,
        started_at=started,
    )

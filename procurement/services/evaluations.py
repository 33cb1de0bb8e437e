"""Writes for evaluations: run one (negotiation/evaluation.py does the engine work) and
store its league tables.

The run happens in the caller's process: rule episodes take milliseconds (and may use
worker processes), and LLM episodes are played here in batches, one batching backend per
model, so an evaluation is a command-line job. Buyers may be stored policy configs (LLM
ones included), whose model is checked before anything runs. Bad parameters raise
ValidationError before anything runs or is stored. People who played the human seat on
the evaluated scenarios and seeds join the buyers' ratings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import IO

from django.core.exceptions import ValidationError
from django.utils import timezone

from negotiation.evaluation import (
    EvaluationError,
    EvaluationSpec,
    Outcome,
    build_spec,
    evaluate,
)
from negotiation.lineups import AS_CONFIGURED
from procurement.models import Episode, EpisodeStatus, Evaluation, PolicyConfig, Scenario
from procurement.run_plan import HUMAN_POLICY
from procurement.services.supplier_seat import supplier_seat_outcomes
from procurement.worlds import server_world_key

NAME_LENGTH = Evaluation._meta.get_field("name").max_length


def _validation_error(exc: EvaluationError) -> ValidationError:
    fields: dict[str, list[str]] = {}
    for e in exc.errors:
        fields.setdefault(e["field"], []).append(e["message"])
    return ValidationError(fields)


def _listed(value: str | Iterable[str]) -> list[str]:
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(n).strip() for n in items if str(n).strip()]


def human_outcomes(spec: EvaluationSpec) -> list[Outcome]:
    """Finished human-seat episodes on the spec's scenarios (as configured) and seeds,
    each a buyer player ``human:<username>``; they join the buyers' rating matches."""
    if AS_CONFIGURED not in spec.suppliers or spec.tiers:
        return []
    seeds = (spec.seed_start, spec.seed_start + spec.seeds - 1)
    rows = (
        Episode.objects.filter(
            status=EpisodeStatus.FINISHED,
            sealed=False,
            scenario_name__in=spec.scenarios,
            seed__range=seeds,
            policy_snapshot__policy=HUMAN_POLICY,
            score__isnull=False,
        )
        .select_related("created_by")
        .order_by("pk")
    )
    out = []
    for e in rows:
        m = e.metrics or {}
        who = e.created_by.get_username() if e.created_by else "anonymous"
        out.append(
            Outcome(
                e.scenario_name,
                None,
                f"human:{who}",
                e.seed,
                float(e.score),
                float(m.get("deal_rate", 0.0)),
                float(m.get("buyer_share", 0.0)),
                float(m.get("mutual_loss", 0.0)),
                float(m.get("rounds_per_deal", 0.0)),
                float(m.get("invalid_action_rate", 0.0)),
                "human-seat",
                AS_CONFIGURED,
            )
        )
    return out


def evaluation_create(
    *,
    policies: str | Iterable[str],
    scenarios: str | Iterable[str],
    seeds: int,
    seed_start: int = 0,
    tiers: str | Iterable[str] = (),
    suppliers: str | Iterable[str] = (),
    replays: int = 1,
    prices: Mapping[str, tuple[float, float]] | None = None,
    workers: int = 1,
    name: str = "",
    sealed: bool = False,
    user=None,
    progress: IO[str] | None = None,
) -> Evaluation:
    """Evaluate buyer policies (rule names or stored configs, LLM ones included) against
    supplier line-ups on preset (or stored) scenarios, and store the league tables.
    ``sealed``: held-out worlds, drawn from the seeds under the server's key
    (procurement.worlds), so no one can rebuild them from the seeds. ``prices``: money
    per million tokens by model, (in, out). ``progress`` is a stream for a progress bar
    (None: no bar)."""
    if len(name) > NAME_LENGTH:
        raise ValidationError({"name": [f"At most {NAME_LENGTH} characters."]})
    stored_scenarios = {
        s.name: s.engine_config()
        for s in Scenario.objects.filter(name__in=_listed(scenarios))
        if not s.is_preset
    }
    stored_policies = {
        p.name: p.snapshot() for p in PolicyConfig.objects.filter(name__in=_listed(policies))
    }
    try:
        spec = build_spec(
            policies=policies,
            scenarios=scenarios,
            seeds=seeds,
            seed_start=seed_start,
            tiers=tiers,
            suppliers=suppliers,
            replays=replays,
            custom_scenarios=stored_scenarios,
            stored_policies=stored_policies,
            prices=prices,
            world_key=server_world_key() if sealed else None,
        )
        started = timezone.now()
        result = evaluate(
            spec,
            workers=workers,
            progress=progress,
            extra_ratings=human_outcomes(spec),
            extra_suppliers=supplier_seat_outcomes(spec),
        )
    except EvaluationError as exc:
        raise _validation_error(exc) from None
    return Evaluation.objects.create(
        name=name,
        policies=list(spec.policies),
        scenarios=list(spec.scenarios),
        suppliers=list(spec.suppliers),
        tiers=list(spec.tiers),
        seeds=spec.seeds,
        seed_start=spec.seed_start,
        replays=spec.replays,
        prices={k: list(v) for k, v in spec.prices.items()},
        sealed=spec.sealed,
        workers=workers,
        episodes=spec.episodes,
        seconds=round(result.seconds, 3),
        leaderboard=result.leaderboard,
        ratings=result.ratings,
        matrix=result.matrix,
        supplier_table=result.suppliers,
        created_by=user if getattr(user, "is_authenticated", False) else None,
        started_at=started,
    )

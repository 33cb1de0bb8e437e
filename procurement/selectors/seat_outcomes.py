"""Reads for the ratings: finished seat episodes (a person as the buyer, or as one
supplier) that an evaluation's rating matches can take.

A seat's world is sealed under the server's key, so only a sealed evaluation (the same
key) played the same worlds: a public evaluation takes none. Both need the scenarios as
configured (no tier) and the line-up ``scenario`` among the evaluation's."""

from __future__ import annotations

from django.db.models import QuerySet

from negotiation.evaluation import EvaluationSpec, Outcome
from negotiation.lineups import AS_CONFIGURED
from negotiation.suppliers.seat import HUMAN_ACTOR
from procurement.models import Episode, EpisodeStatus
from procurement.run_plan import HUMAN_POLICY

HUMAN_SEAT_SUPPLIERS = "human-seat"  # the supplier side of a buyer seat's outcome


def _finished_seats(spec: EvaluationSpec, **where) -> QuerySet[Episode] | None:
    if not spec.sealed or spec.tiers or AS_CONFIGURED not in spec.suppliers:
        return None
    return (
        Episode.objects.filter(
            status=EpisodeStatus.FINISHED,
            sealed=True,
            scenario_name__in=spec.scenarios,
            seed__range=(spec.seed_start, spec.seed_start + spec.seeds - 1),
            score__isnull=False,
            **where,
        )
        .select_related("created_by")
        .order_by("pk")
    )


def _person(episode: Episode) -> str:
    who = episode.created_by.get_username() if episode.created_by else "anonymous"
    return f"{HUMAN_ACTOR}:{who}"


def _outcome(episode: Episode, *, buyer: str, supplier: str, lineup: str) -> Outcome:
    m = episode.metrics or {}
    return Outcome(
        episode.scenario_name,
        None,
        buyer,
        episode.seed,
        float(episode.score),
        float(m.get("deal_rate", 0.0)),
        float(m.get("buyer_share", 0.0)),
        float(m.get("mutual_loss", 0.0)),
        float(m.get("rounds_per_deal", 0.0)),
        float(m.get("invalid_action_rate", 0.0)),
        supplier,
        lineup,
        mode=(episode.scenario_snapshot or {}).get("mode", "bilateral"),
    )


def human_buyer_outcomes(spec: EvaluationSpec) -> list[Outcome]:
    """Buyer-seat episodes on the spec's scenarios and seeds: each a buyer player
    ``human:<username>``, joining the buyers' rating matches."""
    rows = _finished_seats(spec, policy_snapshot__policy=HUMAN_POLICY)
    return [
        _outcome(e, buyer=_person(e), supplier=HUMAN_SEAT_SUPPLIERS, lineup=AS_CONFIGURED)
        for e in rows or ()
    ]


def human_supplier_outcomes(spec: EvaluationSpec) -> list[Outcome]:
    """Supplier-seat episodes against the spec's buyers on its scenarios and seeds: each a
    supplier player ``human:<username>`` in the match of the buyer it faced. A person who
    played one world (scenario, seed, buyer) more than once is rated on the first only:
    the later ones were rehearsed."""
    rows = _finished_seats(spec, supplier_seat__isnull=False, policy_name__in=spec.policies)
    first: dict[tuple, Episode] = {}
    for e in rows or ():  # oldest first
        first.setdefault((e.created_by_id, e.scenario_name, e.seed, e.policy_name), e)
    return [
        _outcome(e, buyer=e.policy_name, supplier=_person(e), lineup=_person(e))
        for e in first.values()
    ]

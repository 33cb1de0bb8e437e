"""How episodes are found: one FilterSet for the API's list and the episode list page.

A filter value that does not parse (an unknown status, a seed that is not a whole
number, a date that is not a date) makes the FilterSet invalid: the API answers 400 and
the page shows the field's message above an empty list; neither ever queries with it.
"""

from __future__ import annotations

import django_filters
from django import forms
from django.db.models import Q, QuerySet
from django.db.models.functions import Coalesce

from procurement.models import ApprovalStatus, Episode, EpisodeStatus
from procurement.models.status import TERMINAL_STATUSES
from procurement.run_plan import HUMAN_QUEUE
from procurement.selectors.episodes import episodes_on_seed

MAX_BIGINT = 2**63 - 1  # out-of-range numbers are a 400, not a database error
NEEDS_YOU = "you"
# Who started an episode: its starter, or for a sweep's cell the sweep's.
OWNER = Coalesce("created_by__username", "sweep__created_by__username")


def with_owner(episodes: QuerySet[Episode]) -> QuerySet[Episode]:
    """``episodes`` with ``owner_name`` (OWNER) for listing."""
    return episodes.annotate(owner_name=OWNER)


def needing(episodes: QuerySet[Episode], user) -> QuerySet[Episode]:
    """Those of ``episodes`` that wait on ``user``: their own human seat still in play,
    an offer to their supplier seat, or an escalation that someone other than its starter
    must answer."""
    open_runs = episodes.exclude(status__in=TERMINAL_STATUSES)
    seat = Q(queue=HUMAN_QUEUE, created_by=user) | Q(supplier_seat__has_key="turn", created_by=user)
    approval = Q(approvals__status=ApprovalStatus.PENDING) & ~Q(created_by=user)
    return open_runs.filter(seat | approval).distinct()


class EpisodeFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=EpisodeStatus.choices, empty_label="any")
    scenario = django_filters.CharFilter(field_name="scenario_name", label="Scenario")
    policy = django_filters.CharFilter(field_name="policy_name", label="Policy")
    sweep = django_filters.NumberFilter(
        field_name="sweep_id", min_value=0, max_value=MAX_BIGINT, decimal_places=0
    )
    seed = django_filters.NumberFilter(
        method="filter_seed", min_value=0, max_value=MAX_BIGINT, decimal_places=0
    )
    owner = django_filters.CharFilter(method="filter_owner", label="Started by", max_length=150)
    since = django_filters.DateFilter(
        field_name="created_at",
        lookup_expr="date__gte",
        label="Started on or after",
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    until = django_filters.DateFilter(
        field_name="created_at",
        lookup_expr="date__lte",
        label="Started on or before",
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    q = django_filters.CharFilter(method="filter_search", label="Search", max_length=100)
    needs = django_filters.ChoiceFilter(
        method="filter_needs",
        choices=[(NEEDS_YOU, "needs you (your seat, or an approval)")],
        label="Needs",
        empty_label="anyone or no one",
    )

    class Meta:
        model = Episode
        fields = [
            "status",
            "scenario",
            "policy",
            "sweep",
            "seed",
            "owner",
            "since",
            "until",
            "q",
            "needs",
        ]

    def filter_seed(self, queryset, name, value):
        return episodes_on_seed(queryset, int(value))

    def filter_owner(self, queryset, name, value: str):
        return queryset.alias(_owner=OWNER).filter(_owner=value)

    def filter_search(self, queryset, name, value: str):
        """An id ("42" or "#42"), or part of a scenario or policy name."""
        value = value.strip()
        if not value:
            return queryset
        match = Q(scenario_name__icontains=value) | Q(policy_name__icontains=value)
        digits = value.removeprefix("#")
        if digits.isdigit() and len(digits) <= 18:
            match |= Q(pk=int(digits))
        return queryset.filter(match)

    def filter_needs(self, queryset, name, value):
        user = getattr(self.request, "user", None)
        if user is None or not user.is_authenticated:
            return queryset.none()
        return needing(queryset, user)

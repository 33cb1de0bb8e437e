"""Thin REST views: parse with serializers, call services and selectors, serialize."""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

from negotiation import list_presets, load_scenario
from procurement.api import serializers as s
from procurement.api.permissions import RolePermission
from procurement.errors import Forbidden, NotFound
from procurement.models import Episode, PolicyConfig, Scenario, Sweep
from procurement.selectors.aggregates import sweep_score_distributions
from procurement.selectors.approvals import approval_payload, episode_approvals
from procurement.selectors.episode_filters import EpisodeFilter
from procurement.selectors.episodes import episode_decisions, episode_list, public_state_at
from procurement.selectors.supplier_seat import seat_view
from procurement.selectors.sweeps import sweep_summary
from procurement.services import approvals, human_seat, supplier_seat
from procurement.services import datasets as dataset_services
from procurement.services import episodes as episode_services
from procurement.services import policies as policy_services
from procurement.services import scenarios as scenario_services
from procurement.services import sweeps as sweep_services
from procurement.services.exports import write_sweep_csv, write_sweep_json
from procurement.services.supplier_seat import SEAT_CLOSED, seat_hides_record

EXPORTS = {"csv": (write_sweep_csv, "text/csv"), "json": (write_sweep_json, "application/json")}
ID_REGEX = r"[0-9]{1,18}"  # non-numeric or absurd ids are a 404, never a database error
STEP_REGEX = r"-1|[0-9]{1,9}"  # a step query parameter; absurd ones are a 400
STEP_HELP = "A whole number from -1 (before the first decision)."


class DecisionPagination(PageNumberPagination):
    page_size = 200
    page_size_query_param = "page_size"
    max_page_size = 2000


class ScenarioViewSet(viewsets.ModelViewSet):
    """Difficulty scenarios. Everyone with a role reads; admins create and edit."""

    queryset = Scenario.objects.all()
    serializer_class = s.ScenarioSerializer
    permission_classes = [RolePermission]
    lookup_value_regex = ID_REGEX
    write_role = "admin"

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = scenario_services.scenario_create(
            name=data["name"],
            config=data["config"],
            description=data.get("description", ""),
            user=self.request.user,
        )

    def perform_update(self, serializer):
        data = serializer.validated_data
        serializer.instance = scenario_services.scenario_update(
            scenario=serializer.instance,
            config=data.get("config"),
            description=data.get("description"),
        )

    @extend_schema(responses={204: None, 409: OpenApiResponse(description="In use.")})
    def destroy(self, request, *args, **kwargs):
        """Delete an unused, non-preset scenario; 409 when sweeps or episodes refer to it."""
        return super().destroy(request, *args, **kwargs)

    def perform_destroy(self, instance):
        scenario_services.scenario_delete(scenario=instance)

    @extend_schema(request=None, responses={201: s.ScenarioSerializer})
    @action(detail=True, methods=["post"])
    def copy(self, request, pk=None):
        """Copy a scenario (a preset, usually) into an editable one."""
        copy = scenario_services.scenario_copy(source=self.get_object(), user=request.user)
        data = s.ScenarioSerializer(copy, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_201_CREATED)


class PresetViewSet(viewsets.ViewSet):
    """The engine's built-in scenario presets."""

    permission_classes = [RolePermission]
    lookup_value_regex = r"[a-zA-Z0-9_\-]{1,100}"

    def _preset(self, name: str) -> dict:
        config = load_scenario(name).model_dump(mode="json")
        return {"name": name, "description": config.get("description", ""), "config": config}

    @extend_schema(responses=s.PresetSerializer(many=True))
    def list(self, request):
        return Response([self._preset(name) for name in list_presets()])

    @extend_schema(responses=s.PresetSerializer)
    def retrieve(self, request, pk=None):
        if pk not in list_presets():
            raise NotFound(f"No preset named '{pk}'.")
        return Response(self._preset(pk))


class PolicyConfigViewSet(viewsets.ModelViewSet):
    """Buyer policies. Everyone with a role reads; admins configure."""

    queryset = PolicyConfig.objects.all()
    serializer_class = s.PolicyConfigSerializer
    permission_classes = [RolePermission]
    lookup_value_regex = ID_REGEX
    write_role = "admin"

    def perform_create(self, serializer):
        serializer.instance = policy_services.policy_create(**serializer.validated_data)

    def perform_update(self, serializer):
        data = {k: v for k, v in serializer.validated_data.items() if k != "name"}
        serializer.instance = policy_services.policy_update(
            policy_config=serializer.instance, **data
        )

    @extend_schema(responses={204: None, 409: OpenApiResponse(description="In use.")})
    def destroy(self, request, *args, **kwargs):
        """Delete an unused policy; 409 when sweeps or episodes refer to it."""
        return super().destroy(request, *args, **kwargs)

    def perform_destroy(self, instance):
        policy_services.policy_delete(policy_config=instance)


class EpisodeViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Episodes. Creating one enqueues it; analysts and up may run single episodes."""

    permission_classes = [RolePermission]
    lookup_value_regex = ID_REGEX
    filterset_class = EpisodeFilter
    write_role = "analyst"

    def get_queryset(self):
        return episode_list() if self.action == "list" else Episode.objects.all()

    # What a supplier seat's holder may do with its episode while it runs: everything
    # else reads the buyer's side (services.supplier_seat.seat_hides_record).
    SEAT_ACTIONS = frozenset({"seat", "answer", "cancel"})

    def get_object(self):
        episode = super().get_object()
        if self.action not in self.SEAT_ACTIONS and seat_hides_record(episode, self.request.user):
            raise Forbidden(SEAT_CLOSED)
        return episode

    def get_serializer_class(self):
        return {
            "create": s.EpisodeCreateSerializer,
            "retrieve": s.EpisodeDetailSerializer,
        }.get(self.action, s.EpisodeSerializer)

    @extend_schema(request=s.EpisodeCreateSerializer, responses={201: s.EpisodeSerializer})
    def create(self, request, *args, **kwargs):
        params = s.EpisodeCreateSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        episode = episode_services.episode_create(user=request.user, **params.validated_data)
        return Response(s.EpisodeSerializer(episode).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "after_step",
                int,
                description="Only the decisions after this step (-1, the default: all). "
                "A live page fills a hole in its timeline with it.",
            )
        ],
        responses=s.DecisionSerializer(many=True),
    )
    @action(detail=True, methods=["get"], pagination_class=DecisionPagination)
    def decisions(self, request, pk=None):
        """The episode's decisions in step order, paginated."""
        episode = self.get_object()
        after = request.query_params.get("after_step", "-1")
        if not re.fullmatch(STEP_REGEX, after):
            raise ValidationError({"after_step": [STEP_HELP]})
        page = self.paginate_queryset(episode_decisions(episode, after_step=int(after)))
        return self.get_paginated_response(s.DecisionSerializer(page, many=True).data)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "step", int, description="After this decision; -1 before the first.", required=True
            )
        ],
        responses={
            200: OpenApiResponse(description="The public state (the buyer's observation)."),
            400: OpenApiResponse(description="No such step."),
        },
    )
    @action(detail=True, methods=["get"])
    def state(self, request, pk=None):
        """The public state after a step: requirements, suppliers, threads, contracts and
        budget as the buyer saw them, for the replay boards."""
        episode = self.get_object()
        step = request.query_params.get("step", "")
        if not re.fullmatch(STEP_REGEX, step):
            raise ValidationError({"step": [STEP_HELP]})
        return Response(public_state_at(episode, int(step)))

    @extend_schema(
        request=s.HumanMoveSerializer,
        responses={
            201: s.DecisionSerializer,
            400: s.RefusedMoveSerializer,
            403: OpenApiResponse(description="Not your seat."),
            409: OpenApiResponse(
                description="The episode takes no more moves, or the step is not the next "
                "one (next_step says which is); nothing was played."
            ),
        },
    )
    @action(detail=True, methods=["post"])
    def act(self, request, pk=None):
        """Play the buyer's next move in a human-seat episode (the seat holder only), once:
        a move names the step it plays. An action the engine refuses comes back with its
        code and field; nothing is stored."""
        episode = self.get_object()
        params = s.HumanMoveSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        decision = human_seat.seat_play(
            episode_id=episode.pk, user=request.user, **params.validated_data
        )
        return Response(decision, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=s.SupplierSeatStartSerializer,
        responses={201: OpenApiResponse(description="The episode: id and seat page.")},
    )
    @action(detail=False, methods=["post"], url_path="supplier-seat")
    def supplier_seat_start(self, request):
        """Play a supplier against a buyer policy (rule or LLM): the run starts on the
        buyer's lane and stops at each offer to the seat until the analyst answers."""
        params = s.SupplierSeatStartSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        episode = supplier_seat.supplier_seat_start(user=request.user, **params.validated_data)
        body = {"id": episode.pk, "page": reverse("supplier-seat-page", args=[episode.pk])}
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: OpenApiResponse(description="The seated supplier's side.")})
    @action(detail=True, methods=["get"])
    def seat(self, request, pk=None):
        """The supplier seat's side of the episode: the offer waiting for an answer with
        the supplier's private facts, and its thread. Never the buyer's side."""
        episode = self.get_object()
        if not episode.supplier_seat:
            raise NotFound("No one plays a supplier of this episode.")
        return Response(seat_view(episode))

    @extend_schema(
        request=s.SupplierAnswerSerializer,
        responses={
            201: OpenApiResponse(description="The stored step's response."),
            400: s.RefusedMoveSerializer,
            403: OpenApiResponse(description="Not your seat."),
            409: OpenApiResponse(description="No offer waits at that step; nothing played."),
        },
    )
    @action(detail=True, methods=["post"])
    def answer(self, request, pk=None):
        """Answer the buyer's offer waiting at ``step`` (the seat holder only), once:
        accept it, counter at a price, or walk away, with a message shown as typed."""
        episode = self.get_object()
        params = s.SupplierAnswerSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        answer = supplier_seat.Answer(**params.validated_data)
        stored = supplier_seat.supplier_seat_answer(
            episode_id=episode.pk, user=request.user, answer=answer
        )
        return Response(stored, status=status.HTTP_201_CREATED)

    @extend_schema(responses=s.ApprovalSerializer(many=True))
    @action(detail=True, methods=["get"], url_path="approvals")
    def approval_list(self, request, pk=None):
        """Every escalation of the episode that asked for an answer, in step order, with
        who answered, when and why (automatic answers included)."""
        answers = episode_approvals(episode=self.get_object())
        return Response([approval_payload(a) for a in answers])

    _ANSWERS = {
        200: s.ApprovalSerializer,
        403: OpenApiResponse(
            description="May not answer: the run's starter, the refuser under review, or "
            "below the scenario's approver role."
        ),
        409: OpenApiResponse(description="Nothing is waiting for an answer."),
    }

    @extend_schema(request=None, responses=_ANSWERS)
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        """Approve the escalation this episode waits on (never its starter; the scenario
        names the lowest role that answers)."""
        return self._answer(request, approve=True)

    @extend_schema(request=None, responses=_ANSWERS)
    @action(detail=True, methods=["post"])
    def refuse(self, request, pk=None):
        """Refuse the escalation this episode waits on: it has no effect and costs nothing,
        and the refusal stands for its requirement (see services.approvals)."""
        return self._answer(request, approve=False)

    def _answer(self, request, *, approve: bool) -> Response:
        answered = approvals.approval_answer(
            episode=self.get_object(), user=request.user, approve=approve
        )
        return Response(approval_payload(answered))

    @extend_schema(request=None, responses={200: s.ReplaySerializer, 409: OpenApiResponse()})
    @action(detail=True, methods=["post"])
    def replay(self, request, pk=None):
        """Re-run the stored actions through a fresh engine and compare the score. No
        model runs: suppliers a model played answer from the stored record."""
        report = episode_services.episode_replay(episode=self.get_object())
        return Response(s.ReplaySerializer(report).data)

    @extend_schema(request=None, responses={200: s.EpisodeSerializer, 409: OpenApiResponse()})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        episode = episode_services.episode_cancel(episode=self.get_object(), user=request.user)
        return Response(s.EpisodeSerializer(episode).data)


class SweepViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Scenario sweeps (scenarios x policies x seeds). Ops and admins run them."""

    queryset = Sweep.objects.prefetch_related("scenarios", "policies")
    permission_classes = [RolePermission]
    lookup_value_regex = ID_REGEX
    write_role = "ops"

    def get_serializer_class(self):
        return {
            "create": s.SweepCreateSerializer,
            "retrieve": s.SweepDetailSerializer,
        }.get(self.action, s.SweepSerializer)

    def retrieve(self, request, *args, **kwargs):
        sweep = self.get_object()
        data = s.SweepDetailSerializer(sweep).data
        if not sweep.summary:  # still running: aggregate what has finished so far
            data["summary"] = sweep_summary(sweep)
        return Response(data)

    @extend_schema(request=s.SweepCreateSerializer, responses={201: s.SweepDetailSerializer})
    def create(self, request, *args, **kwargs):
        params = s.SweepCreateSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        sweep = sweep_services.sweep_create(user=request.user, **params.validated_data)
        return Response(s.SweepDetailSerializer(sweep).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[OpenApiParameter("file", str, enum=["csv", "json"], required=True)],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
    )
    @action(detail=True, methods=["get"])
    def export(self, request, pk=None):
        """Every cell with every metric, as a CSV or JSON download."""
        sweep = self.get_object()
        kind = request.query_params.get("file")
        if kind not in EXPORTS:
            raise ValidationError({"file": ['"csv" or "json".']})
        write, content_type = EXPORTS[kind]
        response = HttpResponse(content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="sweep-{sweep.pk}.{kind}"'
        write(sweep, response)  # an HttpResponse is a file to write to
        return response

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def scores(self, request, pk=None):
        """Every finished cell's score by scenario and policy (for distribution plots)."""
        return Response(sweep_score_distributions(self.get_object()))

    @extend_schema(request=None, responses={200: s.SweepSerializer, 409: OpenApiResponse()})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        sweep = sweep_services.sweep_cancel(sweep=get_object_or_404(Sweep, pk=pk))
        return Response(s.SweepSerializer(sweep).data)


class DatasetNegotiation(DefaultContentNegotiation):
    """Here ``?format=`` names the dataset's format, not one of DRF's renderers, and the
    records stream whatever the client accepts: answers that are not records are JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class DatasetViewSet(viewsets.ViewSet):
    """Training data from stored episodes (see procurement.services.datasets)."""

    permission_classes = [RolePermission]
    content_negotiation_class = DatasetNegotiation

    @extend_schema(
        parameters=[
            OpenApiParameter("format", str, enum=list(dataset_services.FORMATS), default="jsonl"),
            OpenApiParameter(
                "scenario",
                {"type": "array", "items": {"type": "string"}},
                explode=True,
                description="Scenario name; repeat it for several (none: every scenario).",
            ),
            OpenApiParameter(
                "policy",
                {"type": "array", "items": {"type": "string"}},
                explode=True,
                description="Policy name; repeat it for several (none: every policy).",
            ),
            OpenApiParameter(
                "min_score", float, description="Only episodes that scored at least this (0-1)."
            ),
            OpenApiParameter(
                "limit",
                int,
                description="At most this many records (default and ceiling: "
                "DATASET_EXPORT_MAX_RECORDS, 1000 unless configured).",
            ),
            OpenApiParameter(
                "after",
                str,
                description="EPISODE:STEP: the page after this step, as the previous "
                'page\'s Link rel="next" has it.',
            ),
        ],
        responses={
            (200, "application/x-ndjson"): s.DatasetRecordSerializer,
            400: OpenApiResponse(description="A bad filter: {filter: [message]}."),
        },
    )
    @action(detail=False, methods=["get"])
    def export(self, request):
        """Chat-format training records, one JSON line per decision of every finished
        episode that passes the filters (episodes with LLM suppliers are left out: their
        steps cannot be replayed; so are episodes on a sealed evaluation's held-out
        worlds, counted in the ``X-Held-Out-Excluded`` header): ``messages`` for SFT,
        ``prompt`` + ``completion`` for GRPO, the step's reward, the episode's score and
        ids. The same records as
        ``manage.py export_dataset``, a page at a time: when more are left, the
        ``Link`` header has the next page's URL (``rel="next"``)."""
        params = request.query_params
        export = dataset_services.dataset_export(
            format=params.get("format", "jsonl"),
            scenarios=params.getlist("scenario"),
            policies=params.getlist("policy"),
            min_score=params.get("min_score"),
            after=params.get("after"),
            limit=params.get("limit") or settings.DATASET_EXPORT_MAX_RECORDS,
        )
        lines = export.lines()
        response = StreamingHttpResponse(
            _async_chunks(lines) if isinstance(request._request, ASGIRequest) else lines,
            content_type=dataset_services.CONTENT_TYPES[export.format],
        )
        response["Content-Disposition"] = f'attachment; filename="dataset.{export.format}"'
        response["X-Held-Out-Excluded"] = str(export.skipped_held_out)
        if export.next_after is not None:
            episode_id, step = export.next_after
            query = params.copy()
            query["after"] = f"{episode_id}:{step}"
            next_url = request.build_absolute_uri(f"{request.path}?{query.urlencode(safe=':')}")
            response["Link"] = f'<{next_url}>; rel="next"'
        return response


async def _async_chunks(lines: Iterator[str], size: int = 64) -> AsyncIterator[str]:
    """Under ASGI (daphne) the records stream through an async iterator (Django would
    collect a sync one whole before sending it); each chunk is made in the request's
    thread, where the database connection is."""
    take = sync_to_async(lambda: "".join(itertools.islice(lines, size)))
    while chunk := await take():
        yield chunk

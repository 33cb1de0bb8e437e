"""What waits for the signed-in user (selectors.notifications): the header polls it."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from procurement.api.permissions import RolePermission
from procurement.selectors.notifications import notifications_for


class NotificationQuery(serializers.Serializer):
    since = serializers.DateTimeField(
        required=False,
        help_text="When the user last looked (ISO 8601 with a time zone); sweeps that ended "
        "after it are listed. Default: the last day.",
    )


class NotificationViewSet(viewsets.ViewSet):
    permission_classes = [RolePermission]

    @extend_schema(
        parameters=[OpenApiParameter("since", str, required=False)],
        responses={
            200: OpenApiResponse(
                description="{count, approvals: [...], sweeps: [...]}: escalations the user "
                "may answer now and their sweeps that ended since ``since``."
            ),
            400: OpenApiResponse(description="``since`` is not a date and time."),
        },
    )
    def list(self, request):
        """Escalations waiting for an answer the user may give, and their ended sweeps."""
        query = NotificationQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(notifications_for(request.user, since=query.validated_data.get("since")))

"""GET /healthz: public up/down per dependency; the details only for logged-in admins."""

from asgiref.sync import sync_to_async
from django.db import DatabaseError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from procurement.roles import has_role
from procurement.services.health import check_all


async def _is_admin(request: HttpRequest) -> bool:
    # Sessions and roles live in the database: when it is down, /healthz must still answer.
    try:
        user = await request.auser()
        return await sync_to_async(has_role)(user, "admin")
    except DatabaseError:
        return False


@require_GET
async def healthz(request: HttpRequest) -> JsonResponse:
    report = await check_all(detailed=await _is_admin(request))
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)

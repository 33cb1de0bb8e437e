"""GET /healthz: public JSON report of the database, channel layer and broker."""

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from procurement.services.health import check_all


@require_GET
async def healthz(request: HttpRequest) -> JsonResponse:
    report = await check_all()
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)

"""Refuse NUL characters in query strings and form posts before any view runs.

Django's form fields already refuse NUL, but not every read goes through a form: the
admin's list filters (``?status=%00``) put the value straight into a query, which
PostgreSQL then rejects with a 500. One check here covers the admin, the dashboard and
the API's query strings; JSON bodies are checked by the API's parsers.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from procurement.limits import NUL_PROBLEM, json_problem


class RejectNulMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # request.POST is parsed for form posts only (JSON bodies leave it empty).
        params = [dict(request.GET.lists())]
        if request.method == "POST":
            params.append(dict(request.POST.lists()))
        if json_problem(params):
            return JsonResponse({"detail": f"Bad request: {NUL_PROBLEM}"}, status=400)
        return self.get_response(request)

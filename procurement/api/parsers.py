"""Request-body parsers that refuse what PostgreSQL or Python cannot take.

DRF's parsers accept any string and any nesting: a NUL character then fails in the
database (a 500) and ``[`` x 100,000 exhausts the JSON decoder's recursion (a 500).
Checked here, once, every API operation answers 400 with the reason, before any
serializer, service or query sees the data.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import DataAndFiles, FormParser, JSONParser, MultiPartParser

from procurement.limits import DEPTH_PROBLEM, json_problem


def _refuse(problem: str | None, kind: str) -> None:
    if problem:
        raise ParseError(f"{kind} parse error - {problem}")


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        try:
            document = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - {DEPTH_PROBLEM}") from None
        _refuse(json_problem(document), "JSON")
        return document


class StrictFormParser(FormParser):
    """Form bodies of PUT and PATCH, which Django's own request.POST never parses."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        _refuse(json_problem(dict(data.lists())), "Form")
        return data


class StrictMultiPartParser(MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None) -> DataAndFiles:
        parsed = super().parse(stream, media_type, parser_context)
        names = [f.name for f in parsed.files.values()]
        _refuse(json_problem([dict(parsed.data.lists()), names]), "Multipart form")
        return parsed

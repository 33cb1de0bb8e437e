"""Request-body parsers that refuse what PostgreSQL or Python cannot take.

DRF's parsers accept any string, number and nesting: a NUL character then fails in the
database (a 500), a lone surrogate in any response that carries it (a 500), ``1e400`` or
a 400-digit integer in arithmetic (a 500), and ``[`` x 100,000 exhausts the JSON
decoder's recursion (a 500). Checked here against ``procurement.limits``, once, every API
operation answers 400 with the reason and the ``field`` it concerns (``action.price``),
before any serializer, service or query sees the data.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import DataAndFiles, FormParser, JSONParser, MultiPartParser

from procurement.limits import DEPTH_PROBLEM, JSONProblem, json_problem


def _refuse(problem: JSONProblem | None, kind: str, *, form: bool = False) -> None:
    if problem:
        # A form field's values are a list: "name[0]" is the field "name".
        field = problem.path.partition("[")[0] if form else problem.path
        where = f"{field}: " if field else ""
        named = {"field": field} if field else {}
        raise ParseError({"detail": f"{kind} parse error - {where}{problem.rule}", **named})


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
        _refuse(json_problem(dict(data.lists())), "Form", form=True)
        return data


class StrictMultiPartParser(MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None) -> DataAndFiles:
        parsed = super().parse(stream, media_type, parser_context)
        names = [f.name for f in parsed.files.values()]
        problem = json_problem(dict(parsed.data.lists())) or json_problem(names)
        _refuse(problem, "Multipart form", form=True)
        return parsed

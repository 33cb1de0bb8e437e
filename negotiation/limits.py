"""What any JSON input may hold, wherever it arrives: the web app (``procurement.limits``
re-exports these for its API parsers, forms, streams and commands) and the OpenEnv server.

Pure Python, so that the engine's own adapters share the one rule set. Each rule stands
in front of a 500 or of a read that fails later:

* a NUL character: PostgreSQL cannot store one (text or jsonb);
* nesting deeper than ``MAX_JSON_DEPTH``: a deep document exhausts the parser's recursion;
* a lone surrogate (``"\\ud800"``, legal in JSON text, not in UTF-8): it cannot be encoded,
  so SQLite keeps it inside a JSON column and every response that later carries it fails;
* a number that is not finite or larger than a float holds (``MAX_NUMBER``): ``1e400``
  decodes to infinity and a 400-digit integer overflows float arithmetic. Smaller numbers
  out of a field's range (a seed of 10**40) are the serializers' to refuse, by name.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any

MAX_SEED = 2**62  # replays re-derive sub-seeds; keeps every derived value in a bigint
MAX_JSON_DEPTH = 32  # scenario configs nest 4 levels; anything near 32 is an attack
MAX_NUMBER = sys.float_info.max  # larger numbers overflow float arithmetic
NUL = "\x00"
NUL_PROBLEM = "NUL characters (\\u0000) are not allowed in any string."
DEPTH_PROBLEM = f"JSON nested deeper than {MAX_JSON_DEPTH} levels is not allowed."
SURROGATE_PROBLEM = "Lone surrogate characters (\\ud800 to \\udfff) are not allowed in any string."
NUMBER_PROBLEM = f"Numbers must be finite and at most {MAX_NUMBER:.4g} in size."

_BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_PATH_KEY_CHARS = 40  # a key as a problem's path shows it, at most


class InputError(ValueError):
    """An input breaks one of the rules above; the message says which, for a person."""


@dataclass(frozen=True)
class JSONProblem:
    """A rule a document breaks and where: ``path`` such as ``action.price`` or
    ``policies[0]``; empty for the document itself or one of its own keys."""

    path: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}: {self.rule}" if self.path else self.rule


def _path(node: tuple | None) -> str:
    """The path of a node of ``json_problem``'s walk: (parent node, key or index) links."""
    parts: list[str] = []
    while node is not None:
        node, step = node
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step[:_PATH_KEY_CHARS]}")
    return "".join(reversed(parts)).removeprefix(".")


def _string_rule(text: str) -> str | None:
    found = _BAD_CHARACTER.search(text)
    if found is None:
        return None
    return NUL_PROBLEM if NUL in text else SURROGATE_PROBLEM


def json_problem(document: Any) -> JSONProblem | None:
    """The first rule a decoded JSON document breaks, and where; None when it breaks none.

    Walks iteratively (no recursion to exhaust): every string, keys included, must be free
    of NUL and lone surrogates, every number finite and within ``MAX_NUMBER`` in size, and
    containers may nest at most ``MAX_JSON_DEPTH`` levels. A container's keys are checked
    before anything below it, so a path never shows a key that breaks a rule.
    """
    stack: list[tuple[Any, int, tuple | None]] = [(document, 1, None)]
    while stack:
        value, depth, node = stack.pop()
        if isinstance(value, str):
            rule = _string_rule(value)
        elif isinstance(value, bool) or value is None:
            rule = None
        elif isinstance(value, int | float):
            rule = None if abs(value) <= MAX_NUMBER else NUMBER_PROBLEM  # NaN fails too
        elif isinstance(value, dict):
            rule = DEPTH_PROBLEM if depth > MAX_JSON_DEPTH else None
            for key in value:
                rule = rule or (_string_rule(key) if isinstance(key, str) else None)
            stack.extend((item, depth + 1, (node, str(key))) for key, item in value.items())
        elif isinstance(value, list):
            rule = DEPTH_PROBLEM if depth > MAX_JSON_DEPTH else None
            stack.extend((item, depth + 1, (node, index)) for index, item in enumerate(value))
        else:
            rule = None
        if rule:  # too deep: where is the whole document, not a path of [0]s
            return JSONProblem("" if rule == DEPTH_PROBLEM else _path(node), rule)
    return None


class StrictJSONDecoder(json.JSONDecoder):
    """A decoder that refuses what ``json_problem`` refuses, as a ``JSONDecodeError`` (the
    error every JSON reader already handles), never a ``RecursionError`` or the
    ``ValueError`` of an integer of more than 4,300 digits."""

    def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
        try:
            document = super().decode(s, *args, **kwargs)
        except RecursionError:
            raise json.JSONDecodeError(DEPTH_PROBLEM, s, 0) from None
        except json.JSONDecodeError:
            raise
        except ValueError:  # int(): "Exceeds the limit (4300 digits) ..."
            raise json.JSONDecodeError(NUMBER_PROBLEM, s, 0) from None
        problem = json_problem(document)
        if problem:
            raise json.JSONDecodeError(str(problem), s, 0)
        return document


def decode_json(text: str) -> Any:
    """``json.loads`` under these rules; raises ``InputError`` with the reason."""
    try:
        return json.loads(text, cls=StrictJSONDecoder)
    except json.JSONDecodeError as exc:
        # Our own reasons are sentences; the json module's get a prefix and a position.
        raise InputError(exc.msg if exc.msg.endswith(".") else f"Malformed JSON: {exc}.") from None


def lone_surrogates_replaced(document: Any) -> Any:
    """``document`` with every lone surrogate in its strings (keys too) replaced by U+FFFD,
    for reading what was stored before these rules."""
    if isinstance(document, str):
        return _LONE_SURROGATE.sub("\ufffd", document)
    if isinstance(document, dict):
        return {
            lone_surrogates_replaced(k): lone_surrogates_replaced(v) for k, v in document.items()
        }
    if isinstance(document, list):
        return [lone_surrogates_replaced(item) for item in document]
    return document


def seed_problem(seed: int) -> str | None:
    if not 0 <= seed <= MAX_SEED:
        return f"A seed must be between 0 and {MAX_SEED}."
    return None

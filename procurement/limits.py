"""What any input may hold, wherever it arrives (API, WebSocket, command line).

One place per rule, so the API and the commands cannot drift apart: a seed the API
refuses is refused by ``run_episode`` too, and a sweep too big for the API is too big
for ``run_sweep``. The JSON rules exist because PostgreSQL cannot store a NUL character
(text or jsonb: a 500), and a deeply nested document exhausts the recursion of the
parser (a 500, or a WebSocket closed with 1011).
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

MAX_SEED = 2**62  # replays re-derive sub-seeds; keeps every derived value in a bigint
MAX_SEEDS_PER_SWEEP = 10_000
MAX_SWEEP_CELLS = 20_000
MAX_ID = 2**63 - 1  # a bigint primary key: larger numbers overflow the database driver
MAX_STEP_DELAY = 2.0  # seconds between a live episode's decisions (a worker waits that long)
LIVE_STEP_DELAY = 0.4  # the pace of "live" in the start form: readable, one row at a time
MAX_JSON_DEPTH = 32  # scenario configs nest 4 levels; anything near 32 is an attack
NUL = "\x00"
NUL_PROBLEM = "NUL characters (\\u0000) are not allowed in any string."
DEPTH_PROBLEM = f"JSON nested deeper than {MAX_JSON_DEPTH} levels is not allowed."


class InputError(ValueError):
    """An input breaks one of the rules above; the message says which, for a person."""


def json_problem(document: Any) -> str | None:
    """Why a decoded JSON document cannot be accepted, or None.

    Walks iteratively (no recursion to exhaust): every string, keys included, must be
    free of NUL, and containers may nest at most ``MAX_JSON_DEPTH`` levels.
    """
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if NUL in value:
                return NUL_PROBLEM
        elif isinstance(value, dict | list):
            if depth > MAX_JSON_DEPTH:
                return DEPTH_PROBLEM
            items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
    return None


class StrictJSONDecoder(json.JSONDecoder):
    """A decoder that refuses what ``json_problem`` refuses, as a ``JSONDecodeError``
    (the error every JSON reader already handles), and never a ``RecursionError``."""

    def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
        try:
            document = super().decode(s, *args, **kwargs)
        except RecursionError:
            raise json.JSONDecodeError(DEPTH_PROBLEM, s, 0) from None
        problem = json_problem(document)
        if problem:
            raise json.JSONDecodeError(problem, s, 0)
        return document


def decode_json(text: str) -> Any:
    """``json.loads`` under these rules; raises ``InputError`` with the reason."""
    try:
        return json.loads(text, cls=StrictJSONDecoder)
    except json.JSONDecodeError as exc:
        # Our own reasons are sentences; the json module's get a prefix and a position.
        raise InputError(exc.msg if exc.msg.endswith(".") else f"Malformed JSON: {exc}.") from None


class JSONInputField(forms.JSONField):
    """The form field for JSON typed into a form (the admin): the same rules, as a
    form error instead of a 500 when the row is saved."""

    default_error_messages = {
        "invalid": f"Enter valid JSON, free of NUL characters (\\u0000) and nested at most "
        f"{MAX_JSON_DEPTH} levels."
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs["decoder"] = StrictJSONDecoder  # a model field's formfield() passes None
        super().__init__(**kwargs)


def seed_problem(seed: int) -> str | None:
    if not 0 <= seed <= MAX_SEED:
        return f"A seed must be between 0 and {MAX_SEED}."
    return None


def validate_sweep_grid(*, scenarios: int, policies: int, seeds: int, seed_start: int) -> None:
    """Raise ``ValidationError`` (field -> messages) when a sweep grid is out of bounds."""
    errors: dict[str, list[str]] = {}
    if not 1 <= seeds <= MAX_SEEDS_PER_SWEEP:
        errors["seeds"] = [f"Seeds per cell must be between 1 and {MAX_SEEDS_PER_SWEEP}."]
    elif scenarios * policies * seeds > MAX_SWEEP_CELLS:
        cells = scenarios * policies * seeds
        errors["seeds"] = [f"{cells} cells is too many; the limit is {MAX_SWEEP_CELLS}."]
    last_seed = seed_start + max(seeds, 1) - 1
    if seed_problem(seed_start) or seed_problem(last_seed):
        errors["seed_start"] = [f"Every seed of the sweep must be between 0 and {MAX_SEED}."]
    if errors:
        raise ValidationError(errors)

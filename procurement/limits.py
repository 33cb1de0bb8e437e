"""What any input may hold, wherever it arrives (API, forms, WebSocket, command line).

One place per rule, so the API and the commands cannot drift apart: a seed the API
refuses is refused by ``run_episode`` too, and a sweep too big for the API is too big
for ``run_sweep``. The JSON rules (NUL, depth, lone surrogates, numbers: why each, in
``negotiation.limits``) and the seed's bounds are declared in the engine, whose OpenEnv
server takes input too, and used here under the same names.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from negotiation.limits import (
    DEPTH_PROBLEM,
    MAX_JSON_DEPTH,
    MAX_NUMBER,
    MAX_SEED,
    NUL,
    NUL_PROBLEM,
    NUMBER_PROBLEM,
    SURROGATE_PROBLEM,
    InputError,
    JSONProblem,
    StrictJSONDecoder,
    decode_json,
    json_problem,
    lone_surrogates_replaced,
    seed_problem,
)

__all__ = [  # re-exported: the app imports every input rule from here
    "DEPTH_PROBLEM",
    "MAX_JSON_DEPTH",
    "MAX_NUMBER",
    "MAX_SEED",
    "NUL",
    "NUL_PROBLEM",
    "NUMBER_PROBLEM",
    "SURROGATE_PROBLEM",
    "InputError",
    "JSONProblem",
    "StrictJSONDecoder",
    "decode_json",
    "json_problem",
    "lone_surrogates_replaced",
    "seed_problem",
]

MAX_SEEDS_PER_SWEEP = 10_000
MAX_SWEEP_CELLS = 20_000
MAX_ID = 2**63 - 1  # a bigint primary key: larger numbers overflow the database driver
MAX_STEP_DELAY = 2.0  # seconds between a live episode's decisions (no worker waits them)
LIVE_STEP_DELAY = 0.4  # the pace of "live" in the start form: readable, one row at a time


class JSONInputField(forms.JSONField):
    """The form field for JSON typed into a form (the admin): the same rules, as a
    form error instead of a 500 when the row is saved."""

    default_error_messages = {
        "invalid": f"Enter valid JSON, free of NUL characters (\\u0000) and lone surrogates, "
        f"with finite numbers of at most {MAX_NUMBER:.4g} in size, nested at most "
        f"{MAX_JSON_DEPTH} levels."
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs["decoder"] = StrictJSONDecoder  # a model field's formfield() passes None
        super().__init__(**kwargs)


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

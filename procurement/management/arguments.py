"""argparse types shared by the commands: bad values are refused before anything runs.

A type that raises ``ArgumentTypeError`` makes argparse report ``argument --seed: ...``;
under ``call_command`` Django turns that into a ``CommandError`` (no traceback). Values a
service refuses later come back through ``option_error``, named by option.
"""

from __future__ import annotations

import argparse
import math

from django.core.exceptions import ValidationError
from django.core.management import CommandError

from procurement.limits import MAX_ID, seed_problem


def option_error(exc: ValidationError) -> CommandError:
    """A service's field errors as one line naming each option: ``--seed-start: ...``."""
    return CommandError(
        " ".join(
            f"--{field.replace('_', '-')}: {' '.join(messages)}"
            for field, messages in exc.message_dict.items()
        )
    )


def integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number.") from None


def seed(text: str) -> int:
    """A seed as the API takes it: 0 to MAX_SEED."""
    value = integer(text)
    problem = seed_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(f"{problem} Got {text}.")
    return value


def row_id(text: str) -> int:
    value = integer(text)
    if not 1 <= value <= MAX_ID:
        raise argparse.ArgumentTypeError(f"an id is between 1 and {MAX_ID}; got {text}.")
    return value


def _seconds(text: str, *, allow_zero: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds.") from None
    if not ((value >= 0 if allow_zero else value > 0) and math.isfinite(value)):
        kind = "zero or a positive" if allow_zero else "a positive"
        raise argparse.ArgumentTypeError(f"must be {kind} number of seconds; got {text}.")
    return value


def positive_seconds(text: str) -> float:
    return _seconds(text, allow_zero=False)


def non_negative_seconds(text: str) -> float:
    return _seconds(text, allow_zero=True)

"""The page filters that put units on numbers (procurement.templatetags.arena_format)."""

from __future__ import annotations

from procurement.templatetags.arena_format import milliseconds


def test_milliseconds_never_reads_a_real_decision_as_zero() -> None:
    seconds = (None, 0, 4e-8, 4.2e-5, 0.00093, 0.0012, 0.0456, 2.5, 1234.5)
    assert [milliseconds(s) for s in seconds] == [
        "\N{EN DASH}",
        "0.000",
        "< 0.001",
        "0.042",
        "0.930",
        "1.2",
        "45.6",
        "2,500.0",
        "1,234,500.0",
    ]

"""How pages write numbers: a run's duration with units, a metric as people read it."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    """Seconds as people read them: "0.4 s", "42 s", "3 min 05 s", "2 h 07 min"."""
    if seconds is None:
        return "\N{EN DASH}"  # no value yet, as the tables show it
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


@register.filter
def metric(value) -> str:
    """A metric's value: counts as whole numbers, rates and amounts to 3 decimals (at
    most), no value as a dash (shown_metrics: no deal, no buyer share)."""
    if value is None or value == "":
        return "\N{EN DASH}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".") if value != int(value) else f"{value:,.0f}"
    return str(value)


@register.filter
def milliseconds(seconds: float | None) -> str:
    """Seconds as milliseconds: one decimal from 1 ms up, three below, so a rule policy's
    microsecond decision does not read as 0 (and one under a microsecond says so)."""
    if seconds is None:
        return "\N{EN DASH}"
    ms = seconds * 1000
    if ms >= 1:
        return f"{ms:,.1f}"
    return f"{ms:.3f}" if ms >= 0.0005 or ms == 0 else "< 0.001"

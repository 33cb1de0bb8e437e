"""How pages write a run's times: moments in the server's zone, named; spans with units."""

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

"""{% metric "deal_rate" %}: a metric's label with its meaning as a tooltip and a link
to its glossary entry (procurement/selectors/glossary.py)."""

from __future__ import annotations

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from procurement.selectors.glossary import metric_entry

register = template.Library()


@register.simple_tag
def metric(name: str, text: str = "", currency: str = "") -> SafeString:
    """``name``'s label (or ``text``, e.g. "Mean score") as an abbr whose title says what
    it means, its unit and which way is better."""
    entry = metric_entry(name, currency or None)
    return format_html(
        '<abbr class="metric" data-metric="{}" title="{}">{}</abbr>',
        name,
        entry["title"],
        text or entry["label"],
    )


@register.simple_tag
def glossary_link() -> SafeString:
    return format_html(
        '<a class="glossary-link" href="{}">What these numbers mean</a>', reverse("glossary")
    )

"""What the numbers on the pages mean: the metrics' glossary, the units of an action's
figures and an episode's currency, all read from the engine's declarations
(negotiation/metrics.py METRIC_DOCS, negotiation/action_spec.py FIELD_SPECS,
ScenarioConfig.currency); nothing here restates them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from negotiation.action_spec import DEFAULT_ITEM_UNIT, FIELD_SPECS, FIGURES, field_unit
from negotiation.config import scenario_currency
from negotiation.metrics import METRIC_DOCS, MetricDoc, metric_doc

if TYPE_CHECKING:
    from procurement.models import Episode

BETTER = {"high": "higher is better", "low": "lower is better", "": ""}


def metric_entry(name: str, currency: str | None = None) -> dict[str, str]:
    """One metric for a page: name, label, unit, meaning, better (and in words), and
    ``title`` (the tooltip: meaning, unit, which way is better)."""
    doc: MetricDoc = metric_doc(name)
    unit = doc.unit_text(currency or scenario_currency({}))
    tail = "; ".join(x for x in (unit, BETTER[doc.better]) if x)
    title = f"{doc.meaning} ({tail})" if doc.meaning and tail else doc.meaning or tail
    return {
        "name": name,
        "label": doc.label,
        "unit": unit,
        "meaning": doc.meaning,
        "better": doc.better,
        "better_text": BETTER[doc.better],
        "title": title,
    }


def metric_glossary(currency: str | None = None) -> list[dict[str, str]]:
    """Every metric, in the order the engine's declaration lists them."""
    return [metric_entry(name, currency) for name in METRIC_DOCS]


def figure_fields() -> dict[str, dict[str, str]]:
    """The action fields that hold figures: {name: {label, unit}}; ``unit`` is the
    pattern over {currency} and {unit} the page fills per decision."""
    return {
        name: {"label": FIELD_SPECS[name].label, "unit": FIELD_SPECS[name].unit} for name in FIGURES
    }


def figure_glossary(currency: str) -> list[dict[str, str]]:
    """The figures for the glossary page: name, label, doc, unit in ``currency``."""
    return [
        {
            "name": name,
            "label": FIELD_SPECS[name].label,
            "doc": FIELD_SPECS[name].doc,
            "unit": field_unit(name, currency, "item unit"),
        }
        for name in FIGURES
    ]


def requirement_units(episode: Episode) -> dict[str, str]:
    """Each requirement's item unit ("box", "kg") in ``episode``'s world: its generation
    from the pinned scenario and seed only (no step played, no supplier model loaded).
    Empty when that scenario no longer loads: figures then read in plain units."""
    from negotiation import load_scenario
    from negotiation.config import ScenarioValidationError
    from negotiation.world.state import World
    from procurement.worlds import episode_world_key

    try:
        cfg = load_scenario(episode.scenario_snapshot)
    except ScenarioValidationError:
        return {}
    world = World.generate(cfg, episode.seed, world_key=episode_world_key(episode))
    return {r.id: r.unit or DEFAULT_ITEM_UNIT for r in world.requirements}


def episode_units(episode: Episode) -> dict[str, Any]:
    """What the episode page needs to label its numbers."""
    return {
        "currency": scenario_currency(episode.scenario_snapshot or {}),
        "requirement_units": requirement_units(episode),
        "figures": figure_fields(),
        "default_unit": DEFAULT_ITEM_UNIT,
    }

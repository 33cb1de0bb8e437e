"""The metrics' glossary (METRIC_DOCS) covers every metric an episode reports, and says
for each what it means, in which unit and which way is better."""

from __future__ import annotations

import pytest

from negotiation.metrics import METRIC_DOCS, SERVICE_METRICS, UNIT_TEXT, metric_doc
from negotiation.runner import episode_metrics, run_episode


class _LLMBuyer:
    """Stands for an LLM buyer: the counts runner.episode_metrics adds for one."""

    stats = {"llm_parse_failures": 1, "llm_fallbacks": 2, "llm_calls": 3}


@pytest.mark.parametrize("scenario", ["medium_adversarial", "bilateral_hardball"])
def test_every_metric_an_episode_reports_has_a_glossary_entry(scenario: str) -> None:
    reported = set(run_episode(scenario, "expert", 3, record_steps=False).metrics)
    reported |= set(episode_metrics({}, _LLMBuyer()))  # the LLM buyer's counts
    reported |= SERVICE_METRICS  # the service's runners add these
    assert reported - set(METRIC_DOCS) == set()
    assert set(METRIC_DOCS) - reported == set()  # no entry for a metric no longer reported


def test_each_entry_has_a_label_a_unit_a_sentence_and_a_direction() -> None:
    for name, doc in METRIC_DOCS.items():
        assert doc.label and doc.label != name, name
        assert doc.unit in UNIT_TEXT and doc.unit, name
        assert doc.meaning.endswith(".") and len(doc.meaning) > 20, name
        assert doc.better in ("high", "low", ""), name
    assert METRIC_DOCS["buyer_share"].better == "high"
    assert METRIC_DOCS["mutual_loss"].better == "low"
    assert METRIC_DOCS["spend"].unit_text("EUR") == "EUR"
    assert METRIC_DOCS["deal_rate"].unit_text("EUR") == "share, 0 to 1"


def test_a_metric_the_glossary_lacks_reads_as_its_name() -> None:
    doc = metric_doc("some_old_metric")
    assert (doc.label, doc.meaning, doc.unit_text("USD")) == ("Some old metric", "", "")

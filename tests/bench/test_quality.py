"""bench/quality.py with the field's negotiators as buyers: one episode each way, and the
loss rate over the seeds some buyer closed."""

from __future__ import annotations

import importlib.util

import pytest

from bench.quality import FIELD_BUYERS, make_buyer, mark_closable, play, summarise
from negotiation.policies.field_buyer import FieldBuyerPolicy

needs_negmas = pytest.mark.skipif(
    importlib.util.find_spec("negmas") is None, reason="negmas is not installed"
)


@needs_negmas
def test_negmas_buyers_play_rule_and_field_sellers():
    assert "negmas_boulware" in FIELD_BUYERS
    assert isinstance(make_buyer("negmas_boulware", 1), FieldBuyerPolicy)
    for family, preset in (("rule", "bilateral_cooperative"), ("field", "bilateral:field_linear")):
        *_, row = play((family, preset, "negmas_boulware", 1))
        assert "error" not in row, row
        assert row["deal_rate"] in (0.0, 1.0) and row["invalid_actions"] == 0


def test_closable_counts_only_seeds_some_buyer_closed():
    def row(share):
        return {"buyer_share": share, "lost": float(share is None), "invalid_actions": 0,
                **{k: 0.0 for k in ("deal_rate", "mutual_loss", "rounds_per_deal", "score",
                                    "surplus")}}  # fmt: skip

    done = [
        ("field", "p", "a", 0, row(0.5)),
        ("field", "p", "b", 0, row(None)),  # lost a seed "a" closed
        ("field", "p", "a", 1, row(None)),
        ("field", "p", "b", 1, row(None)),  # nobody closed seed 1: not counted
    ]
    mark_closable(done)
    assert [r.get("closable_lost") for *_, r in done] == [0.0, 1.0, None, None]
    *_, out = summarise(("field", "p", "b", [r for *_, r in done[1::2]]))
    assert out["closable"]["n"] == 1 and out["closable"]["mean"] == 1.0

"""The expert against the field family's negmas sellers (suppliers/field.py; skipped
without negmas): it keeps every deal with the time-based and tit-for-tat sellers, and
against tit-for-tat (policy.MEET at its patience) and Boulware (the trend final offer,
beliefs.trend_offer, made to a steady clock, over_cap.on_clock) it pays less than the
reference buyer that does best there. Seeds from the tuning range (100000 on); reports
use seeds 0 on."""

from __future__ import annotations

import importlib.util
import statistics

import pytest

from negotiation import ProcurementEnv, get_policy, load_scenario
from negotiation.policies.base import Policy
from negotiation.policies.expert import over_cap
from negotiation.policies.field_buyer import make_field_buyer

needs_negmas = pytest.mark.skipif(
    importlib.util.find_spec("negmas") is None, reason="negmas is not installed"
)
SEEDS = range(100000, 100006)


def share(policy: Policy, persona: str, seed: int) -> float | None:
    """The buyer's share of one bilateral episode against ``persona`` (None: no deal)."""
    policy.reset(seed)
    env = ProcurementEnv(load_scenario("bilateral", persona=persona))
    obs = env.reset(seed=seed)
    while not env.done:
        obs = env.step(policy.act(obs)).observation
    m = env.score().metrics
    return float(m["buyer_share"]) if int(m["contracts"]) else None


def test_on_clock_reads_the_last_concessions():
    boulware = (3120.0, 3113.44, 3087.22, 3041.33, 2956.11, 2805.33, 2588.99)
    assert over_cap.on_clock(boulware)
    # A seller that mirrored the buyer's jump at its patience: its last step is no clock's.
    assert not over_cap.on_clock((1340.0, 1338.0, 1334.0, 1329.47, 1255.0))
    assert not over_cap.on_clock((36.0, 35.0, 33.0))  # too few answers


@needs_negmas
@pytest.mark.parametrize(
    "persona", ["field_boulware", "field_linear", "field_conceder", "field_tit_for_tat"]
)
def test_expert_keeps_every_deal_with_negmas_sellers(persona: str):
    for seed in SEEDS:
        assert share(get_policy("expert", seed=seed), persona, seed) is not None, seed


@needs_negmas
@pytest.mark.parametrize(
    ("persona", "reference"),
    [
        ("field_tit_for_tat", lambda seed: get_policy("script_concede_5pct", seed=seed)),
        ("field_boulware", lambda seed: make_field_buyer("negmas_boulware", seed=seed)),
    ],
)
def test_expert_pays_less_than_the_best_reference_buyer(persona: str, reference):
    """The best reference buyer against each seller on the field bench (tit-for-tat: the
    5 % concession script; Boulware: negmas's own Boulware buyer)."""
    ours = [share(get_policy("expert", seed=seed), persona, seed) for seed in SEEDS]
    theirs = [share(reference(seed), persona, seed) for seed in SEEDS]
    assert None not in ours and None not in theirs
    assert statistics.mean(ours) > statistics.mean(theirs)

"""The expert's posterior over a bilateral seller's concession tactic (posterior.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from negotiation.concession import floor_now, next_ask, pressure, record
from negotiation.entities import SupplierHidden, ThreadHidden
from negotiation.guard import BAND
from negotiation.policies.expert import posterior
from negotiation.policies.expert.beliefs import History, history
from negotiation.policies.expert.policy import PRE_RATES, PROBE_OFFER, PROBE_RAISE
from negotiation.policies.expert.posterior import (
    COUNTER_TOL,
    PRE_RAISES,
    closing_offer,
    consistent_fits,
    lowest_accepted_next,
    patience_offer,
    prepatience_offer,
)
from negotiation.policies.lookahead import lowest_accepted
from tests.negotiation.bilateral import play_expert


def _seller(
    beta: float, w: float, rec: float, d: int, scale: float = 1.0
) -> tuple[ThreadHidden, SupplierHidden]:
    th = ThreadHidden(52.0 * scale, 48.0 * scale, 55.0 * scale, 90.0 * scale, beta, 8)
    sh = SupplierHidden(
        time_weight=w,
        reciprocity=rec,
        tft_window=d,
        stall_rounds=9,
        quarter_end=0,
        quarter_pressure=0.0,
        overstock=0.0,
    )
    return th, sh


def _haggle(th: ThreadHidden, sh: SupplierHidden, offers: list[float]) -> History:
    """The engine's own seller answering ``offers``, counters rounded as the buyer sees them."""
    counters = []
    for k, offer in enumerate(offers, 1):
        ask = next_ask(th, sh, offer, k, 0)
        record(th, offer, ask)
        th.last_counter = round(ask.price, 2)
        counters.append(th.last_counter)
    return History(tuple(offers), tuple(counters), True)


OFFERS = [42.0, 42.26, 44.38, 44.65, 44.92, 45.19, 45.47, 57.0]  # creep, probe, creep, jump


@pytest.mark.parametrize(
    ("beta", "w", "rec", "d", "scale"),
    [
        (0.2, 0.7, 0.6, 2, 1.0),
        (0.6, 0.5, 0.9, 1, 1.0),
        (2.5, 0.55, 1.1, 2, 1.0),
        (0.3, 0.35, 1.8, 4, 1.0),
        # A costly item: a cent is ~1e-5 of the price, so only a deep lattice lands within one.
        (0.25, 0.65, 0.7, 2, 20.0),
        (0.7, 0.45, 0.85, 3, 20.0),
    ],
)
def test_the_true_seller_is_among_the_consistent_sets(beta, w, rec, d, scale):
    th, sh = _seller(beta, w, rec, d, scale)
    h = _haggle(th, sh, [round(o * scale, 2) for o in OFFERS])
    least = 48.0 * scale * (1.0 + BAND)
    fits = consistent_fits(h, 90.0 * scale, 8, least)
    assert len(fits) > 0
    assert d in set(fits.window.tolist())
    near = fits.window == d
    assert fits.reciprocity[near].min() <= rec * 1.03 and fits.reciprocity[near].max() >= rec / 1.03
    assert fits.beta[near].min() <= beta * 1.03 and fits.beta[near].max() >= beta / 1.03
    # Whatever it is among them, the closing offer is one the true seller takes.
    true = lowest_accepted(th, sh, 9, 0, h.counters[-1])
    lines = lowest_accepted_next(h, fits, h.counters[-1])
    assert true is not None and lines.max() >= true - 0.01
    offer = closing_offer(h, 90.0 * scale, 8, least)
    assert offer is None or true <= offer < h.counters[-1]


@pytest.mark.parametrize(("beta", "w", "rec", "d"), [(0.2, 0.7, 0.6, 2), (2.5, 0.55, 1.1, 1)])
def test_the_time_tactic_sits_at_the_floor_from_offer_t(beta, w, rec, d):
    """From T-1 counters the sets already predict what the seller takes at offer T (its
    patience), so the patience offer may close at once."""
    th, sh = _seller(beta, w, rec, d)
    h = _haggle(th, sh, OFFERS[:7])
    fits = consistent_fits(h, 90.0, 8, 48.0 * (1.0 + BAND))
    true = lowest_accepted(th, sh, 8, 0, h.counters[-1])
    lines = lowest_accepted_next(h, fits, h.counters[-1])
    assert true is not None and lines.max() >= true - 0.01
    offer = patience_offer(h, 90.0, 8, 48.0 * (1.0 + BAND), [45.7, 50.0, 57.0])
    assert offer in (45.7, 50.0, 57.0) or true <= offer < h.counters[-1]


def _expert_shares(personas: tuple[str, ...], seeds: int) -> list[float]:
    """The expert's buyer share per episode, odd seeds with tactics off the personas'
    ranges; every deal closed."""
    out = []
    for persona in personas:
        for seed in range(seeds):
            env, _ = play_expert(f"bilateral_{persona}", seed, redraw=bool(seed % 2))
            metrics = env.score().metrics
            assert metrics["deal_rate"] == 1.0, (persona, seed)
            out.append(metrics["buyer_share"])
    return out


def test_the_patience_offer_lowers_what_the_expert_pays(monkeypatch):
    """Against real sellers, rule and with tactics off the personas' ranges, choosing offer
    T over the consistent sets keeps more of the surplus than the offer it falls back to
    without them (splitting the difference with the counter), and every deal."""

    personas = ("hardball", "cooperative", "deceptive", "distressed")
    planned = _expert_shares(personas, 6)
    monkeypatch.setattr(posterior, "patience_offer", lambda *a, **k: None)
    blind = _expert_shares(personas, 6)
    assert sum(planned) > sum(blind) * 1.01
    assert sum(p >= b - 1e-9 for p, b in zip(planned, blind, strict=True)) >= 16


def test_counters_the_model_cannot_produce_give_no_prediction():
    """A seller outside the model (an LLM, a field agent): no consistent set, no final offer."""
    rising = History(tuple(OFFERS), (80.0, 81.0, 79.0, 83.0, 70.0, 75.0, 60.0, 66.0), True)
    assert len(consistent_fits(rising, 90.0, 8, 50.0)) == 0
    assert closing_offer(rising, 90.0, 8, 50.0) is None
    assert patience_offer(rising, 90.0, 8, 50.0, [60.0, 70.0]) is None
    # The same counters as a model seller's, but under the seller's cost: none either.
    th, sh = _seller(0.3, 0.6, 0.8, 2)
    h = _haggle(th, sh, OFFERS)
    assert closing_offer(h, 90.0, 8, 80.0) is None


def test_the_tolerance_holds_the_true_seller_in_real_episodes():
    """Replayed on the rounded counters the buyer saw, the seller's true parameters land
    within COUNTER_TOL of every counter: the consistent set can always hold the truth."""
    worst = 0.0
    for persona in ("hardball", "cooperative", "deceptive", "distressed"):
        for seed in range(12):
            env, week = play_expert(f"bilateral_{persona}", seed, redraw=bool(seed % 2))
            ((key, thread),) = env.threads.items()
            true, sh = env.th_hidden[key], env.hidden[key[0]]
            h = history(thread)
            replay = ThreadHidden(true.reservation, true.cost, true.floor, true.anchor,
                                  true.beta, true.patience)  # fmt: skip
            assert floor_now(replay, pressure(sh, week)) > env.seller_cost * (1.0 + BAND)
            for k, (offer, counter) in enumerate(zip(h.offers, h.counters, strict=True), 1):
                ask = next_ask(replay, sh, offer, k, week).price
                worst = max(worst, abs(ask - counter))
                replay.offers.append(offer)
                replay.asks.append(counter)
                replay.last_counter = counter
    assert 0.0 < worst <= COUNTER_TOL, worst


def test_the_bilateral_schedule_probes_once_early():
    """Creeps, one probe at PROBE_OFFER, and offer T-1 a creep or one of PRE_RATES."""
    env, _ = play_expert("bilateral_hardball", 5)
    offers = history(env.threads[("S01", "R01")]).offers
    raises = [b / a - 1.0 for a, b in itertools.pairwise(offers)]
    assert raises[PROBE_OFFER - 2] == pytest.approx(PROBE_RAISE, abs=0.002)
    last = env.cfg.bilateral_max_rounds - 3  # offer T-1 over offer T-2
    others = raises[: PROBE_OFFER - 2] + raises[PROBE_OFFER - 1 : last]
    assert all(0.005 <= r < 0.01 for r in others), raises
    assert 0.005 <= raises[last] <= max(PRE_RATES) + 0.002, raises


def test_residuals_in_chunks_equal_one_pass(monkeypatch):
    """Chunking is only for the cache: the residuals, floors and weights are the same
    numbers as one pass over every (reciprocity, beta) pair."""
    th, sh = _seller(0.6, 0.5, 0.9, 2)
    h = _haggle(th, sh, OFFERS)
    rng = np.random.default_rng(0)
    rec, beta = np.exp(rng.uniform(-2.3, 0.9, 5000)), np.exp(rng.uniform(-2.5, 2.1, 5000))
    args = (h, 90.0, 8, 50.0, 2, rec, beta)
    monkeypatch.setattr(posterior, "CHUNK", 10**6)
    whole = posterior._residuals(*args)
    monkeypatch.setattr(posterior, "CHUNK", 333)
    for a, b in zip(whole, posterior._residuals(*args), strict=True):
        np.testing.assert_array_equal(a, b)


def test_lines_for_many_candidates_equal_one_at_a_time():
    """The patience offer weighs every candidate in one broadcast: each row is the line
    the same candidate's bases give on their own."""
    th, sh = _seller(0.3, 0.6, 0.8, 2)
    h = _haggle(th, sh, OFFERS[:-1])
    fits = consistent_fits(h, 90.0, 8, 50.0)
    assert len(fits) > 1
    d = np.minimum(fits.window, len(h.counters))
    bases = np.array([[45.0], [50.0], [55.0]])
    asks = 60.0 + 0.001 * np.arange(len(fits))  # a different last ask per set
    together = posterior._lines(fits, d, bases, asks, asks, 70.0)
    for row, base in zip(together, bases[:, 0], strict=True):
        np.testing.assert_array_equal(row, posterior._lines(fits, d, base, asks, asks, 70.0))


def test_each_candidate_is_priced_on_its_own():
    """Weighing candidates together never mixes their counters: the offer chosen among all
    of them is also chosen against each other candidate alone."""
    th, sh = _seller(0.6, 0.5, 0.9, 1)
    h = _haggle(th, sh, OFFERS[:-1])
    candidates = [45.7, 48.0, 50.0, 52.0, 55.0, 57.0, 60.0]
    best = patience_offer(h, 90.0, 8, 50.0, candidates)
    assert best in candidates
    for other in candidates:
        assert patience_offer(h, 90.0, 8, 50.0, [best, other]) == best, other


def _true_price(beta: float, w: float, rec: float, d: int, offers: list[float]) -> float:
    """What the true seller's deal costs after ``offers`` (the last one offer T-1), with
    the best offer T among PRE_RAISES and then the lowest final offer it accepts."""
    best = math.inf
    for g in PRE_RAISES:
        th, sh = _seller(beta, w, rec, d)
        h = _haggle(th, sh, offers)
        y = math.ceil(offers[-1] * g * 100.0) / 100.0
        if y >= h.counters[-1]:
            continue
        ask = next_ask(th, sh, y, len(offers) + 1, 0)
        if y >= ask.price:
            best = min(best, y)
            continue
        record(th, y, ask)
        th.last_counter = round(ask.price, 2)
        final = lowest_accepted(th, sh, len(offers) + 2, 0, th.last_counter)
        best = min(best, th.last_counter if final is None else final)
    return best


@pytest.mark.parametrize(
    ("beta", "w", "rec", "d"), [(0.2, 0.5, 0.6, 2), (0.3, 0.7, 0.5, 2), (0.25, 0.6, 0.8, 3)]
)
def test_the_offer_before_patience_is_the_true_sellers_best(beta, w, rec, d):
    """From the counters alone, offer T-1 is the candidate the true seller makes cheapest:
    a raise against a window of 2 (the final offer is mirrored against its answer), a
    creep against a window of 3 (there it buys nothing)."""
    th, sh = _seller(beta, w, rec, d)
    h = _haggle(th, sh, OFFERS[:6])
    cands = [math.ceil(OFFERS[5] * 1.006 * 100.0) / 100.0]
    cands += [round(OFFERS[5] * (1.0 + rate), 2) for rate in PRE_RATES]
    chosen = prepatience_offer(h, 90.0, 8, 48.0 * (1.0 + BAND), cands)
    paid = {c: _true_price(beta, w, rec, d, [*OFFERS[:6], c]) for c in cands}
    assert paid[chosen] == pytest.approx(min(paid.values()), abs=0.005), (chosen, paid)
    assert (chosen > cands[0]) == (d == 2), (chosen, paid)
    if d == 2:
        assert paid[chosen] < paid[cands[0]] - 0.05


def test_the_offer_before_patience_lowers_what_the_expert_pays(monkeypatch):
    """Against real hardball and deceptive sellers, rule and with tactics off the personas'
    ranges, weighing offer T-1 over the consistent sets keeps more of the surplus than
    the creep it falls back to without them, and every deal."""

    planned = _expert_shares(("hardball", "deceptive"), 8)
    monkeypatch.setattr(posterior, "prepatience_offer", lambda *a, **k: None)
    creeping = _expert_shares(("hardball", "deceptive"), 8)
    assert sum(planned) > sum(creeping) + 0.01
    assert sum(p >= c - 1e-9 for p, c in zip(planned, creeping, strict=True)) >= 14

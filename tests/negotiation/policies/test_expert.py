"""The expert (policies/expert/): its safety promises against the responsive suppliers."""

from __future__ import annotations

import math
import random

import pytest

from negotiation import ProcurementEnv, get_policy, list_policies, load_scenario
from negotiation.config import PERSONAS
from negotiation.policies.base import pr_headroom, pr_needed
from negotiation.policies.expert.beliefs import (
    LOWEST_FLOOR_COST,
    SAFE_OPEN_COST,
    SAFE_OPEN_LIST,
    SAFE_OPEN_REF,
    SAFE_ROUNDS,
    TREND_SHARE,
)
from negotiation.policies.expert.policy import CREEP, MEET, ceil_cents
from negotiation.policies.lookahead import lowest_accepted
from negotiation.suppliers.concession import STALL_MOVE
from negotiation.suppliers.guard import BAND, ProposedDecision
from negotiation.suppliers.rule import PERSONA_PARAMS, SupplierPolicy
from negotiation.world.records import LIVE_PR, ThreadRecord, pr_room
from tests.negotiation.bilateral import play_expert, redraw_tactics


def test_the_safe_bounds_come_from_the_persona_ranges():
    assert min(int(p["patience"][0]) for p in PERSONA_PARAMS.values()) == SAFE_ROUNDS
    assert 0.4 < SAFE_OPEN_LIST < SAFE_OPEN_REF < 0.8


@pytest.mark.parametrize(
    "preset",
    ["bilateral_hardball", "bilateral_cooperative", "bilateral_deceptive",
     "bilateral_distressed", "medium_adversarial", "hard_arena"],
)  # fmt: skip
def test_the_expert_never_insults_stalls_or_outwaits_a_supplier(preset):
    """Its openings sit above every insult line, it moves every round unless its own ceiling
    stops it, and in the arena it stops offering before any persona's patience: no strike,
    no hardening, no walk-out."""
    for seed in range(20):
        env, _ = play_expert(preset, seed)
        for key, hid in env.world.th_hidden.items():
            assert hid.strikes == 0 and not hid.hardened, (seed, key)
            if env.cfg.mode == "arena":
                assert len(hid.offers) <= SAFE_ROUNDS, (seed, key)
        walked = [k for k, th in env.world.threads.items() if th.status == "walked_away"]
        assert not walked, (seed, walked)


@pytest.mark.parametrize("preset", ["easy_negotiation", "medium_adversarial", "hard_arena"])
def test_every_arena_offer_raises_the_best_before_it(preset):
    """On every thread each offer is at least a stall move above the buyer's best offer
    before it: where the ceiling or the counter leaves no such raise the expert stops
    offering (and awards the counter), and after a counter expires it goes on from its best
    offer rather than reopening at the safe line (before: 45 stalled or retreating offers
    in 300 hard_arena episodes, 8 in medium_adversarial)."""
    for seed in range(100):
        env, _ = play_expert(preset, seed)
        for key, th in env.world.threads.items():
            offers = [rd.buyer_offer for rd in th.rounds if rd.buyer_offer is not None]
            for i in range(1, len(offers)):
                assert offers[i] >= max(offers[:i]) * (1.0 + STALL_MOVE), (seed, key, offers)


@pytest.mark.parametrize("persona", ["hardball", "cooperative", "deceptive", "distressed"])
def test_the_final_offer_never_costs_a_bilateral_deal(persona):
    envs = [play_expert(f"bilateral_{persona}", s)[0] for s in range(40)]
    assert [env.score().metrics["deal_rate"] for env in envs] == [1.0] * 40


@pytest.mark.parametrize("redraw", [False, True])
def test_no_bilateral_offer_goes_under_the_one_before_it(redraw):
    """A person or a model seller reads an offer under the buyer's own last one as bad faith
    and walks (the SmolLM2 supplier did, on 14 of 20 seeds), so no bilateral offer, the
    final one after the seller's patience included, retracts (before: 8 of 100 episodes
    over the four personas retracted at the close)."""
    for seed in range(48):
        preset = f"bilateral_{PERSONAS[seed % len(PERSONAS)]}"
        env, _ = play_expert(preset, seed, redraw=redraw)
        offers = [rd.buyer_offer for th in env.world.threads.values() for rd in th.rounds]
        assert offers == sorted(offers), (preset, seed, offers)


def test_bilateral_bounds_at_the_public_cost_come_from_the_persona_ranges():
    """At the seller's public cost: the opening is above every persona's highest insult line
    and the jump at the seller's patience at or below every persona's lowest floor."""
    for pp in PERSONA_PARAMS.values():
        highest_insult_line = (1.0 + pp["margin"][1]) * (1.0 - pp["insult"])
        lowest_floor = (1.0 + pp["margin"][0]) * (1.0 + BAND)
        assert highest_insult_line < SAFE_OPEN_COST
        assert lowest_floor + 1e-12 >= LOWEST_FLOOR_COST


def test_bilateral_observations_state_the_sellers_cost_and_the_arena_none():
    env = ProcurementEnv(load_scenario("bilateral_deceptive"))
    obs = env.reset(seed=3)
    cost = env.world.reservation_now("S01", env.world.requirements[0])[0]
    assert obs.seller_cost == pytest.approx(cost)
    assert obs.to_dict()["rules"]["seller_unit_cost"] == pytest.approx(cost)
    obs = ProcurementEnv(load_scenario("medium_adversarial")).reset(seed=3)
    assert obs.seller_cost is None and obs.to_dict()["rules"]["seller_unit_cost"] is None


def _creep_then_jump(env: ProcurementEnv, obs) -> ThreadRecord:
    """A bilateral schedule like the expert's, with offer T at the lowest floor any persona
    can have (so more threads end with room for a final offer): T offers, then the thread
    as it stands."""
    cost, T = obs.seller_cost, obs.max_rounds
    offer = math.ceil(SAFE_OPEN_COST * cost * 100) / 100
    for n in range(1, T + 1):
        if n == T:
            offer = max(offer, math.ceil(LOWEST_FLOOR_COST * cost * 100) / 100)
        th = obs.thread("S01", "R01")
        if th is not None:
            offer = min(offer, th.counter_price - 0.01)
        act = {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01"}
        obs = env.step({**act, "price": offer}).observation
        offer = math.ceil(offer * (1.0 + CREEP) * 100) / 100
    return obs


def test_the_final_offer_never_goes_under_what_the_seller_accepts():
    """After the seller's patience, the final offer from the consistent parameter sets is
    at or above the lowest offer the seller really accepts (read from the hidden state), or
    there is none; with the personas' tactics and with tactics redrawn from wider ranges."""
    finals = 0
    for persona in ("hardball", "cooperative", "deceptive", "distressed"):
        env = ProcurementEnv(load_scenario(f"bilateral_{persona}"))
        for seed in range(60):
            obs = env.reset(seed=seed)
            if seed % 3:
                redraw_tactics(env, random.Random(seed))
            obs = _creep_then_jump(env, obs)
            th = obs.thread("S01", "R01")
            if th.status != "open":
                continue
            pol = get_policy("expert", seed=seed)
            closing = pol._closing(obs, obs.suppliers[0], obs.requirements[0], th)
            final = None if closing is None else closing.offer
            true = lowest_accepted(
                env.world.th_hidden[("S01", "R01")], env.world.hidden["S01"], 9, 0, th.counter_price
            )
            if final is not None:
                finals += 1
                assert true is not None and final >= true, (persona, seed, final, true)
    assert finals >= 10, finals  # the check is not vacuous


@pytest.mark.parametrize("persona", ["hardball", "cooperative", "deceptive", "distressed"])
def test_the_expert_outscores_every_script_in_bilateral_play(persona):
    preset = f"bilateral_{persona}"
    scripts = [p for p in list_policies() if p.startswith("script_")]

    def mean_score(policy: str) -> float:
        env = ProcurementEnv(load_scenario(preset))
        total = 0.0
        for seed in range(30):
            obs = env.reset(seed=seed)
            pol = get_policy(policy, seed=seed)
            while not env.done:
                obs = env.step(pol.act(obs)).observation
            total += env.score().score
        return total / 30

    expert = mean_score("expert")
    for script in scripts:
        assert expert > mean_score(script), script


class _MirrorSeller(SupplierPolicy):
    """A seller outside the documented model: it concedes exactly what the buyer raised
    (absolute tit-for-tat, no clock) and accepts an offer at or above its next ask."""

    name = "mirror"

    def respond(self, ctx):
        th = ctx.thread
        prev = th.last_counter if th.last_counter is not None else th.anchor
        ask = prev - (ctx.offer - th.offers[-1]) if th.offers else prev
        th.offers.append(ctx.offer)
        if ctx.offer >= ask:
            return ProposedDecision("accept", ctx.offer, "Deal.")
        if ctx.round > th.patience:
            return ProposedDecision("walk_away", None, "No.")
        return ProposedDecision("counter", round(ask, 2), "We can do {price}.")


# Seeds with costly items (310-1,350): on cheaper ones a relative tit-for-tat reproduces the
# mirror's counters to the cent, and the posterior, not the blind offer, chooses.
@pytest.mark.parametrize("seed", [3, 4, 8])
def test_a_seller_the_model_cannot_explain_is_met_most_of_the_way(seed):
    """With no consistent parameter set, the offer at the seller's patience goes MEET of
    the way to the counter; a seller that mirrors the jump one for one answers with the
    rest of the way, which the buyer awards: the deal is kept."""
    env = ProcurementEnv(load_scenario("bilateral_cooperative"))
    env.supplier_policies["cooperative"] = _MirrorSeller()
    obs = env.reset(seed=seed)
    pol = get_policy("expert", seed=seed)
    while not env.done:
        obs = env.step(pol.act(obs)).observation
    # The premise: the posterior explained none of the mirror's counters.
    planned = pol._posterior_offers.values()
    assert planned and all(v is None or v == (False, None) for v in planned)
    rounds = obs.thread("S01", "R01").rounds
    last, counter = rounds[-2].buyer_offer, rounds[-2].supplier_price
    assert rounds[-1].buyer_offer == ceil_cents(last + MEET * (counter - last))
    assert rounds[-1].response == "counter"
    assert rounds[-1].supplier_price == round(counter - (rounds[-1].buyer_offer - last), 2)
    assert env.score().metrics["contracts"] == 1


class _GridClockSeller(SupplierPolicy):
    """A seller outside the documented model, like negmas's time-based negotiators: it
    concedes on its own clock (Boulware, beta 0.3), which runs two offers past the public
    round limit, in steps of a price grid (so no cent-exact model reproduces it), and
    accepts an offer at or above its ask, the last chance being offer T + 1."""

    name = "grid_clock"

    def ask(self, th, k: int) -> float:
        span = th.anchor - th.reservation
        level = 1.0 - (k / (th.patience + 2)) ** (1.0 / 0.3)
        return th.reservation + math.ceil(level * 200.0) / 200.0 * span

    def respond(self, ctx):
        ask = self.ask(ctx.thread, ctx.round)
        if ctx.offer >= ask:
            return ProposedDecision("accept", ctx.offer, "Deal.")
        if ctx.round > ctx.thread.patience:
            return ProposedDecision("walk_away", None, "No.")
        return ProposedDecision("counter", round(ask, 2), "We can do {price}.")


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_clock_the_model_cannot_explain_is_met_by_the_trend_of_its_concessions(seed):
    """Against a seller the model does not explain whose concessions keep growing, the
    final offer after its patience claims its whole last concession instead of awarding its
    counter, and it is taken."""
    env = ProcurementEnv(load_scenario("bilateral_hardball"))
    seller = env.supplier_policies["hardball"] = _GridClockSeller()
    obs = env.reset(seed=seed)
    pol = get_policy("expert", seed=seed)
    while not env.done:
        obs = env.step(pol.act(obs)).observation
    closing = [v for k, v in pol._posterior_offers.items() if k[0] == "closing"]
    assert closing == [(False, None)]  # the premise: the model explains none of it
    rounds = obs.thread("S01", "R01").rounds
    counters = [rd.supplier_price for rd in rounds[:-1]]
    step = round(counters[-2] - counters[-1], 2)
    assert rounds[-1].response == "accept" and len(rounds) == 9
    assert rounds[-1].buyer_offer == ceil_cents(counters[-1] - TREND_SHARE * step)
    th = env.world.th_hidden[("S01", "R01")]
    assert rounds[-1].buyer_offer >= seller.ask(th, 9)  # what its clock asks then


def test_a_quote_over_the_pr_guardrail_is_bought_as_far_as_the_approved_pr_covers():
    """A requirement's PRs together ask at most 1.1 x ceiling x quantity, so a quote above
    that can never be awarded whole: in the award week the expert buys what its approved
    PRs still cover (partial credit) rather than let the requirement fail with a quote in
    hand."""
    partial = 0
    for seed in range(30):
        env = ProcurementEnv(load_scenario("medium_adversarial"))
        obs = env.reset(seed=seed)
        pol = get_policy("expert", seed=seed)
        while not env.done:
            act = pol.act(obs)
            if act["action_type"] == "award_contract":
                r = next(r for r in obs.requirements if r.id == act["requirement_id"])
                s = next(s for s in obs.suppliers if s.id == act["supplier_id"])
                price = obs.threads[(s.id, r.id)].awardable_price(obs.week)
                whole = min(r.quantity_needed, s.capacity.get(r.category, 0))
                reachable = pr_headroom(obs, r.id, LIVE_PR) + max(
                    0.0, pr_room(obs.pr_guardrail, r, obs.purchase_requisitions)
                )
                if price * whole > reachable and pr_needed(obs, r, price * whole):
                    partial += 1
                    covered = int(pr_headroom(obs, r.id) / price)
                    assert act["quantity"] == covered < whole, (seed, act)
            res = env.step(act)
            assert res.info["valid"], (seed, act, res.info["error"])
            obs = res.observation
    assert partial >= 3, partial

"""Nothing public (observation dicts, step info) reveals a persona or a reservation."""

from __future__ import annotations

import json
import re

from negotiation import ProcurementEnv, get_policy, load_scenario
from negotiation.config import PERSONAS

NUM = re.compile(r"-?\d+(?:\.\d+)?")


def _numbers(obj) -> set[float]:
    out: set[float] = set()
    if isinstance(obj, dict):
        for v in obj.values():
            out |= _numbers(v)
    elif isinstance(obj, list):
        for v in obj:
            out |= _numbers(v)
    elif isinstance(obj, bool):
        pass
    elif isinstance(obj, int | float):
        out.add(float(obj))
    elif isinstance(obj, str):
        out |= {float(x) for x in NUM.findall(obj.replace(",", ""))}
    return out


HIDDEN_WORDS = (
    "persona",
    "reservation",
    "true_reliability",
    "patience",
    "beta",
    "cost_ratio",
    "floor_margin",
)


def _secret(env, sid, rid) -> set[float]:
    h = env.world.th_hidden[(sid, rid)]
    return {round(h.reservation, 2), round(h.cost, 2)}


def test_obs_and_info_never_contain_persona_or_reservation():
    for preset in ("medium_adversarial", "hard_arena", "bilateral_deceptive", "bilateral_hardball"):
        for seed in range(4):
            env = ProcurementEnv(load_scenario(preset))
            obs = env.reset(seed=seed)
            pol = get_policy("expert", seed=seed)
            payloads = [obs.to_dict()]
            while not env.done:
                res = env.step(pol.act(obs))
                obs = res.observation
                resp = res.info["response"]
                if resp is not None:
                    # A supplier reply never carries its own reservation or cost, except when
                    # it accepts the buyer's own number.
                    nums = {
                        round(x, 2) for x in _numbers({"m": resp["message"], "p": resp["price"]})
                    }
                    offer = (
                        env.world.threads[(resp["supplier_id"], resp["requirement_id"])]
                        .rounds[-1]
                        .buyer_offer
                    )
                    nums.discard(None if offer is None else round(offer, 2))
                    assert not nums & _secret(env, resp["supplier_id"], resp["requirement_id"])
                payloads.append(res.info)
                payloads.append(obs.to_dict())
            for p in payloads:
                text = json.dumps(p).lower()
                for word in PERSONAS + HIDDEN_WORDS:
                    assert word not in text, (preset, word)
            for th in obs.to_dict()["threads"]:
                secret = _secret(env, th["supplier_id"], th["requirement_id"])
                for rd in th["rounds"]:
                    nums = {
                        round(x, 2)
                        for x in _numbers({"m": rd["message"], "p": rd["supplier_price"]})
                    }
                    if rd["buyer_offer"] is not None:
                        nums.discard(round(rd["buyer_offer"], 2))
                    assert not nums & secret, (preset, seed, th["supplier_id"], nums & secret)


def test_observation_has_design_keys_and_is_json_safe():
    env = ProcurementEnv(load_scenario("medium_adversarial"))
    d = env.reset(seed=1).to_dict()
    for k in (
        "week",
        "weeks",
        "actions_left_this_week",
        "escalations_left",
        "budget",
        "requirements",
        "suppliers",
        "threads",
        "contracts",
        "purchase_requisitions",
        "market",
        "events",
        "last_action",
    ):
        assert k in d
    assert set(d["budget"]) == {"total", "committed", "remaining"}
    assert {
        "id",
        "name",
        "category",
        "quantity",
        "quantity_needed",
        "deadline_week",
        "critical",
        "ceiling_unit_price",
        "status",
    } <= set(d["requirements"][0])
    assert {
        "id",
        "name",
        "categories",
        "list_prices",
        "lead_time_weeks",
        "rated_reliability",
        "capacity",
        "active",
    } <= set(d["suppliers"][0])
    json.dumps(d)


def test_reject_reward_is_identical_for_every_persona():
    rewards = set()
    for seed in range(6):
        env = ProcurementEnv(load_scenario("medium_adversarial"))
        env.reset(seed=seed)
        for s in env.world.suppliers:
            res = env.step({"action_type": "reject", "supplier_id": s.id})
            if res.info["valid"]:
                rewards.add(res.reward)
            if env.done:
                break
    assert rewards <= {0.0}


def test_the_observation_object_carries_no_scenario_name() -> None:
    # A bilateral preset's name would reveal the seller's persona to a policy.
    from negotiation import ProcurementEnv, load_scenario

    obs = ProcurementEnv(load_scenario("bilateral_deceptive")).reset(seed=0)
    assert not hasattr(obs, "scenario_name")
    assert "deceptive" not in str(obs.to_dict())


def test_supplier_wording_hints_but_never_identifies_a_persona() -> None:
    """Every message text can come from more than one persona."""
    import random
    from collections import defaultdict

    from negotiation.suppliers.rule import pick_message

    sources: dict[str, set[str]] = defaultdict(set)
    rng = random.Random(0)
    for persona in ("cooperative", "hardball", "deceptive", "distressed"):
        for kind in ("accept", "counter", "walk_away", "insult"):
            for _ in range(400):
                sources[pick_message(rng, kind, persona)].add(persona)
    assert sources and all(len(personas) >= 2 for personas in sources.values())

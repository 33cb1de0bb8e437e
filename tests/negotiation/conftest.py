from __future__ import annotations

import json
from typing import Any, NamedTuple

import pytest

from negotiation import ProcurementEnv, load_scenario


def digest(env: ProcurementEnv) -> str:
    """Everything about the world except the slot/step bookkeeping of the last action."""
    d = env.observation().to_dict()
    for k in ("step", "actions_left_this_week", "last_action"):
        d.pop(k)
    hidden = {
        f"{k[0]}/{k[1]}": [h.reservation, h.last_counter, h.strikes]
        for k, h in env.world.th_hidden.items()
    }
    sup = {
        sid: [h.true_reliability, sorted(h.true_capacity.items()), h.rival_push]
        for sid, h in env.world.hidden.items()
    }
    counters = {
        k: v
        for k, v in env.world.counters.as_dict().items()
        if k not in ("invalid_actions", "malformed_actions", "total_invalid_penalty")
    }
    return json.dumps(
        {
            "obs": d,
            "hidden": hidden,
            "sup": sup,
            "rng": str(env.world.rng.getstate()),
            "c": counters,
        },
        sort_keys=True,
        default=str,
    )


@pytest.fixture
def medium_env() -> ProcurementEnv:
    env = ProcurementEnv(load_scenario("medium_adversarial"))
    env.reset(seed=3)
    return env


def first_supplier_for(env: ProcurementEnv, rid: str) -> str:
    for s in env.world.suppliers:
        if rid in s.list_prices and s.active:
            return s.id
    raise AssertionError("no supplier")


def negotiate(env: ProcurementEnv, sid: str, rid: str, price: float) -> Any:
    return env.step(
        {"action_type": "negotiate", "supplier_id": sid, "requirement_id": rid, "price": price}
    )


class OpenThread(NamedTuple):
    """A thread just opened on R01 with its first supplier, for driving respond() directly."""

    env: ProcurementEnv
    r: Any
    sid: str
    th: Any
    hid: Any


@pytest.fixture
def r01_thread() -> OpenThread:
    env = ProcurementEnv(load_scenario("medium_adversarial"))
    env.reset(seed=5)
    r = env.world.req_by_id["R01"]
    sid = next(s.id for s in env.world.suppliers if "R01" in s.list_prices)
    th = env.world.open_thread(sid, r)
    return OpenThread(env, r, sid, th, env.world.th_hidden[(sid, "R01")])

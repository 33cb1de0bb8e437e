"""Field suppliers (negotiation/suppliers/field.py): negmas negotiators and re-implemented ANAC
agents playing supplier personas behind the hard-rule guard. The tests that play them are
skipped where negmas is not installed (requirements/field.txt is optional for the service;
`make test` installs it); the validation error without it, and that rule scenarios never
import it, are checked everywhere."""

from __future__ import annotations

import importlib.util
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from negotiation.config import FIELD_PERSONAS, PERSONAS, ScenarioValidationError
from negotiation.suppliers.field import (
    FIELD_STRATEGIES,
    STRATEGIES,
    FieldSupplierPolicy,
    available_field_strategies,
    seller_utility,
)
from negotiation.suppliers.guard import HardRuleGuard, band_floor
from negotiation.suppliers.rule import SupplierContext
from negotiation.world.entities import ThreadHidden

HAVE_NEGMAS = importlib.util.find_spec("negmas") is not None
needs_negmas = pytest.mark.skipif(not HAVE_NEGMAS, reason="negmas is not installed")
GUARD = HardRuleGuard()  # stateless: the same checks actions.respond() applies
AVAILABLE = set(available_field_strategies())
TIME_BASED = ("field_boulware", "field_linear", "field_conceder")


def _strategy(name: str) -> str:
    if name not in AVAILABLE:
        pytest.skip(f"{STRATEGIES[name].module} is not installed")
    return name


strategies = pytest.mark.parametrize("name", sorted(STRATEGIES))


def rising(k: int, patience: int, res: float, anchor: float) -> float:
    """A buyer who opens well below the reservation and ends a little above it."""
    return res * (0.85 + 0.2 * k / (patience + 1))


def into_zopa(k: int, patience: int, res: float, anchor: float) -> float:
    return res * (1.0 + 0.08 * k / (patience + 1))


def random_buyer(seed: int):
    r = random.Random(seed)
    return lambda k, patience, res, anchor: res * r.uniform(0.3, 1.4)


def play(name, buyer, seed, patience=8, res=800.0, anchor=1000.0, policy=None):
    """One thread as actions.respond() plays it: ctx.round counts the buyer's offers, every
    proposal passes the guard, a counter becomes the thread's last counter. Returns
    (offer, proposal, guarded decision) per buyer offer, until an accept or a walk-away."""
    policy = policy or FIELD_STRATEGIES[name]()
    th = ThreadHidden(res, 0.8 * res, res * 1.03, anchor, 1.0, patience)
    rng = random.Random(seed)
    steps = []
    for k in range(1, patience + 4):
        offer = buyer(k, patience, res, anchor)
        ctx = SupplierContext(name, offer, k, th, None, 1, "hello", rng)
        proposal = policy.respond(ctx)
        d = GUARD.apply(proposal, offer, th.reservation, th.last_counter)
        steps.append((offer, proposal, d))
        if d.kind != "counter":
            break
        th.last_counter = d.price
    return steps


@needs_negmas
def test_registry_names_and_constructors():
    assert {"field_boulware", "field_conceder", "field_tit_for_tat"} <= set(FIELD_STRATEGIES)
    assert any(STRATEGIES[n].module == "negmas_genius_agents" for n in FIELD_STRATEGIES)
    for name, make in FIELD_STRATEGIES.items():
        assert name.startswith("field_")
        policy = make()
        assert isinstance(policy, FieldSupplierPolicy) and policy.strategy.name == name
    assert {"field_boulware", "field_conceder", "field_tit_for_tat"} <= AVAILABLE
    with pytest.raises(KeyError):
        FieldSupplierPolicy("field_nobody")


def test_seller_utility_is_zero_at_reservation_one_at_anchor():
    assert seller_utility(800.0, 800.0, 1000.0) == 0.0
    assert seller_utility(1000.0, 800.0, 1000.0) == 1.0
    assert seller_utility(900.0, 800.0, 1000.0) == pytest.approx(0.5)


@strategies
@pytest.mark.parametrize("patience", [4, 8, 12])
def test_valid_decisions_over_a_whole_thread(name, patience):
    _strategy(name)
    for buyer in (rising, into_zopa, random_buyer(patience)):
        for seed in (1, 2):
            steps = play(name, buyer, seed, patience=patience)
            # Decided within the deadline: at most patience + 1 buyer offers (last chance).
            assert len(steps) <= patience + 1
            for i, (offer, p, d) in enumerate(steps):
                assert p.kind in ("accept", "counter", "walk_away")
                assert p.message and d.message and "{price}" not in d.message
                if p.kind == "accept":
                    assert p.price == offer
                elif p.kind == "counter":
                    assert p.price is not None and math.isfinite(p.price) and p.price > 0
                else:
                    assert p.price is None
                if i < len(steps) - 1:
                    assert d.kind == "counter"
            last = steps[-1][2]
            assert last.kind in ("accept", "walk_away") or len(steps) < patience + 1


@strategies
@pytest.mark.parametrize("patience", [5, 8, 12])
def test_concedes_over_time(name, patience):
    _strategy(name)
    for buyer in (rising, into_zopa):
        for seed in (1, 2, 3):
            steps = play(name, buyer, seed, patience=patience)
            counters = [d.price for _, _, d in steps if d.kind == "counter"]
            assert len(counters) >= 3, steps
            assert counters == sorted(counters, reverse=True)  # the guard's rule 3
            assert counters[-1] < counters[0]  # and a real concession
    if name in TIME_BASED:
        # Time-based sellers concede by themselves: their own proposals fall, before any
        # guard repair, whatever the buyer does.
        steps = play(name, lambda *a: 500.0, 1, patience=patience)
        raw = [p.price for _, p, _ in steps if p.kind == "counter"]
        assert raw == sorted(raw, reverse=True) and raw[-1] < raw[0]
        assert all(d.interventions == 0 for _, _, d in steps)


@strategies
def test_never_below_reservation_after_the_guard(name):
    _strategy(name)
    res = 800.0
    for seed in range(12):
        patience = 4 + seed % 8
        anchor = res * (1.1 + 0.05 * (seed % 5))
        steps = play(name, random_buyer(100 + seed), seed, patience, res, anchor)
        for offer, p, d in steps:
            if d.kind == "counter":
                assert d.price >= band_floor(res)
            elif d.kind == "accept":
                assert d.price == offer >= res
            if STRATEGIES[name].module == "negmas.sao":
                assert d.interventions == 0
                # negmas's own negotiators respect the reserved value without the guard.
                if p.kind == "counter":
                    assert p.price >= res - 1e-6
                if p.kind == "accept":
                    assert offer >= res


@strategies
def test_deterministic_given_the_rng_seed(name):
    _strategy(name)

    def transcript(seed):
        steps = play(name, random_buyer(7), seed, patience=9)
        return [(p.kind, p.price, d.kind, d.price, d.message) for _, p, d in steps]

    assert transcript(11) == transcript(11)
    assert transcript(12) == transcript(12)


@strategies
def test_play_does_not_depend_on_wall_time(name, monkeypatch):
    """A loaded machine, simulated: every clock read in negmas's mechanism modules is 0.4 s
    after the one before. negmas draws an extra global `random` number at the first step
    after each new whole second since the mechanism started, which shifted AgentK's draws
    (a flaky determinism test under xdist); the field mechanism's clock is frozen at 0."""
    _strategy(name)
    import types

    import negmas.mechanisms
    import negmas.sao.mechanism

    def transcripts():
        return [
            [(p.kind, p.price, d.kind, d.price, d.message) for _, p, d in steps]
            for seed in range(4)
            for steps in (
                play(name, rising, seed, patience=10),
                play(name, random_buyer(seed), seed, patience=10),
            )
        ]

    quiet = transcripts()
    reads = iter(range(1, 10**9))
    slow = types.SimpleNamespace(
        perf_counter=lambda: 0.4 * next(reads),
        perf_counter_ns=lambda: 400_000_000 * next(reads),
    )
    for module in (negmas.mechanisms, negmas.sao.mechanism):
        monkeypatch.setattr(module, "time", slow)
    assert transcripts() == quiet
    assert next(reads) > 100  # the slow clock was read


def test_stochastic_agent_varies_with_the_seed():
    _strategy("field_agent_k")  # AgentK draws random "tremor"s; seeds must reach it
    runs = {
        tuple(d.price for _, _, d in play("field_agent_k", rising, seed, patience=10))
        for seed in range(6)
    }
    assert len(runs) > 1


@strategies
def test_global_random_state_is_left_alone(name):
    _strategy(name)
    np = pytest.importorskip("numpy")
    random.seed(123)
    np.random.seed(123)
    py_state, np_state = random.getstate(), np.random.get_state()
    play(name, rising, 5)
    assert random.getstate() == py_state
    after = np.random.get_state()
    assert after[0] == np_state[0] and (after[1] == np_state[1]).all()
    assert after[2:] == np_state[2:]


@needs_negmas
def test_threads_are_independent_in_one_policy():
    policy = FIELD_STRATEGIES["field_linear"]()
    alone = [d.price for _, _, d in play("field_linear", rising, 3)]
    # Interleave two threads on one policy: each still plays its own negotiation.
    ths = [ThreadHidden(800.0, 640.0, 824.0, 1000.0, 1.0, 8) for _ in range(2)]
    rngs = [random.Random(3), random.Random(3)]
    got: list[list[float | None]] = [[], []]
    for k in range(1, 11):
        for i, th in enumerate(ths):
            if got[i] and got[i][-1] is None:
                continue
            offer = rising(k, 8, 800.0, 1000.0)
            ctx = SupplierContext("field_linear", offer, k, th, None, 1, "", rngs[i])
            d = GUARD.apply(policy.respond(ctx), offer, th.reservation, th.last_counter)
            if d.kind == "counter":
                th.last_counter = d.price
                got[i].append(d.price)
            else:
                got[i].extend([d.price, None])
    assert got[0][:-1] == got[1][:-1] == alone
    assert not policy._sessions  # finished threads are dropped


@needs_negmas
def test_plays_through_the_engine_respond_path(r01_thread):
    """The real actions.respond(): guard, counters and thread state, with a field seller."""
    from negotiation.actions import respond

    env, r, _, th, hid = r01_thread
    policy = FIELD_STRATEGIES["field_conceder"]()
    last = None
    for i in range(hid.patience + 2):
        offer = hid.reservation * (0.8 + 0.04 * i)
        resp = respond(env.world, th, r, offer, "", policy)
        assert resp["response"] in ("accept", "counter", "walk_away")
        if resp["response"] != "counter":
            break
        assert resp["price"] >= band_floor(hid.reservation)
        assert last is None or resp["price"] <= last
        last = resp["price"]
    assert resp["response"] in ("accept", "walk_away")
    if resp["response"] == "accept":
        assert resp["price"] >= hid.reservation and th.status == "agreed"


def test_importing_the_module_does_not_import_negmas():
    code = (
        "import sys, negotiation.suppliers.field\n"
        "assert not [m for m in sys.modules if m.startswith('negmas')], 'negmas imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# --------------------------------------------------------------- field personas in scenarios
ROOT = Path(__file__).resolve().parents[3]
RULE_LIST = "cooperative, hardball, deceptive, distressed"
FIELD_ERROR = (
    "Field persona '{}' needs the optional negmas packages: pip install -r requirements/field.txt."
)


def test_field_personas_are_the_strategies_on_rule_bases():
    from negotiation.suppliers.field import FIELD_BASE, base_persona

    assert FIELD_PERSONAS == tuple(STRATEGIES) == tuple(FIELD_STRATEGIES)
    assert not set(FIELD_PERSONAS) & set(PERSONAS)
    for name, s in STRATEGIES.items():
        assert FIELD_BASE[name] == s.base == s.voice == base_persona(name) in PERSONAS
    assert all(base_persona(p) == p for p in PERSONAS)


def _without_field_packages(monkeypatch):
    import negotiation.suppliers.field

    monkeypatch.setattr(negotiation.suppliers.field, "available_field_strategies", lambda: [])


def _errors(*args, **kwargs) -> list[dict[str, str]]:
    from negotiation import load_scenario

    with pytest.raises(ScenarioValidationError) as exc:
        load_scenario(*args, **kwargs)
    return exc.value.errors


def test_field_personas_need_the_negmas_packages(monkeypatch):
    """Runs everywhere: without the packages (simulated), a field persona gets its own
    error naming the install, and unknown names keep theirs."""
    from negotiation import load_scenario

    _without_field_packages(monkeypatch)
    for name in FIELD_PERSONAS:
        assert _errors("bilateral", persona=name) == [
            {"field": "bilateral_persona", "message": FIELD_ERROR.format(name)}
        ]
    mix = {"hardball": 1.0, "field_hardheaded": 0.5}
    assert _errors("medium_adversarial", persona_mix=mix) == [
        {"field": "persona_mix.field_hardheaded", "message": FIELD_ERROR.format("field_hardheaded")}
    ]
    # A field persona without weight plays no supplier: nothing to install.
    load_scenario("medium_adversarial", persona_mix={"hardball": 1.0, "field_linear": 0.0})
    assert _errors("medium_adversarial", persona_mix={"angelic": 1.0}) == [
        {
            "field": "persona_mix.angelic",
            "message": f"Unknown persona 'angelic'; use one of {RULE_LIST}.",
        }
    ]
    assert _errors("bilateral", persona="field_nobody") == [
        {
            "field": "persona_mix.field_nobody",
            "message": f"Unknown persona 'field_nobody'; use one of {RULE_LIST}.",
        },
        {"field": "bilateral_persona", "message": f"Unknown persona; use one of {RULE_LIST}."},
    ]


def test_without_negmas_field_personas_are_refused():
    """Runs everywhere: in a process where the packages cannot be found (hidden where they
    are installed, as `make test` installs them), the real detection refuses field personas
    and the persona help leaves them out."""
    want = [{"field": "bilateral_persona", "message": FIELD_ERROR.format("field_boulware")}]
    code = f"""
import importlib.util
_find = importlib.util.find_spec
HIDDEN = ("negmas", "negmas_genius_agents")
importlib.util.find_spec = lambda n, p=None: None if n.split(".")[0] in HIDDEN else _find(n, p)
from negotiation import load_scenario
from negotiation.config import ScenarioConfig, ScenarioValidationError
from negotiation.suppliers.field import available_field_strategies
assert available_field_strategies() == [], available_field_strategies()
try:
    load_scenario("bilateral", persona="field_boulware")
except ScenarioValidationError as exc:
    assert exc.errors == {want!r}, exc.errors
else:
    raise AssertionError("a field persona was accepted without negmas")
assert "field_" not in (ScenarioConfig.model_fields["bilateral_persona"].description or "")
"""
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_a_language_model_plays_no_field_persona():
    errs = _errors("medium_adversarial_llm", supplier_llm={"personas": ["field_boulware"]})
    assert errs == [
        {
            "field": "supplier_llm.personas",
            "message": "'field_boulware' is a field persona, played by its own negotiator; a "
            "language model plays rule personas only.",
        }
    ]


def test_persona_help_lists_field_personas_only_where_installed():
    from negotiation.config import ScenarioConfig

    for field in ("persona_mix", "bilateral_persona"):
        text = ScenarioConfig.model_fields[field].description or ""
        assert RULE_LIST in text
        for name in FIELD_PERSONAS:
            assert (name in text) == (name in AVAILABLE)


def test_rule_scenarios_never_import_negmas():
    """Runs everywhere (meaningful where negmas is installed): rule presets, their episodes
    and a field persona with no weight load nothing of negmas."""
    code = """
import sys
from negotiation import ProcurementEnv, list_presets, load_scenario, run_episode
for preset in list_presets(include_llm=False):
    for policy in ("expert", "random"):
        run_episode(preset, policy, 1)
cfg = load_scenario("medium_adversarial", persona_mix={"hardball": 1.0, "field_boulware": 0.0})
env = ProcurementEnv(cfg)
assert env.supplier_policies == {}, env.supplier_policies
run_episode(cfg, "expert", 2)
loaded = [m for m in sys.modules if m.split(".")[0] in ("negmas", "negmas_genius_agents")]
assert not loaded, loaded
"""
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


@needs_negmas
def test_a_field_env_imports_negmas_only_when_a_field_supplier_answers():
    code = """
import sys
from negotiation import ProcurementEnv, load_scenario
from negotiation.suppliers.field import FieldSupplierPolicy
env = ProcurementEnv(load_scenario("bilateral", persona="field_boulware"))
assert set(env.supplier_policies) == {"field_boulware"}
assert isinstance(env.supplier_policies["field_boulware"], FieldSupplierPolicy)
obs = env.reset(seed=1)
assert not [m for m in sys.modules if m.startswith("negmas")]
s, r = obs.suppliers[0], obs.requirements[0]
env.step({"action_type": "negotiate", "supplier_id": s.id, "requirement_id": r.id,
          "price": round(s.list_prices[r.id] * 0.9, 2)})
assert "negmas" in sys.modules
"""
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def _available_personas() -> list[str]:
    return [n for n in STRATEGIES if n in AVAILABLE]


def _field_mix() -> dict[str, float]:
    field = _available_personas()
    return {"cooperative": 0.2, "hardball": 0.2, "deceptive": 0.1, "distressed": 0.1} | {
        n: 0.4 / len(field) for n in field
    }


def play_episode(cfg, policy: str, seed: int) -> tuple[list[dict], dict]:
    """One whole episode as run_episode plays it, checking the guard at every supplier
    answer: no accept below the thread's reservation, no counter inside the band."""
    from negotiation import ProcurementEnv, get_policy
    from negotiation.runner import episode_metrics, record_step

    env = ProcurementEnv(cfg)
    pol = get_policy(policy, seed=seed)
    pol.reset(seed)
    obs = env.reset(seed=seed)
    steps = []
    while not env.done:
        res, rec = record_step(env, pol.act(obs))
        steps.append(rec.to_dict())
        resp = res.info["response"]
        if resp:
            hid = env.world.th_hidden[(resp["supplier_id"], resp["requirement_id"])]
            if resp["response"] == "accept":
                assert resp["price"] >= hid.reservation, (resp, hid.reservation)
            elif resp["response"] == "counter":
                assert resp["price"] >= band_floor(hid.reservation)
        obs = res.observation
    return steps, episode_metrics(env.score().metrics, pol)


@pytest.mark.parametrize("policy", ["expert", "always_accept"])
@strategies
def test_bilateral_field_persona_plays_whole_episodes(name, policy):
    from negotiation import load_scenario

    _strategy(name)
    cfg = load_scenario("bilateral", persona=name)
    assert cfg.bilateral_persona == name and cfg.persona_mix == {name: 1.0}
    for seed in range(4):
        steps, metrics = play_episode(cfg, policy, seed)
        assert steps and metrics["steps"] == len(steps)
        invalid = [
            (s["action"]["action_type"], s["error"]["code"]) for s in steps if not s["valid"]
        ]
        assert invalid == []
        assert metrics["malformed_actions"] == 0
        # Field sellers answer with their own counters, within the rules: no repairs.
        assert metrics["guard_interventions"] == 0


@pytest.mark.parametrize("policy", ["expert", "always_accept", "random"])
def test_arena_with_field_personas_in_the_mix(policy):
    from negotiation import ProcurementEnv, load_scenario

    if not _available_personas():
        pytest.skip("negmas is not installed")
    cfg = load_scenario("medium_adversarial", persona_mix=_field_mix())
    env = ProcurementEnv(cfg)
    assert set(env.supplier_policies) == set(_available_personas())
    assert all(isinstance(p, FieldSupplierPolicy) for p in env.supplier_policies.values())
    seen: set[str] = set()
    for seed in range(3):
        steps, metrics = play_episode(cfg, policy, seed)
        assert metrics["steps"] == len(steps)
        if policy != "random":
            assert metrics["invalid_actions"] == 0 and metrics["malformed_actions"] == 0
        env.reset(seed=seed)
        seen |= {h.persona for h in env.world.hidden.values()}
    assert seen & set(FIELD_PERSONAS)


@needs_negmas
def test_field_supplier_hidden_numbers_come_from_the_base_persona():
    from negotiation import ProcurementEnv, load_scenario
    from negotiation.suppliers.rule import PERSONA_PARAMS
    from negotiation.suppliers.tells import _DEMEANOUR

    cfg = load_scenario("hard_arena", persona_mix=_field_mix(), n_suppliers=20)
    env = ProcurementEnv(cfg)
    for seed in range(3):
        env.reset(seed=seed)
        field = [h for h in env.world.hidden.values() if h.persona in FIELD_PERSONAS]
        assert field
        for h in field:
            pp = PERSONA_PARAMS[STRATEGIES[h.persona].base]
            for attr, key in (
                ("list_factor", "list_factor"),
                ("margin", "margin"),
                ("stress", "stress"),
                ("beta", "beta"),
            ):
                lo, hi = pp[key]
                assert lo <= getattr(h, attr) <= hi, (h.persona, attr)
            lo, hi = pp["patience"]
            assert lo <= h.patience <= hi
            for c, ratio in h.cost_ratio.items():
                lo, hi = pp["cost_ratio"]
                assert lo * 0.97 <= ratio <= hi * 1.03, c
    assert {STRATEGIES[n].base for n in STRATEGIES} <= set(_DEMEANOUR)


@needs_negmas
def test_field_tells_show_the_base_persona_demeanour():
    from negotiation.suppliers.tells import TellSignals, make_tells

    def tells(persona: str) -> dict[str, float]:
        signals = TellSignals(persona, (0.0,) * 10, 0.5, 0.2, 0.01, 0.3, 0.0, False)
        return make_tells(random.Random(1), signals, deception=0.5, noise=0.0)

    for name, s in STRATEGIES.items():
        assert tells(name) == tells(s.base)


@pytest.mark.parametrize("policy", ["expert", "always_accept", "random"])
def test_field_episodes_are_deterministic(policy):
    from negotiation import load_scenario

    if not _available_personas():
        pytest.skip("negmas is not installed")
    configs = [load_scenario("medium_adversarial", persona_mix=_field_mix())] + [
        load_scenario("bilateral", persona=n) for n in _available_personas()
    ]
    for cfg in configs:
        for seed in (3, 4):
            assert play_episode(cfg, policy, seed) == play_episode(cfg, policy, seed)


@strategies
def test_field_decisions_are_recorded_as_the_field_persona_not_as_an_llm(name):
    from negotiation import load_scenario, run_episode

    _strategy(name)
    result = run_episode(load_scenario("bilateral", persona=name), "expert", 1)
    answered = {s.supplier_actor for s in result.steps if s.response is not None}
    assert answered == {f"field:{name}"}
    assert result.metrics["supplier_llm_decisions"] == 0

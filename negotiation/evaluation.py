"""Policy evaluation: buyers (rule policies and language models) against supplier line-ups
(rule personas, field agents, language models), on paired seeds, as league tables.

Every (scenario, tier, line-up, buyer, seed, replay) episode runs headless: rule-only ones
in this process or in worker processes, LLM ones in this process, batched: all episodes
that talk to one model share one batching backend (interfaces/concurrent.py), so each
round of their turns is one model call. Every buyer plays the same seeds against the same
line-ups (common random numbers: a seed draws the same world for every player), and
replays (``replays`` > 1, for sampled models) vary only the buyer's own seed.

negotiation/league.py turns the outcomes into the tables: the leaderboard (mean with a
bootstrap 95 % CI, n, the paired difference against the best buyer and tie marks,
pass^k, the worst line-up, cost), the buyers x line-ups matrix, the suppliers' table,
and openskill ratings with buyers and suppliers in separate pools.

``human`` needs a person and is refused; stored human-seat episodes join the ratings
through the caller (procurement/services/evaluations.py).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import sys
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import IO, Any

from tqdm import tqdm

from .config import TIERS, ScenarioConfig, ScenarioValidationError
from .curriculum import apply_tier
from .league import leaderboard as league_leaderboard
from .league import matrix, supplier_table
from .league import ratings as league_ratings
from .lineups import AS_CONFIGURED, apply_lineup, opponent_label, parse_lineup
from .llm.backend import LLMBackend
from .llm.models import model_label
from .llm.shared import LLMSpec
from .metrics import DEAL_METRICS, closed_a_deal
from .players import Timed, build_policy, llm_spec
from .policies import MEASUREMENT_ONLY, list_policies
from .runner import run_episode
from .scenarios import list_presets, load_scenario
from .stats import bootstrap_mean_ci, mean_ci
from .world.seeding import check_world_key

# Policies that cannot play a headless evaluation, and why.
REFUSED_POLICIES = {"human": "needs a person in the buyer's seat"}
MAX_SEEDS = 10_000
MAX_EPISODES = 500_000
MAX_LLM_EPISODES = 20_000  # episodes that call a model: hours of accelerator time already
MAX_REPLAYS = 32
MAX_WORKERS = 64
BOOTSTRAP_RESAMPLES = 2000
CHUNK_SEEDS = 25  # seeds per unit of work: progress stays smooth, overhead small
PACK_LEVEL = 6  # zlib's default: most of the gain of 9 at a fraction of its time
LLM_BATCH_EPISODES = 64  # LLM episodes playing at once against one model
# An evaluation's two lanes: episodes without a model (any process, the cpu queue) and
# episodes that call one (batched per model, the gpu queue). They play apart, in parallel.
RULE_LANE, LLM_LANE = "rule", "llm"
LANES = (RULE_LANE, LLM_LANE)

Prices = Mapping[str, tuple[float, float]]  # model label -> (in, out) per million tokens
# Told as episodes finish: (episodes done, episodes in all, the cell playing now). It may
# raise to stop the run (a cancel): the exception leaves run_outcomes / evaluate as is.
ProgressHook = Callable[[int, int, str], None]
# Told the outcomes of episodes as they end (a rule chunk, or one LLM episode) in the
# caller's thread, to store them; it may raise to stop the run, as ProgressHook.
OutcomesHook = Callable[[list["Outcome"]], None]
EpisodeKey = tuple[str, str | None, str, str, int, int]  # cell, buyer, seed, replay


class EvaluationError(ValueError):
    """Invalid evaluation parameters. ``errors`` is a list of {"field", "message"}."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e['field']}: {e['message']}" for e in errors))


@dataclass(frozen=True)
class EvaluationSpec:
    """What to evaluate, validated. ``policies`` names the buyer players and ``players``
    maps each to the policy snapshot it plays; ``suppliers`` names the supplier line-ups
    (negotiation/lineups.py); ``configs`` maps each scenario name to its engine config
    (JSON form); ``tiers`` empty means each scenario as configured. ``replays`` plays
    each (buyer, seed) that many times with the buyer's own seed varied. ``prices``
    gives (in, out) money per million tokens by model label. ``world_key`` seals every
    world (ProcurementEnv): held-out worlds that no one can rebuild from the seeds without
    the key; it never appears in a repr or in ``params()``."""

    policies: tuple[str, ...]
    scenarios: tuple[str, ...]
    seeds: int
    seed_start: int = 0
    tiers: tuple[str, ...] = ()
    configs: Mapping[str, dict[str, Any]] = field(default_factory=dict, compare=False)
    world_key: bytes | None = field(default=None, compare=False, repr=False)
    suppliers: tuple[str, ...] = (AS_CONFIGURED,)
    replays: int = 1
    players: Mapping[str, dict[str, Any]] = field(default_factory=dict, compare=False)
    prices: Prices = field(default_factory=dict, compare=False)

    @property
    def sealed(self) -> bool:
        return self.world_key is not None

    @property
    def episodes(self) -> int:
        return (
            len(self.policies)
            * len(self.scenarios)
            * max(1, len(self.tiers))
            * len(self.suppliers)
            * self.seeds
            * self.replays
        )

    def snapshot(self, policy: str) -> dict[str, Any]:
        return self.players.get(policy) or {"policy": policy}

    def params(self) -> dict[str, Any]:
        """The parameters as stored and shown (configs left out: they are derived)."""
        return {
            "policies": list(self.policies),
            "scenarios": list(self.scenarios),
            "suppliers": list(self.suppliers),
            "seeds": self.seeds,
            "seed_start": self.seed_start,
            "replays": self.replays,
            "tiers": list(self.tiers),
            "sealed": self.sealed,
            "prices": {k: list(v) for k, v in self.prices.items()},
        }


def _names(value: str | Iterable[str]) -> list[str]:
    """Comma-separated text or a list; blanks and repeats dropped, order kept."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return list(dict.fromkeys(str(n).strip() for n in items if str(n).strip()))


def headless_policies() -> list[str]:
    return [p for p in list_policies() if p not in REFUSED_POLICIES]


def _model_problem(backend: str, model: str, options: Mapping[str, Any] = ()) -> str | None:
    from .llm.preflight import model_problem  # sockets and paths: only for LLM players

    return model_problem(backend, model, dict(options))


def _check_players(
    names: list[str], stored: Mapping[str, dict[str, Any]], errors: list[dict[str, str]]
) -> dict[str, dict[str, Any]]:
    """Each buyer name's snapshot: a stored config's, else a rule or llm policy's own."""
    allowed = headless_policies()
    players: dict[str, dict[str, Any]] = {}
    checked: dict[LLMSpec, str | None] = {}
    for name in names:
        snapshot = dict(stored[name]) if name in stored else {"policy": name}
        policy = snapshot.get("policy", "")
        if policy in MEASUREMENT_ONLY:
            errors.append({"field": "policies", "message": MEASUREMENT_ONLY[policy]})
            continue
        if policy in REFUSED_POLICIES:
            errors.append({"field": "policies", "message": f"'{name}' {REFUSED_POLICIES[policy]}."})
            continue
        if policy not in allowed:
            errors.append(
                {
                    "field": "policies",
                    "message": f"Unknown policy '{name}'; use a stored policy or one of "
                    f"{', '.join(allowed)}.",
                }
            )
            continue
        spec = llm_spec(snapshot)
        if spec is not None:
            if spec not in checked:
                checked[spec] = _model_problem(spec.backend, spec.model, dict(spec.options))
            if checked[spec]:
                errors.append({"field": "policies", "message": f"'{name}': {checked[spec]}."})
                continue
        players[name] = snapshot
    return players


def build_spec(
    *,
    policies: str | Iterable[str],
    scenarios: str | Iterable[str],
    seeds: int,
    seed_start: int = 0,
    tiers: str | Iterable[str] = (),
    suppliers: str | Iterable[str] = (),
    replays: int = 1,
    custom_scenarios: Mapping[str, dict[str, Any]] | None = None,
    stored_policies: Mapping[str, dict[str, Any]] | None = None,
    prices: Prices | None = None,
    world_key: bytes | None = None,
) -> EvaluationSpec:
    """Validate every parameter and resolve scenario names to configs; raises
    EvaluationError listing every problem. ``scenarios`` may be "all" (every preset whose
    suppliers are rule personas); ``custom_scenarios`` adds configs by name (stored ones);
    ``stored_policies`` adds buyer snapshots by name (stored policy configs, LLM ones
    included: their model must be here, or their server answer, before anything runs);
    ``suppliers`` names the line-ups (empty: each scenario's own suppliers);
    ``world_key`` seals the worlds (EvaluationSpec)."""
    errors: list[dict[str, str]] = []
    custom = dict(custom_scenarios or {})

    pols = _names(policies)
    if not pols:
        errors.append({"field": "policies", "message": "Name at least one policy."})
    players = _check_players(pols, dict(stored_policies or {}), errors)

    wanted = _names(scenarios)
    if wanted == ["all"]:
        wanted = list_presets(include_llm=False)
    if not wanted:
        errors.append({"field": "scenarios", "message": "Name at least one scenario, or 'all'."})
    configs: dict[str, dict[str, Any]] = {}
    for name in wanted:
        try:
            cfg = load_scenario(custom.get(name, name))
        except ScenarioValidationError as exc:
            if name in custom:
                msg = f"Scenario '{name}' is invalid: {exc}"
            else:
                msg = f"Unknown scenario '{name}'; use 'all' or one of {', '.join(_known(custom))}."
            errors.append({"field": "scenarios", "message": msg})
            continue
        if cfg.plays_llm_suppliers() and cfg.supplier_llm is not None:
            problem = _model_problem(cfg.supplier_llm.backend, cfg.supplier_llm.model)
            if problem:
                errors.append({"field": "scenarios", "message": f"'{name}': {problem}."})
                continue
        configs[name] = cfg.model_dump(mode="json")

    lineups = _names(suppliers) or [AS_CONFIGURED]
    for name in lineups:
        try:
            lineup = parse_lineup(name)
        except ValueError as exc:
            errors.append({"field": "suppliers", "message": str(exc)})
            continue
        if lineup.backend is not None:
            problem = _model_problem(lineup.backend, lineup.model)
            if problem:
                errors.append({"field": "suppliers", "message": f"'{name}': {problem}."})

    tier_names = _names(tiers)
    for t in tier_names:
        if t not in TIERS:
            errors.append(
                {"field": "tiers", "message": f"Unknown tier '{t}'; use {', '.join(TIERS)}."}
            )

    if type(seeds) is not int or not 1 <= seeds <= MAX_SEEDS:
        errors.append({"field": "seeds", "message": f"A whole number from 1 to {MAX_SEEDS}."})
    if type(seed_start) is not int or not 0 <= seed_start <= 2**62:
        errors.append({"field": "seed_start", "message": "A whole number from 0 to 2**62."})
    if type(replays) is not int or not 1 <= replays <= MAX_REPLAYS:
        errors.append({"field": "replays", "message": f"A whole number from 1 to {MAX_REPLAYS}."})
    price_map = _check_prices(prices or {}, errors)
    if not errors:
        spec = EvaluationSpec(
            tuple(pols),
            tuple(wanted),
            seeds,
            seed_start,
            tuple(tier_names),
            configs,
            check_world_key(world_key),
            tuple(lineups),
            replays,
            players,
            price_map,
        )
        model_episodes = llm_episodes(spec)
        if spec.episodes > MAX_EPISODES:
            errors.append(
                {
                    "field": "seeds",
                    "message": f"{spec.episodes:,} episodes; at most {MAX_EPISODES:,} "
                    "in one evaluation.",
                }
            )
        elif model_episodes and spec.sealed:
            errors.append(
                {
                    "field": "sealed",
                    "message": "Sealed worlds are for rule players only; a language model "
                    "plays public worlds.",
                }
            )
        elif model_episodes > MAX_LLM_EPISODES:
            errors.append(
                {
                    "field": "seeds",
                    "message": f"{model_episodes:,} episodes call a language model; at most "
                    f"{MAX_LLM_EPISODES:,} in one evaluation.",
                }
            )
        else:
            return spec
    raise EvaluationError(errors)


def _check_prices(prices: Prices, errors: list[dict[str, str]]) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for model, pair in prices.items():
        try:
            p_in, p_out = (float(x) for x in pair)
        except (TypeError, ValueError):
            p_in = p_out = math.nan
        if not (math.isfinite(p_in) and math.isfinite(p_out) and p_in >= 0 and p_out >= 0):
            errors.append(
                {
                    "field": "prices",
                    "message": f"'{model}': two numbers >= 0 (in and out, per million tokens).",
                }
            )
            continue
        out[model_label(str(model))] = (p_in, p_out)
    return out


def llm_episodes(spec: EvaluationSpec) -> int:
    """How many of the spec's episodes call a language model (buyer or suppliers)."""
    per = spec.seeds * spec.replays * max(1, len(spec.tiers))
    total = 0
    for name in spec.scenarios:
        cfg = load_scenario(spec.configs[name])
        for lineup in spec.suppliers:
            suppliers_llm = apply_lineup(cfg, parse_lineup(lineup)).plays_llm_suppliers()
            for policy in spec.policies:
                if suppliers_llm or llm_spec(spec.snapshot(policy)) is not None:
                    total += per
    return total


def lane_episodes(spec: EvaluationSpec) -> dict[str, int]:
    """How many of the spec's episodes each lane plays (RULE_LANE, LLM_LANE)."""
    model = llm_episodes(spec)
    return {RULE_LANE: spec.episodes - model, LLM_LANE: model}


def _known(custom: Mapping[str, Any]) -> list[str]:
    return [*list_presets(include_llm=False), *custom]


# ----------------------------------------------------------------------------- running
@dataclass(frozen=True, slots=True)
class Outcome:
    """One episode's result, as much as the league tables need."""

    scenario: str
    tier: str | None
    policy: str
    seed: int
    score: float
    deal_rate: float
    buyer_share: float
    mutual_loss: float
    rounds_per_deal: float
    invalid_action_rate: float
    opponent: str  # the supplier player: persona:<name>, mix:<scenario> or llm:<model>
    lineup: str = AS_CONFIGURED
    replay: int = 0
    mode: str = "bilateral"
    success: bool = False  # every requirement fulfilled, within budget, nothing late
    world: str = ""  # fingerprint of the world as the buyer first saw it
    # timings differ run to run: left out of equality, so reruns compare equal
    seconds: float = field(default=0.0, compare=False)
    decisions: tuple[float, ...] = field(default=(), compare=False)  # per decision, s
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    money: float = 0.0


OUTCOME_RECORD = tuple(f.name for f in fields(Outcome))


def episode_key(o: Outcome) -> EpisodeKey:
    """Which episode of a spec an outcome is: (scenario, tier, line-up, buyer, seed, replay)."""
    return (o.scenario, o.tier, o.lineup, o.policy, o.seed, o.replay)


def outcome_record(o: Outcome) -> list[Any]:
    """An outcome as a JSON list (OUTCOME_RECORD's order), to store and read back whole:
    timings to the microsecond."""
    row = [getattr(o, name) for name in OUTCOME_RECORD]
    row[OUTCOME_RECORD.index("seconds")] = round(o.seconds, 6)
    row[OUTCOME_RECORD.index("decisions")] = [round(d, 6) for d in o.decisions]
    return row


# A record's strings that many outcomes share (the names; a world, by every player of its
# seed): interned as they are read back, so a seal reading up to MAX_EPISODES outcomes
# holds each once rather than once per outcome.
_SHARED_NAMES = ("scenario", "tier", "policy", "opponent", "lineup", "mode", "world")


def outcome_from_record(row: Sequence[Any]) -> Outcome:
    values = dict(zip(OUTCOME_RECORD, row, strict=True))
    values["decisions"] = tuple(values["decisions"])
    for name in _SHARED_NAMES:
        if isinstance(values[name], str):
            values[name] = sys.intern(values[name])
    return Outcome(**values)


def pack_outcomes(outcomes: Iterable[Outcome]) -> bytes:
    """Outcomes as compact bytes to store (a lane's pieces): their records
    (outcome_record: every field the tables need, timings to the microsecond) as JSON,
    deflated. Read back whole by unpack_outcomes."""
    rows = [outcome_record(o) for o in outcomes]
    return zlib.compress(json.dumps(rows, separators=(",", ":")).encode(), PACK_LEVEL)


def unpack_outcomes(data: bytes | memoryview) -> list[Outcome]:
    return [outcome_from_record(row) for row in json.loads(zlib.decompress(bytes(data)))]


def fold_packed(pieces: Iterable[bytes | memoryview]) -> bytes:
    """Packed outcomes (pack_outcomes's) as one packed block, in order, without reading
    them back: each piece's JSON list is inflated and deflated again as it comes, so
    only one piece at a time is held."""
    out = zlib.compressobj(PACK_LEVEL)
    parts, first = [out.compress(b"[")], True
    for data in pieces:
        body = zlib.decompress(bytes(data))[1:-1]  # the rows, without the list's brackets
        if body:
            parts.append(out.compress(body if first else b"," + body))
            first = False
    parts.append(out.compress(b"]"))
    parts.append(out.flush())
    return b"".join(parts)


Cell = tuple[str, str | None, str]  # (scenario, tier, line-up)
Task = tuple[str, str | None, str, str, int, int]  # cell, policy, seeds [lo, hi)

# Configs of the current process, keyed by cell, the buyers' snapshots, and the key
# sealing its worlds (None: public): set once per worker.
_CONFIGS: dict[Cell, ScenarioConfig] = {}
_PLAYERS: dict[str, dict[str, Any]] = {}
_STATE: dict[str, Any] = {"world_key": None, "replays": 1}


def _init_worker(
    configs: dict[Cell, dict[str, Any]],
    players: dict[str, dict[str, Any]],
    world_key: bytes | None,
    replays: int,
) -> None:
    _CONFIGS.clear()
    _CONFIGS.update({k: load_scenario(v) for k, v in configs.items()})
    _PLAYERS.clear()
    _PLAYERS.update(players)
    _STATE.update(world_key=world_key, replays=replays)


def _success(m: Mapping[str, Any]) -> bool:
    return (
        float(m.get("fulfilment_rate", 0.0)) >= 1.0
        and float(m.get("budget_utilisation", 0.0)) <= 1.0 + 1e-9
        and int(m.get("late_deliveries", 0)) == 0
    )


def _opponent(cell: Cell, cfg: ScenarioConfig) -> str:
    scenario, tier, lineup = cell
    if cfg.plays_llm_suppliers() and cfg.supplier_llm is not None:
        return f"llm:{model_label(cfg.supplier_llm.model)}"
    if lineup != AS_CONFIGURED and cfg.mode == "bilateral":
        return f"persona:{cfg.bilateral_persona}"
    if lineup != AS_CONFIGURED:
        return f"persona:{lineup}"
    return opponent_label(cfg, scenario if tier is None else f"{scenario}@{tier}")


def _outcome(
    cell: Cell, policy: str, seed: int, replay: int, res: Any, timed: Timed, **usage: Any
) -> Outcome:
    cfg = _CONFIGS[cell]
    m = res.metrics
    return Outcome(
        cell[0],
        cell[1],
        policy,
        seed,
        float(res.score),
        float(m["deal_rate"]),
        float(m["buyer_share"]),
        float(m["mutual_loss"]),
        float(m["rounds_per_deal"]),
        float(m["invalid_action_rate"]),
        _opponent(cell, cfg),
        cell[2],
        replay,
        cfg.mode,
        _success(m),
        timed.world or "",
        timed.seconds,
        tuple(timed.decisions),
        **usage,
    )


def cell_label(task: Task) -> str:
    """A task's cell as people read it: scenario[@tier] · line-up · buyer."""
    scenario, tier, lineup, policy = task[:4]
    return f"{scenario if tier is None else f'{scenario}@{tier}'} · {lineup} · {policy}"


class _Progress:
    """The terminal's bar (tqdm, on a stream) and the caller's hooks, told together.
    ``skip``: episodes played before (stored): counted done, never told again."""

    def __init__(
        self,
        bar: Any,
        total: int,
        hook: ProgressHook | None,
        *,
        skip: frozenset[EpisodeKey] = frozenset(),
        done: int = 0,
        on_outcomes: OutcomesHook | None = None,
    ) -> None:
        self.bar, self.total, self.hook = bar, total, hook
        self.skip, self.on_outcomes = skip, on_outcomes
        self.done, self.cell = done, ""
        self.outcomes: list[Outcome] = []
        bar.update(done)

    def played(self, outcomes: list[Outcome], task: Task) -> None:
        """Episodes of ``task`` ended: keep (and tell) those not played before."""
        new = [o for o in outcomes if episode_key(o) not in self.skip]
        self.outcomes.extend(new)
        if new and self.on_outcomes is not None:
            self.on_outcomes(new)
        self.update(len(new), task)

    def at(self, task: Task) -> None:
        """``task`` starts playing."""
        self.cell = cell_label(task)
        if self.hook is not None:
            self.hook(self.done, self.total, self.cell)

    def update(self, n: int, task: Task | None = None) -> None:
        """``n`` more episodes done (of ``task``'s cell, when given)."""
        self.bar.update(n)
        self.done += n
        if task is not None:
            self.cell = cell_label(task)
        if self.hook is not None:
            self.hook(self.done, self.total, self.cell)


def _run_chunk(task: Task) -> list[Outcome]:
    scenario, tier, lineup, policy, lo, hi = task
    cell = (scenario, tier, lineup)
    snapshot = _PLAYERS.get(policy) or {"policy": policy}
    out = []
    for seed in range(lo, hi):
        for replay in range(_STATE["replays"]):
            timed = Timed(build_policy(snapshot, seed), replay)
            res = run_episode(
                _CONFIGS[cell], timed, seed, record_steps=False, world_key=_STATE["world_key"]
            )
            out.append(_outcome(cell, policy, seed, replay, res, timed))
    return out


def _configs(spec: EvaluationSpec) -> dict[Cell, dict[str, Any]]:
    out = {}
    for name in spec.scenarios:
        base = load_scenario(spec.configs[name])
        for tier in spec.tiers or (None,):
            tiered = base if tier is None else apply_tier(base, tier)
            for lineup in spec.suppliers:
                cfg = apply_lineup(tiered, parse_lineup(lineup))
                out[(name, tier, lineup)] = cfg.model_dump(mode="json")
    return out


def _tasks(spec: EvaluationSpec) -> list[Task]:
    end = spec.seed_start + spec.seeds
    return [
        (name, tier, lineup, policy, lo, min(end, lo + CHUNK_SEEDS))
        for name in spec.scenarios
        for tier in spec.tiers or (None,)
        for lineup in spec.suppliers
        for policy in spec.policies
        for lo in range(spec.seed_start, end, CHUNK_SEEDS)
    ]


def _task_model(task: Task) -> tuple[LLMSpec | None, LLMSpec | None]:
    """The models a task's buyer and suppliers talk to (None: rules)."""
    cfg = _CONFIGS[task[:3]]
    buyer = llm_spec(_PLAYERS.get(task[3]) or {"policy": task[3]})
    suppliers = None
    if cfg.plays_llm_suppliers() and cfg.supplier_llm is not None:
        suppliers = LLMSpec(cfg.supplier_llm.backend, cfg.supplier_llm.model)
    return buyer, suppliers


def _money(spec: LLMSpec, prompt: int, completion: int, prices: Prices) -> float:
    p_in, p_out = prices.get(model_label(spec.model), (0.0, 0.0))
    return (prompt * p_in + completion * p_out) / 1e6


def _keys(task: Task, replays: int) -> list[EpisodeKey]:
    return [(*task[:4], seed, r) for seed in range(task[4], task[5]) for r in range(replays)]


def _run_llm_batched(model: LLMSpec, tasks: list[Task], prices: Prices, told: _Progress) -> None:
    """Episodes that all talk to one model (buyer, suppliers or both), played together:
    up to LLM_BATCH_EPISODES at once, a new one starting as each ends (so the batch stays
    full), every round of their turns one call of the process's batching backend. Each
    episode is told as it ends; a hook that raises stops the play within one episode."""
    from .interfaces.concurrent import run_episodes_concurrently
    from .llm.shared import shared_batcher

    jobs = [
        (task, seed, replay)
        for task in tasks
        for seed in range(task[4], task[5])
        for replay in range(_STATE["replays"])
        if (*task[:4], seed, replay) not in told.skip
    ]
    if not jobs:
        return
    seats: list[dict[str, Any]] = [{} for _ in jobs]

    def job(seat: dict[str, Any], key: tuple[Task, int, int]) -> tuple[ScenarioConfig, Any, int]:
        task, seed, replay = key

        def factory(participant: LLMBackend) -> Any:
            snapshot = _PLAYERS.get(task[3]) or {"policy": task[3]}
            buyer_llm = llm_spec(snapshot) is not None
            timed = Timed(build_policy(snapshot, seed, participant if buyer_llm else None), replay)
            seat["timed"] = timed
            return timed

        return _CONFIGS[task[:3]], factory, seed

    def ended(index: int, res: Any, participant: LLMBackend) -> None:
        if isinstance(res, BaseException):
            raise res
        (task, seed, replay), stats = jobs[index], participant.stats  # this episode's alone
        usage = {
            "prompt_tokens": stats.prompt_tokens,
            "completion_tokens": stats.completion_tokens,
            "llm_calls": stats.requests,
            "money": _money(model, stats.prompt_tokens, stats.completion_tokens, prices),
        }
        told.played(
            [_outcome(task[:3], task[3], seed, replay, res, seats[index]["timed"], **usage)], task
        )

    told.at(jobs[0][0])
    run_episodes_concurrently(
        [job(seat, k) for seat, k in zip(seats, jobs, strict=True)],
        backend=shared_batcher(model),
        record_steps=False,
        max_workers=LLM_BATCH_EPISODES,
        return_exceptions=True,  # ``ended`` raises the first failure: the play stops
        on_done=ended,
    )


def _run_llm_mixed(
    task: Task, buyer: LLMSpec, suppliers: LLMSpec, prices: Prices, told: _Progress
) -> None:
    """A buyer model against supplier models of another: one episode at a time, each
    model through its own backend (their tokens counted apart), each told as it ends."""
    from .llm import resolve_backend

    keys = [k for k in _keys(task, _STATE["replays"]) if k not in told.skip]
    if not keys:
        return
    b_backend = resolve_backend(buyer.backend, buyer.model, **dict(buyer.options))
    s_backend = resolve_backend(suppliers.backend, suppliers.model)
    snapshot = _PLAYERS.get(task[3]) or {"policy": task[3]}
    told.at(task)
    for *_, seed, replay in keys:
        before = [(b.stats.prompt_tokens, b.stats.completion_tokens, b.stats.requests)
                  for b in (b_backend, s_backend)]  # fmt: skip
        timed = Timed(build_policy(snapshot, seed, b_backend), replay)
        res = run_episode(
            _CONFIGS[task[:3]],
            timed,
            seed,
            record_steps=False,
            llm_backend=s_backend,
            world_key=_STATE["world_key"],
        )
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 0, "money": 0.0}
        for backend, spec, (p0, c0, r0) in zip(
            (b_backend, s_backend), (buyer, suppliers), before, strict=True
        ):
            p, c = backend.stats.prompt_tokens - p0, backend.stats.completion_tokens - c0
            usage["prompt_tokens"] += p
            usage["completion_tokens"] += c
            usage["llm_calls"] += backend.stats.requests - r0
            usage["money"] += _money(spec, p, c, prices)
        told.played([_outcome(task[:3], task[3], seed, replay, res, timed, **usage)], task)


def _run_llm(tasks: list[Task], prices: Prices, told: _Progress) -> None:
    groups: dict[LLMSpec, list[Task]] = defaultdict(list)
    for task in tasks:
        buyer, suppliers = _task_model(task)
        if (
            buyer is not None
            and suppliers is not None
            and (buyer.backend, buyer.model) != (suppliers.backend, suppliers.model)
        ):
            _run_llm_mixed(task, buyer, suppliers, prices, told)
            continue
        model = buyer or suppliers
        assert model is not None
        groups[model].append(task)
    for model, group in groups.items():
        _run_llm_batched(model, group, prices, told)


def run_outcomes(
    spec: EvaluationSpec,
    *,
    workers: int = 1,
    progress: IO[str] | None = None,
    on_progress: ProgressHook | None = None,
    lane: str | None = None,
    skip: Iterable[EpisodeKey] = (),
    on_outcomes: OutcomesHook | None = None,
    bar_position: int | None = None,
) -> list[Outcome]:
    """The spec's episodes (``lane``: only RULE_LANE's or LLM_LANE's), sorted, but those
    in ``skip`` (played before: counted done, not played again). Rule-only episodes run in
    ``workers`` processes when > 1 (spawned: nothing of the caller's state, such as open
    connections, is inherited); episodes that call a model run here, batched per model.
    ``progress``: a stream for a tqdm bar; ``on_progress``: told after every rule chunk
    and every LLM episode (ProgressHook); ``on_outcomes``: told the new outcomes then;
    ``bar_position``: the bar's line, for bars of lanes playing at once on one stream
    (each labelled with its lane)."""
    if type(workers) is not int or not 1 <= workers <= MAX_WORKERS:
        raise EvaluationError(
            [{"field": "workers", "message": f"A whole number from 1 to {MAX_WORKERS}."}]
        )
    if lane not in (None, *LANES):
        raise ValueError(f"lane: one of {', '.join(LANES)}, or None for both")
    configs = _configs(spec)
    players = {p: spec.snapshot(p) for p in spec.policies}
    tasks = _tasks(spec)
    initargs = (configs, players, spec.world_key, spec.replays)
    _init_worker(*initargs)
    llm_tasks = [t for t in tasks if lane != RULE_LANE and _task_model(t) != (None, None)]
    rule_tasks = [t for t in tasks if lane != LLM_LANE and _task_model(t) == (None, None)]
    keys = {k for t in (*rule_tasks, *llm_tasks) for k in _keys(t, spec.replays)}
    skipped = keys.intersection(skip)
    # a rule chunk is told (and stored) whole: one seen before is played no more
    rule_tasks = [t for t in rule_tasks if not skipped.issuperset(_keys(t, spec.replays))]
    with tqdm(
        total=len(keys),
        unit="ep",
        file=progress,
        disable=progress is None,
        smoothing=0.1,
        desc=f"{lane} lane" if lane is not None else None,
        position=bar_position,
        leave=True,
    ) as bar:
        told = _Progress(
            bar,
            len(keys),
            on_progress,
            skip=frozenset(skipped),
            done=len(skipped),
            on_outcomes=on_outcomes,
        )
        if workers == 1 or len(rule_tasks) <= 1:
            for task in rule_tasks:
                told.at(task)
                told.played(_run_chunk(task), task)
        else:
            ctx = multiprocessing.get_context("spawn")
            with ctx.Pool(min(workers, len(rule_tasks)), _init_worker, initargs) as pool:
                for chunk in pool.imap_unordered(_run_chunk, rule_tasks):
                    o = chunk[0]
                    told.played(chunk, (o.scenario, o.tier, o.lineup, o.policy, 0, 0))
        if llm_tasks:
            _run_llm(llm_tasks, spec.prices, told)
    return combine(spec, told.outcomes)


def combine(spec: EvaluationSpec, outcomes: Iterable[Outcome]) -> list[Outcome]:
    """Outcomes of the spec, however they were played (lanes, resumed runs), as one
    evaluation plays them: each episode once (the first told), in the spec's order."""
    order = {task[:4]: i for i, task in enumerate(_tasks(spec))}
    unique: dict[EpisodeKey, Outcome] = {}
    for o in outcomes:
        unique.setdefault(episode_key(o), o)
    return sorted(
        unique.values(),
        key=lambda o: (order[(o.scenario, o.tier, o.lineup, o.policy)], o.seed, o.replay),
    )


# ----------------------------------------------------------------------------- leaderboard
LEADERBOARD_METRICS = (
    "deal_rate",
    "buyer_share",
    "mutual_loss",
    "rounds_per_deal",
    "invalid_action_rate",
)


def summarise(
    results: Sequence[Mapping[str, Any]],
    *,
    key: str,
    metrics: Iterable[str] = LEADERBOARD_METRICS,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> dict[str, Any]:
    """One group of episode results (mappings with ``score`` and the named metrics) as a
    leaderboard row's numbers: the mean score with its percentile-bootstrap 95 % CI (seeded
    by ``key``: the same group always gets the same interval, and the interval never leaves
    the range of the scores), and each metric's mean; DEAL_METRICS over the episodes with
    a deal only, None when none has one. Every leaderboard (evaluations, sweeps, the
    overview) summarises through here."""
    deals = [r for r in results if closed_a_deal(r)]
    row: dict[str, Any] = {
        "episodes": len(results),
        "score": bootstrap_mean_ci(
            [r.get("score") for r in results],
            resamples=resamples,
            seed=zlib.crc32(key.encode()),
        ).to_dict(),
    }
    for name in metrics:
        pool = deals if name in DEAL_METRICS else results
        row[name] = mean_ci(r.get(name) for r in pool).to_dict()["mean"]
    return row


def leaderboard(
    outcomes: Sequence[Outcome], *, resamples: int = BOOTSTRAP_RESAMPLES
) -> list[dict[str, Any]]:
    """One row per (scenario, tier, buyer), best mean first within each board, with the
    paired difference against the best, ties, pass^k, worst case and cost (league.py)."""
    return league_leaderboard(outcomes, resamples=resamples, summarise=summarise)


def without_worlds(
    outcomes: Iterable[Outcome], worlds: Collection[tuple[str, int]]
) -> list[Outcome]:
    """The outcomes off the (scenario, seed) ``worlds``: a world is dropped for every
    buyer, line-up and replay at once, so the seeds left stay paired."""
    dropped = set(worlds)
    return [o for o in outcomes if (o.scenario, o.seed) not in dropped]


# ----------------------------------------------------------------------------- ratings
def ratings(
    outcomes: Sequence[Outcome],
    extra: Sequence[Outcome] = (),
    extra_suppliers: Sequence[Outcome] = (),
) -> list[dict[str, Any]]:
    """openskill ratings, buyers and suppliers in separate pools (league.ratings)."""
    return league_ratings(outcomes, extra, extra_suppliers)


# ----------------------------------------------------------------------------- entry point
@dataclass(frozen=True)
class EvaluationResult:
    spec: EvaluationSpec
    leaderboard: list[dict[str, Any]]
    ratings: list[dict[str, Any]]
    seconds: float
    matrix: list[dict[str, Any]] = field(default_factory=list)
    suppliers: list[dict[str, Any]] = field(default_factory=list)
    paired: bool = True  # every seed drew one world for every buyer (checked, not assumed)
    outcomes: tuple[Outcome, ...] = field(default=(), repr=False)  # every episode, sorted

    def to_dict(self) -> dict[str, Any]:
        return {
            "params": self.spec.params(),
            "episodes": self.spec.episodes,
            "seconds": round(self.seconds, 3),
            "leaderboard": self.leaderboard,
            "ratings": self.ratings,
            "matrix": self.matrix,
            "suppliers": self.suppliers,
            "paired": self.paired,
        }


def seeds_paired(outcomes: Sequence[Outcome]) -> bool:
    """Whether, per (scenario, tier, line-up, seed), every buyer and replay saw one world."""
    worlds: dict[tuple, set[str]] = defaultdict(set)
    for o in outcomes:
        worlds[(o.scenario, o.tier, o.lineup, o.seed)].add(o.world)
    return all(len(w) == 1 for w in worlds.values())


def evaluate(
    spec: EvaluationSpec,
    *,
    workers: int = 1,
    progress: IO[str] | None = None,
    on_progress: ProgressHook | None = None,
    extra_ratings: Sequence[Outcome] = (),
    extra_suppliers: Sequence[Outcome] = (),
) -> EvaluationResult:
    """Run the spec's episodes, then aggregate and rate them. ``extra_ratings`` (stored
    human-seat episodes) join the buyers' rating matches only; ``extra_suppliers``
    (stored supplier-seat episodes, a person as ``opponent``) the suppliers' only;
    ``progress`` and ``on_progress`` as for run_outcomes."""
    t0 = time.perf_counter()
    outcomes = run_outcomes(spec, workers=workers, progress=progress, on_progress=on_progress)
    return tables(
        spec,
        outcomes,
        seconds=time.perf_counter() - t0,
        extra_ratings=extra_ratings,
        extra_suppliers=extra_suppliers,
    )


def tables(
    spec: EvaluationSpec,
    outcomes: Iterable[Outcome],
    *,
    seconds: float,
    extra_ratings: Sequence[Outcome] = (),
    extra_suppliers: Sequence[Outcome] = (),
) -> EvaluationResult:
    """The league tables of the spec's outcomes (combined first: however they were
    played, the same outcomes give the same tables); ``seconds``: the play's wall time."""
    outcomes = combine(spec, outcomes)
    return EvaluationResult(
        spec,
        leaderboard(outcomes),
        ratings(outcomes, extra_ratings, extra_suppliers),
        seconds,
        matrix(outcomes),
        supplier_table(outcomes, resamples=BOOTSTRAP_RESAMPLES),
        seeds_paired(outcomes),
        tuple(outcomes),
    )


def _num(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def format_leaderboard(rows: Sequence[Mapping[str, Any]]) -> str:
    """The leaderboard as a plain-text table (for the terminal)."""
    num = _num
    names = [
        r["scenario"] if r.get("tier") is None else f"{r['scenario']}@{r['tier']}" for r in rows
    ]
    w = max([22, *map(len, names)])
    p = max([15, *(len(r["policy"]) + 2 for r in rows)])
    head = (
        f"{'scenario':<{w}} {'policy':<{p}} {'n':>5} {'score':>6} {'95% CI (bootstrap)':>19} "
        f"{'vs best [95% CI]':>24} {'pass^k':>8} {'worst (line-up)':>24} "
        f"{'deal':>5} {'b.share':>7} {'m.loss':>6} {'rounds':>6} {'invalid':>7} "
        f"{'tok in/out':>13} {'dec p50/p95 ms':>15} {'$/ep':>8}"
    )
    lines = [head, "-" * len(head)]
    for r, name in zip(rows, names, strict=True):
        s = r["score"]
        ci = f"[{num(s['ci_low'])}, {num(s['ci_high'])}]"
        d = r.get("vs_best") or {}
        diff = (
            "best"
            if r.get("best")
            else (f"{num(d.get('mean'))} [{num(d.get('ci_low'))}, {num(d.get('ci_high'))}]")
        )
        tie = "=" if r.get("tied") else " "
        pk = r.get("pass_k") or {}
        passk = f"{num(pk.get('value'), 2)}^{pk.get('k', 1)}" if pk else "—"
        worst = r.get("worst") or {}
        worst_s = f"{num(worst.get('score'))} ({worst.get('lineup', '—')})"[:24]
        c = r.get("cost") or {}
        tokens = f"{num(c.get('prompt_tokens'), 0)}/{num(c.get('completion_tokens'), 0)}"
        dec = f"{num(_ms(c.get('decision_p50_s')), 1)}/{num(_ms(c.get('decision_p95_s')), 1)}"
        lines.append(
            f"{name:<{w}} {tie + r['policy']:<{p}} {r['episodes']:>5} {num(s['mean']):>6} "
            f"{ci:>19} {diff:>24} {passk:>8} {worst_s:>24} "
            f"{num(r['deal_rate'], 2):>5} {num(r['buyer_share']):>7} "
            f"{num(r['mutual_loss'], 2):>6} {num(r['rounds_per_deal'], 1):>6} "
            f"{num(r['invalid_action_rate']):>7} {tokens:>13} {dec:>15} "
            f"{num(c.get('money'), 4):>8}"
        )
    lines.append("= tied with the best: the paired 95 % CI of the difference reaches 0.")
    return "\n".join(lines)


def _ms(x: float | None) -> float | None:
    return None if x is None else x * 1000


def format_matrix(boards: Sequence[Mapping[str, Any]]) -> str:
    """Each board's buyers x supplier line-ups mean scores (for the terminal)."""
    out = []
    for b in boards:
        label = b["scenario"] if b.get("tier") is None else f"{b['scenario']}@{b['tier']}"
        w = max([14, *(len(n) for n in b["buyers"])])
        cols = [max(8, len(s)) for s in b["suppliers"]]
        out.append(f"{label}: buyers x suppliers (mean score)")
        out.append(
            f"{'':<{w}} " + " ".join(f"{s:>{c}}" for s, c in zip(b["suppliers"], cols, strict=True))
        )
        for name, row in zip(b["buyers"], b["score"], strict=True):
            cells = " ".join(f"{_num(v):>{c}}" for v, c in zip(row, cols, strict=True))
            out.append(f"{name:<{w}} {cells}")
        out.append("")
    return "\n".join(out).rstrip()


def format_ratings(rows: Sequence[Mapping[str, Any]]) -> str:
    w = max([24, *(len(r["player"]) for r in rows)])
    head = f"{'player':<{w}} {'kind':<8} {'mu':>7} {'sigma':>6} {'ordinal':>8} {'matches':>7}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['player']:<{w}} {r['kind']:<8} {r['mu']:>7.2f} {r['sigma']:>6.2f} "
            f"{r['ordinal']:>8.2f} {r['matches']:>7}"
        )
    return "\n".join(lines)


__all__ = [
    "EvaluationError",
    "EvaluationResult",
    "EvaluationSpec",
    "Outcome",
    "ProgressHook",
    "build_spec",
    "cell_label",
    "combine",
    "episode_key",
    "evaluate",
    "format_leaderboard",
    "format_matrix",
    "format_ratings",
    "headless_policies",
    "lane_episodes",
    "leaderboard",
    "llm_episodes",
    "outcome_from_record",
    "outcome_record",
    "ratings",
    "run_outcomes",
    "tables",
]

"""Policy evaluation: a leaderboard like published bargaining tables, plus cross-play ratings.

Every (scenario, tier, policy, seed) episode runs headless, in this process or in worker
processes. Per (scenario, tier, policy) the leaderboard gives the mean score with a
percentile-bootstrap 95 % CI, the deal rate, buyer_share (over episodes with a deal, as
bargaining papers report it), mutual_loss, rounds per deal and the invalid-action rate.

Ratings use openskill's Plackett-Luce model (a maintained TrueSkill-style library; no
rating maths here). Two kinds of match feed one pool of players, in a fixed order:
- every (scenario, tier, seed) is a match between the buyer policies, ranked by score;
- every episode is also a buyer-vs-supplier match: a bilateral episode against its
  seller's persona (``persona:hardball``), an arena episode against the scenario's
  supplier mix (``mix:medium_adversarial``). The buyer wins when it closed a deal and
  kept the better side of the surplus (buyer_share > 0.5), draws at exactly 0.5, and
  loses otherwise (no deal included: the buyer's requirement went unmet).

Only rule policies run here: ``human`` needs a person and ``llm`` a model backend, so both
are refused, as are scenarios whose suppliers are played by a language model.
"""

from __future__ import annotations

import math
import multiprocessing
import time
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from tqdm import tqdm

from .config import TIERS, ScenarioConfig, ScenarioValidationError
from .curriculum import apply_tier
from .metrics import DEAL_METRICS, closed_a_deal
from .policies import MEASUREMENT_ONLY, get_policy, list_policies
from .runner import run_episode
from .scenarios import list_presets, load_scenario
from .stats import bootstrap_mean_ci, mean_ci
from .world.seeding import check_world_key

# Policies that cannot play a headless evaluation, and why.
REFUSED_POLICIES = {
    "human": "needs a person in the buyer's seat",
    "llm": "needs a language-model backend; evaluate runs rule policies only",
}
MAX_SEEDS = 10_000
MAX_EPISODES = 500_000
MAX_WORKERS = 64
BOOTSTRAP_RESAMPLES = 2000
CHUNK_SEEDS = 25  # seeds per unit of work: progress stays smooth, overhead small


class EvaluationError(ValueError):
    """Invalid evaluation parameters. ``errors`` is a list of {"field", "message"}."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e['field']}: {e['message']}" for e in errors))


@dataclass(frozen=True)
class EvaluationSpec:
    """What to evaluate, validated. ``configs`` maps each scenario name to its engine config
    (JSON form); ``tiers`` empty means each scenario as configured. ``world_key`` seals
    every world (ProcurementEnv): held-out worlds that no one can rebuild from the seeds
    without the key; it never appears in a repr or in ``params()``."""

    policies: tuple[str, ...]
    scenarios: tuple[str, ...]
    seeds: int
    seed_start: int = 0
    tiers: tuple[str, ...] = ()
    configs: Mapping[str, dict[str, Any]] = field(default_factory=dict, compare=False)
    world_key: bytes | None = field(default=None, compare=False, repr=False)

    @property
    def sealed(self) -> bool:
        return self.world_key is not None

    @property
    def episodes(self) -> int:
        return len(self.policies) * len(self.scenarios) * max(1, len(self.tiers)) * self.seeds

    def params(self) -> dict[str, Any]:
        """The parameters as stored and shown (configs left out: they are derived)."""
        return {
            "policies": list(self.policies),
            "scenarios": list(self.scenarios),
            "seeds": self.seeds,
            "seed_start": self.seed_start,
            "tiers": list(self.tiers),
            "sealed": self.sealed,
        }


def _names(value: str | Iterable[str]) -> list[str]:
    """Comma-separated text or a list; blanks and repeats dropped, order kept."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return list(dict.fromkeys(str(n).strip() for n in items if str(n).strip()))


def headless_policies() -> list[str]:
    return [p for p in list_policies() if p not in REFUSED_POLICIES]


def build_spec(
    *,
    policies: str | Iterable[str],
    scenarios: str | Iterable[str],
    seeds: int,
    seed_start: int = 0,
    tiers: str | Iterable[str] = (),
    custom_scenarios: Mapping[str, dict[str, Any]] | None = None,
    world_key: bytes | None = None,
) -> EvaluationSpec:
    """Validate every parameter and resolve scenario names to configs; raises
    EvaluationError listing every problem. ``scenarios`` may be "all" (every preset whose
    suppliers are rule personas); ``custom_scenarios`` adds configs by name (stored ones);
    ``world_key`` seals the worlds (EvaluationSpec)."""
    errors: list[dict[str, str]] = []
    custom = dict(custom_scenarios or {})

    pols = _names(policies)
    allowed = headless_policies()
    if not pols:
        errors.append({"field": "policies", "message": "Name at least one policy."})
    for p in pols:
        if p in MEASUREMENT_ONLY:
            errors.append({"field": "policies", "message": MEASUREMENT_ONLY[p]})
        elif p in REFUSED_POLICIES:
            errors.append({"field": "policies", "message": f"'{p}' {REFUSED_POLICIES[p]}."})
        elif p not in allowed:
            errors.append(
                {
                    "field": "policies",
                    "message": f"Unknown policy '{p}'; use one of {', '.join(allowed)}.",
                }
            )

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
        if cfg.plays_llm_suppliers():
            errors.append(
                {
                    "field": "scenarios",
                    "message": f"'{name}' has suppliers played by a language model; "
                    "evaluate runs rule personas only.",
                }
            )
            continue
        configs[name] = cfg.model_dump(mode="json")

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
    if not errors:
        spec = EvaluationSpec(
            tuple(pols),
            tuple(wanted),
            seeds,
            seed_start,
            tuple(tier_names),
            configs,
            check_world_key(world_key),
        )
        if spec.episodes > MAX_EPISODES:
            errors.append(
                {
                    "field": "seeds",
                    "message": f"{spec.episodes:,} episodes; at most {MAX_EPISODES:,} "
                    "in one evaluation.",
                }
            )
        else:
            return spec
    raise EvaluationError(errors)


def _known(custom: Mapping[str, Any]) -> list[str]:
    return [*list_presets(include_llm=False), *custom]


# ----------------------------------------------------------------------------- running
@dataclass(frozen=True, slots=True)
class Outcome:
    """One episode's result, as much as the leaderboard and the ratings need."""

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
    opponent: str  # the supplier player: persona:<name> (bilateral) or mix:<scenario>


# Configs of the current process, keyed by (scenario, tier), and the key sealing its
# worlds (None: public): set once per worker.
_CONFIGS: dict[tuple[str, str | None], ScenarioConfig] = {}
_WORLD_KEY: list[bytes | None] = [None]


def _init_worker(
    configs: dict[tuple[str, str | None], dict[str, Any]], world_key: bytes | None
) -> None:
    _CONFIGS.clear()
    _CONFIGS.update({k: load_scenario(v) for k, v in configs.items()})
    _WORLD_KEY[0] = world_key


def _run_chunk(task: tuple[str, str | None, str, int, int]) -> list[Outcome]:
    scenario, tier, policy, lo, hi = task
    cfg = _CONFIGS[(scenario, tier)]
    label = scenario if tier is None else f"{scenario}@{tier}"
    opponent = f"persona:{cfg.bilateral_persona}" if cfg.mode == "bilateral" else f"mix:{label}"
    out = []
    for seed in range(lo, hi):
        res = run_episode(
            cfg,
            get_policy(policy, seed=seed),
            seed,
            record_steps=False,
            world_key=_WORLD_KEY[0],
        )
        m = res.metrics
        out.append(
            Outcome(
                scenario,
                tier,
                policy,
                seed,
                float(res.score),
                float(m["deal_rate"]),
                float(m["buyer_share"]),
                float(m["mutual_loss"]),
                float(m["rounds_per_deal"]),
                float(m["invalid_action_rate"]),
                opponent,
            )
        )
    return out


def _configs(spec: EvaluationSpec) -> dict[tuple[str, str | None], dict[str, Any]]:
    out = {}
    for name in spec.scenarios:
        base = load_scenario(spec.configs[name])
        for tier in spec.tiers or (None,):
            cfg = base if tier is None else apply_tier(base, tier)
            out[(name, tier)] = cfg.model_dump(mode="json")
    return out


def _tasks(spec: EvaluationSpec) -> list[tuple[str, str | None, str, int, int]]:
    end = spec.seed_start + spec.seeds
    return [
        (name, tier, policy, lo, min(end, lo + CHUNK_SEEDS))
        for name in spec.scenarios
        for tier in spec.tiers or (None,)
        for policy in spec.policies
        for lo in range(spec.seed_start, end, CHUNK_SEEDS)
    ]


def run_outcomes(
    spec: EvaluationSpec, *, workers: int = 1, progress: IO[str] | None = None
) -> list[Outcome]:
    """Every episode of the spec, sorted; ``workers`` > 1 uses that many processes
    (spawned: nothing of the caller's state, such as open connections, is inherited)."""
    if type(workers) is not int or not 1 <= workers <= MAX_WORKERS:
        raise EvaluationError(
            [{"field": "workers", "message": f"A whole number from 1 to {MAX_WORKERS}."}]
        )
    configs = _configs(spec)
    tasks = _tasks(spec)
    outcomes: list[Outcome] = []
    with tqdm(
        total=spec.episodes, unit="ep", file=progress, disable=progress is None, smoothing=0.1
    ) as bar:
        if workers == 1 or len(tasks) == 1:
            _init_worker(configs, spec.world_key)
            for task in tasks:
                chunk = _run_chunk(task)
                outcomes.extend(chunk)
                bar.update(len(chunk))
        else:
            ctx = multiprocessing.get_context("spawn")
            initargs = (configs, spec.world_key)
            with ctx.Pool(min(workers, len(tasks)), _init_worker, initargs) as pool:
                for chunk in pool.imap_unordered(_run_chunk, tasks):
                    outcomes.extend(chunk)
                    bar.update(len(chunk))
    order = {(n, t, p): i for i, (n, t, p, *_) in enumerate(tasks)}
    outcomes.sort(key=lambda o: (order[(o.scenario, o.tier, o.policy)], o.seed))
    return outcomes


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
    """One row per (scenario, tier, policy) in the order first seen, best mean score first
    within each (scenario, tier)."""
    groups: dict[tuple[str, str | None, str], list[Outcome]] = defaultdict(list)
    for o in outcomes:
        groups[(o.scenario, o.tier, o.policy)].append(o)
    rows = []
    for (scenario, tier, policy), rs in groups.items():
        numbers = summarise(
            [asdict(o) for o in rs], key=f"{scenario}/{tier}/{policy}", resamples=resamples
        )
        rows.append({"scenario": scenario, "tier": tier, "policy": policy, **numbers})
    place = {}
    for r in rows:
        place.setdefault((r["scenario"], r["tier"]), len(place))
    rows.sort(key=lambda r: (place[(r["scenario"], r["tier"])], -(r["score"]["mean"] or 0.0)))
    return rows


# ----------------------------------------------------------------------------- ratings
def buyer_result(o: Outcome) -> float:
    """1 if the buyer kept the better side of the surplus, 0.5 for an even split, else 0."""
    if o.deal_rate <= 0:
        return 0.0
    if math.isclose(o.buyer_share, 0.5, abs_tol=1e-9):
        return 0.5
    return 1.0 if o.buyer_share > 0.5 else 0.0


def ratings(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Plackett-Luce ratings of buyer policies and supplier players (see the module
    docstring for the matches), best ordinal (mu - 3 sigma) first."""
    from openskill.models import PlackettLuce  # only evaluations need it

    model = PlackettLuce()
    players: dict[str, Any] = {}
    kinds: dict[str, str] = {}
    matches: dict[str, int] = defaultdict(int)

    def player(name: str, kind: str) -> Any:
        if name not in players:
            players[name] = model.rating(name=name)
            kinds[name] = kind
        return players[name]

    def play(names: list[str], kinds_: list[str], scores: list[float]) -> None:
        teams = [[player(n, k)] for n, k in zip(names, kinds_, strict=True)]
        for (rated,), name in zip(model.rate(teams, scores=scores), names, strict=True):
            players[name] = rated
            matches[name] += 1

    by_match: dict[tuple[str, str | None, int], list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_match[(o.scenario, o.tier, o.seed)].append(o)
    for rs in by_match.values():  # insertion order: the outcomes' own (sorted) order
        if len(rs) > 1:
            play([o.policy for o in rs], ["buyer"] * len(rs), [o.score for o in rs])
        for o in rs:
            b = buyer_result(o)
            play([o.policy, o.opponent], ["buyer", "supplier"], [b, 1.0 - b])
    out = [
        {
            "player": name,
            "kind": kinds[name],
            "mu": r.mu,
            "sigma": r.sigma,
            "ordinal": r.ordinal(),
            "matches": matches[name],
        }
        for name, r in players.items()
    ]
    out.sort(key=lambda e: -e["ordinal"])
    return out


# ----------------------------------------------------------------------------- entry point
@dataclass(frozen=True)
class EvaluationResult:
    spec: EvaluationSpec
    leaderboard: list[dict[str, Any]]
    ratings: list[dict[str, Any]]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "params": self.spec.params(),
            "episodes": self.spec.episodes,
            "seconds": round(self.seconds, 3),
            "leaderboard": self.leaderboard,
            "ratings": self.ratings,
        }


def evaluate(
    spec: EvaluationSpec, *, workers: int = 1, progress: IO[str] | None = None
) -> EvaluationResult:
    """Run the spec's episodes, then aggregate and rate them."""
    t0 = time.perf_counter()
    outcomes = run_outcomes(spec, workers=workers, progress=progress)
    return EvaluationResult(
        spec, leaderboard(outcomes), ratings(outcomes), time.perf_counter() - t0
    )


def format_leaderboard(rows: Sequence[Mapping[str, Any]]) -> str:
    """The leaderboard as a plain-text table (for the terminal)."""

    def num(x: float | None, digits: int = 3) -> str:
        return "—" if x is None else f"{x:.{digits}f}"

    names = [
        r["scenario"] if r.get("tier") is None else f"{r['scenario']}@{r['tier']}" for r in rows
    ]
    w = max([22, *map(len, names)])
    head = (
        f"{'scenario':<{w}} {'policy':<15} {'n':>5} {'score':>6} {'95% CI (bootstrap)':>19} "
        f"{'deal':>5} {'b.share':>7} {'m.loss':>6} {'rounds':>6} {'invalid':>7}"
    )
    lines = [head, "-" * len(head)]
    for r, name in zip(rows, names, strict=True):
        s = r["score"]
        ci = f"[{num(s['ci_low'])}, {num(s['ci_high'])}]"
        lines.append(
            f"{name:<{w}} {r['policy']:<15} {r['episodes']:>5} {num(s['mean']):>6} {ci:>19} "
            f"{num(r['deal_rate'], 2):>5} {num(r['buyer_share']):>7} "
            f"{num(r['mutual_loss'], 2):>6} {num(r['rounds_per_deal'], 1):>6} "
            f"{num(r['invalid_action_rate']):>7}"
        )
    return "\n".join(lines)


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
    "build_spec",
    "buyer_result",
    "evaluate",
    "format_leaderboard",
    "format_ratings",
    "headless_policies",
    "leaderboard",
    "ratings",
    "run_outcomes",
]

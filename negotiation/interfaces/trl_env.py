"""ProcurementToolEnv: the arena as an ``environment_factory`` for TRL's GRPOTrainer.

TRL builds instances with a no-argument factory, pools them and reuses each one for many
rollouts. For every rollout it calls ``reset(**row)`` with the whole dataset row and
appends the returned text to the prompt's last user message; every public method of the
class becomes a tool (its type hints and Google-style docstring are the tool's schema),
and ``get_reward()`` scores the finished rollout. So the public methods here are exactly
the seven buyer actions, each taking the engine's fields for that action (``rationale``
is left out: it never changes the world and would lengthen every tool schema).

The class needs neither TRL nor Django: it wraps a ``TrainingSession`` (scenario, seed,
tier, ``curriculum="auto"``) and renders the state with the LLM buyer's own prompt code,
so a tool-calling model reads the same state a JSON-acting model reads.

A model may stop calling tools before the episode ends. ``get_reward`` then plays the
remaining weeks out with ``defer`` (close the week, no other action), because that is what
stopping means in the world: deliveries, deadlines and failures still happen. The score is
therefore always the engine's final episode score, never the optimistic running score.
"""

from __future__ import annotations

from typing import Any

from ..observation import Observation
from ..policies.prompts import MAX_PROMPT_CHARS, buyer_rules, buyer_state_text
from ..suppliers.guard import fmt_price
from .session import DEFAULT_SCENARIO, SessionError, TrainingSession

ROW_KEYS = ("scenario", "seed", "tier", "curriculum")
# Columns TRL passes with every row that the environment does not read.
IGNORED_COLUMNS = frozenset({"prompt"})
MAX_RESULT_CHARS = 2500  # a tool result is read many times per episode: keep it shorter
MIN_CHARS = 200  # below this even the week and budget lines are cut

SYSTEM_PROMPT = (
    "You are the buyer of a company's procurement team. You act only by calling the tools "
    "you are given, one call at a time, until the episode is over."
)
_TOOL_INSTRUCTION = (
    "Each tool is one action and uses one slot of the week; its result shows what happened "
    "and the new state. Act by calling exactly one tool per turn."
)
_NEXT = "Your next action: call one tool."


class ProcurementToolEnv:
    """One episode at a time; TRL pools instances and calls ``reset`` before each rollout.

    ``lambda: ProcurementToolEnv(max_result_chars=1500)`` changes the text budgets.
    """

    def __init__(
        self,
        *,
        max_prompt_chars: int = MAX_PROMPT_CHARS,
        max_result_chars: int = MAX_RESULT_CHARS,
    ) -> None:
        for name, value in (
            ("max_prompt_chars", max_prompt_chars),
            ("max_result_chars", max_result_chars),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < MIN_CHARS:
                raise ValueError(f"{name} must be an integer >= {MIN_CHARS}, not {value!r}.")
        self._max_prompt_chars = max_prompt_chars
        self._max_result_chars = max_result_chars
        self._session = TrainingSession(scenario=DEFAULT_SCENARIO)

    # ------------------------------------------------------------------ TRL contract
    def reset(self, **row: Any) -> str:
        """Start the episode a dataset row names (scenario, seed, optional tier and
        curriculum="auto"); returns the rules and the first state for the prompt."""
        unknown = sorted(str(k) for k in row if k not in ROW_KEYS and k not in IGNORED_COLUMNS)
        if unknown:
            raise SessionError(
                f"Unknown dataset column(s) {', '.join(unknown)}; the environment reads "
                f"{', '.join(ROW_KEYS)} (and ignores {', '.join(sorted(IGNORED_COLUMNS))})."
            )
        # The session validates everything before it changes anything.
        obs = self._session.reset(**{k: row.get(k) for k in ROW_KEYS})
        return "\n\n".join(
            (self._rules(obs), _TOOL_INSTRUCTION, self._state(obs, self._max_prompt_chars))
        )

    def get_reward(self) -> float:
        """The episode's final score in [0, 1]; an unfinished episode is played out with
        ``defer`` first (see the module docstring)."""
        session = self._session
        if session.env is None:
            raise RuntimeError("get_reward() before reset(): no episode to score.")
        env = session.env
        # Each defer closes a week, so this ends within the remaining weeks; the bound only
        # guards against an engine bug turning into an endless loop.
        for _ in range(env.cfg.weeks + env.cfg.max_steps + 1):
            if env.done:
                break
            session.step({"action_type": "defer"})
        return session.score()

    @property
    def episode(self) -> dict[str, Any]:
        """Scenario, seed, tier, step and curriculum progress (not a tool: a property)."""
        return self._session.metadata()

    # ------------------------------------------------------------------ the seven tools
    def negotiate(
        self, supplier_id: str, requirement_id: str, price: float, message: str | None = None
    ) -> str:
        """Offer a unit price to a supplier for a requirement; the supplier accepts,
        counters or walks away.

        Args:
            supplier_id: The supplier, e.g. "S01".
            requirement_id: The requirement, e.g. "R01".
            price: The unit price you offer.
            message: A short note to the supplier.

        Returns:
            The supplier's answer, then the new state.
        """
        return self._act(
            "negotiate",
            supplier_id=supplier_id,
            requirement_id=requirement_id,
            price=price,
            message=message,
        )

    def award_contract(
        self, supplier_id: str, requirement_id: str, quantity: int, price: float | None = None
    ) -> str:
        """Buy units at the agreed price or the supplier's standing counter.

        Args:
            supplier_id: The supplier whose agreed price or counter you take.
            requirement_id: The requirement to buy for.
            quantity: Units to buy, at most the units still needed and the supplier's
                capacity.
            price: The agreed unit price, as a check; leave it out to take the agreed
                price.

        Returns:
            What happened, then the new state.
        """
        return self._act(
            "award_contract",
            supplier_id=supplier_id,
            requirement_id=requirement_id,
            quantity=quantity,
            price=price,
        )

    def raise_pr(self, requirement_id: str, amount: float) -> str:
        """Raise a purchase requisition: once a requirement's spend passes the PR threshold,
        approved PRs must cover all of it.

        Args:
            requirement_id: The requirement the money is for.
            amount: Total money requested.

        Returns:
            What happened, then the new state.
        """
        return self._act("raise_pr", requirement_id=requirement_id, amount=amount)

    def defer(self, requirement_id: str | None = None) -> str:
        """Close the week now; with a requirement, also move its deadline one week
        (at a holding cost).

        Args:
            requirement_id: The non-critical requirement whose deadline moves; leave it
                out to just close the week.

        Returns:
            What happened, then the new state.
        """
        return self._act("defer", requirement_id=requirement_id)

    def reject(self, supplier_id: str, requirement_id: str | None = None) -> str:
        """Stop negotiating with a supplier, for one requirement or for good.

        Args:
            supplier_id: The supplier to reject.
            requirement_id: Only this requirement's thread; leave it out to reject the
                supplier entirely.

        Returns:
            What happened, then the new state.
        """
        return self._act("reject", supplier_id=supplier_id, requirement_id=requirement_id)

    def hedge(
        self, requirement_id: str, supplier_id: str, hedge_supplier_id: str, split: float
    ) -> str:
        """Split the units still needed between two suppliers, each at its agreed price
        or counter.

        Args:
            requirement_id: The requirement to buy for.
            supplier_id: The first supplier.
            hedge_supplier_id: The second supplier.
            split: Share of the units for supplier_id, strictly between 0 and 1.

        Returns:
            What happened, then the new state.
        """
        return self._act(
            "hedge",
            requirement_id=requirement_id,
            supplier_id=supplier_id,
            hedge_supplier_id=hedge_supplier_id,
            split=split,
        )

    def escalate(self, requirement_id: str, supplier_id: str | None = None) -> str:
        """Ask management to approve a pending PR early, or to call a supplier for a
        lower counter.

        Args:
            requirement_id: The requirement concerned.
            supplier_id: The supplier with a standing counter to call; leave it out to
                speed up a pending PR.

        Returns:
            What happened, then the new state.
        """
        return self._act("escalate", requirement_id=requirement_id, supplier_id=supplier_id)

    # ------------------------------------------------------------------ helpers
    def _act(self, action_type: str, **fields: Any) -> str:
        """Step the engine with the tool's arguments, passed on unconverted so that the
        engine's own validation (and its coded errors and penalties) judges them."""
        session = self._session
        if session.env is None:
            return "No episode is running: the trainer must call reset() first."
        if session.env.done:  # also after get_reward() played the episode out
            return self._over(session)
        action = {"action_type": action_type, **{k: v for k, v in fields.items() if v is not None}}
        week = session.env.world.week
        result = session.step(action)
        outcome = _outcome(result.info, week)
        if result.done:
            return f"{outcome}\n{self._over(session)}"
        return f"{outcome}\n\n{self._state(result.observation, self._max_result_chars)}"

    @staticmethod
    def _over(session: TrainingSession) -> str:
        return (
            f"The episode is over (final score {session.score():.3f}); "
            "no more actions are possible."
        )

    @staticmethod
    def _rules(obs: Observation) -> str:
        """The buyer rules of the shared system prompt, without its JSON reply format."""
        return buyer_rules(obs).rstrip()

    @staticmethod
    def _state(obs: Observation, max_chars: int) -> str:
        """The shared state rendering, asking for a tool call; the step's error is already
        in the outcome line above it."""
        return buyer_state_text(obs, max_chars=max_chars, next_line=_NEXT, with_error=False)


def _outcome(info: dict[str, Any], week_before: int) -> str:
    """One or two lines on what the step did: the engine's coded error, or the
    supplier's answer, and whether the week closed."""
    error = info.get("error")
    if error:
        return f"INVALID ({error['code']}): {error['message']} The action used its slot."
    resp = info.get("response")
    if resp:
        who = f"{resp['supplier_id']} on {resp['requirement_id']}"
        price = "" if resp.get("price") is None else f" {fmt_price(resp['price'])}"
        said = f' "{resp["message"]}"' if resp.get("message") else ""
        text = f"{who}: {resp['response']}{price}.{said}"
    else:
        text = "Done."
    if info.get("week", week_before) != week_before:
        text += f" Week {week_before} closed; now week {info['week']}."
    return text


def dataset_rows(
    seeds: list[int] | range,
    *,
    scenario: str = DEFAULT_SCENARIO,
    tier: str | None = None,
    curriculum: str | None = None,
) -> list[dict[str, Any]]:
    """Rows for a GRPO dataset: a conversational prompt (the system message; ``reset``
    appends the rules and state to the empty user turn) and the columns ``reset`` reads."""
    prompt = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": ""},
    ]
    return [
        {"prompt": prompt, "scenario": scenario, "seed": s, "tier": tier, "curriculum": curriculum}
        for s in seeds
    ]

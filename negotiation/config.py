"""Scenario configuration: every parameter of the procurement world, validated.

`ScenarioConfig` is plain data (pydantic v2). Top-level fields are scalars so an admin
form can edit them one by one; only the persona mix and the scheduled disruptions are
nested. Validation problems are reported as `ScenarioValidationError` with one
{"field", "message"} entry per problem (pydantic errors and cross-field checks alike).
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from .suppliers import (
    field as _field,  # the field personas' names; negmas itself is imported lazily
)
from .world.catalogue import get_catalogue

PERSONAS: tuple[str, ...] = ("cooperative", "hardball", "deceptive", "distressed")
# Field personas (field.py): third-party negotiators playing suppliers, each on the hidden
# numbers of a base rule persona. Valid only where the optional negmas packages are
# installed (requirements/field.txt).
FIELD_PERSONAS: tuple[str, ...] = tuple(_field.FIELD_BASE)


def field_persona_error(persona: str) -> str | None:
    """Why a field persona cannot play here (its packages are missing), or None."""
    if persona in _field.available_field_strategies():
        return None
    return f"Field persona '{persona}' needs the optional negmas packages: {_field.FIELD_INSTALL}."


def _persona_help() -> str:
    """The personas named in the admin's and the API's parameter help: the field ones
    only where their packages are installed."""
    names = ", ".join(PERSONAS)
    field = _field.available_field_strategies()
    if field:
        names += "; field personas, played by negmas negotiators: " + ", ".join(field)
    return names


_PERSONA_HELP = _persona_help()
DISRUPTION_KINDS: tuple[str, ...] = (
    "supplier_dark",
    "budget_cut",
    "price_spike",
    "demand_spike",
    "quality_scandal",
)
TIERS: tuple[str, ...] = ("novice", "apprentice", "practitioner", "expert", "master")
# The service's roles, lowest first (procurement.roles orders them from this declaration).
ApproverRole = Literal["analyst", "ops", "admin"]


class ScenarioValidationError(ValueError):
    """Invalid scenario input. `.errors` is a list of {"field": dotted.path, "message": str}."""

    def __init__(self, errors: list[dict[str, str]]):
        self.errors = errors
        lines = [f"{e['field'] or '(scenario)'}: {e['message']}" for e in errors]
        super().__init__("Invalid scenario: " + "; ".join(lines))


class DisruptionSpec(BaseModel):
    """A scheduled disruption, taking effect at the start of `week` (>= 1)."""

    model_config = ConfigDict(extra="forbid")

    week: int = Field(ge=1, le=104)
    kind: Literal["supplier_dark", "budget_cut", "price_spike", "demand_spike", "quality_scandal"]
    # Supplier id ("S03") or category name; None picks one at random (seeded).
    target: str | None = Field(default=None, max_length=64)
    # budget_cut: fraction of the total; price_spike: relative jump; scandal: reliability drop.
    magnitude: float = Field(default=0.2, ge=0.0, le=1.0)
    # supplier_dark: weeks dark; 0 means for good.
    duration: int = Field(default=2, ge=0, le=104)


class SupplierLLMSpec(BaseModel):
    """Which supplier personas an LLM plays, and with what backend and model. Validated
    here; the rule engine runs rule personas, the LLM layer reads these settings."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["transformers", "vllm", "openai_compatible", "llamacpp"] = "transformers"
    model: str = Field(default="", max_length=300)
    personas: list[str] = Field(default_factory=list)


class ItemSpec(BaseModel):
    """A catalogue item a scenario draws requirements from (replaces the shipped catalogue)."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9_\-]+$")
    name: str = Field(min_length=1, max_length=200)
    category: str = Field(min_length=1, max_length=64)
    unit: str = Field(default="unit", min_length=1, max_length=32)
    typical_unit_price: float = Field(gt=0.0, le=1e9)
    order_qty_min: int = Field(default=1, ge=1, le=10_000_000)
    order_qty_max: int = Field(default=100, ge=1, le=10_000_000)


class SupplierSpec(BaseModel):
    """A named supplier the scenario always includes; the rest are generated."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    # hidden: only admins read it (scrub_hidden_settings); the buyer learns it by playing
    persona: Literal["cooperative", "hardball", "deceptive", "distressed"] = Field(
        json_schema_extra={"hidden": True}
    )
    categories: list[str] = Field(min_length=1, max_length=20)
    lead_time_weeks: int = Field(default=2, ge=0, le=26)


# What a scrubbed hidden setting reads as.
HIDDEN_VALUE = "hidden"
# The roster's hidden settings, as SupplierSpec marks them.
HIDDEN_SUPPLIER_SETTINGS: tuple[str, ...] = tuple(
    name
    for name, info in SupplierSpec.model_fields.items()
    if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("hidden")
)


def scrub_hidden_settings(config: Any) -> Any:
    """A scenario config as a player may read it: each named supplier's hidden settings
    (``HIDDEN_SUPPLIER_SETTINGS``: its persona) read ``HIDDEN_VALUE``. The rest is the
    game's published terms: the persona mix (how hard the field is, never who is who)
    and a bilateral game's seller persona, which its preset's name and description state.
    Any stored shape is accepted (a snapshot is never re-validated here): what is not a
    roster entry passes unchanged, and the input is never modified."""
    if not isinstance(config, dict) or not isinstance(config.get("supplier_roster"), list):
        return config
    roster = [
        {k: HIDDEN_VALUE if k in HIDDEN_SUPPLIER_SETTINGS else v for k, v in spec.items()}
        if isinstance(spec, dict)
        else spec
        for spec in config["supplier_roster"]
    ]
    return {**config, "supplier_roster": roster}


def _default_mix() -> dict[str, float]:
    return {"cooperative": 0.4, "hardball": 0.3, "deceptive": 0.15, "distressed": 0.15}


class ScenarioConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=False)

    name: str = Field(
        default="custom",
        min_length=1,
        max_length=100,
        description="Unique name; shown on leaderboards.",
    )
    description: str = Field(
        default="",
        max_length=2000,
        description="What this scenario is for, in a sentence or two.",
    )
    mode: Literal["arena", "bilateral"] = Field(
        default="arena",
        description="arena: many suppliers and requirements; bilateral: one supplier, one item.",
    )
    curriculum_tier: Literal["novice", "apprentice", "practitioner", "expert", "master"] | None = (
        Field(default=None, description="The curriculum tier this scenario was made from, if any.")
    )

    # --- world size and time -------------------------------------------------------
    n_suppliers: int = Field(
        default=8,
        ge=1,
        le=60,
        description="How many suppliers the buyer can negotiate with (arena mode).",
    )
    n_requirements: int = Field(
        default=4,
        ge=1,
        le=40,
        description="How many purchase requirements must be covered (arena mode).",
    )
    critical_fraction: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description=(
            "Share of requirements that are critical: their deadline cannot move and failing them "
            "costs more."
        ),
    )
    weeks: int = Field(
        default=6,
        ge=1,
        le=104,
        description="Length of the episode in weeks; deliveries and deadlines run on this clock.",
    )
    actions_per_week: int = Field(
        default=6,
        ge=1,
        le=100,
        description="Buyer actions per week before the week closes on its own.",
    )
    max_steps: int = Field(
        default=200,
        ge=1,
        le=100_000,
        description=(
            "Hard cap on buyer actions; after it the remaining weeks play out without the buyer."
        ),
    )
    persona_mix: dict[str, float] = Field(
        default_factory=_default_mix,
        description=(
            f"Weights of supplier personas ({_PERSONA_HELP}) when suppliers are generated."
        ),
    )

    # --- money, deadlines, approvals ----------------------------------------------
    currency: str = Field(
        default_factory=lambda: get_catalogue().currency,
        pattern=r"^[A-Z]{3}$",
        description=(
            "ISO 4217 code of the money every price, budget, PR and threshold is in. A label "
            "only: nothing is converted. The default is the shipped catalogue's, whose prices "
            "are in it; name yours with your own items."
        ),
    )
    # 0 = generous budget (1.4x the ceiling value of all requirements), 1 = tight (0.8x).
    budget_tightness: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description=(
            "0 = generous budget (1.4x the ceiling value of all requirements), 1 = tight (0.8x)."
        ),
    )
    # 0 = relaxed deadlines (late in the horizon), 1 = tight (barely after lead times).
    deadline_tightness: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description=(
            "0 = relaxed deadlines late in the horizon, 1 = tight (barely after lead times)."
        ),
    )
    pr_threshold: float = Field(
        default=50_000.0,
        ge=0.0,
        description=(
            "Once a requirement's spend (its awards together) passes this amount, approved "
            "purchase requisitions (raise_pr) must cover all of it."
        ),
    )
    pr_lead_weeks: int = Field(
        default=1,
        ge=0,
        le=52,
        description="Weeks a purchase requisition waits for approval (escalate can shorten it).",
    )
    pr_guardrail: float = Field(
        default=1.1,
        ge=1.0,
        le=3.0,
        description=(
            "A requirement's PRs together may ask for at most this multiple of its ceiling "
            "price x quantity."
        ),
    )
    escalations: int = Field(
        default=2,
        ge=0,
        le=100,
        description="How many escalations the buyer may use in an episode.",
    )
    # One published range, two scalars (the admin edits fields one by one). A config from
    # before the range carries escalation_fraction alone: it stays the range's middle.
    escalation_fraction: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description=(
            "The middle of how far an escalation moves a supplier's standing counter toward "
            "its hidden floor (0 = not at all, 1 = all the way). Each escalation draws its own "
            "hidden fraction within escalation_fraction ± escalation_fraction_spread (kept "
            "within 0 to 1), so its answer never gives the floor away."
        ),
    )
    escalation_fraction_spread: float = Field(
        default=0.1,
        ge=0.05,
        le=0.5,
        description=(
            "Half the width of the published range an escalation's hidden fraction is drawn "
            "from, around escalation_fraction (at least 0.05: a narrower range would let one "
            "answer be solved for the floor)."
        ),
    )
    escalation_approver: Literal["rule", "human"] = Field(
        default="rule",
        description=(
            "rule: management answers every escalation at once. human: in live single "
            "episodes a person approves or refuses each escalation on the episode page."
        ),
    )
    approval_timeout_s: int = Field(
        default=120,
        ge=10,
        le=86_400,
        description="Seconds a human approver has; after that the rule answers.",
    )
    escalation_approver_role: ApproverRole = Field(
        default="ops",
        description=(
            "With escalation_approver human: the lowest role that may answer an escalation "
            "(analyst < ops < admin). Never the person who started the run, whatever their role."
        ),
    )
    escalation_approval_above: float = Field(
        default=0.0,
        ge=0.0,
        le=1e12,
        description=(
            "With escalation_approver human: a person answers only escalations with more than "
            "this much money at stake; the rule answers the others at once. In the scenario's "
            "money (the units of prices, budget and pr_threshold). At stake: an escalated PR's "
            "amount; on a thread, the supplier's standing counter x the quantity still needed. "
            "0 = a person answers every escalation."
        ),
    )
    quote_validity_weeks: int = Field(
        default=1,
        ge=0,
        le=52,
        description="Weeks an agreed price or a standing counter stays valid before it lapses.",
    )
    max_deferrals: int = Field(
        default=1,
        ge=0,
        le=52,
        description=(
            "How many times a non-critical requirement's deadline can be deferred by a week."
        ),
    )
    holding_cost_rate: float = Field(
        default=0.01,
        ge=0.0,
        le=0.5,
        description=(
            "Cost of a deferral, as a fraction of the requirement's ceiling value, charged to the "
            "budget."
        ),
    )

    # --- adversaries and environment -----------------------------------------------
    market_volatility: float = Field(
        default=0.02,
        ge=0.0,
        le=0.5,
        description="Weekly random movement of category price indices (0 = flat markets).",
    )
    market_seasonality: float = Field(
        default=0.0,
        ge=0.0,
        le=0.5,
        description="Amplitude of a seasonal swing in price indices over the horizon.",
    )
    rival_aggression: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Chance each week that a rival buyer books supplier capacity (0 = no rival).",
    )
    disruptions: list[DisruptionSpec] = Field(
        default_factory=list,
        description="Scheduled disruptions (week, kind, target, magnitude, duration).",
    )
    disruption_rate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description=(
            "Chance per week of a random disruption (a supplier down, a price shock, a capacity "
            "cut)."
        ),
    )
    deception_level: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "How strongly suppliers' tells can mislead: 0 = honest tells, 1 = the most deceptive."
        ),
    )
    tell_noise: float = Field(
        default=0.12,
        ge=0.0,
        le=1.0,
        description="Random noise on every tell the buyer reads (0 = exact signals).",
    )

    # --- score costs ------------------------------------------------------------------
    invalid_penalty: float = Field(
        default=0.01,
        ge=0.0,
        le=1.0,
        description="Score deducted for each invalid action (the engine explains what was wrong).",
    )
    malformed_penalty: float = Field(
        default=0.02,
        ge=0.0,
        le=1.0,
        description="Score deducted for each malformed action (unparseable or missing fields).",
    )
    deferral_cost: float = Field(
        default=0.01,
        ge=0.0,
        le=1.0,
        description="Score deducted for each deferral.",
    )
    escalation_cost: float = Field(
        default=0.02,
        ge=0.0,
        le=1.0,
        description="Score deducted for each escalation.",
    )
    failure_cost: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="Extra score deducted for each failed requirement (critical ones weigh more).",
    )

    # --- bilateral family ---------------------------------------------------------------
    bilateral_item: str = Field(
        default="random",
        min_length=1,
        max_length=64,
        description="Bilateral mode: the catalogue item negotiated, or 'random' per seed.",
    )
    bilateral_persona: str = Field(
        default="hardball",
        min_length=1,
        max_length=32,
        description=(f"Bilateral mode: the one supplier's persona ({_PERSONA_HELP})."),
    )
    bilateral_max_rounds: int = Field(
        default=8,
        ge=1,
        le=50,
        description="Bilateral mode: negotiation rounds before the supplier ends the thread.",
    )
    bilateral_budget_factor: float = Field(
        default=1.1,
        gt=0.0,
        le=10.0,
        description=(
            "Bilateral mode: the buyer's budget per unit as a multiple of the item's typical price."
        ),
    )
    bilateral_cost_factor: float = Field(
        default=0.7,
        gt=0.0,
        le=10.0,
        description=(
            "Bilateral mode: the supplier's cost as a multiple of the typical price (its floor "
            "sits above it)."
        ),
    )
    bilateral_ask_factor: float = Field(
        default=1.3,
        gt=0.0,
        le=10.0,
        description=(
            "Bilateral mode: the supplier's list (opening) price as a multiple of the typical "
            "price."
        ),
    )

    # --- catalogue (empty: the shipped catalogue and generated suppliers) ----------------
    items: list[ItemSpec] = Field(
        default_factory=list,
        max_length=1000,
        description="Custom catalogue items for this scenario (empty: the shipped catalogue).",
    )
    supplier_roster: list[SupplierSpec] = Field(
        default_factory=list,
        max_length=60,
        description="Fixed suppliers (empty: suppliers are generated from the persona mix).",
    )

    supplier_llm: SupplierLLMSpec | None = Field(
        default=None,
        description=(
            "Suppliers played by a language model: backend, model and the personas it plays."
        ),
    )

    @property
    def escalation_range(self) -> tuple[float, float]:
        """The published range of an escalation's hidden fraction (actions.py draws it)."""
        mid, spread = self.escalation_fraction, self.escalation_fraction_spread
        return round(max(0.0, mid - spread), 6), round(min(1.0, mid + spread), 6)

    def plays_llm_suppliers(self) -> bool:
        """Whether a language model plays any supplier: ``supplier_llm`` names personas (a
        spec with none leaves every supplier a rule or field persona)."""
        return self.supplier_llm is not None and bool(self.supplier_llm.personas)

    @model_validator(mode="after")
    def _cross_field(self) -> ScenarioConfig:
        errs = cross_field_errors(self)
        if errs:
            raise PydanticCustomError(
                "scenario_cross_field",
                "{summary}",
                {
                    "summary": "; ".join(f"{e['field']}: {e['message']}" for e in errs),
                    "errors": errs,
                },
            )
        return self


def cross_field_errors(cfg: ScenarioConfig) -> list[dict[str, str]]:
    """Checks that involve several fields or values pydantic cannot express alone."""
    from .world.catalogue import catalogue_for, get_catalogue  # local: loaded lazily

    errs: list[dict[str, str]] = []

    def add(field: str, message: str) -> None:
        errs.append({"field": field, "message": message})

    for key, weight in cfg.persona_mix.items():
        if key not in PERSONAS and key not in FIELD_PERSONAS:
            add(f"persona_mix.{key}", f"Unknown persona '{key}'; use one of {', '.join(PERSONAS)}.")
        elif not isinstance(weight, float | int) or not math.isfinite(weight) or weight < 0:
            add(f"persona_mix.{key}", "Persona weights must be finite numbers >= 0.")
        elif (
            key in FIELD_PERSONAS
            and cfg.mode == "arena"  # bilateral mode plays bilateral_persona, checked below
            and weight > 0
            and (msg := field_persona_error(key))
        ):
            add(f"persona_mix.{key}", msg)
    if cfg.mode == "arena" and sum(w for w in cfg.persona_mix.values() if w > 0) <= 0:
        add("persona_mix", "At least one persona needs a positive weight.")
    for name in ("pr_threshold",):
        if not math.isfinite(getattr(cfg, name)):
            add(name, "Must be a finite number.")
    if cfg.max_steps < cfg.weeks:
        add("max_steps", "Must be at least the number of weeks (one action per week).")
    for i, d in enumerate(cfg.disruptions):
        if d.week >= cfg.weeks:
            add(
                f"disruptions.{i}.week",
                f"Week {d.week} is outside the horizon of {cfg.weeks} weeks.",
            )
    if cfg.mode == "bilateral":
        if cfg.bilateral_persona in FIELD_PERSONAS:
            if msg := field_persona_error(cfg.bilateral_persona):
                add("bilateral_persona", msg)
        elif cfg.bilateral_persona not in PERSONAS:
            add("bilateral_persona", f"Unknown persona; use one of {', '.join(PERSONAS)}.")
        known = catalogue_for(cfg.items).by_key
        if cfg.bilateral_item != "random" and cfg.bilateral_item not in known:
            add("bilateral_item", f"Unknown catalogue item '{cfg.bilateral_item}'.")
        if cfg.actions_per_week * cfg.weeks < cfg.bilateral_max_rounds + 2:
            add(
                "actions_per_week",
                "Bilateral runs need at least max_rounds + 2 action slots (offers plus award).",
            )
        if cfg.bilateral_cost_factor >= cfg.bilateral_ask_factor:
            add("bilateral_cost_factor", "Seller cost must be below the asking price.")
        if cfg.bilateral_cost_factor * 1.12 >= cfg.bilateral_budget_factor:
            add(
                "bilateral_budget_factor",
                "Buyer budget must leave a zone of agreement above the seller's cost (+12%).",
            )
    keys = [i.key for i in cfg.items]
    if len(set(keys)) != len(keys):
        add("items", "Item keys must be unique.")
    for i, item in enumerate(cfg.items):
        if item.order_qty_min > item.order_qty_max:
            add(f"items.{i}.order_qty_min", "Must not exceed order_qty_max.")
    if len(cfg.supplier_roster) > cfg.n_suppliers:
        add("supplier_roster", f"Lists more suppliers than n_suppliers ({cfg.n_suppliers}).")
    categories = {i.category for i in cfg.items} or set(get_catalogue().categories)
    for i, spec in enumerate(cfg.supplier_roster):
        if not set(spec.categories) & categories:
            add(f"supplier_roster.{i}.categories", "Serves none of the scenario's categories.")
    if cfg.supplier_llm is not None:
        for p in cfg.supplier_llm.personas:
            if p in FIELD_PERSONAS:
                add(
                    "supplier_llm.personas",
                    f"'{p}' is a field persona, played by its own negotiator; a language "
                    "model plays rule personas only.",
                )
            elif p not in PERSONAS:
                add("supplier_llm.personas", f"Unknown persona '{p}'.")
    return errs


def _loc_to_field(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc)


def errors_from_pydantic(exc: ValidationError) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for e in exc.errors(include_url=False):
        if e.get("type") == "scenario_cross_field":
            out.extend(e["ctx"]["errors"])
            continue
        msg = str(e.get("msg", "invalid value"))
        if e.get("type") == "extra_forbidden":
            msg = "Unknown parameter."
        out.append({"field": _loc_to_field(tuple(e.get("loc", ()))), "message": msg})
    return out


def validate_config(data: Any) -> ScenarioConfig:
    """Build a ScenarioConfig from a dict, raising ScenarioValidationError on any problem."""
    if isinstance(data, ScenarioConfig):
        data = data.model_dump()
    if not isinstance(data, dict):
        raise ScenarioValidationError(
            [
                {
                    "field": "",
                    "message": "A scenario must be a preset name, a dict or a ScenarioConfig.",
                }
            ]
        )
    try:
        return ScenarioConfig.model_validate(data)
    except ValidationError as exc:
        raise ScenarioValidationError(errors_from_pydantic(exc)) from None


# Parameters that only one mode's world reads (world/worldgen.py): generate_arena draws
# requirements and suppliers from these, generate_bilateral uses the bilateral_ ones.
ARENA_PARAMETERS = frozenset(
    {
        "n_suppliers",
        "n_requirements",
        "critical_fraction",
        "deadline_tightness",
        "budget_tightness",
        "persona_mix",
        "supplier_roster",
    }
)
MODES: tuple[str, ...] = typing.get_args(ScenarioConfig.model_fields["mode"].annotation)
# Units a parameter's name states (approval_timeout_s, pr_lead_weeks): (one, many).
_UNITS = {"_s": ("s", "s"), "weeks": ("week", "weeks")}
# Parameters that are sums of money: shown in the scenario's ``currency``.
MONEY_PARAMETERS = frozenset({"pr_threshold", "escalation_approval_above"})


def scenario_currency(config: Any) -> str:
    """The currency a stored scenario config (a mapping, any age) is in: its own, else
    the default (a config from before the field)."""
    code = config.get("currency") if isinstance(config, dict) else None
    if isinstance(code, str) and code:
        return code
    return ScenarioConfig.model_fields["currency"].get_default(call_default_factory=True)


def parameter_modes(name: str) -> tuple[str, ...]:
    """The modes whose episodes read parameter ``name``."""
    if name.startswith("bilateral_"):
        return ("bilateral",)
    return ("arena",) if name in ARENA_PARAMETERS else MODES


def human_number(x: float) -> str:
    """A number as a person reads it: thousands separated, no exponent, no trailing .0
    (1e12 -> "1,000,000,000,000", 0.30 -> "0.3")."""
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:,.6f}".rstrip("0").rstrip(".")


def human_value(value: Any, unit: tuple[str, str] | None = None) -> str | list[str]:
    """A parameter's value for people: "not set" for None, yes/no, numbers with their unit,
    a weight mapping as shares, largest first ("cooperative 40 %, ..."), other mappings as
    "key value" pairs, and a list as one line per entry (a list of lines)."""
    if isinstance(value, list):
        return [_inline(v) for v in value] or ["none"]
    weights = isinstance(value, dict) and all(
        isinstance(w, int | float) and not isinstance(w, bool) for w in value.values()
    )
    if weights and (total := math.fsum(value.values())) > 0:
        return ", ".join(
            f"{k} {human_number(round(100 * w / total, 1))} %"
            for k, w in sorted(value.items(), key=lambda kw: (-kw[1], kw[0]))
        )
    if unit and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{human_number(value)} {unit[0] if value == 1 else unit[1]}"
    return _inline(value)


def _inline(value: Any) -> str:
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return human_number(value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {_inline(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(_inline(v) for v in value) or "none"
    return str(value) or "\u2013"  # an en dash, as tables show "no value"


@dataclass(frozen=True, slots=True)
class ParameterDoc:
    """One scenario parameter as a person reads it: what it means and what it may be."""

    name: str
    description: str
    default: Any
    allowed: str  # "0 to 1", "one of arena, bilateral", "a list", ...
    modes: tuple[str, ...]  # the modes whose episodes read it
    unit: tuple[str, str] | None  # (one, many): ("week", "weeks"); None when unitless
    money: bool = False  # a sum of money, in the scenario's currency

    def show(self, value: Any, currency: str | None = None) -> str | list[str]:
        """``value`` of this parameter as people read it (see human_value); a sum of
        money in ``currency`` (the scenario's; the default's when not given)."""
        if self.money:
            code = currency or get_catalogue().currency
            return human_value(value, (code, code))
        return human_value(value, self.unit)


def allowed_values(info: FieldInfo) -> str:
    annotation = info.annotation
    options = [annotation, *typing.get_args(annotation)]
    literal = next((a for a in options if typing.get_origin(a) is typing.Literal), None)
    if literal is not None:
        return "one of " + ", ".join(str(v) for v in typing.get_args(literal))
    bounds = {
        attr: human_number(getattr(meta, attr))
        for meta in info.metadata
        for attr in ("ge", "gt", "le")
        if getattr(meta, attr, None) is not None
    }
    low = f"{bounds['ge']}" if "ge" in bounds else None
    if "gt" in bounds:
        low = f"more than {bounds['gt']}"
    if low and "le" in bounds:
        return f"{low} to {bounds['le']}" if "ge" in bounds else f"{low}, at most {bounds['le']}"
    if low:
        return f"at least {low}" if "ge" in bounds else low
    origin = typing.get_origin(annotation)
    if origin is list:
        return "a list"
    if origin is dict:
        return "a mapping"
    return "text" if annotation is str else "see the description"


def parameter_docs() -> list[ParameterDoc]:
    """Every ScenarioConfig parameter with its meaning, default, allowed range, the modes
    it applies to and its unit."""
    docs = []
    for name, info in ScenarioConfig.model_fields.items():
        default = info.get_default(call_default_factory=True)
        unit = next((u for suffix, u in _UNITS.items() if name.endswith(suffix)), None)
        docs.append(
            ParameterDoc(
                name,
                info.description or "",
                default,
                allowed_values(info),
                parameter_modes(name),
                unit,
                name in MONEY_PARAMETERS,
            )
        )
    return docs

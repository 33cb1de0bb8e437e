"""Policy parameters, validated before a policy is built.

Each policy class names its own pydantic ``Params`` model. Stored policy configs are
checked against it when they are saved, and ``get_policy`` checks again, so a bad value
(a string for a number, an infinite or out-of-range fraction, an unknown key) is a clear
error up front instead of a crash deep inside an episode. ``seed`` is never a parameter:
the runner passes each episode's seed itself.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, InstanceOf, ValidationError, field_validator
from pydantic.json_schema import SkipJsonSchema

from ..config import SupplierLLMSpec, errors_from_pydantic
from ..llm.backend import LLMBackend
from .prompts import MAX_PROMPT_CHARS

RESERVED = {"seed": "Set by the runner for each episode; it cannot be a policy parameter."}


class PolicyParamsError(ValueError):
    """Invalid policy parameters. `.errors` is a list of {"field", "message"}."""

    def __init__(self, policy: str, errors: list[dict[str, str]]):
        self.policy = policy
        self.errors = errors
        lines = [f"{e['field'] or '(params)'}: {e['message']}" for e in errors]
        super().__init__(f"Invalid params for policy '{policy}': " + "; ".join(lines))


class PolicyParams(BaseModel):
    """No parameters; subclasses declare theirs. Strict: no type coercion, finite numbers,
    unknown keys refused."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class GreedyLowballParams(PolicyParams):
    # 0.5, not lower: at 0.4 of list a hardball or deceptive bilateral seller hears an
    # insult and walks away, so the baseline would never close (DESIGN.md, personas).
    fraction: float = Field(
        default=0.5, gt=0.0, le=1.0, description="Share of the list price offered to everyone."
    )


# The backend names a scenario's supplier_llm accepts; the buyer takes the same ones.
BackendName = SupplierLLMSpec.model_fields["backend"].annotation
Scalar = str | int | float | bool


class LLMParams(PolicyParams):
    """The ``llm`` buyer. ``backend`` is a name in stored configs; in process it may also
    be an LLMBackend instance (a shared batching handle, a test double)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    backend: BackendName | SkipJsonSchema[InstanceOf[LLMBackend]] = Field(  # type: ignore[valid-type]
        default="transformers", description="transformers | vllm | openai_compatible | llamacpp"
    )
    model: str = Field(
        default="", max_length=300, description="Path, model id or server model name."
    )
    fallback: str = Field(
        default="expert",
        min_length=1,
        max_length=32,
        description="Rule policy that acts when the model's reply is unusable (and picks "
        "action and price in narrator mode).",
    )
    mode: Literal["free", "narrator"] = Field(
        default="free",
        description="free: the model picks action and price; narrator: the fallback policy "
        "does, the model writes the message and rationale.",
    )
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=96, ge=16, le=4096)
    max_prompt_chars: int = Field(
        default=MAX_PROMPT_CHARS,
        ge=500,
        le=200_000,
        description="Characters of an episode's chat (free mode) before it starts again from "
        "the whole state; the cap of a narrator prompt.",
    )
    backend_options: dict[str, Scalar] = Field(
        default_factory=dict, description="Passed to the backend (base_url, timeout_s, ...)."
    )

    @field_validator("fallback")
    @classmethod
    def _rule_policy(cls, v: str) -> str:
        from . import list_policies  # the registry is complete once anyone validates

        rules = [p for p in list_policies() if p not in ("llm", "human")]
        if v not in rules:
            raise ValueError(f"Must be a rule policy: one of {', '.join(rules)}.")
        return v


def validate_params(policy: str, model: type[PolicyParams], params: Any) -> dict[str, Any]:
    """The params a caller gave, checked against ``model``; defaults are not filled in."""
    if not isinstance(params, dict):
        raise PolicyParamsError(policy, [{"field": "", "message": "Must be a JSON object."}])
    try:
        return model.model_validate(params).model_dump(exclude_unset=True)
    except ValidationError as exc:
        errors = [
            {**e, "message": RESERVED.get(e["field"], e["message"])}
            for e in errors_from_pydantic(exc)
        ]
        raise PolicyParamsError(policy, errors) from None


class HumanParams(PolicyParams):
    fallback: Literal["expert", "random", "always_accept", "greedy_lowball", "do_nothing"] = Field(
        default="expert",
        description="The rule policy that takes the seat when the human stays idle too long.",
    )
    idle_seconds: int = Field(
        default=600,
        ge=10,
        le=86_400,
        description="Seconds without a move before the fallback policy takes over.",
    )


# --- Scripted buyers (scripts.py) --------------------------------------------------------
class ScriptParams(PolicyParams):
    """Knobs every scripted buyer shares."""

    opening: float = Field(
        default=0.6,
        gt=0.0,
        le=1.5,
        description="Opening offer as a share of the requirement's reference price.",
    )
    max_suppliers: int = Field(
        default=1,
        ge=1,
        le=50,
        description="Suppliers negotiated with at once per requirement (cheapest list price "
        "first; the next one when a supplier walks away). One is best in the arena: more "
        "spend the weekly action slots the other requirements need.",
    )


class LowballAwardParams(ScriptParams):
    opening: float = Field(
        default=0.61,
        gt=0.0,
        le=1.5,
        description="The lowball offer, as a share of the reference price; repeated "
        "unchanged while the standing counter is unaffordable.",
    )


class LowballFinalParams(LowballAwardParams):
    final_divisor: float = Field(
        default=1.02,
        ge=1.0,
        le=2.0,
        description="The final offer is the lowest standing counter divided by this.",
    )


class ConcedeParams(ScriptParams):
    rate: float = Field(
        default=0.05,
        gt=0.0,
        le=1.0,
        description="Raise per round, as a share of the reference price.",
    )


class TitForTatParams(ScriptParams):
    award_gap: float = Field(
        default=0.01,
        ge=0.0,
        le=0.5,
        description="Award once the counter is within this share of the next offer.",
    )

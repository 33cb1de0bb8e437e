"""The run plan: what plays an episode, decided once from its pinned scenario and policy.

"Does this episode use a language model?" has one answer, read by the queue routing, the
LLM quotas, the start forms, the episode page, the human seat and the replay boards. A
scenario's suppliers use a model only when ``supplier_llm`` names personas (the engine's
``ScenarioConfig.plays_llm_suppliers``): a spec with none plays rule suppliers, so it is
neither gpu work nor LLM quota. The buyer uses a model when its policy is ``llm`` or it
names a backend. A human seat is on no worker's queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from negotiation.config import ScenarioConfig

LLM_POLICY = "llm"
HUMAN_POLICY = "human"

Queue = Literal["cpu", "gpu", "human"]
CPU_QUEUE: Queue = "cpu"
GPU_QUEUE: Queue = "gpu"  # LLM work, buyer or suppliers
HUMAN_QUEUE: Queue = "human"  # no worker consumes it: the seat is played through the API
# The key of a policy snapshot that records an idle seat's takeover by its fallback.
HANDED_OVER = "handed_over"
# What a page calls each queue's line of waiting runs ("2nd in the model lane").
LANE_NAMES: dict[str, str] = {CPU_QUEUE: "rule", GPU_QUEUE: "model", HUMAN_QUEUE: "human"}


def buyer_uses_llm(policy_snapshot: dict[str, Any]) -> bool:
    """Whether a policy snapshot (PolicyConfig.snapshot()) needs an LLM backend."""
    return bool(policy_snapshot.get("backend")) or policy_snapshot.get("policy") == LLM_POLICY


def suppliers_use_llm(scenario_config: dict[str, Any]) -> bool:
    """Whether a language model plays any of the scenario's suppliers (the engine says)."""
    return ScenarioConfig.model_validate(scenario_config).plays_llm_suppliers()


@dataclass(frozen=True)
class RunPlan:
    buyer_uses_llm: bool
    suppliers_use_llm: bool
    human_seat: bool

    @classmethod
    def of(cls, *, scenario_config: dict[str, Any], policy_snapshot: dict[str, Any]) -> RunPlan:
        return cls(
            buyer_uses_llm=buyer_uses_llm(policy_snapshot),
            suppliers_use_llm=suppliers_use_llm(scenario_config),
            human_seat=policy_snapshot.get("policy") == HUMAN_POLICY,
        )

    @property
    def uses_llm(self) -> bool:
        """Buyer or suppliers: the run holds a model (and counts against the LLM quotas)."""
        return self.buyer_uses_llm or self.suppliers_use_llm

    @property
    def queue(self) -> Queue:
        if self.human_seat:
            return HUMAN_QUEUE
        return GPU_QUEUE if self.uses_llm else CPU_QUEUE

"""Reads for sweeps: the versions a sweep pinned at creation, and its summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from procurement.models import Sweep, SweepCell
from procurement.run_plan import RunPlan
from procurement.selectors.aggregates import leaderboard
from procurement.selectors.episodes import Pinned


@dataclass(frozen=True)
class SweepPins:
    """A sweep's pinned scenarios and policies, read once per chunk of cells."""

    pinned: dict[str, Any]

    def for_cell(self, scenario_id: int, policy_id: int) -> Pinned:
        scenario = self.pinned["scenarios"][str(scenario_id)]
        policy = self.pinned["policies"][str(policy_id)]
        return Pinned(
            scenario["config"], scenario["version"], policy["snapshot"], policy["version"]
        )

    def queues(self) -> dict[tuple[int, int], str]:
        """The queue of each (scenario id, policy id) pair: the run plan of the pinned
        versions."""
        return {
            (int(sid), int(pid)): RunPlan.of(
                scenario_config=scenario["config"], policy_snapshot=policy["snapshot"]
            ).queue
            for sid, scenario in self.pinned["scenarios"].items()
            for pid, policy in self.pinned["policies"].items()
        }

    def versions(self) -> dict[str, dict[str, int]]:
        """{"scenarios": {name: version}, "policies": {name: version}} for summaries."""
        return {
            "scenarios": {
                s["config"]["name"]: s["version"] for s in self.pinned.get("scenarios", {}).values()
            },
            "policies": {
                p["snapshot"]["name"]: p["version"]
                for p in self.pinned.get("policies", {}).values()
            },
        }


def sweep_pins(sweep_id: int) -> SweepPins:
    return SweepPins(Sweep.objects.values_list("pinned", flat=True).get(pk=sweep_id))


def sweep_summary(sweep: Sweep) -> dict:
    rows = (
        SweepCell.objects.filter(sweep=sweep, status="finished")
        .values_list("scenario__name", "policy__name", "score", "metrics")
        .iterator(chunk_size=2000)
    )
    return {"leaderboard": leaderboard(rows), "versions": sweep_pins(sweep.pk).versions()}

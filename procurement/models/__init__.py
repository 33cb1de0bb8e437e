"""The domain models: scenarios and their catalogue, policies, episodes, decisions, sweeps,
evaluations, training runs."""

from procurement.models.approval import ApprovalRequest, ApprovalStatus
from procurement.models.catalogue import RequirementTemplate, SupplierProfile
from procurement.models.episode import Decision, Episode, EpisodeStatus
from procurement.models.evaluation import (
    Evaluation,
    EvaluationPart,
    EvaluationPiece,
    EvaluationStatus,
)
from procurement.models.policy import PolicyConfig
from procurement.models.scenario import Scenario
from procurement.models.sweep import Sweep, SweepCell, SweepStatus
from procurement.models.training import GrpoContinuation, TrainingKind, TrainingRun, TrainingStatus

__all__ = [
    "ApprovalRequest",
    "ApprovalStatus",
    "Decision",
    "Episode",
    "EpisodeStatus",
    "Evaluation",
    "EvaluationPart",
    "EvaluationPiece",
    "EvaluationStatus",
    "GrpoContinuation",
    "PolicyConfig",
    "RequirementTemplate",
    "Scenario",
    "SupplierProfile",
    "Sweep",
    "SweepCell",
    "SweepStatus",
    "TrainingKind",
    "TrainingRun",
    "TrainingStatus",
]

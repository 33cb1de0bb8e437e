"""The expert buyer, split by idea: beliefs about suppliers (beliefs.py), planning across
requirements and slots (planning.py), actions (acting.py), and the policy (policy.py)."""

from .policy import ExpertPolicy, PublicJudge

__all__ = ["ExpertPolicy", "PublicJudge"]

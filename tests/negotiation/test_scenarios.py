"""The preset lists benches and tables read."""

from __future__ import annotations

from negotiation.scenarios import bilateral_presets, list_presets, load_scenario


def test_bilateral_presets_are_the_rule_presets_of_one_buyer_and_one_seller() -> None:
    names = bilateral_presets()
    assert "bilateral_hardball" in names and "llm_bilateral" not in names
    assert all(load_scenario(n).mode == "bilateral" for n in names)
    rule = list_presets(include_llm=False)
    assert set(names) == {n for n in rule if load_scenario(n).mode == "bilateral"} != set()

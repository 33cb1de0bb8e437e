"""Scenarios can bring their own items and named suppliers (the admin's catalogue)."""

import pytest

from negotiation import ProcurementEnv, ScenarioValidationError, load_scenario, run_episode

ITEMS = [
    {
        "key": "steel-bolt",
        "name": "Steel bolt M8",
        "category": "fasteners",
        "unit": "box",
        "typical_unit_price": 18.0,
        "order_qty_min": 50,
        "order_qty_max": 200,
    },
    {
        "key": "hydraulic-pump",
        "name": "Hydraulic pump",
        "category": "hydraulics",
        "typical_unit_price": 2400.0,
        "order_qty_min": 2,
        "order_qty_max": 8,
    },
]
ROSTER = [
    {
        "name": "Acme Fasteners",
        "persona": "deceptive",
        "categories": ["fasteners"],
        "lead_time_weeks": 1,
    },
]


def _config(**overrides):
    base = load_scenario("medium_adversarial").model_dump()
    return load_scenario({**base, "items": ITEMS, "supplier_roster": ROSTER, **overrides})


def test_requirements_come_only_from_the_scenario_items() -> None:
    obs = ProcurementEnv(_config()).reset(seed=3).to_dict()
    assert {r["name"] for r in obs["requirements"]} <= {"Steel bolt M8", "Hydraulic pump"}
    assert {r["category"] for r in obs["requirements"]} == {"fasteners", "hydraulics"}


def test_roster_suppliers_come_first_as_configured_and_the_rest_are_generated() -> None:
    cfg = _config()
    obs = ProcurementEnv(cfg).reset(seed=3).to_dict()
    first = obs["suppliers"][0]
    assert (first["id"], first["name"], first["categories"], first["lead_time_weeks"]) == (
        "S01",
        "Acme Fasteners",
        ["fasteners"],
        1,
    )
    assert len(obs["suppliers"]) == cfg.n_suppliers
    assert len({s["id"] for s in obs["suppliers"]}) == cfg.n_suppliers
    assert "deceptive" not in str(obs)  # the persona stays hidden


def test_a_custom_catalogue_episode_runs_and_is_deterministic() -> None:
    a, b = run_episode(_config(), "expert", 5), run_episode(_config(), "expert", 5)
    assert a.score == b.score and [s.action for s in a.steps] == [s.action for s in b.steps]
    assert a.metrics["n_requirements"] >= 4


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"items": [ITEMS[0], ITEMS[0]]}, "items"),
        (
            {"items": [{**ITEMS[0], "order_qty_min": 500, "order_qty_max": 5}]},
            "items.0.order_qty_min",
        ),
        ({"items": [{**ITEMS[0], "typical_unit_price": -1}]}, "items.0.typical_unit_price"),
        (
            {"supplier_roster": [{**ROSTER[0], "categories": ["plumbing"]}]},
            "supplier_roster.0.categories",
        ),
        ({"supplier_roster": [{**ROSTER[0], "persona": "saint"}]}, "supplier_roster.0.persona"),
        ({"supplier_roster": ROSTER * 3, "n_suppliers": 2}, "supplier_roster"),
    ],
)
def test_bad_catalogue_entries_are_reported_on_their_field(overrides, field) -> None:
    with pytest.raises(ScenarioValidationError) as exc:
        _config(**overrides)
    assert field in [e["field"] for e in exc.value.errors]

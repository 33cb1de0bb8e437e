"""Policy params are checked against each policy's own schema before a policy is built."""

from __future__ import annotations

import pytest

from negotiation import get_policy, list_policies, run_episode
from negotiation.policies import PolicyParamsError, policy_params_model, validate_policy_params


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"fraction": "abc"}, "fraction", "valid number"),
        ({"fraction": 1e308}, "fraction", "less than or equal to 1"),
        ({"fraction": float("inf")}, "fraction", "finite number"),
        ({"fraction": float("nan")}, "fraction", "finite number"),
        ({"fraction": 0}, "fraction", "greater than 0"),
        ({"fraction": True}, "fraction", "valid number"),
        ({"seed": 5}, "seed", "Set by the runner"),
        ({"fractoin": 0.3}, "fractoin", "Unknown parameter"),
    ],
)
def test_bad_params_are_refused_with_the_field_named(params, field, message) -> None:
    with pytest.raises(PolicyParamsError) as exc:
        validate_policy_params("greedy_lowball", params)
    assert [e["field"] for e in exc.value.errors] == [field]
    assert message in exc.value.errors[0]["message"]
    assert "greedy_lowball" in str(exc.value)
    if field != "seed":  # (a "seed" param collides with get_policy's own seed argument)
        # get_policy refuses them too, instead of a policy that fails mid-episode
        with pytest.raises(PolicyParamsError):
            get_policy("greedy_lowball", seed=1, **params)


@pytest.mark.parametrize("name", sorted(set(list_policies()) - {"greedy_lowball"}))
def test_policies_without_params_refuse_any(name) -> None:
    assert validate_policy_params(name, {}) == {}
    with pytest.raises(PolicyParamsError, match="fraction: Unknown parameter"):
        get_policy(name, seed=0, fraction=0.4)
    with pytest.raises(PolicyParamsError, match="Must be a JSON object"):
        validate_policy_params(name, [1])


def test_valid_params_reach_the_policy_unchanged() -> None:
    assert validate_policy_params("greedy_lowball", {"fraction": 1}) == {"fraction": 1.0}
    assert validate_policy_params("greedy_lowball", {}) == {}  # defaults are not filled in
    assert get_policy("greedy_lowball", seed=3, fraction=0.25).fraction == 0.25
    assert get_policy("greedy_lowball", seed=3).fraction == 0.5
    policy = get_policy("expert", seed=3)
    assert policy.params == {} and run_episode("easy_negotiation", policy, 3).steps


def test_each_policy_publishes_a_json_schema() -> None:
    schema = policy_params_model("greedy_lowball").model_json_schema()
    assert schema["additionalProperties"] is False
    assert schema["properties"]["fraction"]["maximum"] == 1.0
    assert policy_params_model("expert").model_json_schema()["properties"] == {}
    with pytest.raises(ValueError, match="Unknown policy"):
        policy_params_model("telepathy")

"""The config rules models, services, serializers and the admin share."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from procurement.validators import validate_scenario_config


@pytest.mark.django_db
def test_validate_scenario_config_rejects_non_objects() -> None:
    for value in (None, [], "weeks=3", 7):
        with pytest.raises(ValidationError) as err:
            validate_scenario_config(value)
        assert list(err.value.message_dict) == ["config"]

"""Browser forms. Their rules are the services' and the API's (limits, quotas)."""

from __future__ import annotations

from django import forms

from procurement.limits import LIVE_STEP_DELAY, MAX_SEED
from procurement.models import PolicyConfig, Scenario

PACES = {"live": LIVE_STEP_DELAY, "fast": 0.0}


class StartEpisodeForm(forms.Form):
    scenario = forms.ModelChoiceField(
        queryset=Scenario.objects.order_by("name"), to_field_name="name", empty_label=None
    )
    policy = forms.ModelChoiceField(
        queryset=PolicyConfig.objects.order_by("name"),
        to_field_name="name",
        empty_label=None,
        label="Buyer policy",
    )
    seed = forms.IntegerField(
        min_value=0,
        max_value=MAX_SEED,
        required=False,
        help_text="Leave empty for the next seed this scenario and policy have not played.",
    )
    pace = forms.ChoiceField(
        choices=[
            ("live", "Live: one decision at a time, to watch"),
            ("fast", "Fast: engine speed"),
        ],
        initial="live",
        widget=forms.RadioSelect,
    )

    @property
    def step_delay(self) -> float:
        return PACES[self.cleaned_data["pace"]]

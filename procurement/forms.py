"""Browser forms. Their rules are the services' and the API's (limits, quotas)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from negotiation.lineups import AS_CONFIGURED
from procurement.limits import (
    LIVE_STEP_DELAY,
    MAX_SEED,
    MAX_SEEDS_PER_SWEEP,
    validate_sweep_grid,
)
from procurement.models import GrpoContinuation, PolicyConfig, Scenario, TrainingKind
from procurement.selectors.evaluations import evaluation_buyer_names, evaluation_lineup_names
from procurement.services.training import (
    DEFAULT_LEARNING_RATE,
    SHIPPED_BASE,
    TrainingRequest,
)
from procurement.validators import parse_model_price

PACES = {"live": LIVE_STEP_DELAY, "fast": 0.0}
DEFAULT_POLICY = "expert"  # the strongest rule policy, always seeded


class DescribedSelect(forms.Select):
    """A drop-down of scenarios or policies whose options carry their description (the
    start page shows the chosen one's under it)."""

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        if value:
            option["attrs"]["data-description"] = value.instance.description
        return option


class StartEpisodeForm(forms.Form):
    scenario = forms.ModelChoiceField(
        queryset=Scenario.objects.order_by("name"),
        to_field_name="name",
        empty_label=None,
        widget=DescribedSelect,
    )
    policy = forms.ModelChoiceField(
        queryset=PolicyConfig.objects.order_by("name"),
        to_field_name="name",
        empty_label=None,
        label="Buyer policy",
        initial=DEFAULT_POLICY,
        widget=DescribedSelect,
    )
    seed = forms.IntegerField(
        min_value=0,
        max_value=MAX_SEED,
        required=False,
        help_text="Leave empty for the next seed this scenario and policy have not played "
        "(a human seat's seed is drawn by the server).",
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


class SupplierSeatForm(forms.Form):
    """Take a supplier's seat against a buyer policy (services.supplier_seat)."""

    scenario = forms.ModelChoiceField(
        queryset=Scenario.objects.order_by("name"),
        to_field_name="name",
        empty_label=None,
        widget=DescribedSelect,
    )
    policy = forms.ModelChoiceField(
        queryset=PolicyConfig.objects.exclude(policy="human").order_by("name"),
        to_field_name="name",
        empty_label=None,
        label="Buyer policy (rule or LLM)",
        initial=DEFAULT_POLICY,
        widget=DescribedSelect,
    )
    supplier_id = forms.CharField(
        max_length=32,
        required=False,
        label="Supplier you play",
        help_text="A supplier id such as S01; leave empty for the first (the bilateral seller).",
    )
    seed = forms.IntegerField(
        min_value=0,
        max_value=MAX_SEED,
        required=False,
        help_text="Leave empty for a seed the server draws. The world is sealed under the "
        "server's key either way: the seed tells you nothing of the buyer's side.",
    )
    idle_seconds = forms.IntegerField(
        min_value=30,
        max_value=3600,
        initial=600,
        label="Minutes to answer, in seconds",
        help_text="An offer unanswered this long passes your seat to the scenario's rule "
        "supplier for the rest of the episode.",
    )


class StartSweepForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    scenarios = forms.ModelMultipleChoiceField(
        queryset=Scenario.objects.order_by("name"),
        to_field_name="name",
        widget=forms.CheckboxSelectMultiple,
    )
    policies = forms.ModelMultipleChoiceField(
        queryset=PolicyConfig.objects.exclude(policy="human").order_by("name"),
        to_field_name="name",
        widget=forms.CheckboxSelectMultiple,
        label="Buyer policies",
    )
    seeds = forms.IntegerField(
        min_value=1,
        max_value=MAX_SEEDS_PER_SWEEP,
        initial=20,
        help_text="Seeds per scenario and policy: each (scenario, policy, seed) is one cell.",
    )
    seed_start = forms.IntegerField(min_value=0, max_value=MAX_SEED, initial=0)

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        try:  # the grid's bounds are the service's rule (the API and commands share it)
            validate_sweep_grid(
                scenarios=len(data["scenarios"]),
                policies=len(data["policies"]),
                seeds=data["seeds"],
                seed_start=data["seed_start"],
            )
        except ValidationError as exc:
            self.add_error(None, exc)  # a dict of field -> messages lands on each field
        return data


class StartTrainingForm(forms.Form):
    """The Training page's form; the service checks the rest (names, episodes, base)."""

    kind = forms.ChoiceField(
        choices=TrainingKind.choices, initial=TrainingKind.SFT, widget=forms.RadioSelect
    )
    name = forms.SlugField(
        max_length=100, help_text="The trained model's policy name (letters, digits, - and _)."
    )
    base = forms.ChoiceField(
        help_text="The shipped SmolLM2-135M, or a model trained here (an llm policy)."
    )
    scenarios = forms.ModelMultipleChoiceField(
        queryset=Scenario.objects.order_by("name"),
        to_field_name="name",
        widget=forms.CheckboxSelectMultiple,
    )
    source_policy = forms.ModelChoiceField(
        queryset=PolicyConfig.objects.exclude(policy="human").order_by("name"),
        to_field_name="name",
        empty_label=None,
        initial=DEFAULT_POLICY,
        label="Episodes played by",
    )
    min_score = forms.FloatField(
        min_value=0, max_value=1, required=False, help_text="Only episodes scoring at least this."
    )
    episodes = forms.IntegerField(
        min_value=1, initial=50, help_text="Stored episodes to learn from, oldest first."
    )
    max_steps = forms.IntegerField(min_value=1, initial=20)
    learning_rate = forms.FloatField(initial=DEFAULT_LEARNING_RATE, min_value=0)
    lora = forms.BooleanField(
        required=False, label="LoRA", help_text="Adapters, merged at the end."
    )
    continuation = forms.ChoiceField(
        choices=GrpoContinuation.choices,
        initial=GrpoContinuation.EXPERT,
        required=False,  # an sft run samples no replies: the expert, as the default
        widget=forms.RadioSelect,
        label="GRPO: after a sampled reply, the rest is played by",
        help_text="Its episode's score is the reply's reward. The model itself sees its own "
        "closing, at the cost of playing whole episodes.",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        trained = PolicyConfig.objects.filter(policy="llm", backend="transformers")
        names = [SHIPPED_BASE, *trained.order_by("name").values_list("name", flat=True)]
        self.fields["base"].choices = [(n, n) for n in names]

    def training_request(self) -> TrainingRequest:
        data = self.cleaned_data
        return TrainingRequest(
            kind=data["kind"],
            base=data["base"],
            scenarios=[s.name for s in data["scenarios"]],
            episodes=data["episodes"],
            name=data["name"],
            source_policy=data["source_policy"].name,
            min_score=data["min_score"],
            max_steps=data["max_steps"],
            learning_rate=data["learning_rate"],
            lora=data["lora"],
            continuation=data["continuation"] or GrpoContinuation.EXPERT,
        )


class StartEvaluationForm(forms.Form):
    """The Evaluations page's form; start_evaluation checks the rest (models reachable,
    seed and episode limits, line-up names), with the command's messages."""

    name = forms.CharField(max_length=200, required=False)
    policies = forms.MultipleChoiceField(
        label="Buyers",
        widget=forms.CheckboxSelectMultiple,
        help_text="Stored policies, language models included.",
    )
    suppliers = forms.MultipleChoiceField(
        label="Supplier line-ups",
        widget=forms.CheckboxSelectMultiple,
        initial=[AS_CONFIGURED],
        help_text="'scenario': the suppliers as each scenario configures them.",
    )
    more_suppliers = forms.CharField(
        label="Other line-ups",
        required=False,
        help_text="Comma-separated, e.g. llm:vllm:/models/x or "
        "llm:openai_compatible:http://127.0.0.1:8011/v1",
    )
    scenarios = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple)
    seeds = forms.IntegerField(min_value=1, initial=20, help_text="Paired seeds per cell.")
    seed_start = forms.IntegerField(min_value=0, max_value=MAX_SEED, initial=0)
    replays = forms.IntegerField(
        min_value=1, initial=1, help_text="Plays per seed (sampled models: pass^k)."
    )
    prices = forms.CharField(
        required=False,
        label="Prices",
        help_text="Money per million tokens, MODEL=IN[:OUT], comma-separated "
        "(e.g. smollm2=0.1:0.4); local models cost 0 unless set.",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["policies"].choices = [(n, n) for n in evaluation_buyer_names()]
        self.fields["suppliers"].choices = [(n, n) for n in evaluation_lineup_names()]
        self.fields["scenarios"].choices = [
            (n, n) for n in Scenario.objects.order_by("name").values_list("name", flat=True)
        ]

    def clean_prices(self) -> dict[str, tuple[float, float]]:
        out = {}
        for item in self.cleaned_data["prices"].split(","):
            if item.strip():
                try:
                    model, pair = parse_model_price(item.strip())
                except ValueError as exc:
                    raise ValidationError(str(exc)) from None
                out[model] = pair
        return out

    def evaluation_kwargs(self) -> dict[str, Any]:
        """start_evaluation's arguments."""
        data = self.cleaned_data
        more = [s.strip() for s in data["more_suppliers"].split(",") if s.strip()]
        return {
            "name": data["name"],
            "policies": data["policies"],
            "suppliers": [*data["suppliers"], *more],
            "scenarios": data["scenarios"],
            "seeds": data["seeds"],
            "seed_start": data["seed_start"],
            "replays": data["replays"],
            "prices": data["prices"],
        }

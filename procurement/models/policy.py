from django.db import models

from procurement.models.stored_json import StoredJSONDecoder
from procurement.run_plan import buyer_uses_llm
from procurement.validators import validate_policy_config

LLM_BACKENDS = [
    ("", "none (rule policy)"),
    ("transformers", "transformers (in-process)"),
    ("vllm", "vLLM (in-process engine on a gpu worker)"),
    ("openai_compatible", "OpenAI-compatible server"),
    ("llamacpp", "llama.cpp (in-process, CPU; optional source build)"),
]


class PolicyConfig(models.Model):
    """A named buyer policy with its parameters (and, for LLM policies, backend and model)."""

    name = models.SlugField(max_length=100, unique=True)
    policy = models.CharField(max_length=64, help_text="Engine policy name, e.g. expert.")
    params = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    backend = models.CharField(max_length=32, choices=LLM_BACKENDS, blank=True, default="")
    model = models.CharField(max_length=300, blank=True, help_text="Model path or id (LLM).")
    description = models.TextField(blank=True)
    # Grows with every change of what the policy plays (policy, params, backend, model);
    # episodes and sweeps record the version they ran.
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def uses_llm(self) -> bool:
        return buyer_uses_llm(self.snapshot())

    def clean(self) -> None:
        self.params = validate_policy_config(
            policy=self.policy, params=self.params, backend=self.backend, model=self.model
        )

    def snapshot(self) -> dict:
        return {
            "name": self.name,
            "policy": self.policy,
            "params": self.params,
            "backend": self.backend,
            "model": self.model,
        }

from django.db import models


class RequirementTemplate(models.Model):
    """A catalogue item a scenario's requirements are drawn from."""

    key = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    category = models.CharField(max_length=64, db_index=True)
    unit = models.CharField(max_length=32, default="unit")
    typical_unit_price = models.FloatField()
    source = models.CharField(max_length=32, default="catalogue")

    class Meta:
        ordering = ["category", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.category})"


class SupplierProfile(models.Model):
    """A named supplier a scenario can include; the persona stays hidden from buyers."""

    PERSONAS = [(p, p) for p in ("cooperative", "hardball", "deceptive", "distressed")]

    key = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    categories = models.JSONField(default=list)
    persona = models.CharField(max_length=32, choices=PERSONAS)
    lead_time_weeks = models.PositiveSmallIntegerField(default=2)
    reliability = models.FloatField(default=0.9)
    capacity_factor = models.FloatField(default=1.5)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

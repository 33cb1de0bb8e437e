from django.core.exceptions import ValidationError
from django.db import models

from procurement.models.stored_json import StoredJSONDecoder


class RequirementTemplate(models.Model):
    """A catalogue item a scenario's requirements can be drawn from (engine ``items``)."""

    key = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    category = models.CharField(max_length=64, db_index=True)
    unit = models.CharField(max_length=32, default="unit")
    typical_unit_price = models.FloatField()
    order_qty_min = models.PositiveIntegerField(default=1)
    order_qty_max = models.PositiveIntegerField(default=100)
    source = models.CharField(max_length=32, default="catalogue")

    class Meta:
        ordering = ["category", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.category})"

    def clean(self) -> None:
        if self.order_qty_min > self.order_qty_max:
            raise ValidationError({"order_qty_min": ["Must not exceed the maximum quantity."]})
        if not self.typical_unit_price or self.typical_unit_price <= 0:
            raise ValidationError({"typical_unit_price": ["Must be a positive price."]})

    def as_item_spec(self) -> dict:
        return {
            "key": self.key,
            "name": self.name,
            "category": self.category,
            "unit": self.unit,
            "typical_unit_price": self.typical_unit_price,
            "order_qty_min": self.order_qty_min,
            "order_qty_max": self.order_qty_max,
        }


class SupplierProfile(models.Model):
    """A named supplier a scenario always includes (engine ``supplier_roster``).

    The persona is hidden from buyers: only admins see it here.
    """

    PERSONAS = [(p, p) for p in ("cooperative", "hardball", "deceptive", "distressed")]

    key = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    categories = models.JSONField(
        decoder=StoredJSONDecoder, default=list, help_text='e.g. ["it_hardware", "office"]'
    )
    persona = models.CharField(max_length=32, choices=PERSONAS)
    lead_time_weeks = models.PositiveSmallIntegerField(default=2)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        cats = self.categories
        if not (isinstance(cats, list) and cats and all(isinstance(c, str) and c for c in cats)):
            raise ValidationError({"categories": ["A non-empty list of category names."]})

    def as_supplier_spec(self) -> dict:
        return {
            "name": self.name,
            "persona": self.persona,
            "categories": self.categories,
            "lead_time_weeks": self.lead_time_weeks,
        }

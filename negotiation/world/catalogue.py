"""The shipped catalogue of realistic procurement items (negotiation/data/catalogue.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

_PATH = Path(__file__).parent.parent / "data" / "catalogue.json"


@dataclass(frozen=True, slots=True)
class CatalogueItem:
    key: str
    name: str
    category: str
    unit: str
    typical_unit_price: float
    order_qty_min: int
    order_qty_max: int


@dataclass(frozen=True, slots=True)
class Catalogue:
    items: tuple[CatalogueItem, ...]
    by_key: dict[str, CatalogueItem]
    categories: tuple[str, ...]
    currency: str
    # category -> its items in catalogue order, grouped once: worldgen reads it per
    # requirement on every reset.
    _by_category: dict[str, tuple[CatalogueItem, ...]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        groups: dict[str, list[CatalogueItem]] = {}
        for i in self.items:
            groups.setdefault(i.category, []).append(i)
        object.__setattr__(self, "_by_category", {c: tuple(g) for c, g in groups.items()})

    def in_category(self, category: str) -> list[CatalogueItem]:
        return list(self._by_category.get(category, ()))


@lru_cache(maxsize=1)
def get_catalogue() -> Catalogue:
    raw = json.loads(_PATH.read_text(encoding="utf-8"))
    items = tuple(CatalogueItem(**row) for row in raw["items"])
    cats = tuple(sorted({i.category for i in items}))
    return Catalogue(items, {i.key: i for i in items}, cats, raw.get("currency", "USD"))


def catalogue_for(items: list | tuple = ()) -> Catalogue:
    """The scenario's own items (ItemSpec-like objects) when it lists any, else the shipped
    catalogue."""
    if not items:
        return get_catalogue()
    rows = tuple(
        CatalogueItem(
            i.key,
            i.name,
            i.category,
            i.unit,
            float(i.typical_unit_price),
            int(i.order_qty_min),
            int(i.order_qty_max),
        )
        for i in items
    )
    cats = tuple(sorted({i.category for i in rows}))
    return Catalogue(rows, {i.key: i for i in rows}, cats, get_catalogue().currency)

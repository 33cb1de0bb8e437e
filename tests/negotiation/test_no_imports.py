import ast
from pathlib import Path

import negotiation

FORBIDDEN = ("django", "torch", "vllm")


def test_engine_imports_no_django_or_torch():
    root = Path(negotiation.__file__).parent
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for n in names:
                assert n.split(".")[0] not in FORBIDDEN, f"{path} imports {n}"


def test_catalogue_has_50_realistic_items():
    from negotiation.catalogue import get_catalogue

    cat = get_catalogue()
    assert len(cat.items) >= 50
    for it in cat.items:
        assert it.name and it.category and it.unit
        assert it.typical_unit_price > 0
        assert 0 < it.order_qty_min <= it.order_qty_max

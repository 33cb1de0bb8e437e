import ast
from pathlib import Path

import negotiation

FORBIDDEN = ("django", "torch", "vllm")
# LLM backends import torch and vllm inside the functions that load a model, so importing
# the engine never does (tests/negotiation/llm/test_registry.py checks sys.modules too).
LAZY_ALLOWED = ("torch", "vllm")


def _imports(tree: ast.AST, in_function: bool = False):
    for node in ast.iter_child_nodes(tree):
        nested = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        if isinstance(node, ast.Import):
            yield from ((a.name, in_function) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, in_function
        yield from _imports(node, nested)


def test_engine_imports_no_django_or_torch():
    root = Path(negotiation.__file__).parent
    for path in root.rglob("*.py"):
        for name, in_function in _imports(ast.parse(path.read_text())):
            top = name.split(".")[0]
            if in_function and top in LAZY_ALLOWED:
                continue
            assert top not in FORBIDDEN, f"{path} imports {name}"


def test_catalogue_has_50_realistic_items():
    from negotiation.catalogue import get_catalogue

    cat = get_catalogue()
    assert len(cat.items) >= 50
    for it in cat.items:
        assert it.name and it.category and it.unit
        assert it.typical_unit_price > 0
        assert 0 < it.order_qty_min <= it.order_qty_max

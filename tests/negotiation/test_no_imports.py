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
    from negotiation.world.catalogue import get_catalogue

    cat = get_catalogue()
    assert len(cat.items) >= 50
    for it in cat.items:
        assert it.name and it.category and it.unit
        assert it.typical_unit_price > 0
        assert 0 < it.order_qty_min <= it.order_qty_max


# The engine core: the loop, its rules and the world. Language models reach it only as
# supplier or buyer policies, never as an import (not even for a type).
CORE = (
    "env.py",
    "action_spec.py",
    "actions.py",
    "observation.py",
    "scoring.py",
    "config.py",
    "scenarios.py",
    "metrics.py",
    "week.py",
    "runner.py",
    "world",
)


def _absolute(path: Path, node: ast.ImportFrom, root: Path) -> str:
    """The dotted module an ImportFrom names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    package = list(path.relative_to(root.parent).with_suffix("").parts[:-1])
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def test_engine_core_never_imports_the_llm_package():
    root = Path(negotiation.__file__).parent
    paths = [
        p for c in CORE for p in ((root / c).rglob("*.py") if (root / c).is_dir() else [root / c])
    ]
    assert len(paths) > len(CORE)
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = _absolute(path, node, root)
                names = [module, *(f"{module}.{a.name}" for a in node.names)]
            else:
                continue
            for name in names:
                assert not name.startswith("negotiation.llm"), f"{path} imports {name}"

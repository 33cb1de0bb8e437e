"""Architectural rules: the engine stays pure Python, and arrows between Django and the
workers go one way (workers/ imports the Django side, never the reverse)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_ENGINE = {"django", "rest_framework", "channels", "celery", "procurement", "workers"}


DJANGO_SIDE = ("procurement", "config")
DYNAMIC_IMPORTS = {"import_module", "import_string", "__import__"}


def _imported_roots(path: Path) -> set[str]:
    """Top-level packages a module imports anywhere: at module level, inside functions, or
    by a constant name given to importlib / Django's import_string."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in DYNAMIC_IMPORTS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            roots.add(node.args[0].value.split(".")[0])
    return roots


def test_negotiation_never_imports_django_or_the_service() -> None:
    files = sorted((ROOT / "negotiation").rglob("*.py"))
    assert files, "negotiation/ has no modules"
    offenders = {
        str(f.relative_to(ROOT)): sorted(_imported_roots(f) & FORBIDDEN_IN_ENGINE)
        for f in files
        if _imported_roots(f) & FORBIDDEN_IN_ENGINE
    }
    assert offenders == {}


def test_importing_the_engine_does_not_load_django() -> None:
    import subprocess
    import sys

    code = "import sys, negotiation; print(any(m.split('.')[0] == 'django' for m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_the_django_side_never_imports_the_workers() -> None:
    files = sorted(f for package in DJANGO_SIDE for f in (ROOT / package).rglob("*.py"))
    assert {f.relative_to(ROOT).parts[0] for f in files} == set(DJANGO_SIDE)
    offenders = [str(f.relative_to(ROOT)) for f in files if "workers" in _imported_roots(f)]
    assert offenders == []


def test_the_architecture_check_sees_function_level_and_dynamic_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import importlib\n"
        "def f():\n    from workers.tasks import ping\n"
        "def g():\n    importlib.import_module('workers.inprocess')\n"
    )
    assert "workers" in _imported_roots(module)
    module.write_text("def g():\n    __import__('workers')\n")
    assert "workers" in _imported_roots(module)


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_models_and_selectors_never_import_services() -> None:
    # Services write and read through models and selectors; never the other way round.
    procurement = ROOT / "procurement"
    files = [
        *procurement.joinpath("models").rglob("*.py"),
        *procurement.joinpath("selectors").rglob("*.py"),
        procurement / "validators.py",
        procurement / "run_plan.py",
        procurement / "errors.py",
    ]
    offenders = {
        str(f.relative_to(ROOT)): sorted(
            m for m in _imported_modules(f) if m.startswith("procurement.services")
        )
        for f in files
    }
    assert {f: m for f, m in offenders.items() if m} == {}

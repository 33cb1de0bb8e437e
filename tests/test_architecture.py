"""Architectural rules: the engine stays pure Python."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_ENGINE = {"django", "rest_framework", "channels", "celery", "procurement", "workers"}


def _imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
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

"""The house's floors, read from the imports (every ``import``, at module level or inside a function).

ingest → retrieval → router → answering (``app``) → ui / cli: a stage imports the foundation (``app.core``) and the
stages below it, never one above; ``app.core`` imports no stage at all.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "ingest", "retrieval", "router", "ui")
# what each floor may import from the project's packages besides itself
ALLOWED = {
    "app.core": {"app.core"},
    "ingest": {"app.core"},
    "retrieval": {"app.core", "ingest"},
    "router": {"app.core", "ingest", "retrieval"},
}


def project_imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names if node.module == "app"]
        else:
            continue
        out |= {n for n in names if n.split(".")[0] in PACKAGES}
    return out


def floor_of(module: str) -> str:
    return "app.core" if module == "app.core" or module.startswith("app.core.") else module.split(".")[0]


@pytest.mark.parametrize("floor", sorted(ALLOWED))
def test_no_floor_imports_one_above_it(floor):
    folder = ROOT / Path(*floor.split("."))
    files = sorted(folder.rglob("*.py"))
    assert files, folder
    bad = []
    for f in files:
        for imp in project_imports(f):
            target = floor_of(imp)
            if imp == "app":  # `from app import x`: the names were added as app.x
                continue
            if target != floor and target not in ALLOWED[floor]:
                bad.append(f"{f.relative_to(ROOT)} imports {imp}")
    assert not bad, "\n".join(bad)


def test_the_checker_sees_an_import_that_points_up(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from app.context import AppContext\n    from app import cli\n")
    assert {floor_of(i) for i in project_imports(f)} == {"app"}
    assert "app.cli" in project_imports(f)

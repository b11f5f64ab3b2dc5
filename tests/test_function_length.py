"""No function in the product (app/, ingest/, retrieval/, router/, ui/) or its benchmarks (bench/) is longer than
100 lines (issue 22: the web app was one 830-line function): a long function is split where its parts are named."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 100


def long_functions(root: Path, packages=("app", "ingest", "retrieval", "router", "ui", "bench"),
                   limit: int = MAX_LINES) -> list[str]:
    out = []
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = node.end_lineno - node.lineno + 1
                    if n > limit:
                        out.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_function_over_100_lines():
    assert long_functions(ROOT) == []


def test_the_check_sees_a_long_function(tmp_path):
    (tmp_path / "app").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "app" / "m.py").write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n", encoding="utf-8")
    assert long_functions(tmp_path, ("app",)) == [f"app/m.py:5 long ({MAX_LINES + 1} lines)"]

"""The house's floors, read from the imports (every ``import``, at module level or inside a function).

core → ingest → retrieval → router → app (answering) → services → api (/v1, MCP) → ui (Gradio) → cli: a floor
imports the floors below it, never one above; ``core`` imports no stage at all. No module imports itself back
through others (no import circle), inside a floor or across floors.

One door: the ways in (``ui/``, ``api/``, ``cli/``) reach the stages only through the service layer
(:class:`AppService` and the names ``services/`` re-exports): they import ``services`` and ``core`` (and a way in
above them: ``cli/`` starts ``ui/`` and ``api/``), never a stage (``ingest``, ``retrieval``, ``router``, ``app``), so
/v1, MCP, Gradio and ``mgrag`` behave the same because they run the same code.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLOORS = ("core", "ingest", "retrieval", "router", "app", "services", "api", "ui", "cli")


def project_imports(path: Path, package: str = "") -> set[str]:
    """The project modules ``path`` imports (relative imports resolved against ``package``)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(p for p in parts + [base] if p)
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        out |= {n for n in names if n.split(".")[0] in FLOORS}
    return out


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for floor in FLOORS for p in sorted((ROOT / floor).rglob("*.py"))}


def resolve(name: str, known: dict[str, Path]) -> str | None:
    """``from a.b import c`` names a.b.c: a module when there is one, else the name c inside module a.b."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def packages_run(target: str, importer: str, known: dict[str, Path]) -> set[str]:
    """The packages whose ``__init__`` importing ``target`` from ``importer`` executes: ``target``'s ancestors that
    are not ``importer``'s own (those are already running)."""
    parts = target.split(".")
    ancestors = {".".join(parts[:i]) for i in range(1, len(parts))}
    mine = {".".join(importer.split(".")[:i]) for i in range(1, len(importer.split(".")) + 1)}
    return {a for a in ancestors - mine if a in known}


def graph() -> dict[str, set[str]]:
    known = modules()
    out = {}
    for name, path in known.items():
        targets = {t for i in project_imports(path, package_of(path)) if (t := resolve(i, known)) and t != name}
        out[name] = targets | {p for t in targets for p in packages_run(t, name, known)}
    return out


@pytest.mark.parametrize("floor", FLOORS)
def test_no_floor_imports_one_above_it(floor):
    files = sorted((ROOT / floor).rglob("*.py"))
    assert files, floor
    below = set(FLOORS[: FLOORS.index(floor) + 1])
    bad = [f"{f.relative_to(ROOT)} imports {imp}" for f in files for imp in sorted(project_imports(f))
           if imp.split(".")[0] not in below]
    assert not bad, "\n".join(bad)


DOORS = ("api", "ui", "cli")  # the ways in, held to the one door
STAGES = ("ingest", "retrieval", "router", "app")  # what a door reaches only through services/


def package_of(path: Path) -> str:
    """The package a relative import in ``path`` starts from ("" outside the project)."""
    if not path.is_relative_to(ROOT):
        return ""
    name = module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def door_violations(files: list[Path]) -> list[str]:
    """``path imports module`` for each stage module a door file imports (anywhere in it, inside functions too;
    ``from m import name`` counts as importing ``m``)."""
    known, out = modules(), []
    for f in files:
        imps = {resolve(i, known) or i for i in project_imports(f, package_of(f)) if i.split(".")[0] in STAGES}
        out += [f"{f.relative_to(ROOT) if f.is_relative_to(ROOT) else f} imports {i}" for i in sorted(imps)]
    return out


def test_the_doors_go_through_the_services():
    files = [p for door in DOORS for p in sorted((ROOT / door).rglob("*.py"))]
    assert files
    bad = door_violations(files)
    assert not bad, ("ui/, api/ and cli/ import only services and core (one door: what they need of a stage, a "
                     "services module re-exports or an AppService method does):\n" + "\n".join(bad))


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif nxt not in index:
                index[nxt] = low[nxt] = counter[0]
                counter[0] += 1
                stack.append(nxt)
                on.add(nxt)
                work.append((nxt, iter(sorted(edges.get(nxt, ())))))
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
    return out


def test_no_import_circle():
    edges = graph()
    # a package's __init__ that re-exports its modules is part of them, not a circle through them
    for name in edges:
        edges[name] = {t for t in edges[name] if not name.startswith(t + ".")}
    found = cycles(edges)
    assert not found, "\n".join(" ↔ ".join(c) for c in found)


def test_the_checker_sees_an_import_that_points_up(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from app.context import AppContext\n    from cli import main\n")
    assert project_imports(f) >= {"app.context", "cli.main"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    # importing a.pkg.mod from outside runs a.pkg's __init__ first: a circle through it is a circle
    known = {"app.x": Path("x"), "app.pkg": Path("p"), "app.pkg.mod": Path("m")}
    assert packages_run("app.pkg.mod", "app.x", known) == {"app.pkg"}
    assert packages_run("app.pkg.mod", "app.pkg.other", known) == set()


def test_the_door_check_sees_a_stage_imported_from_a_door(tmp_path):
    f = tmp_path / "door.py"
    f.write_text("from services.service import AppService\nfrom core import components\n\n"
                 "def f():\n    from retrieval.search import retrieve\n    import ingest.jobs.queue\n")
    assert door_violations([f]) == [f"{f} imports ingest.jobs.queue", f"{f} imports retrieval.search"]
    ok = tmp_path / "ok.py"
    ok.write_text("from services.chat import EmptyIndexError\nfrom core.settings import Settings\n")
    assert door_violations([ok]) == []


def joined_pairs() -> set[tuple[str, str]]:
    """The pairs of floors (importer, imported) that some import joins, a floor with itself included: of the 45 the
    nine floors allow (a floor imports itself and those below it), fewer is a narrower house (issue 48)."""
    return {(a.split(".")[0], b.split(".")[0]) for a, targets in graph().items() for b in targets}


def test_contributing_states_the_joined_pairs():
    n = len(joined_pairs())
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert f"{n} of the 45" in text, f"CONTRIBUTING.md must say the imports join {n} of the 45 pairs of floors"

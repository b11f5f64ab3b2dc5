"""The index of the benchmark scripts cannot drift (issue 36): bench/README.md has one row per script under bench/
(not common.py, docs_check.py or the archive) and names no other; a section a script writes exists in BENCHMARKS.md
and is named in its row; the `make` column says what the Makefile runs; bench/archive/README.md has a row per
archived script, and no archived script writes a section."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = {"common.py", "docs_check.py"}  # shared code and the docs check: described below the table, not in it
ROW = re.compile(r"^\| `(\w+\.py)` \|(.*)$", re.M)
WRITERS = {"write_section", "publish_section"}


def index_rows(readme: Path) -> dict[str, str]:
    """script name -> the rest of its row (every cell after the first), from the index's table."""
    rows: dict[str, str] = {}
    for m in ROW.finditer(readme.read_text(encoding="utf-8")):
        assert m.group(1) not in rows, f"{readme}: {m.group(1)} has two rows"
        rows[m.group(1)] = m.group(2)
    return rows


def sections_written(script: Path) -> set[str]:
    """The BENCHMARKS.md markers a script writes: the first argument of each write_section/publish_section call, a
    string or a module-level name bound to one; anything else is reported as itself, so the index test fails."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
              and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
              for t in n.targets if isinstance(t, ast.Name)}
    out = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        f = node.func
        if (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)) not in WRITERS:
            continue
        a = node.args[0]
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            out.add(a.value)
        elif isinstance(a, ast.Name) and a.id in consts:
            out.add(consts[a.id])
        else:
            out.add(f"<not a constant: {ast.unparse(a)}>")
    return out


def make_scripts(root: Path, target: str) -> set[str]:
    """The bench/*.py scripts a Makefile target's recipe runs."""
    lines = (root / "Makefile").read_text(encoding="utf-8").splitlines()
    i = next(k for k, line in enumerate(lines) if re.match(rf"{re.escape(target)}\s*:(?!=)", line))
    recipe = []
    for line in lines[i + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line)
    return set(re.findall(r"\bbench/(\w+\.py)\b", "\n".join(recipe)))


def index_problems(root: Path) -> list[str]:
    bench = root / "bench"
    scripts = {p.name for p in bench.glob("*.py")} - SHARED
    rows = index_rows(bench / "README.md")
    markers = set(re.findall(r"<!-- ([\w-]+):start -->", (root / "BENCHMARKS.md").read_text(encoding="utf-8")))
    problems = [f"bench/{s}: no row in bench/README.md" for s in sorted(scripts - rows.keys())]
    problems += [f"bench/README.md: a row for {s}, which is not a script under bench/" for s in sorted(rows.keys()
                                                                                                    - scripts)]
    for s in sorted(scripts & rows.keys()):
        for m in sorted(sections_written(bench / s)):
            if m not in markers:
                problems.append(f"bench/{s} writes the section {m!r}, which BENCHMARKS.md does not have")
            if f"`{m}`" not in rows[s]:
                problems.append(f"bench/README.md: the row of {s} does not name the section it writes, `{m}`")
    for target in ("bench", "bench-extra"):
        said = {s for s, row in rows.items() if f"`make {target}`" in row.rsplit("|", 2)[-2]}
        run = make_scripts(root, target)
        problems += [f"bench/README.md: the row of {s} says `make {target}` runs it; the Makefile does not"
                     for s in sorted(said - run)]
        problems += [f"bench/README.md: `make {target}` runs {s}; its row does not say so" for s in sorted(run - said)]
    archive = bench / "archive"
    archived = {p.name for p in archive.glob("*.py")}
    described = index_rows(archive / "README.md") if (archive / "README.md").exists() else {}
    problems += [f"bench/archive/{s}: no row in bench/archive/README.md" for s in sorted(archived - described.keys())]
    problems += [f"bench/archive/README.md: a row for {s}, which is not in bench/archive/"
                 for s in sorted(described.keys() - archived)]
    problems += [f"bench/archive/{s} writes the section {m!r}: an archived script writes none"
                 for s in sorted(archived) for m in sorted(sections_written(archive / s))]
    return problems


def test_the_index_matches_the_scripts():
    assert index_problems(ROOT) == []


def test_every_script_has_a_row_and_every_row_a_script():
    scripts = {p.name for p in (ROOT / "bench").glob("*.py")} - SHARED
    rows = index_rows(ROOT / "bench" / "README.md")
    assert scripts and rows.keys() == scripts
    assert all((ROOT / "bench" / s).is_file() for s in rows)


def _tree(tmp_path: Path) -> Path:
    bench = tmp_path / "bench"
    (bench / "archive").mkdir(parents=True)
    (tmp_path / "BENCHMARKS.md").write_text("# Benchmarks\n\n<!-- kept:start -->\nx\n<!-- kept:end -->\n")
    (tmp_path / "Makefile").write_text("bench:\n\tmgrag bench all\n\nbench-extra:\n\tpython bench/a.py\n"
                                       "\tpython bench/c.py\n\nclean:\n\trm -rf data\n")
    (bench / "common.py").write_text("")
    (bench / "a.py").write_text('SECTION = "kept"\npublish_section(SECTION, "md")\n')
    (bench / "b.py").write_text('write_section("gone", "md")\n')
    (bench / "c.py").write_text("")
    (bench / "archive" / "old.py").write_text('B.write_section("kept", "md")\n')
    (bench / "README.md").write_text(
        "| script | what | make |\n|---|---|---|\n"
        "| `a.py` | writes `kept` | `make bench-extra` |\n"
        "| `c.py` | nothing | – |\n"
        "| `z.py` | a script that is not there | – |\n")
    (bench / "archive" / "README.md").write_text("| script | what |\n|---|---|\n| `older.py` | gone |\n")
    return tmp_path


def test_the_check_sees_drift(tmp_path):
    assert index_problems(_tree(tmp_path)) == [
        "bench/b.py: no row in bench/README.md",
        "bench/README.md: a row for z.py, which is not a script under bench/",
        "bench/README.md: `make bench-extra` runs c.py; its row does not say so",
        "bench/archive/old.py: no row in bench/archive/README.md",
        "bench/archive/README.md: a row for older.py, which is not in bench/archive/",
        "bench/archive/old.py writes the section 'kept': an archived script writes none",
    ]


def test_a_section_that_does_not_exist_is_found(tmp_path):
    root = _tree(tmp_path)
    (root / "bench" / "README.md").write_text(
        "| script | what | make |\n|---|---|---|\n"
        "| `a.py` | a row that forgets its section | `make bench-extra` |\n"
        "| `b.py` | writes `gone` | – |\n"
        "| `c.py` | nothing | `make bench-extra` |\n")
    (root / "bench" / "archive" / "old.py").write_text("")
    (root / "bench" / "archive" / "README.md").write_text("| script | what |\n|---|---|\n| `old.py` | old |\n")
    assert index_problems(root) == [
        "bench/README.md: the row of a.py does not name the section it writes, `kept`",
        "bench/b.py writes the section 'gone', which BENCHMARKS.md does not have",
    ]


def test_a_section_name_that_is_not_a_constant_is_reported(tmp_path):
    script = tmp_path / "x.py"
    script.write_text('name = f"retrieval-{s}"\nwrite_section(name, "md")\nB.write_section("plain", "md")\n')
    assert sections_written(script) == {"plain", "<not a constant: name>"}

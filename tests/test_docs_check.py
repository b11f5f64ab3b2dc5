"""`make docs-check` (bench/docs_check.py): passes on the repo, and fails on a doc that drifts from the code or the
results: a wrong figure, a missing section, an unknown flag or sub-command, a stale generated section or settings
table. Each failure is made in a copy of the docs, never in the checkout."""
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench import docs_check as D  # noqa: E402


@pytest.fixture
def root(tmp_path):
    for name in ("README.md", "BENCHMARKS.md", "Makefile"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copytree(ROOT / "bench", tmp_path / "bench", ignore=shutil.ignore_patterns("plots", "__pycache__", "data"))
    return tmp_path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n" + text + "\n", encoding="utf-8")


def test_the_repo_passes():
    assert D.run(ROOT) == []


def test_the_copy_passes(root):
    assert D.run(root) == []


def test_a_wrong_figure_fails(root):
    # the README's held-out chroma figure for uniform weights is 0.881 in bench/results/router_eval.json
    edit(root / "README.md", "DCG@10 **0.881**<!-- check:", "DCG@10 **0.891**<!-- check:")
    problems = D.run(root)
    assert len(problems) == 1 and "should be 0.881" in problems[0] and problems[0].startswith("README.md:")


def test_a_figure_whose_results_changed_fails(root):
    res = root / "bench" / "results" / "answers.json"
    edit(res, '"abstain_unanswerable": 1.0', '"abstain_unanswerable": 0.5')  # qwen-500, the first candidate
    problems = D.run(root)
    assert any("should be 50%" in p for p in problems)
    assert any("section 'answers' differs" in p for p in problems)  # the generated table too


def test_a_missing_section_fails(root):
    append(root / "README.md", 'Measured in BENCHMARKS.md "Router shoot-out" and BENCHMARKS.md no-such-marker.')
    append(root / "docs" / "sizing.md", "See [the table](BENCHMARKS.md#not-a-heading).")
    problems = D.run(root)
    assert any('"Router shoot-out": no heading begins so' in p for p in problems)
    assert any("no-such-marker: no such section marker" in p for p in problems)
    assert any("BENCHMARKS.md#not-a-heading: no such heading" in p for p in problems)
    assert len(problems) == 3


def test_a_missing_generated_section_fails(root):
    edit(root / "BENCHMARKS.md", "<!-- router:start -->", "<!-- router-old:start -->")
    assert any("section <!-- router:start/end --> is missing" in p for p in D.run(root))


def test_an_unknown_flag_or_command_fails(root):
    append(root / "README.md", "\n".join([
        "```bash",
        ".venv/bin/mgrag ask --no-such-flag 3 \"a question\"",
        "mgrag ask --backend gpt-5 \"a question\"",
        "MGRAG_X=1 mgrag frobnicate",
        ".venv/bin/python bench/router_eval.py --data-dir data/router-dev",
        ".venv/bin/python bench/ingest_queue_bench.py nonsense",
        "python bench/no_such_script.py",
        "make bench-everything",
        "```",
        "Also `mgrag bench answers --report --no-such-option`.",
    ]))
    problems = D.run(root)
    want = ["mgrag ask: no option --no-such-flag", "mgrag ask --backend: 'gpt-5' is not one of",
            "mgrag: no sub-command 'frobnicate'", "bench/router_eval.py: no option --data-dir",
            "bench/ingest_queue_bench.py: 'nonsense' is not one of", "bench/no_such_script.py: no such script",
            "make: no target 'bench-everything'", "mgrag bench answers: no option --no-such-option"]
    for w in want:
        assert any(w in p for p in problems), (w, problems)
    assert len(problems) == len(want)


def test_known_commands_pass(root):
    append(root / "README.md", "\n".join([
        "```bash",
        "printf 'q\\n' | .venv/bin/mgrag --data-dir d chat --json   # a comment --not-a-flag",
        ".venv/bin/mgrag users add NAME && make docs-check",
        ".venv/bin/python bench/store_bench.py ingest --parallel",
        ".venv/bin/python bench/router_eval.py --render-only --no-write",
        "python bench/similarity_probe.py --train T.json --dev D.json --top-k 5",  # --train/--dev: bench/common.py
        "```",
    ]))
    assert D.run(root) == []
    append(root / "README.md", "\n```bash\npython bench/similarity_probe.py --tran T.json\n```\n")
    assert any("bench/similarity_probe.py: no option --tran" in p for p in D.run(root))  # still checked


def test_a_stale_generated_section_and_settings_table_fail_and_fix(root):
    edit(root / "BENCHMARKS.md", "Routing cost (", "Routing cost, hand-edited (")
    edit(root / "README.md", "| `theta` | `MGRAG_THETA` | `300` |", "| `theta` | `MGRAG_THETA` | `200` |")
    problems = D.run(root)
    assert any("section 'router' differs" in p for p in problems)
    assert any("settings table differs from core.settings.settings_table()" in p for p in problems)
    assert len(problems) == 2
    assert D.run(root, fix=True) == []
    assert D.run(root) == []
    assert (root / "BENCHMARKS.md").read_text() == (ROOT / "BENCHMARKS.md").read_text()
    assert (root / "README.md").read_text() == (ROOT / "README.md").read_text()


def test_bench_extra_section_follows_the_makefile(root):
    edit(root / "Makefile", "\t$(BIN)/python bench/store_bench.py ingest\n",
         "\t$(BIN)/python bench/store_bench.py ingest\n\t$(BIN)/python bench/source_floor.py\n")
    assert any("section 'bench-extra' differs" in p for p in D.run(root))


def test_select_and_evaluate():
    data = {"a": {"x 1": {"v": 1.0}, "x 2": {"v": 3.0}, "y/z": {"v": 5}},
            "rows": [{"ok": True, "s": 0.3}, {"ok": False, "s": 0.5}, {"ok": False, "s": 0.2}]}
    assert D.evaluate(data, "a/y~1z/v") == 5
    assert D.evaluate(data, "max(a/x */v)") == 3.0
    assert D.evaluate(data, "count(rows/*[ok=false][s<0.4])") == 1
    assert D.evaluate(data, "diff(a/x 2/v; a/x 1/v)") == 2.0
    with pytest.raises(KeyError):
        D.evaluate(data, "a/x */v")  # two values without an aggregate

"""`make docs-check`: the docs agree with the code and with the results under ``bench/results/``.

    .venv/bin/python bench/docs_check.py          # check; exit 1 with one line per problem
    .venv/bin/python bench/docs_check.py --fix    # rewrite the generated parts, then check the rest

Cheap (no model is loaded, no benchmark is run; about a second). What it checks in README.md, BENCHMARKS.md,
docs/*.md and the index of the benchmark scripts (bench/README.md, bench/archive/README.md):

1. **Generated parts equal their generator's output.** Sections between ``<!-- name:start -->`` and
   ``<!-- name:end -->`` whose generator is listed in :data:`SECTIONS` are rendered again from their results file
   (the same render function the benchmark script uses) and must be identical; so must the README's settings
   table (``core.settings.settings_table()``). ``--fix`` writes them.
2. **Every annotated figure comes from a results file.** A figure in the prose is followed by
   ``<!-- check: bench/results/FILE.json EXPR [*SCALE] FMT -->``: the value EXPR picks, times SCALE, formatted
   with FMT (a Python format spec: ``.3f``, ``d``, ``.1%``, ``+.1f`` …), must occur as a number in the same line
   before the comment. EXPR is a path of keys separated by ``/`` (``~1`` for a ``/`` inside a key); a key may be a
   glob (``router: *``) and may end in filters (``*[answerable=false][context_score<0.4]``); a path may be
   wrapped in ``count(…)``, ``min(…)``, ``max(…)``, ``sum(…)`` or ``mean(…)``, and ``diff(A; B)`` is A − B.
3. **Every reference to a BENCHMARKS.md section exists**: a quoted name right after ``BENCHMARKS.md`` (``"Vector
   store"``) must begin a heading of BENCHMARKS.md, a bare ``lg-variants`` must be a section marker, and a link
   ``BENCHMARKS.md#anchor`` must be a heading's anchor.
4. **Every command a doc shows exists**: ``mgrag …`` (sub-commands, options and their choices, against the real
   argparse parser, without running it), ``python bench/x.py …`` (the script exists; its options and sub-commands,
   read from its source), ``make target`` (a target of the Makefile).
"""
from __future__ import annotations

import argparse
import ast
import fnmatch
import functools
import json
import math
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def doc_files(root: Path) -> list[Path]:
    return [p for p in [root / "README.md", root / "BENCHMARKS.md", *sorted((root / "docs").glob("*.md")),
                        root / "bench" / "README.md", root / "bench" / "archive" / "README.md"] if p.exists()]


# -- 1. generated parts --------------------------------------------------------------------------------------------

def _results(root: Path, name: str) -> dict:
    return json.loads((root / "bench" / "results" / name).read_text(encoding="utf-8"))


def _router(root: Path) -> str:
    from bench import router_eval

    return router_eval.render(_results(root, "router_eval.json"))


def _lg_variants(root: Path) -> str:
    from bench import lg_variants

    return lg_variants.render(_results(root, "lg_variants.json"))


def _answers(root: Path) -> str:
    from app.evaluation.answers import answers_section

    res = _results(root, "answers.json")
    return answers_section(res, res["command"])


def _filings(root: Path) -> str:
    from app.evaluation.filings import filings_table

    res = _results(root, "filings_answers.json")  # as `mgrag bench answers --filings DOCS --report` writes it
    return f"`{res['command']}` ({res['chunker']} first pass; {res['machine'].get('cpu', '')}):\n\n{filings_table(res)}"


def _qa(root: Path) -> str:
    from app.evaluation.cli import qa_section

    res = _results(root, "qa_longbench_sample.json")  # as `mgrag bench report` writes it
    cmd = (f"mgrag bench qa --set ../shared/bench/longbench_sample --profile "
           f"{res.get('subset', '').split(' profile')[0] or 'full'} --chunkers {','.join(res['chunkers'])} "
           f"--backend {res['synthesizer']}")
    return qa_section(res, cmd, res.get("subset", ""))


def _load(root: Path) -> str:
    from bench import load_test

    return load_test.report(_results(root, "load_test.json"))


def _chroma_abstention(root: Path) -> str:
    from bench import chroma_abstention

    return chroma_abstention.render(_results(root, "chroma_abstention.json")["rows"],
                                    _results(root, "answers.json")["candidates"]["extractive"]["rows"])


def _level_scoring(root: Path) -> str:
    from bench import level_scoring

    return level_scoring.render(_results(root, "level_scoring.json"))


def _answers_qa(root: Path) -> str:
    if str(root / "bench") not in sys.path:  # answers_qa imports its sibling scripts as top-level modules
        sys.path.insert(0, str(root / "bench"))
    import answers_qa

    return answers_qa.render(root)


def _bench_extra(root: Path) -> str:
    """What `make bench-extra` runs, read from the Makefile's recipe."""
    cmds = [line.strip().replace("$(BIN)/", ".venv/bin/") for line in make_recipe(root, "bench-extra")]
    return "`make bench-extra` runs, in this order:\n\n```\n" + "\n".join(cmds) + "\n```"


# BENCHMARKS.md section -> its generator (the render function of the script that writes it, fed its results file)
SECTIONS: dict[str, Callable[[Path], str]] = {
    "router": _router, "lg-variants": _lg_variants, "answers": _answers, "filings_answers": _filings,
    "qa-longbench_sample": _qa, "load": _load, "chroma-abstention": _chroma_abstention, "bench-extra": _bench_extra,
    "level-scoring": _level_scoring, "answers-qa": _answers_qa,
}
SETTINGS_HEADER = "| concern (TOML table) | setting | env var | default | meaning |"


def section_span(text: str, name: str) -> tuple[int, int] | None:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    i = text.find(start)
    j = text.find(end, i + len(start)) if i >= 0 else -1
    return (i + len(start), j) if i >= 0 and j >= 0 else None


def settings_span(text: str) -> tuple[int, int] | None:
    i = text.find(SETTINGS_HEADER)
    if i < 0:
        return None
    j = i
    while j < len(text) and text.startswith("|", j):
        k = text.find("\n", j)
        j = len(text) if k < 0 else k + 1
    return i, j - 1 if text[j - 1:j] == "\n" else j


def check_generated(root: Path, fix: bool = False) -> list[str]:
    problems = []
    bench_md, readme = root / "BENCHMARKS.md", root / "README.md"
    text = bench_md.read_text(encoding="utf-8")
    new = text
    for name, gen in SECTIONS.items():
        span = section_span(new, name)
        if span is None:
            problems.append(f"BENCHMARKS.md: section <!-- {name}:start/end --> is missing")
            continue
        want = "\n" + gen(root).strip() + "\n"
        if new[span[0]:span[1]] != want:
            problems.append(f"BENCHMARKS.md: section '{name}' differs from what its results file renders "
                            f"(bench/docs_check.py --fix rewrites it)")
            new = new[:span[0]] + want + new[span[1]:]
    if fix and new != text:
        bench_md.write_text(new, encoding="utf-8")
    from core.settings import settings_table

    text = readme.read_text(encoding="utf-8")
    span = settings_span(text)
    if span is None:
        problems.append(f"README.md: the settings table ('{SETTINGS_HEADER}') is missing")
    elif text[span[0]:span[1]] != settings_table():
        problems.append("README.md: the settings table differs from core.settings.settings_table() "
                        "(bench/docs_check.py --fix rewrites it)")
        if fix:
            readme.write_text(text[:span[0]] + settings_table() + text[span[1]:], encoding="utf-8")
    return [] if fix else problems


# -- 2. figures annotated with their results file -----------------------------------------------------------------

CHECK = re.compile(r"<!-- check: (.+?) -->")
COMMENT = re.compile(r"<!--.*?-->")
_FILTER = re.compile(r"\[([^\[\]=<>!]+?)(<=|>=|!=|=|<|>)([^\[\]]+)\]$")
_OPS = {"=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
_AGG = {"count": len, "min": min, "max": max, "sum": sum, "mean": lambda xs: sum(xs) / len(xs)}


def _literal(s: str):
    try:
        return json.loads(s)
    except ValueError:
        return s


def select(data, path: str) -> list:
    """Values at ``path`` (see the module doc); a glob or filter makes several."""
    vals = [data]
    for seg in path.split("/"):
        filters = []
        while (m := _FILTER.search(seg)):
            filters.insert(0, (m.group(1).strip(), _OPS[m.group(2)], _literal(m.group(3).strip())))
            seg = seg[:m.start()]
        key, out = seg.replace("~1", "/").replace("~0", "~"), []
        for v in vals:
            if isinstance(v, list):
                items = v if key == "*" else [v[int(key)]]
            elif isinstance(v, dict):
                items = [x for k, x in v.items() if fnmatch.fnmatchcase(k, key)] if any(c in key for c in "*?") \
                    else [v[key]]
            else:
                raise KeyError(f"{key!r}: not inside a list or object")
            out += [x for x in items if all(isinstance(x, dict) and f in x and op(x[f], lit) for f, op, lit in filters)]
        vals = out
    return vals


def evaluate(data, expr: str):
    m = re.fullmatch(r"diff\((.+);(.+)\)", expr.strip())
    if m:
        return evaluate(data, m.group(1)) - evaluate(data, m.group(2))
    m = re.fullmatch(r"(count|min|max|sum|mean)\((.+)\)", expr.strip())
    if m:
        return _AGG[m.group(1)](select(data, m.group(2)))
    vals = select(data, expr.strip())
    if len(vals) != 1:
        raise KeyError(f"{expr!r} picks {len(vals)} values; wrap it in count/min/max/sum/mean")
    return vals[0]


def _number_in(value: str, text: str) -> bool:
    text = text.replace("\u2212", "-").replace("\u2009", "")
    for m in re.finditer(re.escape(value), text):
        before, after = text[m.start() - 1:m.start()], text[m.end():m.end() + 2]
        if not (before.isdigit() or before == "." or (before != "" and before in "+-" and value[0] not in "+-")
                or after[:1].isdigit() or re.match(r"[.,]\d", after)):
            return True
    return False


def parse_check(spec: str) -> tuple[str, str, float, str]:
    parts = spec.split()
    if len(parts) < 3:
        raise ValueError("needs FILE EXPR FMT")
    file, fmt, rest = parts[0], parts[-1], parts[1:-1]
    scale = 1.0
    if len(rest) > 1 and re.fullmatch(r"\*[0-9.e+-]+", rest[-1]):
        scale, rest = float(rest[-1][1:]), rest[:-1]
    return file, " ".join(rest), scale, fmt


def check_claims(root: Path, path: Path) -> list[str]:
    problems, cache = [], {}
    rel = path.relative_to(root) if path.is_relative_to(root) else path
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for m in CHECK.finditer(line):
            where = f"{rel}:{n}"
            try:
                file, expr, scale, fmt = parse_check(m.group(1))
                if file not in cache:
                    cache[file] = json.loads((root / file).read_text(encoding="utf-8"))
                value = evaluate(cache[file], expr)
                value = value * scale if scale != 1.0 else value
                if isinstance(value, float) and fmt.endswith("d"):
                    value = int(round(value)) if math.isclose(value, round(value)) else value
                shown = format(value, fmt)
            except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
                problems.append(f"{where}: bad check '{m.group(1)}': {e}")
                continue
            if not _number_in(shown, COMMENT.sub("", line[:m.start()])):
                problems.append(f"{where}: the figure before the check should be {shown} ({file} {expr})")
    return problems


# -- 3. references to BENCHMARKS.md sections ----------------------------------------------------------------------

def _slug(heading: str) -> str:
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return s.replace(" ", "-")


def bench_targets(root: Path) -> tuple[list[str], set[str], set[str]]:
    text = (root / "BENCHMARKS.md").read_text(encoding="utf-8")
    heads = [h.strip() for h in re.findall(r"^#{1,6} (.+)$", text, re.M)]
    markers = set(re.findall(r"<!-- ([\w-]+):start -->", text))
    return heads, markers, {_slug(h) for h in heads}


_QUOTED = r"(?:\"[^\"]+\"|'[^']+')"
_REF = re.compile(rf"BENCHMARKS\.md`?(?:#([\w-]+)|[ ,]*\(?({_QUOTED}(?:\s*(?:and|,)\s*{_QUOTED})*)"
                  r"| ([a-z]+(?:-[a-z]+)+)\b)")


def check_refs(root: Path, path: Path) -> list[str]:
    heads, markers, anchors = bench_targets(root)
    low = [re.sub(r"\s+", " ", h.replace("`", "")).lower() for h in heads]
    rel = path.relative_to(root) if path.is_relative_to(root) else path
    text = path.read_text(encoding="utf-8")
    problems = []
    for m in _REF.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        if m.group(1):
            if m.group(1) not in anchors:
                problems.append(f"{rel}:{line}: BENCHMARKS.md#{m.group(1)}: no such heading")
            continue
        if m.group(3):  # a bare marker name
            if m.group(3) not in markers:
                problems.append(f"{rel}:{line}: BENCHMARKS.md {m.group(3)}: no such section marker")
            continue
        names = re.findall(r"\"([^\"]+)\"|'([^']+)'", m.group(2))
        for name in (a or b for a, b in names):
            key = re.sub(r"\s+", " ", name).lower()
            if not any(h.startswith(key) for h in low) and name not in markers:
                problems.append(f"{rel}:{line}: BENCHMARKS.md \"{name}\": no heading begins so")
    return problems


# -- 4. commands --------------------------------------------------------------------------------------------------

def make_targets(root: Path) -> set[str]:
    text = (root / "Makefile").read_text(encoding="utf-8")
    return {t for line in re.findall(r"^([\w.\- ]+):(?!=)", text, re.M) for t in line.split()}


def make_recipe(root: Path, target: str) -> list[str]:
    lines = (root / "Makefile").read_text(encoding="utf-8").splitlines()
    i = next(k for k, line in enumerate(lines) if re.match(rf"{re.escape(target)}\s*:(?!=)", line))
    out = []
    for line in lines[i + 1:]:
        if not line.startswith("\t"):
            break
        out.append(line[1:])
    return out


def commands_in(text: str) -> list[tuple[int, str]]:
    """(line, command) for every line of a fenced block and every inline code span."""
    out, fence = [], None
    lines = text.splitlines()
    body = []
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fence = None if fence is not None else n
            body.append("")
            continue
        if fence is not None:
            out.append((n, line))
            body.append("")
        else:
            body.append(line)
    prose = "\n".join(body)
    for m in re.finditer(r"`([^`]+)`", prose):
        out.append((prose.count("\n", 0, m.start()) + 1, " ".join(m.group(1).split())))
    joined, keep = [], ""
    for n, cmd in sorted(out):
        if keep:
            cmd, keep = keep + " " + cmd, ""
        if cmd.rstrip().endswith("\\"):
            keep = cmd.rstrip()[:-1]
            continue
        joined.append((n, cmd))
    return joined


def _segments(cmd: str) -> list[list[str]]:
    try:
        lex = shlex.shlex(cmd, posix=True, punctuation_chars="|&;")
        lex.whitespace_split, lex.commenters = True, "#"
        tokens = list(lex)
    except ValueError:
        return []
    segs, cur = [], []
    for t in tokens:
        if t and set(t) <= set("|&;"):
            segs.append(cur)
            cur = []
        else:
            cur.append(t)
    segs.append(cur)
    out = []
    for s in segs:
        while s and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", s[0]):
            s = s[1:]
        if s:
            out.append(s)
    return out


def _mgrag_problems(parser: argparse.ArgumentParser, args: list[str]) -> list[str]:
    """Sub-commands, options and option choices of ``args`` against ``parser`` (nothing is run)."""
    problems, positional = [], None
    i = 0
    while i < len(args):
        tok = args[i]
        i += 1
        if tok.startswith("--"):
            flag, _, val = tok.partition("=")
            act = parser._option_string_actions.get(flag)
            if act is None:
                problems.append(f"{parser.prog}: no option {flag}")
                continue
            if act.nargs != 0 and not val:
                val = args[i] if i < len(args) else ""
                i += 1
            if act.choices and val and val not in act.choices:
                problems.append(f"{parser.prog} {flag}: {val!r} is not one of {', '.join(map(str, act.choices))}")
            continue
        if positional is None:
            positional = [a for a in parser._actions if not a.option_strings]
        act = positional.pop(0) if positional else None
        if isinstance(act, argparse._SubParsersAction):
            if tok not in act.choices:
                return problems + [f"{parser.prog}: no sub-command {tok!r}"]
            return problems + _mgrag_problems(act.choices[tok], args[i:])
        if act is not None and act.choices and tok not in act.choices:
            problems.append(f"{parser.prog}: {tok!r} is not one of {', '.join(map(str, act.choices))}")
        if act is not None and act.nargs in ("*", "+"):
            positional.insert(0, act)
    return problems


@functools.cache
def _shared_parsers(bench: Path) -> dict[str, set[str]]:
    """The functions of ``bench/common.py`` that add options to a parser, and the options each adds."""
    common = bench / "common.py"
    if not common.is_file():
        return {}
    out: dict[str, set[str]] = {}
    for fn in ast.parse(common.read_text(encoding="utf-8")).body:
        if isinstance(fn, ast.FunctionDef):
            opts = {a.value for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and n.func.attr == "add_argument" for a in n.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")}
            if opts:
                out[fn.name] = opts
    return out


def script_interface(path: Path) -> tuple[set[str], set[str], set[str], bool]:
    """(options, options that take no value, words a positional may be, whether it uses argparse), from source."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    flags, bare, words, uses = set(), set(), set(), False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            lits = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            kw = {k.arg: k.value for k in node.keywords}
            if node.func.attr == "add_argument":
                uses = True
                opts = [x for x in lits if x.startswith("-")]
                flags.update(opts)
                act = kw.get("action")
                if isinstance(act, ast.Constant) and act.value in ("store_true", "store_false", "count"):
                    bare.update(opts)
                if not opts and isinstance(kw.get("choices"), (ast.Tuple, ast.List)):
                    words.update(e.value for e in kw["choices"].elts if isinstance(e, ast.Constant))
            elif node.func.attr == "add_parser" and lits:
                words.add(lits[0])
            elif node.func.attr in _shared_parsers(path.parent):  # B.fit_rows_parser(...): the options it adds
                uses = True
                flags.update(_shared_parsers(path.parent)[node.func.attr])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("--"):
            flags.add(node.value) if not uses else None
    if not uses:  # sys.argv read by hand: every "--x" literal is an option without a value, every literal a word
        bare = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                and n.value.startswith("--")}
        flags = set(bare)
        words = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return flags, bare, words, uses


def _script_problems(root: Path, script: str, args: list[str]) -> list[str]:
    path = root / script
    if not path.is_file():
        return [f"{script}: no such script"]
    flags, bare, words, _ = script_interface(path)
    problems, i, first = [], 0, True
    while i < len(args):
        tok = args[i]
        i += 1
        if tok.startswith("-"):
            flag = tok.partition("=")[0]
            if flag not in flags:
                problems.append(f"{script}: no option {flag}")
            elif flag not in bare and "=" not in tok:
                i += 1
            continue
        if first and words and tok not in words:
            problems.append(f"{script}: {tok!r} is not one of its sub-commands ({', '.join(sorted(words)[:8])})")
        first = False
    return problems


def check_commands(root: Path, path: Path) -> list[str]:
    from cli.main import build_parser

    parser, targets = build_parser(), make_targets(root)
    rel = path.relative_to(root) if path.is_relative_to(root) else path
    problems = []
    for n, cmd in commands_in(path.read_text(encoding="utf-8")):
        for seg in _segments(cmd):
            prog, args = seg[0], seg[1:]
            found = []
            if prog == "mgrag" or prog.endswith("/mgrag"):
                found = _mgrag_problems(parser, args)
            elif re.fullmatch(r"(.*/)?python3?", prog) and args and args[0].startswith("bench/"):
                found = _script_problems(root, args[0], args[1:])
            elif prog == "make":
                found = [f"make: no target {t!r}" for t in args if not t.startswith("-") and "=" not in t
                         and t not in targets]
            problems += [f"{rel}:{n}: {p}" for p in found]
    return problems


def run(root: Path = ROOT, fix: bool = False, docs: list[Path] | None = None) -> list[str]:
    problems = check_generated(root, fix=fix)
    for path in docs if docs is not None else doc_files(root):
        problems += check_claims(root, path) + check_refs(root, path) + check_commands(root, path)
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fix", action="store_true", help="rewrite the generated sections and the settings table first")
    ap.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    problems = run(args.root.resolve(), fix=args.fix)
    for p in problems:
        print(p)
    print(f"docs-check: {len(problems)} problem(s)" if problems else "docs-check: the docs agree with the code and "
          "bench/results", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

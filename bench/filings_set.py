"""Check the answer dev set ``bench/data/filings_qa.jsonl`` against its PDFs.

The set's documents come from docugami/KG-RAG-datasets (MIT), one folder per collection under the repository
root: ``sec-10-q/data/v1/docs`` (SEC 10-Qs; the default when a row has no ``collection``),
``ntsb-aviation-incident-accident-reports/data/v1/docs`` and ``us-fed-agency-reports/data/v1/docs``. Each PDF is
read the way the product reads it (:func:`ingest.readers.loaders.load_bytes`: tables as Markdown rows, running headers
removed) and its text cached under ``/tmp/filings_text/`` (``--cache``; keyed by the PDF's content hash), so a
second check costs no extraction.

For every answerable row (non-empty ``answers``) the check verifies that each ``evidence`` snippet is a substring
of the document's text lying on the stated 1-based page (between the layout's page offsets) and that one of
``answers`` occurs in the evidence as a whole figure or phrase (``$``, case, spacing and "12.5 %" vs "12.5%"
ignored). A ``difference`` row names the two printed figures it is computed from (``figures``): both must occur in
its evidence and their difference must equal the answer within rounding to the answer's decimals; a ``ratio`` row
(``f03``'s share) likewise, with ``figures[0] / figures[1]`` as a percentage. Unanswerable rows (empty
``answers``) must have no evidence and a ``why``. Field values are checked as in ``tests/app/test_filings_set.py``.

    python bench/filings_set.py check /work/devdata/kgrag    # the KG-RAG-datasets repository root

Prints counts (collection, type, scope, follow-ups, unanswerable by ``why``) and exits 1 listing the rows that fail.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
from collections import Counter  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "filings_qa.jsonl"
CACHE = Path("/tmp/filings_text")
TENQ = "sec-10-q/data/v1/docs"
COLLECTIONS = (TENQ, "ntsb-aviation-incident-accident-reports/data/v1/docs", "us-fed-agency-reports/data/v1/docs")
TYPES = ("cell", "sentence", "difference", "ratio", "yesno", "name", "date", "count")  # ratio: only f03's share
SCOPES = ("doc", "all")
WHYS = ("metric-not-reported", "other-company", "other-period", "other-document")
MIN_WORDS, MAX_WORDS = 5, 40  # an evidence snippet's length, in whitespace-separated tokens


def load_rows(path: Path = DATA) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def collection(row: dict) -> str:
    return row.get("collection") or TENQ


def read_doc(root: Path, coll: str, name: str, cache: Path | None = CACHE) -> tuple[str, list[int]]:
    """``(text, page start offsets)`` of ``root/coll/name`` as the product extracts it, cached under ``cache``."""
    path = Path(root) / coll / name
    data = path.read_bytes()
    key = hashlib.sha256(data).hexdigest()[:16]
    hit = cache / coll.split("/")[0] / f"{name}.{key}.json" if cache else None
    if hit is not None and hit.is_file():
        d = json.loads(hit.read_text(encoding="utf-8"))
        return d["text"], d["pages"]
    from ingest.readers.loaders import load_bytes

    doc = load_bytes(path.name, data, max_bytes=200 * 2**20)
    pages = list((doc.layout or {}).get("pages") or [0])
    if hit is not None:
        hit.parent.mkdir(parents=True, exist_ok=True)
        hit.write_text(json.dumps({"text": doc.text, "pages": pages}), encoding="utf-8")
    return doc.text, pages


def page_span(pages: list[int], text_len: int, page: int) -> tuple[int, int]:
    """Character range ``[start, end)`` of 1-based ``page`` (empty when there is no such page)."""
    if not 1 <= page <= len(pages):
        return (0, 0)
    end = pages[page] if page < len(pages) else text_len
    return pages[page - 1], end


def norm(text: str) -> str:
    """Compared without ``$``, case and runs of spacing, "12.5 %" read as "12.5%" (as the answers scorer does).

    >>> norm("$ 36,413 and 696.2 %")
    '36,413 and 696.2%'
    """
    return re.sub(r"\s+", " ", text.replace("$", "")).replace(" %", "%").strip().lower()


def occurs(hay: str, needle: str) -> bool:
    """``needle`` in ``hay`` as a whole figure or phrase, not inside a longer number or word.

    >>> occurs("| Gross margin | 36,413 |", "36,413"), occurs("136,413", "36,413"), occurs("36,413.5", "36,413")
    (True, False, False)
    """
    n = norm(needle)
    return bool(n) and bool(re.search(rf"(?<![\w.])(?<!\d,){re.escape(n)}(?![\w])(?![.,]\d)", norm(hay)))


def number(s: str) -> float | None:
    """The value of a printed figure: "$ 1,234.5" -> 1234.5, "(95)" -> -95, "12.5%" -> 12.5; None if not one."""
    s = s.strip().replace("$", "").replace(",", "").replace("%", "").strip()
    neg = s.startswith("(") or s.startswith("-")
    s = s.strip("()- ")
    try:
        v = float(s)
    except ValueError:
        return None
    return -v if neg else v


def _decimals(answer: str) -> int:
    m = re.search(r"\.(\d+)", answer)
    return len(m.group(1)) if m else 0


def computed_ok(row: dict) -> bool:
    """Does one of a ``difference`` / ``ratio`` row's answers follow from its two ``figures``, within rounding to
    the answer's decimals?"""
    figs = row.get("figures") or []
    vals = [number(f) for f in figs]
    if len(vals) != 2 or None in vals:
        return False
    a, b = vals
    if row.get("type") == "ratio":
        if b == 0:
            return False
        value = 100 * a / b
    else:
        value = abs(a - b)
    for ans in row["answers"]:
        v = number(ans)
        if v is not None and abs(abs(v) - value) <= 0.5 * 10 ** -_decimals(ans) + 1e-9:
            return True
    return False


def row_problems(row: dict) -> list[str]:
    """Problems with a row's fields alone (no document needed)."""
    errs = []
    for k in ("id", "doc", "question", "answers", "source"):
        if k not in row:
            errs.append(f"no {k}")
    if collection(row) not in COLLECTIONS:
        errs.append(f"collection {row.get('collection')!r} not one of {COLLECTIONS}")
    if row.get("scope") not in SCOPES:
        errs.append(f"scope {row.get('scope')!r} not one of {SCOPES}")
    if row.get("answers"):
        if row.get("type") not in TYPES:
            errs.append(f"type {row.get('type')!r} not one of {TYPES}")
        if not row.get("evidence"):
            errs.append("no evidence")
        for e in row.get("evidence") or []:
            n = len(str(e.get("text", "")).split())
            if not MIN_WORDS <= n <= MAX_WORDS:
                errs.append(f"evidence of {n} words (want {MIN_WORDS}-{MAX_WORDS}): {str(e.get('text'))[:50]!r}")
            if not isinstance(e.get("page"), int) or e["page"] < 1:
                errs.append(f"evidence page {e.get('page')!r}")
        if row.get("type") in ("difference", "ratio"):
            if not computed_ok(row):
                errs.append(f"{row.get('answers')} does not follow from figures {row.get('figures')}")
    else:
        if row.get("evidence"):
            errs.append("unanswerable row with evidence")
        if row.get("why") not in WHYS:
            errs.append(f"why {row.get('why')!r} not one of {WHYS}")
    return errs


def check_row(row: dict, text: str, pages: list[int]) -> list[str]:
    """Problems with one answerable row against its document's text (empty: it checks out)."""
    errs = []
    ev = row.get("evidence") or []
    for e in ev:
        a, b = page_span(pages, len(text), int(e.get("page") or 0))
        snippet = e.get("text", "")
        if not snippet or snippet not in text:
            errs.append(f"evidence not in the text: {snippet[:60]!r}")
        elif snippet not in text[a:b]:
            where = [i + 1 for i in range(len(pages)) if snippet in text[slice(*page_span(pages, len(text), i + 1))]]
            errs.append(f"evidence {snippet[:40]!r} not on page {e.get('page')} (on {where or 'a page break'})")
    texts = [e.get("text", "") for e in ev]
    if row.get("type") in ("difference", "ratio"):
        missing = [f for f in row.get("figures") or [] if not any(occurs(t, f) for t in texts)]
        if missing:
            errs.append(f"figures {missing} not in the evidence")
    elif not any(occurs(t, ans) for t in texts for ans in row["answers"]):
        errs.append(f"none of {row['answers']} in the evidence")
    return errs


def summary(rows: list[dict]) -> list[str]:
    ans = [r for r in rows if r["answers"]]
    una = [r for r in rows if not r["answers"]]
    short = lambda r: collection(r).split("/")[0]  # noqa: E731
    n_docs = len({(collection(r), r["doc"]) for r in rows})
    lines = [f"{len(rows)} rows: {len(ans)} answerable, {len(una)} unanswerable; "
             f"{len({collection(r) for r in rows})} collections, {n_docs} documents"]
    for title, c in (("answerable by collection", Counter(short(r) for r in ans)),
                     ("unanswerable by collection", Counter(short(r) for r in una)),
                     ("answerable by type", Counter(r.get("type", "-") for r in ans)),
                     ("scope (all rows)", Counter(r.get("scope", "-") for r in rows)),
                     ("scope (answerable)", Counter(r.get("scope", "-") for r in ans)),
                     ("unanswerable by why", Counter(r.get("why", "-") for r in una))):
        lines.append(f"  {title}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    lines.append(f"  follow-ups: {sum(1 for r in rows if r.get('followup_of'))}; "
                 f"evidence snippets: {sum(len(r.get('evidence') or []) for r in rows)}")
    return lines


def check(root: Path, path: Path = DATA, cache: Path | None = CACHE, out=print) -> int:
    """Check every row of ``path`` against the PDFs under ``root``; returns the exit status (0: all good)."""
    rows = load_rows(path)
    bad: dict[str, list[str]] = {}
    seen: set[str] = set()
    for r in rows:
        if r.get("id") in seen:
            bad.setdefault(r["id"], []).append("id used more than once")
        if r.get("followup_of") and r["followup_of"] not in seen:
            bad.setdefault(r["id"], []).append(f"followup_of {r['followup_of']!r} is not an earlier row")
        seen.add(r.get("id"))
        for e in row_problems(r):
            bad.setdefault(r.get("id", "?"), []).append(e)
    docs: dict[tuple[str, str], tuple[str, list[int]] | None] = {}
    for r in rows:
        key = (collection(r), r["doc"])
        if key not in docs:
            try:
                docs[key] = read_doc(root, *key, cache=cache)
            except Exception as e:  # noqa: BLE001 - a missing or unreadable PDF fails its rows
                docs[key] = None
                bad.setdefault(r["id"], []).append(f"{key[1]} unreadable: {e}")
        if r["answers"] and docs[key] is not None:
            errs = check_row(r, *docs[key])
            if errs:
                bad.setdefault(r["id"], []).extend(errs)
    for line in summary(rows):
        out(line)
    if bad:
        out(f"FAILED: {len(bad)} row(s)")
        for i, errs in bad.items():
            for e in errs:
                out(f"  {i}: {e}")
        return 1
    out("all rows check out: every evidence snippet is on its page of the extracted text and holds the answer")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="check every row against the PDFs")
    c.add_argument("root", type=Path, help="the docugami/KG-RAG-datasets repository root")
    c.add_argument("--data", type=Path, default=DATA, help="the set (default %(default)s)")
    c.add_argument("--cache", type=Path, default=CACHE, help="extracted texts (default %(default)s)")
    a = p.parse_args(argv)
    return check(a.root, a.data, a.cache)


if __name__ == "__main__":
    sys.exit(main())

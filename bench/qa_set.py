"""The answers corpus of issue 46: questions over seven kinds of documents, split by document into train / dev / test.

The documents are not in this repository: ``python bench/qa_set.py build`` assembles them under ``CORPUS/docs/<kind>/``
(``MGRAG_QA_CORPUS``, default ``/work/devdata/qa``) from the public repositories named in ``bench/data/qa/README.md``,
each kind by its builder in ``bench/qa_build/<kind>.py`` (``build(out_dir, mirrors)``), so the same files come out
on any machine with those repositories fetched. The questions are in ``bench/data/qa/<kind>.jsonl`` while they are
written and in ``bench/data/qa/{train,dev,test}.jsonl`` once split (``split``).

    python bench/qa_set.py build                 # the documents (bench/qa_build/*.py)
    python bench/qa_set.py dump --kind calls     # each document's text as the product reads it, page by page
    python bench/qa_set.py check --kind calls    # every row of bench/data/qa/calls.jsonl against its document
    python bench/qa_set.py split                 # the kinds' rows into train / dev / test, by document
    python bench/qa_set.py stats                 # counts per kind, split, type and scope

A row (one JSON object a line):

* ``id`` (unique, ``<kind>-<n>``), ``kind`` (one of ``KINDS``), ``doc`` (a file name in ``CORPUS/docs/<kind>/``),
  ``question`` (as a user types it), ``scope`` (``doc``: asked with *Search in* ticking its document; ``all``: asked
  over every document of its kind, so the question names what it is about), ``source`` (where the question and
  answer come from);
* answerable: ``answers`` (accepted strings, each as the document prints it or a plain alternative: ``$452.2
  million``, ``452.2``; ``three``, ``3``), ``type`` (``TYPES``), ``evidence`` (``[{"text", "page"?}]``: a verbatim
  5–60-word snippet of the text ``dump`` shows, holding an answer; ``page`` is 1-based where the document has pages);
  ``difference``/``ratio`` rows name the two printed ``figures`` they are computed from;
* unanswerable: ``answers: []``, ``why`` (``WHYS``) and ``near`` (what a careless reader would answer with, if
  anything: the adversarial near-miss), no evidence;
* optional: ``followup_of`` (the id of the earlier row it continues, asked after it in one conversation),
  ``phrasing`` (what the wording tests: ``synonym``, ``word-number``, ``we``, ``pronoun``, ``ellipsis``, …).

``check`` verifies every row: fields and values; the document exists; each evidence snippet is in the document's
text (runs of whitespace ignored) on its page; one of ``answers`` occurs in the evidence as a whole figure or phrase
(or, for ``difference``/``ratio``, both figures do and the answer follows from them); follow-ups name an earlier row
of the same kind. It exits 1 listing the rows that fail.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import argparse  # noqa: E402
import hashlib  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402

from filings_set import computed_ok, occurs  # noqa: E402

CORPUS = Path(os.environ.get("MGRAG_QA_CORPUS", "/work/devdata/qa"))
MIRRORS = Path(os.environ.get("MGRAG_MIRRORS", "/work/.mirror"))
DATA = Path(__file__).resolve().parent / "data" / "qa"
KINDS = ("filings", "calls", "agency", "papers", "manuals", "prose", "sheets")
TYPES = ("cell", "sentence", "difference", "ratio", "yesno", "name", "date", "count", "phrase")
SCOPES = ("doc", "all")
WHYS = ("metric-not-reported", "other-company", "other-period", "other-document", "other-entity", "not-stated")
SPLITS = ("train", "dev", "test")
MIN_WORDS, MAX_WORDS = 3, 60
SPLIT_SEED = 46
SPLIT_SHARES = (0.5, 0.25, 0.25)  # of each kind's questions, by whole documents


def load(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def kind_rows(kind: str) -> list[dict]:
    p = DATA / f"{kind}.jsonl"
    return load(p) if p.is_file() else []


def doc_path(kind: str, name: str) -> Path:
    return CORPUS / "docs" / kind / name


def read_doc(kind: str, name: str) -> tuple[str, list[int]]:
    """``(text, page start offsets)`` of a corpus document as the product reads it (cached by content hash)."""
    path = doc_path(kind, name)
    data = path.read_bytes()
    key = hashlib.sha256(data).hexdigest()[:16]
    hit = CORPUS / "text_cache" / kind / f"{name}.{key}.json"
    if hit.is_file():
        d = json.loads(hit.read_text(encoding="utf-8"))
        return d["text"], d["pages"]
    from ingest.readers.loaders import load_bytes

    doc = load_bytes(path.name, data, max_bytes=200 * 2**20)
    pages = list((doc.layout or {}).get("pages") or [])
    hit.parent.mkdir(parents=True, exist_ok=True)
    hit.write_text(json.dumps({"text": doc.text, "pages": pages}), encoding="utf-8")
    return doc.text, pages


def page_of(pages: list[int], offset: int) -> int | None:
    """1-based page holding character ``offset`` (None: the document has no pages)."""
    if not pages:
        return None
    n = 0
    for i, p in enumerate(pages):
        if p <= offset:
            n = i + 1
    return max(n, 1)


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def find(text: str, snippet: str) -> list[int]:
    """Offsets in ``text`` where ``snippet`` occurs, runs of whitespace ignored on both sides."""
    words = snippet.split()
    if not words:
        return []
    pat = r"\s+".join(re.escape(w) for w in words)
    return [m.start() for m in re.finditer(pat, text)]


def row_problems(row: dict, ids: set[str]) -> list[str]:
    errs = []
    for k in ("id", "kind", "doc", "question", "answers", "scope", "source"):
        if k not in row:
            errs.append(f"no {k}")
    if row.get("kind") not in KINDS:
        errs.append(f"kind {row.get('kind')!r} not one of {KINDS}")
    if row.get("scope") not in SCOPES:
        errs.append(f"scope {row.get('scope')!r} not one of {SCOPES}")
    if not str(row.get("question", "")).strip():
        errs.append("empty question")
    if row.get("answers"):
        if not all(isinstance(a, str) and a.strip() for a in row["answers"]):
            errs.append("an empty answer")
        if row.get("type") not in TYPES:
            errs.append(f"type {row.get('type')!r} not one of {TYPES}")
        if not row.get("evidence"):
            errs.append("no evidence")
        for e in row.get("evidence") or []:
            n = len(str(e.get("text", "")).split())
            if not MIN_WORDS <= n <= MAX_WORDS:
                errs.append(f"evidence of {n} words (want {MIN_WORDS}-{MAX_WORDS}): {str(e.get('text'))[:50]!r}")
        if row.get("type") in ("difference", "ratio") and not computed_ok(row):
            errs.append(f"{row.get('answers')} does not follow from figures {row.get('figures')}")
        if row.get("why"):
            errs.append("an answerable row has a why")
    else:
        if row.get("why") not in WHYS:
            errs.append(f"unanswerable without a why in {WHYS}")
        if row.get("evidence"):
            errs.append("an unanswerable row has evidence")
    f = row.get("followup_of")
    if f and f not in ids:
        errs.append(f"followup_of {f!r} is no earlier row")
    return errs


def doc_problems(row: dict) -> list[str]:
    path = doc_path(row["kind"], row["doc"])
    if not path.is_file():
        return [f"no document {path}"]
    if not row.get("answers"):
        return []
    text, pages = read_doc(row["kind"], row["doc"])
    errs = []
    for e in row.get("evidence") or []:
        at = find(text, e["text"])
        if not at:
            errs.append(f"evidence not in the text: {e['text'][:70]!r}")
            continue
        if e.get("page") is not None and pages and all(page_of(pages, a) != e["page"] for a in at):
            errs.append(f"evidence not on page {e['page']} (on {sorted({page_of(pages, a) for a in at})})")
    ev = " ".join(e["text"] for e in row.get("evidence") or [])
    if row.get("type") in ("difference", "ratio"):
        if not all(occurs(ev, f) for f in row.get("figures") or []):
            errs.append(f"figures {row.get('figures')} not all in the evidence")
    elif not any(occurs(ev, a) for a in row["answers"]):
        errs.append(f"no answer of {row['answers']} in the evidence")
    return errs


def cmd_check(kinds: list[str]) -> int:
    bad = 0
    for kind in kinds:
        rows = kind_rows(kind)
        seen: set[str] = set()
        for r in rows:
            errs = row_problems(r, seen)
            if r.get("id") in seen:
                errs.append("duplicate id")
            if r.get("kind") != kind:
                errs.append(f"in {kind}.jsonl with kind {r.get('kind')!r}")
            if not errs:
                errs = doc_problems(r)
            seen.add(r.get("id", ""))
            if errs:
                bad += 1
                print(f"{r.get('id')}: " + "; ".join(errs))
        if rows:
            n_ans = sum(bool(r["answers"]) for r in rows)
            print(f"{kind}: {len(rows)} rows ({n_ans} answerable, {len(rows) - n_ans} unanswerable), "
                  f"{len({r['doc'] for r in rows})} documents")
    print("ok" if not bad else f"{bad} rows fail")
    return 1 if bad else 0


def cmd_dump(kinds: list[str]) -> None:
    """Each document's text as the product reads it, to ``CORPUS/text/<kind>/<name>.txt``, a line ``=== page N ===``
    before each page (not part of the text: evidence never includes it)."""
    for kind in kinds:
        d = CORPUS / "docs" / kind
        if not d.is_dir():
            continue
        for p in sorted(d.iterdir()):
            if not p.is_file():
                continue
            text, pages = read_doc(kind, p.name)
            out = CORPUS / "text" / kind / f"{p.name}.txt"
            out.parent.mkdir(parents=True, exist_ok=True)
            if pages:
                bounds = list(pages) + [len(text)]
                parts = [f"=== page {i + 1} ===\n{text[bounds[i]:bounds[i + 1]]}" for i in range(len(pages))]
                out.write_text("\n".join(parts), encoding="utf-8")
            else:
                out.write_text(text, encoding="utf-8")
            print(f"{kind}/{p.name}: {len(text.split())} words, {len(pages)} pages -> {out}")


def cmd_build(kinds: list[str]) -> None:
    for kind in kinds:
        try:
            mod = importlib.import_module(f"qa_build.{kind}")
        except ModuleNotFoundError:
            print(f"{kind}: no builder (bench/qa_build/{kind}.py)")
            continue
        out = CORPUS / "docs" / kind
        out.mkdir(parents=True, exist_ok=True)
        mod.build(out, MIRRORS)
        print(f"{kind}: {len(list(out.iterdir()))} documents in {out}")


def assign(rows: list[dict], seed: int = SPLIT_SEED, shares=SPLIT_SHARES) -> dict[str, str]:
    """Each document of one kind to a split: the documents, sorted, shuffled with ``random.Random(seed)``, then taken in
    that order into test, dev and train, each split filled while it holds less than its share of the kind's
    questions. Documents marked ``"split": "train"`` in any row (the project developed on them before) go to train."""
    per_doc = Counter(r["doc"] for r in rows)
    forced = {r["doc"] for r in rows if r.get("split") == "train"}
    docs = sorted(d for d in per_doc if d not in forced)
    random.Random(seed).shuffle(docs)
    total = sum(per_doc.values())
    want = {"test": shares[2] * total, "dev": shares[1] * total}
    got = {"test": 0, "dev": 0}
    out = {d: "train" for d in forced}
    for d in docs:
        for s in ("test", "dev"):
            if got[s] < want[s]:
                out[d] = s
                got[s] += per_doc[d]
                break
        else:
            out[d] = "train"
    return out


def cmd_split() -> None:
    by_split: dict[str, list[dict]] = defaultdict(list)
    for kind in KINDS:
        rows = kind_rows(kind)
        if not rows:
            continue
        where = assign(rows)
        for r in rows:
            by_split[where[r["doc"]]].append(dict(r, split=where[r["doc"]]))
    for s in SPLITS:
        (DATA / f"{s}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in by_split[s]),
                                         encoding="utf-8")
        print(f"{s}: {len(by_split[s])} rows")


def cmd_stats(kinds: list[str]) -> None:
    for kind in kinds:
        rows = kind_rows(kind)
        if not rows:
            continue
        print(kind, len(rows), "rows", len({r["doc"] for r in rows}), "docs",
              dict(Counter(r.get("type", "unanswerable") if r["answers"] else "unanswerable" for r in rows)),
              dict(Counter(r["scope"] for r in rows)), "follow-ups", sum(bool(r.get("followup_of")) for r in rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("build", "dump", "check", "split", "stats"))
    ap.add_argument("--kind", default="", help="comma-separated kinds (default: all)")
    a = ap.parse_args()
    kinds = [k for k in a.kind.split(",") if k] or list(KINDS)
    for k in kinds:
        if k not in KINDS:
            sys.exit(f"unknown kind {k!r}; kinds: {', '.join(KINDS)}")
    if a.command == "build":
        cmd_build(kinds)
    elif a.command == "dump":
        cmd_dump(kinds)
    elif a.command == "check":
        sys.exit(cmd_check(kinds))
    elif a.command == "split":
        cmd_split()
    else:
        cmd_stats(kinds)


if __name__ == "__main__":
    main()

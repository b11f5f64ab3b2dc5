"""Build external retrieval sets in the bench format from public data (issue 24).

Sets written (each to ``OUT/<set>/``: ``docs/<doc_id>.txt``, ``questions.jsonl``, ``SOURCE.md``):

- ``legalbenchrag_contractnli``: non-disclosure agreements, from LegalBench-RAG's ContractNLI subset.
- ``legalbenchrag_maud``: public-company merger agreements, from LegalBench-RAG's MAUD subset.
- ``filings_10q``: five SEC 10-Q filings (PDF, read by the product's own PDF extraction, tables as rows) with the
  answered questions of ``bench/data/filings_qa.jsonl`` (docugami/KG-RAG-datasets); a question's evidence is every
  place the extracted text prints its reference figure.

LegalBench-RAG (Pipitone & Houir Alami, 2024) also bundles CUAD and PrivacyQA: those are held-out sets here and
are never opened (:data:`HELD_OUT`); nor is FinanceBench.

Source: a LegalBench-RAG ``data`` folder (``benchmarks/<subset>.json`` and ``corpus/<subset>/*.txt``), e.g. the
copy in github.com/02noDarling/MyLegalBenchRag under ``src/data`` (see bench/data/README.md for how to extract
only the two subsets used)::

    python bench/external_sets.py --legalbenchrag /work/devdata/src/legalbenchrag
    python bench/external_sets.py --filings /work/devdata/sec-10-q/data/v1/docs --sets ''

Every evidence span is written with exact offsets (``doc[start:end] == text``, checked before writing): the
source's offsets when they match its snippet text, else the snippet located verbatim in the document
(whitespace normalised only where needed, then mapped back to exact offsets), else ``start``/``end`` null.
Documents and questions are subsampled deterministically (``--seed``): documents in a seeded shuffle, whole
documents with all their questions, until the document or question cap.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
import urllib.parse
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_OUT = Path("/work/devdata/external")
HELD_OUT = frozenset({"cuad", "privacy_qa", "privacyqa", "financebench"})
_WS = re.compile(r"\s+")


# -- span location -------------------------------------------------------------------------------------------
def _squeeze(s: str) -> tuple[str, list[int]]:
    """``s`` with every run of whitespace made one space, and for each character of the result its index in ``s``."""
    out, idx = [], []
    prev_space = False
    for i, ch in enumerate(s):
        if ch.isspace():
            if prev_space:
                continue
            out.append(" ")
            prev_space = True
        else:
            out.append(ch)
            prev_space = False
        idx.append(i)
    return "".join(out), idx


def _all(hay: str, needle: str) -> list[int]:
    out, i = [], hay.find(needle)
    while i >= 0:
        out.append(i)
        i = hay.find(needle, i + 1)
    return out


def locate_span(doc: str, text: str, hint: tuple[int, int] | None = None) -> tuple[int, int, str] | None:
    """Where ``text`` lies in ``doc``: ``(start, end, how)`` with ``how`` one of ``offsets`` (the hint matches),
    ``exact`` (found verbatim) or ``whitespace`` (found once runs of whitespace are collapsed on both sides; the
    offsets are mapped back to ``doc``, so ``doc[start:end]`` is the document's own text, its whitespace
    included), or None. With a hint, the occurrence nearest the hint's start wins (verbatim before normalised at
    the same place); without one, the first verbatim occurrence, else the first normalised one."""
    if hint is not None:
        s, e = hint
        if 0 <= s <= e <= len(doc) and doc[s:e] == text:
            return s, e, "offsets"
    if not text.strip():
        return None
    cands = [(s, s + len(text), "exact") for s in _all(doc, text)]
    if hint is None and cands:
        return cands[0]
    needle = _WS.sub(" ", text.strip())
    sq, idx = _squeeze(doc)
    exact_starts = {c[0] for c in cands}
    for i in _all(sq, needle):
        start, end = idx[i], idx[i + len(needle) - 1] + 1
        if start not in exact_starts:
            cands.append((start, end, "whitespace"))
    if not cands:
        return None
    if hint is None:
        return cands[0]
    return min(cands, key=lambda c: (abs(c[0] - hint[0]), c[2] != "exact", c[0]))


def doc_id_for(file_name: str, taken: set[str]) -> str:
    """A file stem that is safe as a ``doc_id``: URL escapes decoded, anything but letters, digits, ``-`` and
    ``_`` made ``_``, at most 80 characters, unique among ``taken`` (which it joins)."""
    stem = urllib.parse.unquote(Path(file_name).name)
    if stem.endswith(".txt"):
        stem = stem[:-4]
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", stem).strip("_")[:80].strip("_") or "doc"
    out, n = slug, 2
    while out in taken:
        out, n = f"{slug}_{n}", n + 1
    taken.add(out)
    return out


# -- building ------------------------------------------------------------------------------------------------
@dataclass
class BuiltSet:
    name: str
    docs: dict[str, str] = field(default_factory=dict)  # doc_id -> text
    sources: dict[str, str] = field(default_factory=dict)  # doc_id -> source file name
    questions: list[dict] = field(default_factory=list)
    how: Counter = field(default_factory=Counter)  # evidence spans by how they were located

    def stats(self) -> dict:
        n_ev = sum(len(q["evidence"]) for q in self.questions)
        located = sum(1 for q in self.questions for e in q["evidence"] if e["start"] is not None)
        return {"docs": len(self.docs), "questions": len(self.questions), "evidence_spans": n_ev,
                "located": located, "exact_offset_rate": round(located / n_ev, 4) if n_ev else None,
                "located_by": dict(self.how), "chars": sum(len(t) for t in self.docs.values()),
                "words": sum(len(t.split()) for t in self.docs.values())}


def subsample_docs(by_doc: dict[str, list], seed: int, max_docs: int | None, max_questions: int | None) -> list[str]:
    """Whole documents in a seeded shuffle (of their sorted names) until ``max_docs`` or until the next document
    would take the questions past ``max_questions``; always at least one document."""
    order = sorted(by_doc)
    random.Random(seed).shuffle(order)
    keep, n_q = [], 0
    for d in order:
        if max_docs is not None and len(keep) >= max_docs:
            break
        if keep and max_questions is not None and n_q + len(by_doc[d]) > max_questions:
            continue
        keep.append(d)
        n_q += len(by_doc[d])
    return keep


def build_legalbenchrag(root: Path, subset: str, *, seed: int, max_docs: int | None,
                        max_questions: int | None) -> BuiltSet:
    """One LegalBench-RAG subset as a bench set. ``root`` holds ``benchmarks/`` and ``corpus/``."""
    if subset.lower() in HELD_OUT:
        raise ValueError(f"{subset} is a held-out set: not built")
    tests = json.loads((root / "benchmarks" / f"{subset}.json").read_text(encoding="utf-8"))["tests"]
    by_doc: dict[str, list[tuple[int, dict]]] = defaultdict(list)
    for n, t in enumerate(tests):
        files = {s["file_path"] for s in t["snippets"]}
        if len(files) != 1:  # the bench format has one document per question
            continue
        by_doc[files.pop()].append((n, t))
    keep = subsample_docs(by_doc, seed, max_docs, max_questions)
    out = BuiltSet(f"legalbenchrag_{subset}")
    taken: set[str] = set()
    for path in sorted(keep):
        rel = Path(path)
        if rel.parts[0] != subset:
            raise ValueError(f"{subset}: snippet file {path} outside corpus/{subset}")
        with open(root / "corpus" / rel, encoding="utf-8", newline="") as f:
            text = f.read()
        doc_id = doc_id_for(rel.name, taken)
        out.docs[doc_id], out.sources[doc_id] = text, path
        for n, t in by_doc[path]:
            evidence = []
            for s in t["snippets"]:
                hint = (int(s["span"][0]), int(s["span"][1]))
                src_text = s.get("answer")
                if src_text is None:  # offsets only: the text is the document's
                    src_text = text[hint[0]:hint[1]]
                found = locate_span(text, src_text, hint)
                if found is None:
                    out.how["unlocated"] += 1
                    evidence.append({"text": src_text, "start": None, "end": None})
                    continue
                st, en, how = found
                out.how[how] += 1
                evidence.append({"text": text[st:en], "start": st, "end": en})
            out.questions.append({"id": f"{subset}-{n:04d}", "question": t["query"], "doc_id": doc_id,
                                  "answers": [], "evidence": evidence})
    return out


def check(built: BuiltSet) -> None:
    """Every located span matches its text; every question's document exists."""
    for q in built.questions:
        doc = built.docs[q["doc_id"]]
        for e in q["evidence"]:
            if e["start"] is not None and doc[e["start"]:e["end"]] != e["text"]:
                raise AssertionError(f"{built.name}/{q['id']}: offsets {e['start']}:{e['end']} do not match")


def write_set(built: BuiltSet, dest: Path, provenance: str) -> dict:
    check(built)
    docs_dir = dest / "docs"
    if docs_dir.exists():
        for p in docs_dir.glob("*.txt"):
            p.unlink()
    docs_dir.mkdir(parents=True, exist_ok=True)
    for doc_id, text in built.docs.items():
        with open(docs_dir / f"{doc_id}.txt", "w", encoding="utf-8", newline="") as f:
            f.write(text)
    with open(dest / "questions.jsonl", "w", encoding="utf-8") as f:
        for q in built.questions:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    stats = built.stats()
    stats["bytes"] = sum(p.stat().st_size for p in docs_dir.iterdir()) + (dest / "questions.jsonl").stat().st_size
    lines = [f"# {built.name}", "", provenance, "", "## Counts", "", "```json", json.dumps(stats, indent=2), "```",
             "", "## Documents (doc_id <- source file)", ""]
    lines += [f"- `{d}` <- `{built.sources[d]}`" for d in sorted(built.docs)]
    (dest / "SOURCE.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return stats


FILINGS_QA = Path(__file__).resolve().parent / "data" / "filings_qa.jsonl"
_FIGURE_END = re.compile(r"[0-9A-Za-z]")


def figure_spans(text: str, figure: str) -> list[tuple[int, int]]:
    """Every place ``text`` prints ``figure`` as a whole figure: not inside a longer number or word
    (``36,413`` is not found in ``136,413`` or ``36,4131``)."""
    out = []
    for i in _all(text, figure):
        j = i + len(figure)
        before = text[i - 1] if i else " "
        after = text[j] if j < len(text) else " "
        if _FIGURE_END.match(before) or (before in ",." and i >= 2 and text[i - 2].isdigit()):
            continue
        if _FIGURE_END.match(after) or (after in ",." and j + 1 < len(text) and text[j + 1].isdigit()):
            continue
        out.append((i, j))
    return out


def build_filings(docs_dir: Path, qa_path: Path = FILINGS_QA, read=None, pdf_reader: str = "auto") -> BuiltSet:
    """The answered questions of ``filings_qa.jsonl`` over the filings they name, as a bench set: each PDF read
    as the product reads it (``read(path) -> text``, default :func:`ingest.readers.loaders.load_file`), each question's
    evidence every whole-figure occurrence of each of its reference figures; a question none of whose figures
    the text prints is left out (counted under ``how["no figure in text"]``). Unanswerable questions (no
    reference figure) and those whose reference is computed from other figures (``f03``'s share) are left out.
    ``pdf_reader``: the product's ``Limits.pdf_reader`` for the default ``read`` (auto or pdfplumber)."""
    if read is None:
        from ingest.readers.base import Limits
        from ingest.readers.loaders import load_file

        def read(path: Path) -> str:
            return load_file(path, limits=Limits(max_bytes=200 * 2**20, pdf_reader=pdf_reader)).text
    out = BuiltSet("filings_10q")
    rows = [json.loads(line) for line in qa_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    taken: set[str] = set()
    ids: dict[str, str] = {}
    for r in rows:
        if not r.get("answers") or "computed here" in r.get("source", ""):
            continue  # unanswerable, or a reference computed from the filing's figures (printed nowhere)
        if not re.fullmatch(r"f\d+", r["id"]):
            continue  # the set of issue 24 is the first 20 answered questions (the grown set has other collections)
        name = r["doc"]
        if name not in ids:
            path = docs_dir / name
            if not path.is_file():
                raise FileNotFoundError(f"{path}: the filing named by {qa_path.name} question {r['id']} is missing")
            ids[name] = doc_id_for(Path(name).stem, taken)
            out.docs[ids[name]], out.sources[ids[name]] = read(path), name
        doc_id = ids[name]
        text = out.docs[doc_id]
        spans = sorted({sp for fig in r["answers"] for sp in figure_spans(text, fig)})
        if not spans:
            out.how["no figure in text"] += 1
            continue
        out.how["figure occurrences"] += len(spans)
        out.questions.append({"id": r["id"], "question": r["question"], "doc_id": doc_id, "answers": r["answers"],
                              "evidence": [{"text": text[a:b], "start": a, "end": b} for a, b in spans]})
    return out


PROVENANCE = {
    "contractnli": (
        "Non-disclosure agreements with questions and gold evidence spans from LegalBench-RAG "
        "(github.com/zeroentropy-ai/legalbenchrag; data as copied in github.com/02noDarling/MyLegalBenchRag, "
        "src/data/benchmarks/contractnli.json and src/data/corpus/contractnli/), built from ContractNLI "
        "(Koreeda & Manning 2021, stanfordnlp.github.io/contract-nli). Questions are LegalBench-RAG's "
        "(\"Consider <title>; Does the document ...?\"); no reference answers."),
    "maud": (
        "Public-company merger agreements with questions and gold evidence spans from LegalBench-RAG "
        "(github.com/zeroentropy-ai/legalbenchrag; data as copied in github.com/02noDarling/MyLegalBenchRag, "
        "src/data/benchmarks/maud.json and src/data/corpus/maud/), built from MAUD (Wang et al. 2023, the Atticus "
        "Project). Questions are LegalBench-RAG's (\"Consider the Acquisition Agreement between ...; <deal point>\"); "
        "no reference answers."),
}
PROVENANCE_FILINGS = (
    "Five SEC 10-Q filings (Q3 2023: Apple, Microsoft, NVIDIA, Intel, Amazon) from docugami/KG-RAG-datasets "
    "(MIT), sec-10-q/data/v1/docs, read by MGRAG's PDF extraction (ingest.readers.loaders.load_file: tables as rows). "
    "Questions: the answered ones of MGRAG's bench/data/filings_qa.jsonl (from the same repository's "
    "qna_data.csv); evidence: every whole-figure occurrence of a question's reference figures in the text, so a "
    "passage that prints the figure counts as relevant, and evidence recall is the share of those places in the "
    "context (a lower bound where a figure is printed more than once). Built by bench/external_sets.py (MGRAG).")
# (max_docs, max_questions): a few MB and up to 200 questions a set, so that a MiniLM run on 2 cores takes minutes
LIMITS = {"contractnli": (None, 200), "maud": (6, 200)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--legalbenchrag", type=Path,
                   help="LegalBench-RAG data folder holding benchmarks/ and corpus/")
    p.add_argument("--filings", type=Path, help="folder of docugami/KG-RAG-datasets' sec-10-q/data/v1/docs PDFs: "
                   "builds filings_10q from bench/data/filings_qa.jsonl")
    p.add_argument("--pdf-reader", choices=("auto", "pdfplumber"), default="auto",
                   help="how the filings' PDF pages are read (the product's pdf_reader setting; default auto)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where the sets go (default {DEFAULT_OUT})")
    p.add_argument("--sets", default="contractnli,maud", help="LegalBench-RAG subsets to build")
    p.add_argument("--seed", type=int, default=24)
    p.add_argument("--max-docs", type=int, help="override every set's document cap")
    p.add_argument("--max-questions", type=int, help="override every set's question cap")
    a = p.parse_args(argv)
    subsets = [s.strip() for s in a.sets.split(",") if s.strip()]
    if subsets and a.legalbenchrag is None:
        p.error("--legalbenchrag is needed for the LegalBench-RAG sets (or --sets '' with --filings)")
    if a.filings is not None:
        built = build_filings(a.filings, pdf_reader=a.pdf_reader)
        stats = write_set(built, a.out / built.name, PROVENANCE_FILINGS)
        print(f"{built.name}: {json.dumps(stats)} -> {a.out / built.name}")
    for subset in subsets:
        if subset.lower() in HELD_OUT:
            print(f"skipping {subset}: a held-out set", file=sys.stderr)
            continue
        max_docs, max_q = LIMITS.get(subset, (None, 200))
        built = build_legalbenchrag(a.legalbenchrag, subset, seed=a.seed,
                                    max_docs=a.max_docs if a.max_docs is not None else max_docs,
                                    max_questions=a.max_questions if a.max_questions is not None else max_q)
        prov = (PROVENANCE.get(subset, f"LegalBench-RAG subset {subset}.") +
                f"\n\nSubsample: documents in a random.Random({a.seed}) shuffle of the sorted source file names, "
                f"whole documents with all their questions, at most {max_docs or 'all'} documents and "
                f"{max_q} questions. Built by bench/external_sets.py (MGRAG).")
        stats = write_set(built, a.out / built.name, prov)
        print(f"{built.name}: {json.dumps(stats)} -> {a.out / built.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

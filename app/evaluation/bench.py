"""Benchmark core: loading a bench set, the in-memory multi-granular retrieval evaluator, machine info, reports.

The data lives outside the repository, in ``../shared/bench`` relative to the project root (override with
``MGRAG_BENCH_DIR``, or pass a set's directory path); see its README for the format. Nothing here writes to the
index or the catalog: chunks are embedded in memory, so a benchmark measures chunking and retrieval without Qdrant
in the way. ``bench/common.py`` re-exports this module for the scripts under ``bench/``.
"""
from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.evaluation.metrics import (
    best_rouge_span,
    dcg_at_k,
    evidence_recall,
    set_recall_at_k,
    token_iou_precision,
)
from core.questions import Evidence, Question, read_questions
from ingest.text.sentences import count_words
from ingest.types import Chunk
from retrieval.scoring import ChunkSpan, Hit, assemble_context, level_hits, mog_rank, rank_parents

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): torch, transformers

ROOT = Path(__file__).resolve().parents[2]
BENCH_DIR = Path(os.environ.get("MGRAG_BENCH_DIR", ROOT.parent / "shared" / "bench"))
RESULTS_DIR = ROOT / "bench" / "results"
KS = (1, 2, 5, 10, 20)

Span = tuple[int, int]


@dataclass
class BenchSet:
    name: str
    docs: dict[str, str]
    questions: list[Question]

    @property
    def words(self) -> int:
        return sum(count_words(t) for t in self.docs.values())


def load_set(name: str, doc_ids: Sequence[str] | None = None, bench_dir: Path | None = None) -> BenchSet:
    """Docs and questions of one bench set, optionally restricted to ``doc_ids`` (and their questions).

    Documents are read with ``newline=""`` so that the evidence offsets match; every located evidence span is
    checked (``doc[start:end] == text``) and a mismatch raises.
    """
    if "/" in name or Path(name).is_dir():  # a set's directory path
        root = Path(name)
        if not (root / "questions.jsonl").is_file() or not (root / "docs").is_dir():
            raise FileNotFoundError(f"no bench set at {root}: expected {root}/questions.jsonl and {root}/docs/")
        name = root.resolve().name
    else:
        root = Path(bench_dir or BENCH_DIR) / name
    if not root.is_dir():
        raise FileNotFoundError(f"bench set {name!r} not found at {root} (set MGRAG_BENCH_DIR)")
    wanted = set(doc_ids) if doc_ids is not None else None
    docs: dict[str, str] = {}
    for p in sorted((root / "docs").iterdir()):
        if wanted is None or p.stem in wanted:
            with open(p, encoding="utf-8", newline="") as f:
                docs[p.stem] = f.read()
    if wanted is not None and wanted - set(docs):
        raise FileNotFoundError(f"bench set {name!r} has no docs {sorted(wanted - set(docs))}")
    questions = []
    for q in read_questions(root / "questions.jsonl", require_doc_id=True):
        if q.doc_id not in docs:
            continue
        for e in q.evidence:
            if e.located and docs[q.doc_id][e.start:e.end] != e.text:
                raise ValueError(f"{name}/{q.id}: evidence offsets {e.start}:{e.end} do not match its text")
        questions.append(q)
    return BenchSet(name, docs, questions)


# -- retrieval evaluation ----------------------------------------------------------------------------------------
def _overlaps(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@dataclass
class _DocIndex:
    chunks: list[Chunk]
    vectors: np.ndarray
    levels: np.ndarray
    parents: list[Span]  # level-0 spans, in document order
    parent_words: dict[Span, int] = field(default_factory=dict)


def evaluate_retrieval(bench: BenchSet, chunks_by_doc: dict[str, list[Chunk]], embedder, *, top_k: int = 20,
                       ks: Sequence[int] = KS, budget_words: int = 1500, weights: Sequence[float] | None = None,
                       keep_per_question: bool = False,
                       weights_fn: Callable[[Question, np.ndarray], Sequence[float]] | None = None,
                       selection: str = "max") -> dict:
    """Multi-granular retrieval of every question of ``bench`` over in-memory chunks; returns mean metrics.

    Procedure (choices documented here because they shape the numbers):

    * **Index.** Every chunk of a document, all levels, is embedded once with ``embedder.embed_passages``
      (the time is reported as ``embed_seconds``); questions with ``embed_queries``.
    * **Per-document search.** A question is searched only among the chunks of *its* document
      (``doc_id``), as GutenQA is evaluated book by book; cosine similarity (vectors are normalised, so a dot
      product), the ``top_k`` best chunks **of each level**.
    * **Parents.** The hits are ranked into parents with :func:`retrieval.scoring.rank_parents`: a parent's
      score is the max over itself and its children (``weights``: per-level weights, default uniform). A
      single-level chunker's chunks are their own parents. ``weights_fn(question, query_vector)``, when
      given, returns the weights of each question instead (a router); the weights used are kept per question.
      ``selection="mog"`` ranks MoG's units instead (:func:`retrieval.scoring.mog_rank`: the finest chunks by
      the weighted scores of their ancestors, returned as the containing chunks of the best-weighted level), so
      the ranked units are chunks of that level rather than parents; relevance and the budget apply to them.
    * **Relevance.** A parent is relevant to an evidence span if their character ranges overlap (any
      character). Evidence without offsets (``start``/``end`` null) is re-labelled to the one parent that
      best matches the evidence text by ROUGE-L (:func:`best_rouge_span`: recall, ties by F), as LGMGC
      re-labels GutenQA; ROUGE-L F alone would favour short parents and mislabels one of Emma's three.
    * **DCG@k** uses the binary relevance of each ranked parent (relevant to any evidence span of the
      question); it is not normalised, so it can exceed 1 with several relevant parents.
    * **Recall@k** is the share of the question's evidence spans that have at least one relevant parent among
      the top k parents (an evidence span straddling two parents is found by either).
    * **Evidence recall @ budget** is the share of evidence characters covered by the context: the ranked
      parents concatenated in rank order while the total stays within ``budget_words`` words, a parent that
      would overflow being skipped (:func:`retrieval.scoring.assemble_context`). A re-labelled evidence
      counts as its parent's span. Chroma-style IoU and precision of that context (in characters) are
      reported as well.

    Returns the means over questions (``dcg@k``, ``recall@k``, ``evidence_recall@{budget}w``,
    ``iou@{budget}w``, ``precision@{budget}w``, ``context_words``) plus counts and timings, and a
    ``per_doc`` breakdown of ``dcg@5``/``recall@5``/``n``; ``per_question`` rows when asked.
    """
    if selection not in ("max", "mog"):
        raise ValueError(f"selection must be 'max' or 'mog', got {selection!r}")
    weights = list(weights) if weights is not None else None
    t0 = time.perf_counter()
    index = _index_docs(bench, chunks_by_doc, embedder)
    embed_seconds = time.perf_counter() - t0

    questions = [q for q in bench.questions if q.doc_id in index]
    t1 = time.perf_counter()
    qvecs = np.asarray(embedder.embed_queries([q.question for q in questions]), dtype=np.float32)
    rows = []
    relabelled = 0
    for q, qv in zip(questions, qvecs):
        di = index[q.doc_id]
        text = bench.docs[q.doc_id]
        hits = level_hits(di.chunks, di.vectors @ qv, top_k)
        n_levels = int(di.levels.max()) + 1
        w = list(weights_fn(q, qv)) if weights_fn is not None else (weights or [1.0] * n_levels)
        if selection == "mog":
            ranked = [uid.split(":", 1)[1] for uid, _, _ in mog_rank(hits, _spans_under(di, hits), w)]
        else:
            ranked = [pid for pid, _, _ in rank_parents(hits, w)]
        ranked_spans = [tuple(int(x) for x in pid.split(":")) for pid in ranked]

        row, n_rel = question_metrics(q, text, ranked_spans, di.parents, ks=ks, budget_words=budget_words)
        relabelled += n_rel
        if weights_fn is not None:
            row["weights"] = [float(x) for x in w]
        rows.append(row)
    search_seconds = time.perf_counter() - t1

    out: dict = summarise_rows(rows)
    out.update({"n_questions": len(rows), "n_evidence_relabelled": relabelled, **_index_counts(index),
                "embed_seconds": embed_seconds, "search_seconds": search_seconds, "top_k_per_level": top_k,
                "budget_words": budget_words, "per_doc": _per_doc(index, rows, ks)})
    if keep_per_question:
        out["per_question"] = rows
    return out


def _index_docs(bench: BenchSet, chunks_by_doc: dict[str, list[Chunk]], embedder) -> dict[str, _DocIndex]:
    """Every chunk of every document embedded once, with its document's parents and their lengths."""
    index: dict[str, _DocIndex] = {}
    for doc_id, chunks in chunks_by_doc.items():
        vecs = np.asarray(embedder.embed_passages([c.text for c in chunks]), dtype=np.float32)
        parents = sorted({c.parent_span for c in chunks})
        text = bench.docs[doc_id]
        index[doc_id] = _DocIndex(chunks, vecs, np.array([c.level for c in chunks]), parents,
                                  {p: count_words(text[p[0]:p[1]]) for p in parents})
    return index


def _index_counts(index: dict[str, _DocIndex]) -> dict:
    all_parents = [w for di in index.values() for w in di.parent_words.values()]
    return {"n_chunks": sum(len(di.chunks) for di in index.values()), "n_parents": len(all_parents),
            "mean_parent_words": float(np.mean(all_parents)) if all_parents else 0.0,
            "embedded_words": sum(count_words(c.text) for di in index.values() for c in di.chunks)}


def _per_doc(index: dict[str, _DocIndex], rows: list[dict], ks: Sequence[int]) -> dict:
    return {d: {"n": len(rs), "dcg@5": float(np.mean([r["dcg@5"] for r in rs])) if 5 in ks else None,
                "recall@5": float(np.mean([r["recall@5"] for r in rs])) if 5 in ks else None}
            for d in index for rs in [[r for r in rows if r["doc_id"] == d]] if rs}


def summarise_rows(rows: list[dict]) -> dict:
    """The mean of every metric over per-question rows (ids, ranks and weights left out)."""
    keys = [k for k in rows[0] if k not in ("id", "doc_id", "first_relevant_rank", "weights")] if rows else []
    return {k: float(np.mean([r[k] for r in rows])) for k in keys}


def _spans_under(di: _DocIndex, hits: Sequence[Hit]) -> dict[str, ChunkSpan]:
    """Every chunk under the hits' parents, as MoG selection needs them (ids as the evaluator's hits)."""
    parents = {h.parent_id for h in hits}
    out = {}
    for c in di.chunks:
        ps, pe = c.parent_span
        pid = f"{ps}:{pe}"
        if pid in parents:
            cid = f"{c.level}:{c.start}:{c.end}"
            out[cid] = ChunkSpan(cid, c.doc_id, int(c.level), c.start, c.end, pid)
    return out


def question_metrics(q: Question, text: str, ranked_spans: Sequence[Span], units: Sequence[Span], *,
                     ks: Sequence[int] = KS, budget_words: int = 1500) -> tuple[dict, int]:
    """The metrics of one question for a ranking of character spans (best first) over its document ``text``.

    ``units`` are the retrievable units of the chunker (its parents), used to re-label evidence that has no
    offsets (best ROUGE-L recall). Returns the row of metrics and the number of evidence spans re-labelled.
    Ranked spans may overlap (e.g. a merged parent and a leaf); the context keeps each span once.
    """
    ranked = [f"{s}:{e}" for s, e in ranked_spans]
    ev_spans: list[Span] = []
    relevant_sets: list[set[str]] = []
    relabelled = 0
    for e in q.evidence:
        if e.located:
            span = (e.start, e.end)
            rel = {pid for pid, p in zip(ranked, ranked_spans) if _overlaps(p, span)}
        else:
            best, _ = best_rouge_span(e.text, text, list(units))
            relabelled += 1
            span = best
            rel = {pid for pid, p in zip(ranked, ranked_spans) if _overlaps(p, best)}
        ev_spans.append(span)
        relevant_sets.append(rel)
    any_rel = set().union(*relevant_sets) if relevant_sets else set()
    relevance = [pid in any_rel for pid in ranked]

    ctx = assemble_context([(pid, text[s:e]) for pid, (s, e) in zip(ranked, ranked_spans)], budget_words)
    ctx_spans = [tuple(int(x) for x in pid.split(":")) for pid, _ in ctx]
    iou, prec = token_iou_precision(ctx_spans, ev_spans)
    row = {"id": q.id, "doc_id": q.doc_id}
    for k in ks:
        row[f"dcg@{k}"] = dcg_at_k(relevance, k)
        row[f"recall@{k}"] = set_recall_at_k(ranked, relevant_sets, k)
    row[f"evidence_recall@{budget_words}w"] = evidence_recall(ctx_spans, ev_spans)
    row[f"iou@{budget_words}w"] = iou
    row[f"precision@{budget_words}w"] = prec
    row["context_words"] = sum(len(t.split()) for _, t in ctx)
    row["first_relevant_rank"] = next((i + 1 for i, r in enumerate(relevance) if r), None)
    return row, relabelled


# -- machine and reporting -------------------------------------------------------------------------------------
def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (``ru_maxrss`` is KiB on Linux)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024 / 1024 if sys.platform == "darwin" else r / 1024


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (all threads), in seconds."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class LoadMonitor:
    """Samples the 1-minute load average every ``interval`` seconds in a daemon thread.

    The benchmarks run on a small shared machine; a load well above the torch thread count means another
    process competed for the cores and wall times are inflated (CPU seconds much less so).
    """

    def __init__(self, interval: float = 10.0):
        self.interval = interval
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append(os.getloadavg()[0])
            except OSError:  # pragma: no cover
                return
            self._stop.wait(self.interval)

    def mark(self) -> int:
        return len(self.samples)

    def summary(self, since: int = 0) -> dict:
        xs = self.samples[since:] or self.samples[-1:]
        return {"load1_mean": float(np.mean(xs)) if xs else None, "load1_max": float(max(xs)) if xs else None}

    def stop(self) -> None:
        self._stop.set()


def machine_info() -> dict:
    """CPU model, core count and library versions, recorded with every result file."""
    model = platform.processor() or ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5).stdout
        for line in out.splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    info = {"cpu": model, "nproc": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
            "python": platform.python_version()}
    try:
        import torch
        import transformers

        info.update(torch=torch.__version__, transformers=transformers.__version__,
                    torch_threads=torch.get_num_threads(), cuda=torch.cuda.is_available())
    except ImportError:  # pragma: no cover
        pass
    try:
        info["loadavg_at_start"] = os.getloadavg()
    except OSError:  # pragma: no cover
        pass
    return info


def write_json(name: str, payload: dict) -> Path:
    """Write ``bench/results/<name>`` atomically (via a ``.tmp`` file)."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / name
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A GitHub markdown table; floats printed with 3 decimals unless already strings."""
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.3f}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


BENCHMARKS_MD = ROOT / "BENCHMARKS.md"


def write_section(name: str, markdown: str, path: Path | None = None) -> Path:
    """Replace the part of BENCHMARKS.md between ``<!-- name:start -->`` and ``<!-- name:end -->`` (appended at
    the end when the markers are missing), so each benchmark script regenerates its own section only."""
    path = Path(path or BENCHMARKS_MD)
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{markdown.strip()}\n{end}"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def publish_section(name: str, markdown: str, write: bool = True) -> int:
    """Print a benchmark's BENCHMARKS.md section and, unless ``write`` is false, put it in place (exit code 0)."""
    print(markdown)
    if write:
        write_section(name, markdown)
    return 0


def excerpt(bench: BenchSet, fraction: float) -> BenchSet:
    """The first ``fraction`` of each document (cut at the last paragraph break before it) and the questions
    whose evidence lies wholly inside it. Questions with any evidence lacking offsets are dropped, since their
    passage cannot be known to be inside. A smaller haystack: used to fit a benchmark into a time budget."""
    if not 0 < fraction <= 1:
        raise ValueError(f"excerpt fraction must be in (0, 1], got {fraction}")
    if fraction == 1:
        return bench
    docs = {}
    for d, text in bench.docs.items():
        cut = int(len(text) * fraction)
        para = text.rfind("\n\n", 0, cut)
        docs[d] = text[:para if para > 0 else cut]
    qs = [q for q in bench.questions if q.evidence and all(e.located and e.end <= len(docs[q.doc_id])
                                                           for e in q.evidence)]
    return BenchSet(bench.name, docs, qs)


def locate_answers(bench: BenchSet, min_chars: int = 4) -> BenchSet:
    """The questions whose reference answer can be located: an answer of at least ``min_chars`` characters (not
    yes/no) that occurs exactly once in the document becomes the question's evidence span. LongBench has answers
    but no evidence; this is the part of it on which retrieval can be scored as on chroma."""
    out = []
    for q in bench.questions:
        text = bench.docs[q.doc_id]
        for a in q.answers:
            a = a.strip().rstrip(".")
            if len(a) < min_chars or a.lower() in ("yes", "no") or text.count(a) != 1:
                continue
            s = text.index(a)
            out.append(Question(q.id, q.question, q.doc_id, q.answers, (Evidence(a, s, s + len(a)),), q.dataset))
            break
    docs = {q.doc_id: bench.docs[q.doc_id] for q in out}
    return BenchSet(bench.name, docs, out)

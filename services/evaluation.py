"""Evaluation: the chunks retrieved at every level, saved evaluations and their export (the bench format), and
benchmarks over the live index (one at a time, rationed per client). A part of :class:`services.service.AppService`."""
from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path

from app.evaluation.bench import BENCH_DIR, BenchSet, evaluate_retrieval, load_set
from app.evaluation.metrics import qa_f1_score
from core.questions import Question, read_questions
from retrieval.bm25 import tokenize
from services.base import ADMIN
from services.feedback import Evaluation, FeedbackStore
from services.part import ServicePart

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): retrieval.search

SAMPLES_SET = "samples (shipped: questions over samples/)"
MY_EVALUATIONS = "my evaluations"
SAMPLES_QUESTIONS = Path(__file__).resolve().parents[1] / "app" / "evaluation" / "sets" / "samples.jsonl"
BENCH_INTERVAL_S = 60.0
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/][^\s'\"\\/:]+)+[\\/]([^\s'\"\\/:]+)")


def _no_paths(message: str) -> str:
    """``message`` with every file path cut to its last part (an error shown to a user names the file, never the
    server's folders).

    >>> _no_paths("no bench set at /srv/mgrag/data/exports/ab/feedback.jsonl: expected questions.jsonl")
    'no bench set at feedback.jsonl: expected questions.jsonl'
    """
    return _PATH.sub(r"\1", message)


class EvaluationPart(ServicePart):
    """Evaluations and benchmarks."""

    @property
    def feedback(self):
        with self._feedback_lock:
            if self._feedback is None:
                self._feedback = FeedbackStore(self.ctx.settings.data_dir / "feedback.sqlite")
            return self._feedback

    def level_hits(self, question: str, k: int = 5, retriever: str = "dense", owner=ADMIN) -> list[dict]:
        """The chunks retrieved at every level for ``question`` among ``owner``'s searchable documents, best first
        per level, with their scores."""
        from retrieval.search import bm25_search, check_question, dense_search

        q = check_question(question, self.ctx.settings.max_question_chars)
        live = self.ctx.catalog.live_generation()
        if live is None:
            return []
        reader = self.reader(owner)
        rows = []

        def row(kind, level, rank, score, pl):
            rows.append({"retriever": kind, "level": level, "rank": rank, "score": round(float(score), 4),
                         "document": pl["doc_id"], "chars": f"{pl['start']}-{pl['end']}", "text": pl["text"]})

        if retriever in ("dense", "hybrid"):
            qv = self.ctx.embedder.embed_queries([q])[0]
            ranks: dict[int, int] = {}
            for level, p in dense_search(self.ctx, live.n_levels, qv, k, visible_to=reader):
                ranks[level] = ranks.get(level, 0) + 1
                row("dense", level, ranks[level], p.score, p.payload)
        if retriever in ("bm25", "hybrid"):
            found = bm25_search(self.ctx, live, tokenize(q), k, visible_to=reader)
            payloads = {str(p.id): p.payload for level in range(live.n_levels)
                        for p in self.ctx.index.retrieve(level, [cid for lv, cid, _, _ in found if lv == level])}
            ranks = {}
            for level, cid, _, score in found:
                ranks[level] = ranks.get(level, 0) + 1
                if cid in payloads:
                    row("bm25", level, ranks[level], score, payloads[cid])
        return rows

    def evaluate(self, answer: dict, *, reference: str = "", rating: str | None = None, comment: str = "",
                 relevant: list[int] | None = None, owner: str | None = None) -> tuple[int, float | None, int]:
        """Store an evaluation of ``answer`` (an :class:`~app.answer.Answer` as a dict). ``relevant``: the numbers
        of the sources that hold the answer (default: the cited ones when rated good). Their matched passages
        become the evidence, restricted to the first relevant source's document. Returns (id, F1, n evidence)."""
        if not answer:
            raise ValueError("no answer to evaluate yet: ask a question on the Chat tab first")
        reference = (reference or "").strip()
        f1 = qa_f1_score(answer.get("text", ""), reference) if reference else None
        sources = {s["number"]: s for s in answer.get("sources", [])}
        if relevant is None:  # an API caller that names none; the page always sends what the user ticked
            relevant = [c["number"] for c in answer.get("citations", [])] if rating == "good" else []
        bad = [n for n in relevant if n not in sources]
        if bad:
            raise ValueError(f"no source numbered {bad[0]} in this answer (it has {len(sources)})")
        doc_id, evidence = "", []
        for n in relevant:
            s = sources[n]
            doc_id = doc_id or s["doc_id"]
            if s["doc_id"] != doc_id or s["matched_level"] < 0:
                continue
            text = s["matched_text"]
            if s.get("shortened") and self.ctx.store.has(s.get("doc_hash", "")):  # cut for the page: the whole one
                text = self.ctx.store.text(s["doc_hash"])[s["matched_start"]:s["matched_end"]]
            e = {"text": text, "start": s["matched_start"], "end": s["matched_end"]}
            if e not in evidence:
                evidence.append(e)
        ev = Evaluation(answer.get("question", ""), answer.get("text", ""), rating or None, comment or "", reference,
                        f1, doc_id, evidence, answer.get("backend", ""), answer.get("retriever", ""),
                        list(answer.get("weights") or []), owner=owner)
        return self.feedback.add(ev), f1, len(evidence)

    def export_feedback(self, path: Path | None = None, owner=ADMIN) -> tuple[Path, int]:
        """Evaluations with evidence as bench-format JSONL: the caller's own (``owner``), or everyone's for the
        admin (router training). Each owner's export has its own file."""
        if owner is ADMIN:
            path = Path(path or self.ctx.settings.data_dir / "exports" / "feedback.jsonl")
            return path, self.feedback.export_jsonl(path)
        key = hashlib.sha256(str(owner).encode()).hexdigest()[:16]
        path = Path(path or self.ctx.settings.data_dir / "exports" / key / "feedback.jsonl")
        return path, self.feedback.export_jsonl(path, owner=owner)

    def bench_sets(self) -> list[str]:
        """The sets the Evaluate tab offers: the one shipped for the sample documents, the user's own saved
        evaluations (questions over their documents, with the evidence they ticked), and the development sets of
        ``../shared/bench`` where that folder exists (beside a checkout of this repository)."""
        shared = sorted(p.name for p in BENCH_DIR.iterdir() if (p / "questions.jsonl").is_file()) \
            if BENCH_DIR.is_dir() else []
        return [SAMPLES_SET, MY_EVALUATIONS, *shared]

    def run_benchmark(self, set_ref: str | Path, *, k: int = 20, budget_words: int | None = None,
                      max_questions: int = 200, owner=ADMIN, client: str = "") -> dict:
        """Retrieval metrics of a bench set over the live index (its chunks, embedded in memory). Questions whose
        document is not in the index are skipped and counted. ``set_ref``: :data:`SAMPLES_SET`,
        :data:`MY_EVALUATIONS` (``owner``'s saved evaluations), a set name under ``../shared/bench``, a set's
        folder, or an uploaded ``questions.jsonl`` whose ``doc_id``s name documents in the index.

        A run embeds every passage of the documents its questions name, so one runs at a time on the server, and
        a client (``client``: its address; else its owner id) other than the admin starts one per
        :data:`BENCH_INTERVAL_S`; errors name files, never the server's folders."""
        key = client or ("" if owner is ADMIN else str(owner))
        if key and time.monotonic() - self._bench_last.get(key, -1e9) < BENCH_INTERVAL_S:
            wait = BENCH_INTERVAL_S - (time.monotonic() - self._bench_last[key])
            raise ValueError(f"a benchmark embeds every passage of its documents: one run per {BENCH_INTERVAL_S:.0f} s "
                             f"per client; try again in {wait:.0f} s")
        if not self._bench_lock.acquire(blocking=False):
            raise ValueError("a benchmark is already running on this server; try again when it has finished")
        try:
            if key:
                self._bench_last[key] = time.monotonic()
            return self._run_benchmark(set_ref, k=k, budget_words=budget_words, max_questions=max_questions,
                                       owner=owner)
        except (ValueError, FileNotFoundError, OSError) as e:
            raise ValueError(_no_paths(str(e))) from e
        finally:
            self._bench_lock.release()

    def _run_benchmark(self, set_ref, *, k, budget_words, max_questions, owner) -> dict:
        texts, chunks = self.live_chunks(owner)
        if not chunks:
            raise ValueError("the index is empty; ingest the bench set's documents first")
        by_stem = {Path(d).stem: d for d in texts} | {d: d for d in texts}
        if set_ref == SAMPLES_SET:
            p = SAMPLES_QUESTIONS
        elif set_ref == MY_EVALUATIONS:
            if owner is None:
                raise ValueError("your evaluations are kept per browser: this browser has none")
            p, n = self.export_feedback(owner=owner)
            if not n:
                raise ValueError("you have no saved evaluations with evidence yet: ask on the Chat tab, then save an "
                                 "evaluation here with the sources that hold the answer ticked")
        else:
            p = Path(str(set_ref))
        if p.is_file():
            questions = read_questions(p, require_doc_id=True)
            docs_src = {}
        else:
            bench = load_set(str(set_ref))
            questions, docs_src = bench.questions, bench.docs
        kept: list[Question] = []
        skipped: set[str] = set()
        mismatched: set[str] = set()
        for q in questions:
            asked = q.doc_id or ""  # both readers above require a doc_id
            d = by_stem.get(asked)
            if d is None:
                skipped.add(asked)
                continue
            if asked in docs_src and docs_src[asked] != texts[d]:
                mismatched.add(asked)
                continue
            bad = [e for e in q.evidence if e.located and texts[d][e.start:e.end] != e.text]
            if bad:
                mismatched.add(asked)
                continue
            kept.append(Question(q.id, q.question, d, q.answers, q.evidence, q.dataset))
        if not kept:
            missing = ", ".join(sorted(skipped | mismatched)[:5])
            if set_ref == SAMPLES_SET:
                raise ValueError(f"the sample documents are not in the index ({missing}): upload field_notes.md and "
                                 "mgrag_overview.md from the samples folder of MGRAG (`make demo` ingests them)")
            raise ValueError(f"none of the set's documents are in the index ({missing}): upload them first (the "
                             "documents a question names by its doc_id)")
        kept = kept[:max_questions]
        used = {q.doc_id for q in kept if q.doc_id is not None}  # each one's: kept questions name their document
        bench = BenchSet(Path(str(set_ref)).stem, {d: texts[d] for d in used}, kept)
        res = evaluate_retrieval(bench, {d: chunks[d] for d in used}, self.ctx.embedder, top_k=k,
                                 budget_words=budget_words or self.ctx.settings.context_words)
        res["skipped_docs"] = sorted(skipped)
        res["mismatched_docs"] = sorted(mismatched)
        return res

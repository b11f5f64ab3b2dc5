"""The data of ``mgrag bench answers``: which questions, asked of which index, and the follow-up conversations.

Three kinds of questions (dev data only, ``../shared/bench``):

* **answerable**: the longbench_sample questions (documents of at most 7,000 words, as `make bench`'s standard
  profile) and the gutenqa_emma questions whose evidence lies in the first 40% of *Emma*, asked of index
  **A**, which holds those documents;
* **unanswerable**: the same questions asked of index **U**, which holds chroma's three standard documents
  (chatlogs, state_of_the_union, wikitexts) and none of theirs, so the right reply is "not in your documents";
* **follow-ups**: two-turn conversations (``bench/data/followups.jsonl``, written for this benchmark from dev
  questions; see ``bench/data/README.md``) asked of the index that holds their document, with the standalone
  question (the dev question itself) to compare retrieval with.

The indexes are built with the real ingestion pipeline (the configured chunker, embedder and LM) once, into
``<cache_dir>/bench/answers/<name>-<key>``, keyed by the documents' hashes and the chunking settings, so
``mgrag bench answers`` asks questions exactly as ``mgrag ask`` does.
"""
from __future__ import annotations

import hashlib
import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from app.context import AppContext
from app.evaluation import bench as B
from app.evaluation.harness import profiled_set
from ingest.jobs.queue import ingest_now

log = logging.getLogger(__name__)

INDEX_VERSION = 2  # 2: the Qdrant Edge store (issue 12); an index of the older store is rebuilt
FOLLOWUPS = B.ROOT / "bench" / "data" / "followups.jsonl"


@dataclass(frozen=True)
class Turn:
    question: str


@dataclass(frozen=True)
class FollowUp:
    """A two-turn conversation: ``first`` is asked, then ``followup``, which refers back to it (pronoun or
    ellipsis); ``standalone`` is the same question written out in full (a dev question), whose evidence and
    answers are the follow-up's."""

    id: str
    set: str
    doc_id: str
    first: str
    followup: str
    standalone: str
    source_id: str
    kind: str
    evidence: tuple[B.Evidence, ...] = ()
    answers: tuple[str, ...] = ()


@dataclass
class AnswerSets:
    answerable: list[B.Question]
    docs_a: dict[str, str]  # doc_id -> text of index A
    docs_u: dict[str, str]  # index U (chroma standard documents)
    followups: list[FollowUp] = field(default_factory=list)
    note: str = ""


def _ext(set_dir: Path, doc_id: str) -> str:
    return next(p.suffix for p in (set_dir / "docs").iterdir() if p.stem == doc_id)


def load_answer_sets(bench_dir: Path | None = None, followups: Path | None = None,
                     max_questions: int | None = None) -> AnswerSets:
    root = Path(bench_dir or B.BENCH_DIR)
    lb, lb_note = profiled_set(str(root / "longbench_sample"), "standard")
    em, em_note = profiled_set(str(root / "gutenqa_emma"), "standard")
    ch, ch_note = profiled_set(str(root / "chroma"), "standard")
    names_a = {d: f"{d}{_ext(root / 'longbench_sample', d)}" for d in lb.docs}
    names_a.update({d: f"{d}{_ext(root / 'gutenqa_emma', d)}" for d in em.docs})
    docs_a = {names_a[d]: t for d, t in {**lb.docs, **em.docs}.items()}
    docs_u = {f"{d}{_ext(root / 'chroma', d)}": t for d, t in ch.docs.items()}
    questions = [q for q in lb.questions + em.questions]
    # doc ids in the index are file names (what `mgrag ingest` calls a document)
    questions = [B.Question(q.id, q.question, names_a[q.doc_id], q.answers, q.evidence, q.dataset or "gutenqa_emma")
                 for q in questions]
    if max_questions:
        questions = questions[:max_questions]
    fus = load_followups(followups or FOLLOWUPS, root)
    note = (f"answerable: longbench_sample ({lb_note}) and gutenqa_emma ({em_note}); unanswerable: the same "
            f"questions asked of chroma ({ch_note}); follow-ups: {len(fus)} conversations")
    return AnswerSets(questions, docs_a, docs_u, fus, note)


def load_followups(path: Path, bench_dir: Path | None = None) -> list[FollowUp]:
    """The follow-up conversations, each joined with its dev question's evidence and answers (checked: the
    standalone text must be that dev question's)."""
    root = Path(bench_dir or B.BENCH_DIR)
    by_set: dict[str, dict[str, B.Question]] = {}
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            r = json.loads(line)
            missing = {"id", "set", "source_id", "first", "followup", "kind"} - set(r)
            if missing:
                raise ValueError(f"{path}:{n}: missing {', '.join(sorted(missing))}")
            if r["set"] not in by_set:
                bs = B.load_set(str(root / r["set"]))
                by_set[r["set"]] = {q.id: q for q in bs.questions}
            q = by_set[r["set"]].get(r["source_id"])
            if q is None:
                raise ValueError(f"{path}:{n}: {r['set']} has no question {r['source_id']!r}")
            ext = _ext(root / r["set"], q.doc_id)
            out.append(FollowUp(r["id"], r["set"], f"{q.doc_id}{ext}", r["first"], r["followup"], q.question,
                                q.id, r["kind"], q.evidence, q.answers))
    return out


# -- the indexes ------------------------------------------------------------------------------------------------
def index_key(docs: dict[str, str], settings) -> str:
    s = settings
    blob = json.dumps({"v": INDEX_VERSION, "docs": {d: hashlib.sha256(t.encode()).hexdigest() for d, t in
                                                     sorted(docs.items())},
                       "chunker": s.chunker, "theta": s.theta, "embedder": s.embedder, "lm": s.lm_model,
                       "lg_mode": s.lg_mode, "boundary": list(s.lg_boundary_tokens), "prompt": s.lg_prompt},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def build_index(name: str, docs: dict[str, str], settings, *, cache_dir: Path | None = None, embedder=None,
                scorer=None) -> Path:
    """The data dir of an index holding ``docs`` (built with the ingestion pipeline once, then reused)."""
    base = Path(cache_dir or settings.cache_dir) / "bench" / "answers"
    target = base / f"{name}-{index_key(docs, settings)}"
    if (target / "complete.json").exists():
        return target
    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    s = settings.model_copy(update={"data_dir": tmp})
    ctx = AppContext(s, embedder=embedder, scorer=scorer)
    try:
        log.info("building bench index %s (%d documents) in %s", name, len(docs), target)
        report = ingest_now(ctx, [(d, t.encode("utf-8")) for d, t in docs.items()])
        if report.failed:
            raise RuntimeError(f"bench index {name}: {', '.join(f'{r.name}: {r.message}' for r in report.failed)}")
    finally:
        ctx.close()
    (tmp / "complete.json").write_text(json.dumps({"docs": sorted(docs)}), encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target

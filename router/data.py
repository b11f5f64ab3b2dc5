"""Training data for the router: questions files, the fixed split, the corpus read back from an index, soft labels.

The corpus is the live index generation read back from the catalog (chunk offsets and levels) and the document
store (texts), so training needs no Qdrant and sees exactly the chunks the app retrieves. A question is searched
in its own document when the index has one with that id or file stem (as the benchmarks search book by book),
else in the whole corpus.
"""
from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.questions import read_questions
from ingest.store.catalog import live_chunks
from ingest.types import Chunk
from retrieval.bm25 import Bm25Level, tokenize
from retrieval.scoring import level_hits as top_per_level
from router.labels import best_per_level, label_text, question_soft_labels

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): tqdm

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
DEFAULT_FRACTIONS = (0.6, 0.2)  # train, val; the rest is test
SPLIT_SALT = "mgrag-router-split-v1"


@dataclass(frozen=True)
class TrainQuestion:
    id: str
    question: str
    doc_id: str | None = None
    answers: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    source: str = ""  # the file it came from (its stem names the set, e.g. "chroma")


def split_of(question_id: str, set_name: str = "", fractions: Sequence[float] = DEFAULT_FRACTIONS) -> str:
    """The fixed split of a question: a hash of set name and id mapped to [0, 1), cut at the fractions.

    >>> split_of("q1", "chroma") in SPLITS
    True
    """
    h = hashlib.sha256(f"{SPLIT_SALT}:{set_name}:{question_id}".encode()).digest()
    u = int.from_bytes(h[:8], "big") / 2 ** 64
    train, val = fractions
    return "train" if u < train else "val" if u < train + val else "test"


def set_name_of(path: str | Path) -> str:
    """``../shared/bench/chroma/questions.jsonl`` -> ``chroma``; ``foo.jsonl`` -> ``foo``."""
    p = Path(path)
    return p.parent.name if p.stem == "questions" else p.stem


def load_questions(path: str | Path) -> list[TrainQuestion]:
    """Questions in the ``../shared/bench`` format (:func:`core.questions.read_questions`) as training
    questions of the set the file names; errors name the file and line."""
    name = set_name_of(path)
    return [TrainQuestion(q.id, q.question.strip(), q.doc_id, q.answers, tuple(e.text for e in q.evidence), name)
            for q in read_questions(path)]


# -- the corpus ------------------------------------------------------------------------------------------------------
@dataclass
class Corpus:
    """Chunks of every document by level, with per-document BM25 per level built on first use."""

    docs: dict[str, str]  # doc_id -> text
    chunks: dict[str, list[Chunk]]  # doc_id -> chunks of all levels
    n_levels: int
    _bm25: dict = field(default_factory=dict, init=False, repr=False)

    def resolve(self, doc_id: str | None) -> str | None:
        """The corpus document for a question's ``doc_id`` (exact id, or the file stem of an ingested name)."""
        if doc_id is None:
            return None
        if doc_id in self.docs:
            return doc_id
        for d in self.docs:
            if Path(d).stem == doc_id:
                return d
        return None

    def _level_index(self, doc: str | None, level: int) -> tuple[Bm25Level, list[str]]:
        key = (doc, level)
        if key not in self._bm25:
            docs = [doc] if doc is not None else list(self.chunks)
            texts = [c.text for d in docs for c in self.chunks[d] if c.level == level]
            lv = Bm25Level([str(i) for i in range(len(texts))], [Counter(tokenize(t)) for t in texts])
            self._bm25[key] = (lv, texts)
        return self._bm25[key]

    def searchers(self, doc: str | None) -> list[Callable[[list[str]], str | None]]:
        """One function per level: query tokens -> the best BM25 snippet's text (None if nothing matches)."""
        def make(level: int):
            def best(tokens: list[str]) -> str | None:
                lv, texts = self._level_index(doc, level)
                top = lv.top_indices(tokens, 1)
                return texts[top[0][0]] if top else None
            return best
        return [make(j) for j in range(self.n_levels)]


def corpus_from_index(ctx) -> Corpus:
    """The live generation's chunks (catalog offsets) over the stored document texts."""
    live = ctx.catalog.live_generation()
    if live is None:
        raise ValueError("the index is empty; ingest documents first (`mgrag ingest PATH`)")
    docs, chunks = live_chunks(ctx.catalog, ctx.store)
    if not docs:
        raise ValueError("the live index has no documents; ingest documents first (`mgrag ingest PATH`)")
    return Corpus(docs, chunks, live.n_levels)


def corpus_from_chunks(docs: dict[str, str], chunks_by_doc: dict[str, list[Chunk]]) -> Corpus:
    n_levels = 1 + max(c.level for cs in chunks_by_doc.values() for c in cs)
    return Corpus(docs, chunks_by_doc, n_levels)


# -- examples ----------------------------------------------------------------------------------------------------
@dataclass
class Examples:
    questions: list[TrainQuestion]
    similarities: np.ndarray  # (n, n_levels)
    labels: np.ndarray  # (n, n_levels) soft labels
    splits: list[str]
    notes: dict[str, int] = field(default_factory=dict)  # questions skipped or searched corpus-wide, by reason

    def __len__(self) -> int:
        return len(self.questions)

    def subset(self, split: str | Iterable[str]) -> "Examples":
        want = {split} if isinstance(split, str) else set(split)
        idx = [i for i, s in enumerate(self.splits) if s in want]
        return Examples([self.questions[i] for i in idx], self.similarities[idx], self.labels[idx],
                        [self.splits[i] for i in idx])


def build_examples(corpus: Corpus, questions: Sequence[TrainQuestion], similarity, *,
                   values: Sequence[float] = (0.8, 0.2), fractions: Sequence[float] = DEFAULT_FRACTIONS,
                   progress: bool = False) -> Examples:
    """Soft labels for every question that has a label (evidence or answer) and a BM25 match."""
    kept, sims, labels, splits = [], [], [], []
    notes: Counter = Counter()
    it = questions
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(questions, desc="soft labels", unit="q")
    if hasattr(similarity, "prefetch"):  # embed every label and best snippet in one batched call
        texts = []
        for q in questions:
            label = label_text(q.evidence, q.question, q.answers)
            if label is not None:
                texts += [label, *best_per_level(q.question, corpus.searchers(corpus.resolve(q.doc_id)))]
        similarity.prefetch(texts)
    for q in it:
        label = label_text(q.evidence, q.question, q.answers)
        if label is None:
            notes["no evidence or answer"] += 1
            continue
        doc = corpus.resolve(q.doc_id)
        if q.doc_id is not None and doc is None:
            notes["document not in the index (searched the whole corpus)"] += 1
        got = question_soft_labels(q.question, label, corpus.searchers(doc), similarity, values)
        if got is None:
            notes["no BM25 match at any level"] += 1
            continue
        kept.append(q)
        sims.append(got[0])
        labels.append(got[1])
        splits.append(split_of(q.id, q.source, fractions))
    n = corpus.n_levels
    return Examples(kept, np.asarray(sims, dtype=np.float32).reshape(-1, n),
                    np.asarray(labels, dtype=np.float32).reshape(-1, n), splits, dict(notes))


# -- retrieval-aware examples: the dense search's hits, their score profile and which weighting ranks best ------------
def level_hits(chunks: Sequence[Chunk], vectors: np.ndarray, query_vector: np.ndarray, k: int) -> list:
    """The top ``k`` chunks of each level for one query (cosine of normalised vectors), as retrieval makes them."""
    scores = np.asarray(vectors, dtype=np.float32) @ np.asarray(query_vector, dtype=np.float32)
    return top_per_level(chunks, scores, k)


def evidence_spans(text: str, evidence: Sequence[str]) -> list[tuple[int, int]]:
    """Character spans of the evidence texts found verbatim in ``text`` (first occurrence each)."""
    out = []
    for e in evidence:
        i = text.find(e) if e else -1
        if i >= 0:
            out.append((i, i + len(e)))
    return out


@dataclass
class RetrievalExample:
    """One question as the router sees it at query time (its hits) and what its evidence says (relevance)."""

    question: TrainQuestion
    split: str
    query_vector: np.ndarray
    hits: list
    spans: list[tuple[int, int]]

    def relevant(self, parent_id: str) -> bool:
        s, e = (int(x) for x in parent_id.split(":"))
        return any(s < b and a < e for a, b in self.spans)


def retrieval_examples(corpus: Corpus, questions: Sequence[TrainQuestion], query_vectors: np.ndarray,
                       passage_vectors: Callable[[list[str]], np.ndarray], *, k: int = 10,
                       fractions: Sequence[float] = DEFAULT_FRACTIONS) -> tuple[list[RetrievalExample], dict]:
    """Per question (searched in its own document, as the labels need a known document), the top ``k`` hits of each
    level and the evidence spans located verbatim. Questions without a document in the corpus or without located
    evidence are left out and counted in the returned notes."""
    notes: Counter = Counter()
    cache: dict[str, tuple[list[Chunk], np.ndarray]] = {}
    out = []
    for q, qv in zip(questions, query_vectors):
        doc = corpus.resolve(q.doc_id)
        if doc is None:
            notes["no document of that id in the index"] += 1
            continue
        spans = evidence_spans(corpus.docs[doc], q.evidence)
        if not spans:
            notes["no evidence found verbatim in the document"] += 1
            continue
        if doc not in cache:
            cs = corpus.chunks[doc]
            cache[doc] = (cs, passage_vectors([c.text for c in cs]))
        cs, vecs = cache[doc]
        out.append(RetrievalExample(q, split_of(q.id, q.source, fractions), np.asarray(qv, dtype=np.float32),
                                    level_hits(cs, vecs, qv, k), spans))
    return out, dict(notes)


def index_vectors(ctx) -> dict[str, np.ndarray]:
    """text -> vector of every chunk of the live generation, read back from the index (nothing re-embedded)."""
    live = ctx.catalog.live_generation()
    out: dict[str, np.ndarray] = {}
    for level in range(live.n_levels):
        for p in ctx.index.points(live.gen, level, with_vectors=True):
            out[p.payload["text"]] = np.asarray(p.vector, dtype=np.float32)
    return out

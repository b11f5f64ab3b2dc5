"""Multi-granular dense search over the Qdrant index: every level searched, parents scored by max over hits."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from app.context import AppContext
from retrieval.scoring import Hit, assemble_context, rank_parents, weights_or_uniform


@dataclass
class Source:
    rank: int
    doc_id: str
    parent_id: str
    start: int
    end: int
    text: str
    score: float
    matched_level: int
    matched_start: int
    matched_end: int
    level_scores: dict[int, float] = field(default_factory=dict)


@dataclass
class Retrieval:
    question: str
    sources: list[Source]
    weights: list[float]
    timings: dict[str, float]


class EmptyIndexError(RuntimeError):
    pass


def retrieve(ctx: AppContext, question: str, k: int | None = None, budget_words: int | None = None,
             weights=None) -> Retrieval:
    question = (question or "").strip()
    if not question:
        raise ValueError("the question is empty; type a question")
    s = ctx.settings
    k = k or s.top_k
    budget_words = budget_words or s.context_words
    live = ctx.catalog.live_generation()
    if live is None or ctx.index.count(live.gen, 0) == 0:
        raise EmptyIndexError("the index is empty; ingest documents first (`mgrag ingest PATH`)")
    t0 = time.perf_counter()
    qv = ctx.embedder.embed_queries([question])[0]
    t1 = time.perf_counter()
    hits, payloads, per_level = [], {}, {}
    for level in range(live.n_levels):
        for p in ctx.index.search(level, qv, k):
            pl = p.payload
            hits.append(Hit(str(p.id), pl["parent_id"], level, float(p.score)))
            payloads[str(p.id)] = pl
            per_level.setdefault(pl["parent_id"], {})
            per_level[pl["parent_id"]][level] = max(per_level[pl["parent_id"]].get(level, -1.0), float(p.score))
    t2 = time.perf_counter()
    w = weights_or_uniform(weights, live.n_levels)
    ranked = rank_parents(hits, w)
    missing = [pid for pid, _, _ in ranked if pid not in payloads]
    if missing:
        for p in ctx.index.retrieve(0, missing):
            payloads[str(p.id)] = p.payload
    texts = [(pid, payloads[pid]["text"]) for pid, _, _ in ranked if pid in payloads]
    chosen = dict(assemble_context(texts, budget_words))
    sources = []
    for pid, score, hit in ranked:
        if pid not in chosen:
            continue
        pl, hp = payloads[pid], payloads[hit.id]
        sources.append(Source(len(sources) + 1, pl["doc_id"], pid, pl["start"], pl["end"], pl["text"], score,
                              hit.level, hp["start"], hp["end"], per_level.get(pid, {})))
    t3 = time.perf_counter()
    return Retrieval(question, sources, w, {"embed_s": t1 - t0, "search_s": t2 - t1, "assemble_s": t3 - t2})

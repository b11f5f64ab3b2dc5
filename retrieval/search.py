"""Multi-granular search over the live index: dense (Qdrant), BM25, or both fused by reciprocal rank.

Every level is searched (top ``k`` per level); a parent's score is the maximum over its hits (children and
itself) of ``weight[level] * score`` (:mod:`retrieval.scoring`). Hybrid mode ranks parents by dense and by
BM25 separately and fuses the two rankings with RRF: ``sum_r 1 / (rrf_k + rank_r)``.

The level weights come from the MoG router (``ctx.route``: :mod:`router.runtime`, ``MGRAG_ROUTER``) unless
given; it reads the query vector the dense search already computed. ``MGRAG_ROUTER_SELECTION=mog`` uses MoG's own
selection instead of the max over children (:func:`retrieval.scoring.mog_rank`): the sources are then chunks of the
best-weighted level, not necessarily parents.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.resources import Point, Resources
from ingest.text.sentences import count_words, split_sentences
from retrieval.bm25 import tokenize
from retrieval.scoring import ChunkSpan, Hit, assemble_context, mog_rank, rank_parents, weights_or_uniform

RETRIEVERS = ("dense", "bm25", "hybrid")


@dataclass
class Source:
    """One numbered source of the context: a parent passage and the hit that made it rank."""

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
    matched_text: str
    level_scores: dict[int, float] = field(default_factory=dict)  # best dense score per level
    bm25_level_scores: dict[int, float] = field(default_factory=dict)
    pages: list[int] | None = None  # [first, last] page of the passage (PDF), from its payload
    headings: list[str] = field(default_factory=list)  # heading path at the passage's start
    matched_pages: list[int] | None = None  # pages of the matched child
    doc_hash: str = ""  # the content hash of the document version the passage comes from
    first_pass: bool = False  # a quick first-pass chunk: the document's LM refinement has not replaced it yet
    unit: str = "page"  # what ``pages`` counts: page, slide, sheet or row (ingest/readers/layout.py)
    blocks: list = field(default_factory=list)  # [start, end, "table" | "heading"] in document offsets
    name: str = ""  # the document's name as its reader sees it (Catalog.labels); "" = doc_id

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def with_payload(self, payload: dict, matched_payload: dict) -> "Source":
        """The fields that come straight from the points' payloads: pages, heading path, content hash."""
        self.pages, self.headings = payload.get("pages"), list(payload.get("headings") or [])
        self.matched_pages = matched_payload.get("pages")
        self.doc_hash = payload.get("doc_hash", "")
        self.first_pass = bool(payload.get("first_pass"))
        self.unit = payload.get("unit") or "page"
        self.blocks = list(payload.get("blocks") or [])
        return self


@dataclass
class Retrieval:
    question: str
    sources: list[Source]
    weights: list[float]
    retriever: str
    timings: dict[str, float]
    n_candidates: int = 0
    router: str = ""  # where the weights came from: the trained router, or why they are uniform
    selection: str = "max"


class EmptyIndexError(RuntimeError):
    pass


class QuestionError(ValueError):
    pass


def check_question(question: str | None, max_chars: int) -> str:
    q = (question or "").strip()
    if not q:
        raise QuestionError("the question is empty; type a question")
    if len(q) > max_chars:
        raise QuestionError(
            f"the question is {len(q):,} characters; the limit is {max_chars:,} (MGRAG_MAX_QUESTION_CHARS). "
            "Ask a shorter question, or ingest the long text as a document and ask about it")
    try:
        q.encode("utf-8")
    except UnicodeEncodeError as e:  # an unpaired surrogate ("\ud800"): no text, and the tokenizer fails on it
        raise QuestionError(f"the question holds a character that is not text (at position {e.start + 1}); "
                            "type it again") from None
    return q


def _rrf(rankings: list[list[str]], k: int, weights: Sequence[float] | None = None) -> dict[str, float]:
    """Reciprocal rank fusion: each id's sum over the rankings of ``weight / (k + rank)`` (weights 1 by default)."""
    out: dict[str, float] = {}
    for i, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[i]
        for r, pid in enumerate(ranking, 1):
            out[pid] = out.get(pid, 0.0) + w / (k + r)
    return out


def _options(s, retriever: str | None, selection: str | None) -> tuple[str, str]:
    """The retriever and selection asked for, else the settings'; MoG selection weighs one retriever's scores, so
    with it the default hybrid retriever is dense, and hybrid asked for by name is an error."""
    chosen = retriever is not None or "retriever" in getattr(s, "model_fields_set", ())
    retriever = retriever or s.retriever
    if retriever not in RETRIEVERS:
        raise ValueError(f"retriever must be one of {RETRIEVERS}, got {retriever!r}")
    selection = selection or s.router_selection
    if selection not in ("max", "mog"):
        raise ValueError(f"selection must be 'max' or 'mog', got {selection!r}")
    if selection == "mog" and retriever == "hybrid" and not chosen:
        retriever = "dense"
    if selection == "mog" and retriever == "hybrid":
        raise ValueError("MoG selection (MGRAG_ROUTER_SELECTION=mog) works on one retriever's scores; "
                         "use --retriever dense or bm25")
    return retriever, selection


def dense_search(ctx: Resources, n_levels: int, query_vector, k: int, doc_ids=None, visible_to: str | None = None
                 ) -> list[tuple[int, Point]]:
    """``(level, point)``: the ``k`` nearest points of every level of the live generation, best first per level,
    among ``doc_ids`` if given and what reader ``visible_to`` may see (None: everything)."""
    return [(level, p) for level in range(n_levels)
            for p in ctx.index.search(level, query_vector, k, doc_ids=doc_ids, visible_to=visible_to)]


def bm25_search(ctx: Resources, live, tokens: list[str], k: int, doc_ids=None, visible_to: str | None = None
                ) -> list[tuple[int, str, str, float]]:
    """``(level, chunk id, parent id, score)``: the ``k`` best BM25 chunks of every level of ``live``, best first per
    level, within the same limits as :func:`dense_search`: the keywords live in the store beside the dense vectors
    (:mod:`ingest.text.keywords`), so the documents and the reader's visibility are the same payload conditions."""
    out = []
    for level in range(live.n_levels):
        for p in ctx.index.keyword_search(level, tokens, k, doc_ids=doc_ids, visible_to=visible_to):
            out.append((level, p.id, p.payload.get("parent_id") or p.id, p.score))
    return out


@dataclass
class _Found:
    """The hits of one question's per-level searches, the payloads read with them, and each parent's best score per
    level (dense and BM25)."""

    dense: list[Hit] = field(default_factory=list)
    bm25: list[Hit] = field(default_factory=list)
    payloads: dict[str, dict] = field(default_factory=dict)
    dense_levels: dict[str, dict[int, float]] = field(default_factory=dict)
    bm25_levels: dict[str, dict[int, float]] = field(default_factory=dict)


def _keep_dense(ctx: Resources, live, found: list, out: _Found) -> None:
    # only chunks the catalog records: a document whose chunks are being swapped (its refinement, a new version)
    # shows one chunking or the other, never both (Catalog.known_ids)
    known = ctx.catalog.known_ids(live.gen, (str(p.id) for _, p in found))
    for level, p in found:
        pl, pid = p.payload, str(p.id)
        if pid not in known:
            continue
        out.dense.append(Hit(pid, pl["parent_id"], level, float(p.score)))
        out.payloads[pid] = pl
        d = out.dense_levels.setdefault(pl["parent_id"], {})
        d[level] = max(d.get(level, -1e9), float(p.score))


def _keep_bm25(ctx: Resources, live, found: list, out: _Found) -> None:
    known = ctx.catalog.known_ids(live.gen, (f[1] for f in found))
    for level, cid, parent, score in found:
        if cid not in known:
            continue
        out.bm25.append(Hit(cid, parent, level, score))
        b = out.bm25_levels.setdefault(parent, {})
        b[level] = max(b.get(level, -1e9), score)


def retrieve(ctx: Resources, question: str, k: int | None = None, budget_words: int | None = None,
             weights=None, retriever: str | None = None, selection: str | None = None,
             doc_ids=None, visible_to: str | None = None) -> Retrieval:
    """The sources for ``question``; ``doc_ids`` limits the search to those documents (None: all), ``visible_to`` to
    what that reader may see: its own documents and the shared library's (None: every document)."""
    s = ctx.settings.retrieval  # what retrieval reads, and nothing else
    question = check_question(question, s.max_question_chars)
    k = k or s.top_k
    budget_words = budget_words or s.context_words
    retriever, selection = _options(ctx.settings, retriever, selection)
    live = ctx.catalog.live_generation()
    if live is None or ctx.index.count(live.gen, 0) == 0:
        raise EmptyIndexError("the index is empty; ingest documents first (`mgrag ingest PATH`)")
    timings: dict[str, float] = {}
    found = _Found()
    qv = None
    if retriever in ("dense", "hybrid"):
        t = time.perf_counter()
        qv = ctx.embedder.embed_queries([question])[0]
        timings["embed_s"] = time.perf_counter() - t
        t = time.perf_counter()
        _keep_dense(ctx, live, dense_search(ctx, live.n_levels, qv, k, doc_ids, visible_to), found)
        timings["dense_s"] = time.perf_counter() - t
    # the router reads the query vector and, if it was trained on them, the score profile of the dense hits
    if weights is not None:
        w, router_note = weights_or_uniform(weights, live.n_levels), "given"
    else:
        w, router_note, secs = ctx.route(embedder_name=live.embedder, n_levels=live.n_levels, question=question,
                                         query_vector=qv, hits=found.dense if retriever != "bm25" else None)
        timings["router_s"] = secs
    if retriever in ("bm25", "hybrid"):
        t = time.perf_counter()
        _keep_bm25(ctx, live, bm25_search(ctx, live, tokenize(question), k, doc_ids, visible_to), found)
        timings["bm25_s"] = time.perf_counter() - t

    t = time.perf_counter()
    if selection == "mog":
        sources, n = _mog_sources(ctx, live, found.dense or found.bm25, w, found.payloads, budget_words,
                                  found.dense_levels, found.bm25_levels)
    else:
        sources, n = _max_sources(ctx, live, found, w, retriever, budget_words)
    timings["assemble_s"] = time.perf_counter() - t
    timings["total_s"] = sum(timings.values())
    if sources:
        labels = ctx.catalog.labels(visible_to, [s.doc_id for s in sources])
        for s in sources:
            s.name = labels.get(s.doc_id, s.doc_id)
    return Retrieval(question, sources, w, retriever, timings, n, router_note, selection)


def _max_sources(ctx: Resources, live, found: _Found, w: list[float], retriever: str, budget_words: int
                 ) -> tuple[list[Source], int]:
    """Sources by the design card's selection: parents ranked by the max over their weighted hits (dense, BM25, or
    both fused by RRF), assembled up to ``budget_words``."""
    payloads = found.payloads
    dense_rank = rank_parents(found.dense, w)
    bm25_rank = rank_parents(found.bm25, w)
    best_hit = {pid: h for pid, _, h in bm25_rank}
    best_hit.update({pid: h for pid, _, h in dense_rank})  # prefer the dense hit as "the matched child"
    if retriever == "dense":
        ranked = [(pid, sc) for pid, sc, _ in dense_rank]
    elif retriever == "bm25":
        ranked = [(pid, sc) for pid, sc, _ in bm25_rank]
    else:
        fused = _rrf([[p for p, _, _ in dense_rank], [p for p, _, _ in bm25_rank]], ctx.settings.retrieval.rrf_k,
                     [1.0, ctx.settings.retrieval.bm25_weight])
        ranked = sorted(fused.items(), key=lambda x: (-x[1], x[0]))
    need = [pid for pid, _ in ranked if pid not in payloads]
    need += [best_hit[pid].id for pid, _ in ranked if best_hit[pid].id not in payloads]
    if need:
        for level in range(live.n_levels):
            ids = [i for i in need if i not in payloads]
            if not ids:
                break
            for p in ctx.index.retrieve(level, ids):
                payloads[str(p.id)] = p.payload
    texts = [(pid, payloads[pid]["text"]) for pid, _ in ranked if pid in payloads]
    chosen = dict(assemble_context(texts, budget_words))
    sources = []
    for pid, score in ranked:
        if pid not in chosen:
            continue
        pl = payloads[pid]
        hit = best_hit[pid]
        hp = payloads.get(hit.id, pl)
        sources.append(Source(len(sources) + 1, pl["doc_id"], pid, pl["start"], pl["end"], pl["text"], float(score),
                              hit.level, hp["start"], hp["end"], hp["text"], found.dense_levels.get(pid, {}),
                              found.bm25_levels.get(pid, {})).with_payload(pl, hp))
    return sources, len(ranked)


def _mog_sources(ctx: Resources, live, hits: list[Hit], w: list[float], payloads: dict[str, dict],
                 budget_words: int, dense_levels, bm25_levels) -> tuple[list[Source], int]:
    """Sources by MoG's selection: chunks of the best-weighted level containing the best finest chunks."""
    spans = {cid: ChunkSpan(cid, doc, lv, st, en, pid)
             for cid, doc, lv, st, en, pid in ctx.catalog.chunks_under(live.gen, {h.parent_id for h in hits})}
    ranked = mog_rank(hits, spans, w)
    for level in range(live.n_levels):
        ids = list(dict.fromkeys(i for uid, _, h in ranked for i in (uid, h.id)
                                 if i not in payloads and spans[i].level == level))
        for p in (ctx.index.retrieve(level, ids) if ids else ()):
            payloads[str(p.id)] = p.payload
    chosen = dict(assemble_context([(uid, payloads[uid]["text"]) for uid, _, _ in ranked if uid in payloads],
                                   budget_words))
    sources = []
    for uid, score, hit in ranked:
        if uid not in chosen:
            continue
        pl, hp = payloads[uid], payloads.get(hit.id, payloads[uid])
        sources.append(Source(len(sources) + 1, pl["doc_id"], uid, pl["start"], pl["end"], pl["text"], float(score),
                              hit.level, hp["start"], hp["end"], hp["text"], dense_levels.get(hit.parent_id, {}),
                              bm25_levels.get(hit.parent_id, {})).with_payload(pl, hp))
    return sources, len(ranked)


def no_retrieval_context(text: str, max_words: int = 3500) -> str:
    """The paper's no-retrieval baseline: the document truncated to ``max_words`` words at a sentence end."""
    out_end, used = 0, 0
    for s, e in split_sentences(text):
        n = count_words(text[s:e])
        if used + n > max_words:
            break
        used, out_end = used + n, e
    return text[:out_end]

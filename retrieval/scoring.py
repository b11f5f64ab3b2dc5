"""Pure scoring: child hits -> parent scores (LGMGC §3.2, with per-level weights from the router)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ingest.text.sentences import count_words

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): numpy


@dataclass(frozen=True)
class Hit:
    id: str
    parent_id: str
    level: int
    score: float


def level_hits(chunks: Sequence, scores: Sequence[float], k: int) -> list[Hit]:
    """The top ``k`` chunks **of each level** for one query, given every chunk's score, as ``Hit``s (id
    ``"level:start:end"``, parent ``"start:end"``): the in-memory search of the benchmarks and router training,
    the same per-level top-k the index search makes. Ties keep the chunks' order.

    >>> from ingest.types import Chunk
    >>> cs = [Chunk("ab", 0, 2, 0, 0, 4), Chunk("cd", 2, 4, 0, 0, 4), Chunk("a", 0, 1, 1, 0, 4)]
    >>> [(h.id, h.parent_id, h.score) for h in level_hits(cs, [0.5, 0.9, 0.7], 1)]
    [('0:2:4', '0:4', 0.9), ('1:0:1', '0:4', 0.7)]
    """
    import numpy as np

    scores = np.asarray(scores)
    levels = np.array([c.level for c in chunks])
    hits = []
    for level in np.unique(levels):
        idx = np.nonzero(levels == level)[0]
        for i in idx[np.argsort(-scores[idx], kind="stable")[:k]]:
            c = chunks[i]
            ps, pe = c.parent_span
            hits.append(Hit(f"{c.level}:{c.start}:{c.end}", f"{ps}:{pe}", int(c.level), float(scores[i])))
    return hits


def parent_scores(hits: Sequence[Hit], weights: Sequence[float] | None = None) -> dict[str, tuple[float, Hit]]:
    """Score of each parent = max over its hits (children and itself) of ``weights[level] * score``.

    Returns ``{parent_id: (score, best_hit)}``; ties keep the coarser (earlier) hit.

    >>> h = [Hit("c1", "p", 2, 0.9), Hit("p", "p", 0, 0.5), Hit("c2", "q", 1, 0.7)]
    >>> {k: round(v[0], 2) for k, v in parent_scores(h, [1.0, 1.0, 0.5]).items()}
    {'p': 0.5, 'q': 0.7}
    """
    out: dict[str, tuple[float, Hit]] = {}
    for h in hits:
        w = 1.0 if weights is None else float(weights[h.level])
        s = w * h.score
        cur = out.get(h.parent_id)
        if cur is None or s > cur[0]:
            out[h.parent_id] = (s, h)
    return out


def rank_parents(hits: Sequence[Hit], weights: Sequence[float] | None = None, k: int | None = None
                 ) -> list[tuple[str, float, Hit]]:
    """Parents sorted by score (descending; ties by parent id for determinism)."""
    scored = parent_scores(hits, weights)
    ranked = sorted(((pid, s, h) for pid, (s, h) in scored.items()), key=lambda x: (-x[1], x[0]))
    return ranked[:k] if k else ranked


def assemble_context(parents: Sequence[tuple[str, str]], budget_words: int) -> list[tuple[str, str]]:
    """Top parents ``(id, text)`` in rank order while the total stays within ``budget_words`` words.

    A parent that would overflow the budget is skipped (never cut mid-sentence); smaller ones after it
    may still fit.
    """
    out, used = [], 0
    for pid, text in parents:
        n = count_words(text)
        if used + n <= budget_words:
            out.append((pid, text))
            used += n
    return out


def weights_or_uniform(weights: Mapping[int, float] | Sequence[float] | None, n_levels: int) -> list[float]:
    if weights is None:
        return [1.0] * n_levels
    if isinstance(weights, Mapping):
        return [float(weights.get(i, 1.0)) for i in range(n_levels)]
    if len(weights) != n_levels:
        raise ValueError(f"got {len(weights)} level weights for an index with {n_levels} levels")
    return [float(w) for w in weights]


# -- MoG's own selection (MoG §3.2.1 and App. A) -------------------------------------------------------------------
@dataclass(frozen=True)
class ChunkSpan:
    """Where a chunk lies: enough to know which chunks of other levels contain it."""

    id: str
    doc_id: str
    level: int
    start: int
    end: int
    parent_id: str


def _contains(outer: ChunkSpan, inner: ChunkSpan) -> bool:
    if outer.doc_id != inner.doc_id:
        return False
    if inner.start == inner.end:
        return outer.start <= inner.start <= outer.end
    return outer.start <= inner.start and inner.end <= outer.end


def mog_level(weights: Sequence[float]) -> int:
    """g_r = argmax_g w_g: the level MoG returns its chunks from (ties: the coarser level)."""
    return max(range(len(weights)), key=lambda g: (float(weights[g]), -g))


def mog_rank(hits: Sequence[Hit], spans: Mapping[str, ChunkSpan], weights: Sequence[float]
             ) -> list[tuple[str, float, Hit]]:
    """MoG's selection: rank the finest chunks by the weighted scores of their ancestors, return the chunks
    of the best-weighted level that contain the winners.

    Each finest chunk ``c`` (level ``n - 1``) under any hit gets ``t(c)[g]`` = the score of the level-g hit
    that contains it, or 0 when no level-g hit does (MoG pads with zeros); its score is ``t(c) · w``. The
    finest chunks, best first, are mapped to their containing chunk at level ``g_r = argmax w`` (duplicates
    dropped). ``spans`` must hold every hit and every chunk under the hits' parents. Returns
    ``(chunk id at g_r, score, Hit of the winning finest chunk)``, best first.

    >>> sp = {i: ChunkSpan(i, "d", lv, s, e, "P") for i, lv, s, e in
    ...       [("P", 0, 0, 40), ("A", 1, 0, 20), ("B", 1, 20, 40), ("a1", 2, 0, 10), ("a2", 2, 10, 20),
    ...        ("b1", 2, 20, 30), ("b2", 2, 30, 40)]}
    >>> hits = [Hit("P", "P", 0, 0.5), Hit("B", "P", 1, 0.6), Hit("a1", "P", 2, 0.9)]
    >>> [(u, round(s, 2)) for u, s, _ in mog_rank(hits, sp, [0.1, 0.8, 0.2])]
    [('B', 0.53), ('A', 0.23)]
    """
    n = len(weights)
    finest, g_r = n - 1, mog_level(weights)
    hit_spans = [(spans[h.id], h) for h in hits if h.id in spans]
    by_level: dict[int, list[ChunkSpan]] = {}
    for s in spans.values():
        by_level.setdefault(s.level, []).append(s)
    cands = [f for f in by_level.get(finest, []) if any(_contains(s, f) for s, _ in hit_spans)]
    scored = []
    for f in cands:
        t = [0.0] * n
        for s, h in hit_spans:
            if h.level < n and _contains(s, f):
                t[h.level] = max(t[h.level], float(h.score))
        scored.append((sum(float(w) * x for w, x in zip(weights, t)), f))
    scored.sort(key=lambda x: (-x[0], x[1].doc_id, x[1].start, x[1].id))
    units = sorted(by_level.get(g_r, []), key=lambda s: (s.doc_id, s.start))
    out: list[tuple[str, float, Hit]] = []
    seen: set[str] = set()
    for score, f in scored:
        unit = f if g_r == finest else next((u for u in units if _contains(u, f)), f)
        if unit.id in seen:
            continue
        seen.add(unit.id)
        out.append((unit.id, score, Hit(f.id, f.parent_id, f.level, score)))
    return out


# -- comparable level scores (issue 24): per-level normalisation before the max over children -----------------------
NORMALISATIONS = ("raw", "z", "rank", "offset")


def normalise_levels(hits: Sequence[Hit], method: str = "raw", *, offsets: Mapping[int, float] | None = None,
                     rrf_k: int = 60) -> list[Hit]:
    """The hits of one query with each level's scores made comparable with the other levels' before the max.

    ``method``: ``raw`` (unchanged); ``z`` (z-score over the level's hits: (s - mean) / std, 0 when the level
    has one hit or no spread); ``rank`` (reciprocal rank within the level, ``1 / (rrf_k + r)``, r from 1; ties
    keep the hits' order); ``offset`` (``s - offsets[level]``, e.g. a level's mean top-k score calibrated on other
    questions; a level missing from ``offsets`` is left unchanged).

    >>> h = [Hit("p", "p", 0, 0.5), Hit("q", "q", 0, 0.3), Hit("c1", "p", 1, 0.9), Hit("c2", "q", 1, 0.7)]
    >>> [round(x.score, 2) for x in normalise_levels(h, "z")]
    [1.0, -1.0, 1.0, -1.0]
    >>> [round(x.score, 4) for x in normalise_levels(h, "rank", rrf_k=0)]
    [1.0, 0.5, 1.0, 0.5]
    >>> [round(x.score, 2) for x in normalise_levels(h, "offset", offsets={1: 0.4})]
    [0.5, 0.3, 0.5, 0.3]
    """
    if method not in NORMALISATIONS:
        raise ValueError(f"method must be one of {NORMALISATIONS}, got {method!r}")
    if method == "raw":
        return list(hits)
    if method == "offset":
        off = offsets or {}
        return [Hit(h.id, h.parent_id, h.level, h.score - float(off.get(h.level, 0.0))) for h in hits]
    by_level: dict[int, list[int]] = {}
    for i, h in enumerate(hits):
        by_level.setdefault(h.level, []).append(i)
    new = [0.0] * len(hits)
    for idx in by_level.values():
        scores = [hits[i].score for i in idx]
        if method == "z":
            n = len(scores)
            mean = sum(scores) / n
            std = (sum((s - mean) ** 2 for s in scores) / n) ** 0.5
            for i, s in zip(idx, scores):
                new[i] = (s - mean) / std if n > 1 and std > 1e-12 else 0.0
        else:  # rank
            order = sorted(range(len(idx)), key=lambda j: -scores[j])  # stable: ties keep the hits' order
            for r, j in enumerate(order, 1):
                new[idx[j]] = 1.0 / (rrf_k + r)
    return [Hit(h.id, h.parent_id, h.level, s) for h, s in zip(hits, new)]


def level_top_means(hits: Sequence[Hit], top: int = 10) -> dict[int, float]:
    """Each level's mean of its ``top`` best scores for one query: the statistic whose average over calibration
    questions gives :func:`normalise_levels`' ``offset`` values.

    >>> level_top_means([Hit("a", "a", 0, 0.2), Hit("b", "b", 0, 0.6), Hit("c", "a", 1, 0.9)], top=1)
    {0: 0.6, 1: 0.9}
    """
    by_level: dict[int, list[float]] = {}
    for h in hits:
        by_level.setdefault(h.level, []).append(h.score)
    return {lv: sum(sorted(s, reverse=True)[:top]) / len(sorted(s, reverse=True)[:top])
            for lv, s in sorted(by_level.items())}


def rank_parents_combined(hits: Sequence[Hit], weights: Sequence[float] | None = None, combine: str = "max"
                          ) -> list[tuple[str, float, Hit]]:
    """Parents ranked by their hits combined across levels: ``max`` (:func:`rank_parents`: the best weighted hit)
    or ``sum`` (the sum over levels of each level's best weighted hit under the parent, as reciprocal-rank fusion
    sums ranks). Returns ``(parent_id, score, best hit)``, best first; ties by parent id.

    >>> h = [Hit("p", "p", 0, 0.5), Hit("c1", "p", 1, 0.4), Hit("c2", "p", 1, 0.3), Hit("q", "q", 0, 0.8)]
    >>> [(p, round(s, 2)) for p, s, _ in rank_parents_combined(h, combine="sum")]
    [('p', 0.9), ('q', 0.8)]
    >>> [p for p, _, _ in rank_parents_combined(h, combine="max")]
    ['q', 'p']
    """
    if combine == "max":
        return rank_parents(hits, weights)
    if combine != "sum":
        raise ValueError(f"combine must be 'max' or 'sum', got {combine!r}")
    def w(level: int) -> float:
        return 1.0 if weights is None else float(weights[level])

    best: dict[tuple[str, int], tuple[float, Hit]] = {}
    for h in hits:
        s, key = w(h.level) * h.score, (h.parent_id, h.level)
        if key not in best or s > best[key][0]:
            best[key] = (s, h)
    total: dict[str, float] = {}
    top: dict[str, tuple[float, Hit]] = {}
    for (pid, _), (s, h) in best.items():
        total[pid] = total.get(pid, 0.0) + s
        if pid not in top or s > top[pid][0]:
            top[pid] = (s, h)
    return sorted(((pid, s, top[pid][1]) for pid, s in total.items()), key=lambda x: (-x[1], x[0]))


def simplex_grid(n_levels: int, step: float = 0.1) -> list[tuple[float, ...]]:
    """Every weight vector of ``n_levels`` non-negative weights summing to 1 in steps of ``step`` (the search space
    of per-corpus level weights; with the max over children only the weights' ratios matter).

    >>> len(simplex_grid(3, 0.1)), simplex_grid(2, 0.5)
    (66, [(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)])
    """
    n = int(round(1 / step))

    def rec(k: int, left: int) -> list[tuple[int, ...]]:
        if k == 1:
            return [(left,)]
        return [(i, *rest) for i in range(left + 1) for rest in rec(k - 1, left - i)]

    return [tuple(round(i / n, 10) for i in v) for v in rec(n_levels, n)]

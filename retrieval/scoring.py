"""Pure scoring: child hits -> parent scores (LGMGC §3.2, with per-level weights from the router)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


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
    from ingest.sentences import count_words  # CJK characters count as words, as in the chunkers

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

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

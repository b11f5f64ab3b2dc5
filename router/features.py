"""What the router reads besides the query vector: the score profile of each level's search, and the labels that
say which weighting retrieves best. Pure functions over hits and scores; the index adapters live elsewhere.

The profile is computed from the hits retrieval already has (top ``k`` per level, dense cosine scores), so it
costs no extra search: per level the top score, its margin to the second, the mean of the top 5, the gap to the
best level's top score, and whether the level's best hit lies in the parent that uniform weights rank first; and
the question's length. A question whose evidence is one precise sentence tends to give the finest level a high,
isolated top score; a vague question gives flat profiles where coarse chunks agree.

>>> from retrieval.scoring import Hit
>>> hits = [Hit("p", "p", 0, 0.5), Hit("a", "p", 1, 0.6), Hit("b", "q", 1, 0.4), Hit("x", "p", 2, 0.9)]
>>> [round(float(x), 2) for x in profile_features(hits, 3, n_words=6)]
[0.5, 0.0, 0.5, -0.4, 1.0, 0.6, 0.2, 0.5, -0.3, 1.0, 0.9, 0.0, 0.9, 0.0, 1.0, 1.95]
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from retrieval.scoring import Hit, rank_parents

PER_LEVEL = ("top", "margin", "mean_top5", "gap_to_best", "agrees_with_uniform")
GLOBAL = ("log_question_words",)


def profile_dim(n_levels: int) -> int:
    return n_levels * len(PER_LEVEL) + len(GLOBAL)


def profile_features(hits: Sequence[Hit], n_levels: int, *, n_words: int, k: int = 5) -> np.ndarray:
    """The score profile of one question's per-level search (see the module doc); shape ``(profile_dim,)``.

    A level without hits gets zeros. ``n_words`` is the question's length in words.
    """
    by_level: list[list[Hit]] = [[] for _ in range(n_levels)]
    for h in hits:
        if 0 <= h.level < n_levels:
            by_level[h.level].append(h)
    for lv in by_level:
        lv.sort(key=lambda h: -h.score)
    ranked = rank_parents(hits)
    top_parent = ranked[0][0] if ranked else None
    tops = [lv[0].score for lv in by_level if lv]
    best = max(tops) if tops else 0.0
    out: list[float] = []
    for lv in by_level:
        if not lv:
            out += [0.0] * len(PER_LEVEL)
            continue
        s = [h.score for h in lv]
        out += [s[0], s[0] - s[1] if len(s) > 1 else 0.0, float(np.mean(s[:k])), s[0] - best,
                1.0 if lv[0].parent_id == top_parent else 0.0]
    out.append(math.log1p(max(n_words, 0)))
    return np.asarray(out, dtype=np.float32)


# -- labels ------------------------------------------------------------------------------------------------------------
def candidate_weights(n_levels: int, tilt: float = 0.9) -> list[tuple[float, ...]]:
    """The weightings a choice router picks from: uniform, then each level favoured (the others × ``tilt``), then
    each level alone (the others 0).

    >>> candidate_weights(2)
    [(1.0, 1.0), (1.0, 0.9), (0.9, 1.0), (1.0, 0.0), (0.0, 1.0)]
    """
    out = [tuple([1.0] * n_levels)]
    for j in range(n_levels):
        out.append(tuple(1.0 if i == j else tilt for i in range(n_levels)))
    for j in range(n_levels):
        out.append(tuple(1.0 if i == j else 0.0 for i in range(n_levels)))
    return out


def dcg_of_ranking(parent_ids: Sequence[str], relevant: Callable[[str], bool], k: int = 10) -> float:
    """DCG@k with binary relevance (as the benchmarks)."""
    return float(sum(1.0 / math.log2(i + 2) for i, p in enumerate(parent_ids[:k]) if relevant(p)))


def weighting_gains(hits: Sequence[Hit], candidates: Sequence[Sequence[float]], relevant: Callable[[str], bool],
                    k: int = 10) -> np.ndarray:
    """DCG@k of the parent ranking each candidate weighting gives (the max over children of weight × score)."""
    return np.array([dcg_of_ranking([p for p, _, _ in rank_parents(hits, w)], relevant, k) for w in candidates])


def choice_labels(gains: np.ndarray, margin: float = 1e-9) -> np.ndarray:
    """Target distribution over candidates: shared equally by those whose gain is the best (all of them when no
    weighting finds anything, so such questions teach nothing but the prior).

    >>> choice_labels(np.array([0.5, 1.0, 1.0, 0.0])).tolist()
    [0.0, 0.5, 0.5, 0.0]
    """
    best = gains.max()
    m = (gains >= best - margin).astype(np.float32)
    return m / m.sum()


def level_labels(level_gains: Sequence[float], values: Sequence[float] = (0.8, 0.2)) -> list[float]:
    """Retrieval-aware per-level labels: ``values[0]`` to the level(s) that alone rank the evidence best (by DCG),
    ``values[1]`` to the next; MoG's label shape, tied to the retrieval objective instead of snippet similarity.

    >>> level_labels([0.5, 1.0, 0.3])
    [0.2, 0.8, 0.0]
    """
    v = list(level_gains)
    ranks = sorted(set(v), reverse=True)
    return [values[0] if x == ranks[0] else values[1] if len(ranks) > 1 and x == ranks[1] else 0.0 for x in v]

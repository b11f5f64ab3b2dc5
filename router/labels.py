"""MoG soft labels (§3.2.2, App. E): the best BM25 snippet per level, scored against the label text.

For a training question take the best BM25 snippet of every granularity level, score each against the label
(the gold evidence when known, else question ⊕ answer) with a similarity, then give 0.8 to the most similar
level, 0.2 to the second and 0 to the rest. All pure functions over lists; the index adapters live in
:mod:`router.data`.

>>> soft_labels([0.0, 0.32, 0.11, 0.88, 0.45])   # MoG's worked example
[0.0, 0.0, 0.0, 0.8, 0.2]
>>> soft_labels([0.95, 0.07, 0.22, 0.11, 0.19])
[0.8, 0.0, 0.2, 0.0, 0.0]
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from retrieval.bm25 import tokenize

SIMILARITIES = ("encoder", "tfidf", "hitrate")
MISSING = float("-inf")  # similarity of a level that returned no snippet


def soft_labels(similarities: Sequence[float], values: Sequence[float] = (0.8, 0.2)) -> list[float]:
    """``values[0]`` to the most similar level, ``values[1]`` to the second, 0 elsewhere.

    Ties go to the earlier (coarser) level; a level without a snippet (``-inf``) never gets a label.
    """
    sims = [float(s) for s in similarities]
    order = sorted(range(len(sims)), key=lambda i: (-sims[i], i))
    out = [0.0] * len(sims)
    for rank, i in enumerate(order[:len(values)]):
        if sims[i] != MISSING:
            out[i] = float(values[rank])
    return out


def label_text(evidence: Sequence[str], question: str, answers: Sequence[str]) -> str | None:
    """The label: the gold evidence if known, else question ⊕ first answer; None when there is neither."""
    ev = [e for e in evidence if e and e.strip()]
    if ev:
        return "\n".join(ev)
    ans = [a for a in answers if a and a.strip()]
    if ans:
        return f"{question}\n{ans[0]}"
    return None


# -- similarities (MoG App. E: RoBERTa, TF-IDF, hit rate) ----------------------------------------------------------
def encoder_similarities(embedder, label: str, snippets: Sequence[str | None]) -> list[float]:
    """Cosine similarity of each snippet to the label with the encoder's passage embeddings (normalised)."""
    present = [s for s in snippets if s is not None]
    if not present:
        return [MISSING] * len(snippets)
    vecs = np.asarray(embedder.embed_passages([label, *present]), dtype=np.float32)
    sims = iter((vecs[1:] @ vecs[0]).tolist())
    return [next(sims) if s is not None else MISSING for s in snippets]


def tfidf_similarities(label: str, snippets: Sequence[str | None], background: Sequence[str] = ()) -> list[float]:
    """TF-IDF cosine (BM25 tokens, smoothed idf over ``background`` + the snippets + the label)."""
    docs = [tokenize(t) for t in (*background, label, *(s for s in snippets if s is not None))]
    df: Counter = Counter()
    for d in docs:
        df.update(set(d))
    n = len(docs)

    def vec(tokens: list[str]) -> dict[str, float]:
        tf = Counter(tokens)
        v = {t: c * (math.log((1 + n) / (1 + df[t])) + 1.0) for t, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {t: x / norm for t, x in v.items()}

    lv = vec(tokenize(label))
    out = []
    for s in snippets:
        if s is None:
            out.append(MISSING)
            continue
        sv = vec(tokenize(s))
        out.append(sum(x * sv.get(t, 0.0) for t, x in lv.items()))
    return out


def hitrate_similarities(label: str, snippets: Sequence[str | None]) -> list[float]:
    """Share of the label's distinct tokens that occur in the snippet (recall of the label's words)."""
    lt = set(tokenize(label))
    out = []
    for s in snippets:
        if s is None:
            out.append(MISSING)
        else:
            out.append(len(lt & set(tokenize(s))) / len(lt) if lt else 0.0)
    return out


class _CachedPassages:
    """An embedder's passage vectors memoised by text; ``prefetch`` embeds many texts in one batched call."""

    def __init__(self, embedder):
        self.embedder, self.cache = embedder, {}

    def prefetch(self, texts) -> None:
        todo = [t for t in dict.fromkeys(texts) if t is not None and t not in self.cache]
        if todo:
            self.cache.update(zip(todo, np.asarray(self.embedder.embed_passages(todo), dtype=np.float32)))

    def embed_passages(self, texts):
        self.prefetch(texts)
        return np.stack([self.cache[t] for t in texts])

    def __call__(self, label: str, snippets: Sequence[str | None]) -> list[float]:
        return encoder_similarities(self, label, snippets)


def make_similarity(method: str, embedder=None) -> Callable[[str, Sequence[str | None]], list[float]]:
    """The similarity named ``method`` (one of :data:`SIMILARITIES`) as ``f(label, snippets) -> scores``.

    The encoder similarity memoises passage vectors and has ``prefetch(texts)`` to embed them in one batch.
    """
    if method == "encoder":
        if embedder is None:
            raise ValueError("the 'encoder' label similarity needs an embedder")
        return _CachedPassages(embedder)
    if method == "tfidf":
        return tfidf_similarities
    if method == "hitrate":
        return hitrate_similarities
    raise ValueError(f"label similarity must be one of {SIMILARITIES}, got {method!r}")


# -- the best snippet per level ------------------------------------------------------------------------------------
def best_per_level(question: str, levels: Sequence[Callable[[list[str]], str | None]]) -> list[str | None]:
    """The text of the best BM25 snippet of each level (None where a level has no match).

    ``levels[j](tokens)`` returns level j's best snippet text for the query tokens (an adapter over an index or
    in-memory chunks).
    """
    tokens = tokenize(question)
    return [lv(tokens) for lv in levels]


def question_soft_labels(question: str, label: str, levels: Sequence[Callable[[list[str]], str | None]],
                         similarity: Callable[[str, Sequence[str | None]], list[float]],
                         values: Sequence[float] = (0.8, 0.2)) -> tuple[list[float], list[float]] | None:
    """``(similarities, soft labels)`` of one question, or None when no level returned a snippet."""
    snippets = best_per_level(question, levels)
    if all(s is None for s in snippets):
        return None
    sims = similarity(label, snippets)
    return sims, soft_labels(sims, values)

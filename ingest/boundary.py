"""Pure functions of the Logits-Guided chunker: logits -> boundary probabilities -> break points."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def boundary_probs(logits: np.ndarray, token_ids: Sequence[int]) -> np.ndarray:
    """p(boundary) at each row of ``logits`` [n, vocab]: the softmax mass on ``token_ids`` (summed).

    >>> boundary_probs(np.log(np.array([[0.5, 0.3, 0.2]])), [1, 2]).round(3).tolist()
    [0.5]
    """
    logits = np.asarray(logits, dtype=np.float64)
    m = logits.max(axis=-1, keepdims=True)
    logz = m[..., 0] + np.log(np.exp(logits - m).sum(axis=-1))
    picked = logits[..., list(token_ids)]
    return np.exp(picked - logz[..., None]).sum(axis=-1)


def window_end(word_counts: Sequence[int], start: int, theta: int) -> int:
    """Index one past the last sentence of the window that starts at sentence ``start``.

    The window holds as many whole sentences as fit in ``theta`` words, and always at least one.
    """
    total, j = 0, start
    while j < len(word_counts) and (j == start or total + word_counts[j] <= theta):
        total += word_counts[j]
        j += 1
    return j


def lg_breaks(
    word_counts: Sequence[int],
    theta: int,
    score_window: Callable[[int, int], Sequence[float]],
    min_rest: int | None = None,
    min_words: int = 0,
) -> list[int]:
    """Break points of the Logits-Guided chunker (LGMGC §3.1), as sentence indices where chunks end.

    From the current start, the window is the next ``theta`` words of whole sentences;
    ``score_window(i, j)`` gives p(boundary) after each sentence i..j-1 of the window; the chunk ends at
    the argmax (ties: the earliest), the remainder opens the next window. When the rest of the document
    is at most ``min_rest`` words (default ``theta``: it fits the bound) it becomes the last chunk.
    ``min_words`` optionally forbids breaks that would leave a chunk shorter than that many words.
    Every chunk therefore has at most ``theta`` words (a single sentence longer than ``theta`` aside,
    which the segmenter prevents). Returns exclusive end indices; the last one is ``len(word_counts)``.

    >>> lg_breaks([10, 10, 10, 10], 25, lambda i, j: [0.1, 0.9][: j - i])
    [2, 4]
    """
    n = len(word_counts)
    min_rest = theta if min_rest is None else min_rest
    suffix = np.concatenate([np.cumsum(np.asarray(word_counts, dtype=np.int64)[::-1])[::-1], [0]])
    breaks: list[int] = []
    start = 0
    while start < n:
        if suffix[start] <= min_rest:
            breaks.append(n)
            break
        end = window_end(word_counts, start, theta)
        probs = np.asarray(score_window(start, end), dtype=np.float64)
        if len(probs) != end - start:
            raise ValueError(f"score_window({start}, {end}) returned {len(probs)} scores, expected {end - start}")
        if min_words > 0:
            words = np.cumsum(word_counts[start:end])
            allowed = words >= min_words
            allowed[-1] = True
            probs = np.where(allowed, probs, -np.inf)
        b = start + int(np.argmax(probs)) + 1
        breaks.append(b)
        start = b
    return breaks


def spans_from_breaks(sentences: Sequence[tuple[int, int]], breaks: Sequence[int]) -> list[tuple[int, int]]:
    """Character spans of the chunks whose sentence ranges end at ``breaks``."""
    out, start = [], 0
    for b in breaks:
        out.append((sentences[start][0], sentences[b - 1][1]))
        start = b
    return out

"""Pure functions of the Logits-Guided chunker: logits -> boundary probabilities -> break points."""
from __future__ import annotations

import re
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


# -- cutting rules beyond the paper's argmax (issue 14: what makes an LG parent better than a recursive one) -----------
_HEADING_RE = re.compile(r"[ \t]*#{1,6}\s")


def break_strength(text: str, sentences: Sequence[tuple[int, int]], hard_wrapped: bool = False) -> np.ndarray:
    r"""What the layout says after each sentence: 0 inside a line, 0.5 a line break, 1 a paragraph break (blank
    line), 1.5 a heading or a page (form feed) starts next. In hard-wrapped text a single newline is wrapping: 0.

    >>> t = "One. Two.\nThree.\n\nFour.\n# Five"
    >>> break_strength(t, [(0, 4), (5, 9), (10, 16), (18, 23), (24, 30)]).tolist()
    [0.0, 0.5, 1.0, 1.5, 1.0]
    """
    n = len(sentences)
    out = np.zeros(n)
    for k in range(n):
        gap_start = sentences[k][1]
        gap_end = sentences[k + 1][0] if k + 1 < n else len(text)
        gap = text[gap_start:gap_end]
        if k + 1 == n:
            out[k] = 1.0  # the end of the document
        elif "\f" in gap or _HEADING_RE.match(text, gap_end):
            out[k] = 1.5
        elif gap.count("\n") >= 2:
            out[k] = 1.0
        elif "\n" in gap and not hard_wrapped:
            out[k] = 0.5
    return out


def cut_scores(probs: Sequence[float], words_before: Sequence[int], theta: int, strength: Sequence[float] | None = None,
               structure_weight: float = 0.0, size_prior: float = 0.0) -> np.ndarray:
    """The score of cutting after each sentence of a window: ``log p + structure_weight · strength +
    size_prior · log(words / θ)``, with ``words_before[k]`` the chunk's words up to and including sentence k.

    With both weights 0 the argmax is the paper's (argmax of p). ``structure_weight`` adds the layout's evidence
    (paragraph, heading and page breaks; a large weight cuts only at the strongest break in the window, as a
    recursive splitter would, the LM choosing among them); ``size_prior`` pulls the cut towards a full window
    (parents fill θ instead of ~0.6 θ).

    >>> cut_scores([0.5, 0.5], [100, 300], 300, size_prior=1.0).round(3).tolist()
    [-1.792, -0.693]
    """
    p = np.clip(np.asarray(probs, dtype=np.float64), 1e-30, None)
    score = np.log(p)
    if structure_weight and strength is not None:
        score = score + structure_weight * np.asarray(strength, dtype=np.float64)
    if size_prior:
        score = score + size_prior * np.log(np.maximum(np.asarray(words_before, dtype=np.float64), 1.0) / theta)
    return score


def spans_from_breaks(sentences: Sequence[tuple[int, int]], breaks: Sequence[int]) -> list[tuple[int, int]]:
    """Character spans of the chunks whose sentence ranges end at ``breaks``."""
    out, start = [], 0
    for b in breaks:
        out.append((sentences[start][0], sentences[b - 1][1]))
        start = b
    return out

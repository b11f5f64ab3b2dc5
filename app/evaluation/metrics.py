"""Retrieval and QA metrics used by the benchmarks (``bench/``) and the tests. Pure functions, no models.

* Ranking: :func:`dcg_at_k` (binary relevance, as the GutenQA evaluation of LumberChunker and LGMGC),
  :func:`recall_at_k` and its grouped form :func:`set_recall_at_k`.
* Passage coverage in **characters**: :func:`evidence_recall` (share of the evidence covered by the context)
  and :func:`token_iou_precision` (Chroma's chunking-evaluation IoU and precision, with characters instead of
  tokens as the unit).
* Approximate matching: :func:`rouge_l` and :func:`best_rouge_span` (re-label evidence whose offsets are
  unknown to the chunk that matches it best, as LGMGC re-labels GutenQA).
* Answers: :func:`qa_f1_score`, LongBench's ``qa_f1_score`` reproduced exactly.
"""
from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence

Span = tuple[int, int]


# -- ranking ------------------------------------------------------------------------------------------------
def dcg_at_k(ranked_relevance: Sequence[bool | float], k: int) -> float:
    """Discounted cumulative gain of the top ``k``: ``sum_{i<k} rel_i / log2(i + 2)`` (rank i counted from 0).

    Relevance is binary in the benchmarks (``True`` counts 1), as in the GutenQA evaluation of LumberChunker
    and LGMGC; graded relevance (floats) works too. Not normalised: with several relevant items the value
    can exceed 1. A list shorter than ``k`` contributes only its items.

    >>> round(dcg_at_k([False, True, True], 2), 4)
    0.6309
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    return float(sum(float(r) / math.log2(i + 2) for i, r in enumerate(ranked_relevance[:k])))


def recall_at_k(ranked_ids: Sequence[Hashable], relevant_ids: Iterable[Hashable], k: int) -> float:
    """Fraction of the (distinct) relevant items found among the first ``k`` ranked ids.

    0.0 when there is nothing relevant (a question without evidence cannot be recalled).

    >>> recall_at_k(["a", "b", "c"], {"b", "z"}, 2)
    0.5
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    relevant = set(relevant_ids)
    if not relevant:
        return 0.0
    return len(relevant & set(ranked_ids[:k])) / len(relevant)


def set_recall_at_k(ranked_ids: Sequence[Hashable], relevant_sets: Sequence[Iterable[Hashable]], k: int) -> float:
    """Share of the items (e.g. evidence spans) that have at least one of their relevant ids in the top ``k``.

    Each entry of ``relevant_sets`` lists the ids that satisfy one item (an evidence span that straddles two
    chunks is found by either). With singleton sets this is :func:`recall_at_k`. 0.0 for no items.

    >>> set_recall_at_k(["a", "b"], [{"a", "c"}, {"d"}], 2)
    0.5
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if not relevant_sets:
        return 0.0
    top = set(ranked_ids[:k])
    return sum(1 for s in relevant_sets if top & set(s)) / len(relevant_sets)


# -- character spans ------------------------------------------------------------------------------------------
def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """Union of half-open ``(start, end)`` spans as sorted, disjoint spans (empty spans dropped)."""
    out: list[list[int]] = []
    for s, e in sorted((int(s), int(e)) for s, e in spans if e > s):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _length(spans: Sequence[Span]) -> int:
    return sum(e - s for s, e in spans)


def _intersection(a: Sequence[Span], b: Sequence[Span]) -> int:
    """Characters in both unions (inputs already merged and sorted)."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def evidence_recall(context_spans: Iterable[Span], evidence_spans: Iterable[Span]) -> float:
    """Share of evidence characters covered by the union of the context spans (0.0 with no evidence).

    Both lists are half-open character offsets into the same document; overlaps within either list are
    counted once.

    >>> evidence_recall([(0, 10)], [(5, 15)])
    0.5
    """
    ctx, ev = merge_spans(context_spans), merge_spans(evidence_spans)
    total = _length(ev)
    return _intersection(ctx, ev) / total if total else 0.0


def token_iou_precision(context_spans: Iterable[Span], evidence_spans: Iterable[Span]) -> tuple[float, float]:
    """``(IoU, precision)`` of the retrieved context against the evidence, measured in **characters**.

    As Chroma's chunking evaluation (brandonstarxel/chunking_evaluation), which counts tokens of a fixed
    tokenizer: IoU = |C ∩ E| / |C ∪ E| and precision = |C ∩ E| / |C|, where C is the union of the retrieved
    spans and E the union of the evidence spans. Characters make the figure independent of any tokenizer;
    it differs from a token count only by the varying characters-per-token ratio. Both are 0.0 when the
    denominator is empty.

    >>> token_iou_precision([(0, 10)], [(5, 15)])
    (0.3333333333333333, 0.5)
    """
    ctx, ev = merge_spans(context_spans), merge_spans(evidence_spans)
    inter = _intersection(ctx, ev)
    union = _length(ctx) + _length(ev) - inter
    c = _length(ctx)
    return (inter / union if union else 0.0, inter / c if c else 0.0)


# -- ROUGE-L ---------------------------------------------------------------------------------------------------
_WORD = re.compile(r"\w+")


def rouge_tokens(text: str) -> list[str]:
    """Lowercased word tokens (``\\w+`` runs) as compared by :func:`rouge_l`."""
    return _WORD.findall(text.lower())


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of two token sequences.

    Bit-parallel (Allison–Dix / Hyyrö): one big-integer update per token of ``b``, so a 300-word chunk
    against a 50-word passage costs microseconds rather than a 15,000-cell table.

    >>> lcs_length("abcbdab", "bdcaba")
    4
    """
    if not a or not b:
        return 0
    masks: dict[Hashable, int] = {}
    for i, x in enumerate(a):
        masks[x] = masks.get(x, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for y in b:
        u = v & masks.get(y, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - bin(v).count("1")


def rouge_l(a: str, b: str, beta: float = 1.0) -> float:
    """ROUGE-L F-measure between two texts: LCS of their lowercased word tokens (:func:`rouge_tokens`).

    P = LCS / len(a), R = LCS / len(b), F = (1 + β²) P R / (R + β² P); β = 1 gives the usual F1 (as the
    ``rouge-score`` package's ``fmeasure``, without stemming). Symmetric for β = 1; 0.0 if either is empty.

    >>> round(rouge_l("the cat sat on the mat", "the cat is on the mat"), 4)
    0.8333
    """
    ta, tb = rouge_tokens(a), rouge_tokens(b)
    lcs = lcs_length(ta, tb)
    if lcs == 0:
        return 0.0
    p, r = lcs / len(ta), lcs / len(tb)
    return (1 + beta**2) * p * r / (r + beta**2 * p)


def best_rouge_span(reference: str, text: str, spans: Sequence[Span], measure: str = "recall"
                    ) -> tuple[Span | None, float]:
    """The span of ``text`` (e.g. a parent chunk) that best matches ``reference`` by ROUGE-L.

    Used to re-label evidence whose offsets are unknown (``start``/``end`` null), as LGMGC re-labels GutenQA:
    the chunk that best matches the evidence text counts as the relevant one.

    ``measure="recall"`` (default) ranks spans by ROUGE-L recall, LCS / len(reference): the share of the
    evidence's words found in order in the span, ties broken by the F-measure, then by the earliest span.
    ``measure="f"`` ranks by the F-measure alone. F is the wrong criterion when the evidence (20-80 words) is
    much shorter than the chunks (up to θ = 300 words): its precision term favours short chunks, and on
    GutenQA's *Emma* it re-labels the 18-word "end of an old pencil" passage to an unrelated 60-word
    paragraph instead of the 270-word parent that contains it verbatim up to punctuation. Recall picks the
    containing chunk. Returns ``(span, score)`` with the score of the chosen measure; ``(None, 0.0)`` when
    there are no spans.

    >>> best_rouge_span("red fox", "a red fox. a blue cat.", [(0, 10), (11, 22)])
    ((0, 10), 1.0)
    """
    if measure not in ("recall", "f"):
        raise ValueError(f"measure must be 'recall' or 'f', got {measure!r}")
    ref = rouge_tokens(reference)
    best: Span | None = None
    best_key = (-1.0, -1.0)
    for s, e in spans:
        cand = rouge_tokens(text[s:e])
        lcs = lcs_length(ref, cand)
        f = 0.0 if lcs == 0 else 2 * lcs / (len(ref) + len(cand))  # F1 = 2·LCS / (|a| + |b|)
        r = lcs / len(ref) if ref else 0.0
        key = (r, f) if measure == "recall" else (f, 0.0)
        if key > best_key:
            best, best_key = (s, e), key
    return (best, best_key[0]) if best is not None else (None, 0.0)


# -- LongBench QA F1 -------------------------------------------------------------------------------------------
def normalize_answer(s: str) -> str:
    """LongBench's (SQuAD's) normalisation: lower case, drop punctuation, drop articles, collapse whitespace."""

    def remove_articles(text: str) -> str:
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def _f1_tokens(prediction: Sequence[str], ground_truth: Sequence[str]) -> float:
    common = Counter(prediction) & Counter(ground_truth)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction)
    recall = num_same / len(ground_truth)
    return (2 * precision * recall) / (precision + recall)


def qa_f1_score(prediction: str, ground_truth: str) -> float:
    """Token F1 of a prediction against one reference answer, exactly as LongBench's ``qa_f1_score``.

    Both are normalised by :func:`normalize_answer` and split on whitespace; the overlap is the multiset
    intersection of the tokens. 0.0 when nothing overlaps (so also for an empty prediction, or one made of
    articles and punctuation only, and when both are empty).

    >>> qa_f1_score("The Eiffel Tower!", "eiffel tower in Paris")
    0.6666666666666666
    """
    return _f1_tokens(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


def qa_f1_max(prediction: str, answers: Sequence[str]) -> float:
    """LongBench's per-question score: the best :func:`qa_f1_score` over the reference answers (0.0 if none)."""
    return max((qa_f1_score(prediction, a) for a in answers), default=0.0)

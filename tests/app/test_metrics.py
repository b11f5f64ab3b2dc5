"""Metrics of app.evaluation on hand-computed examples (fast; no models)."""
from __future__ import annotations

import math
import random

import pytest

from app.evaluation.metrics import (
    best_rouge_span,
    dcg_at_k,
    evidence_recall,
    lcs_length,
    merge_spans,
    normalize_answer,
    qa_f1_max,
    qa_f1_score,
    recall_at_k,
    rouge_l,
    set_recall_at_k,
    token_iou_precision,
)


# -- DCG / recall ---------------------------------------------------------------------------------------------
def test_dcg_first_rank_counts_one():
    assert dcg_at_k([True, False, False], 1) == 1.0
    assert dcg_at_k([True, False, False], 10) == 1.0


def test_dcg_discount_by_log2_rank_plus_one():
    # relevant at ranks 2 and 3 (1-based): 1/log2(3) + 1/log2(4)
    assert dcg_at_k([False, True, True], 3) == pytest.approx(1 / math.log2(3) + 0.5)
    assert dcg_at_k([False, True, True], 2) == pytest.approx(0.6309297535714575)
    assert dcg_at_k([False, False, False, True], 3) == 0.0


def test_dcg_graded_short_list_and_k_zero():
    assert dcg_at_k([0.5, 1.0], 20) == pytest.approx(0.5 + 1 / math.log2(3))
    assert dcg_at_k([True], 0) == 0.0
    assert dcg_at_k([], 5) == 0.0
    with pytest.raises(ValueError):
        dcg_at_k([True], -1)


def test_recall_at_k():
    ranked = ["a", "b", "c", "d"]
    assert recall_at_k(ranked, {"c", "x"}, 2) == 0.0
    assert recall_at_k(ranked, {"c", "x"}, 3) == 0.5
    assert recall_at_k(ranked, ["a", "a", "d"], 4) == 1.0  # relevant ids are a set
    assert recall_at_k(ranked, [], 4) == 0.0


def test_set_recall_at_k_counts_each_evidence_once():
    ranked = ["p1", "p2", "p3"]
    # evidence 1 straddles p2/p9 (either finds it), evidence 2 lies in p7
    assert set_recall_at_k(ranked, [{"p2", "p9"}, {"p7"}], 1) == 0.0
    assert set_recall_at_k(ranked, [{"p2", "p9"}, {"p7"}], 2) == 0.5
    assert set_recall_at_k(ranked, [{"p2"}, {"p3"}], 3) == 1.0
    assert set_recall_at_k(ranked, [], 3) == 0.0


# -- character spans ------------------------------------------------------------------------------------------
def test_merge_spans():
    assert merge_spans([(5, 8), (0, 3), (2, 4), (8, 9), (10, 10)]) == [(0, 4), (5, 9)]


def test_evidence_recall_partial_and_union():
    assert evidence_recall([(0, 10)], [(5, 15)]) == 0.5
    # two context spans overlapping each other count once; evidence 20 chars, 15 covered
    assert evidence_recall([(0, 10), (5, 15)], [(0, 20)]) == 0.75
    # two evidence spans: 10 + 10 chars, one fully covered
    assert evidence_recall([(100, 200)], [(100, 110), (300, 310)]) == 0.5
    assert evidence_recall([], [(0, 5)]) == 0.0
    assert evidence_recall([(0, 5)], []) == 0.0


def test_token_iou_precision_in_characters():
    iou, prec = token_iou_precision([(0, 10)], [(5, 15)])
    assert iou == pytest.approx(5 / 15)
    assert prec == pytest.approx(5 / 10)
    # context 0-100 holds evidence 10-20 and 50-60: IoU 20/100, precision 20/100
    assert token_iou_precision([(0, 100)], [(10, 20), (50, 60)]) == (0.2, 0.2)
    # exact match
    assert token_iou_precision([(3, 9)], [(3, 9)]) == (1.0, 1.0)
    assert token_iou_precision([], []) == (0.0, 0.0)


# -- ROUGE-L ---------------------------------------------------------------------------------------------------
def _lcs_dp(a, b):
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            t[i + 1][j + 1] = t[i][j] + 1 if x == y else max(t[i][j + 1], t[i + 1][j])
    return t[-1][-1]


def test_lcs_length_matches_dynamic_programming():
    assert lcs_length("abcbdab", "bdcaba") == 4
    assert lcs_length([], ["a"]) == 0
    rng = random.Random(0)
    for _ in range(200):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 80))]
        b = [rng.choice("abcd") for _ in range(rng.randint(0, 80))]
        assert lcs_length(a, b) == _lcs_dp(a, b)


def test_rouge_l_hand_computed():
    # 6 tokens each, LCS "the cat on the mat" = 5: P = R = F = 5/6
    assert rouge_l("the cat sat on the mat", "the cat is on the mat") == pytest.approx(5 / 6)
    # case and punctuation do not matter
    assert rouge_l("The Cat, sat.", "the cat sat") == pytest.approx(1.0)
    # LCS 2 of lengths 2 and 4: P = 1, R = 0.5, F = 2/3
    assert rouge_l("red fox", "a red quick fox") == pytest.approx(2 / 3)
    assert rouge_l("", "anything") == 0.0
    assert rouge_l("abc", "xyz") == 0.0


def test_best_rouge_span_picks_best_and_earliest_tie():
    text = "Emma walked to Hartfield. Harriet kept an old pencil. Harriet kept an old pencil."
    spans = [(0, 25), (26, 53), (54, 81)]
    span, score = best_rouge_span("the end of an old pencil, kept by Harriet", text, spans)
    assert span == (26, 53)  # the first of two identical candidates
    assert 0 < score < 1
    assert best_rouge_span("x", text, []) == (None, 0.0)


def test_best_rouge_span_recall_prefers_the_containing_long_chunk():
    text = "an old pencil. " + "Emma said that the day was fine and the walk was long and pleasant. " * 5 + \
        "It was the end of an old pencil, the part without any lead."
    short, long_ = (0, 13), (15, len(text))
    ref = "It was the end of an old pencil, the part without any lead"
    # recall: every reference word in order lies in the long chunk -> 1.0
    assert best_rouge_span(ref, text, [short, long_]) == (long_, 1.0)
    # F: the 3-word chunk wins on precision: 2·3/(13+3) = 0.375 > 2·13/(13+83) ≈ 0.27
    span, f = best_rouge_span(ref, text, [short, long_], measure="f")
    assert span == short and f == pytest.approx(0.375)
    with pytest.raises(ValueError):
        best_rouge_span(ref, text, [short], measure="precision")


# -- LongBench QA F1 -------------------------------------------------------------------------------------------
def test_normalize_answer():
    assert normalize_answer("The  Quick, brown fox!") == "quick brown fox"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("theory") == "theory"  # articles only as whole words


def test_qa_f1_exact_and_partial():
    assert qa_f1_score("Paris", "paris") == 1.0
    # pred {eiffel, tower}, truth {eiffel, tower, in, paris}: P = 1, R = 1/2, F1 = 2/3
    assert qa_f1_score("The Eiffel Tower!", "eiffel tower in Paris") == pytest.approx(2 / 3)
    # repeated tokens: Counter overlap min(2,1) = 1 -> P = 1/2, R = 1, F1 = 2/3
    assert qa_f1_score("yes yes", "yes") == pytest.approx(2 / 3)


def test_qa_f1_edge_cases():
    assert qa_f1_score("", "Paris") == 0.0  # empty prediction
    assert qa_f1_score("Paris", "") == 0.0  # empty reference
    assert qa_f1_score("", "") == 0.0  # LongBench returns 0 when nothing overlaps, even for two empties
    assert qa_f1_score("the a an", "The") == 0.0  # articles only normalise to nothing
    assert qa_f1_score("!!!", "...") == 0.0  # punctuation only
    assert qa_f1_score("U.S.A.", "USA") == 1.0  # punctuation removed inside tokens
    assert qa_f1_score("well-known", "wellknown") == 1.0


def test_qa_f1_max_over_answers():
    assert qa_f1_max("blue car", ["red car", "blue car"]) == 1.0
    assert qa_f1_max("blue car", ["red car"]) == pytest.approx(0.5)
    assert qa_f1_max("anything", []) == 0.0


def test_write_section_replaces_only_its_own_block(tmp_path):
    from app.evaluation.bench import write_section

    p = tmp_path / "B.md"
    p.write_text("# Benchmarks\n\nintro\n", encoding="utf-8")
    write_section("a", "first A", p)
    write_section("b", "only B", p)
    write_section("a", "second A", p)
    text = p.read_text(encoding="utf-8")
    assert "first A" not in text and "second A" in text and "only B" in text
    assert text.startswith("# Benchmarks\n\nintro")
    assert text.index("second A") < text.index("only B")

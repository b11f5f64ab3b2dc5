"""Evaluation metrics shared by the benchmarks and the tests (pure functions, no models)."""
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

__all__ = [
    "best_rouge_span", "dcg_at_k", "evidence_recall", "lcs_length", "merge_spans", "normalize_answer",
    "qa_f1_max", "qa_f1_score", "recall_at_k", "rouge_l", "set_recall_at_k", "token_iou_precision",
]

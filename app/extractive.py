"""Extractive answering (no LLM): the context sentences closest to the question, each with its citation."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.sentences import split_sentences
from retrieval.search import Retrieval


@dataclass
class Answer:
    text: str
    citations: list[int]


def extractive_answer(embedder, retrieval: Retrieval, max_sentences: int = 3) -> Answer:
    cands: list[tuple[str, int]] = []
    for src in retrieval.sources:
        for s, e in split_sentences(src.text, max_words=80):
            cands.append((src.text[s:e], src.rank))
    if not cands:
        return Answer("No relevant passage was found.", [])
    q = embedder.embed_queries([retrieval.question])[0]
    v = embedder.embed_passages([c for c, _ in cands])
    order = np.argsort(-(v @ q), kind="stable")[:max_sentences]
    picked = sorted(order.tolist())  # keep document order within the answer for readability
    parts = [f"{cands[i][0]} [{cands[i][1]}]" for i in picked]
    return Answer(" ".join(parts), sorted({cands[i][1] for i in picked}))

from collections import Counter

import numpy as np
from rank_bm25 import BM25Okapi

from retrieval.bm25 import Bm25Level, lucene_idf, tokenize


class LuceneIdfBM25(BM25Okapi):
    """rank_bm25's BM25Okapi with the always-positive idf our index uses (its scoring code unchanged)."""

    def _calc_idf(self, nd):
        self.idf = {w: lucene_idf(self.corpus_size, f) for w, f in nd.items()}

DOCS = [
    "The owl hunts at night in the old forest.",
    "A fox and an owl met by the river.",
    "Stock prices fell sharply on Monday.",
    "The river floods every spring; the owl moves to higher trees.",
    "Interest rates and stock markets.",
    "第一句关于猫头鹰。",
]


def test_scores_equal_rank_bm25():
    toks = [tokenize(d) for d in DOCS]
    ref = LuceneIdfBM25(toks)
    level = Bm25Level([str(i) for i in range(len(DOCS))], [Counter(t) for t in toks])
    for q in ["owl river", "stock", "owl owl night", "nothing matches", "猫头鹰", "the"]:
        np.testing.assert_allclose(level.scores(tokenize(q)), ref.get_scores(tokenize(q)), rtol=1e-10, atol=1e-12)


def test_top_ranks_and_drops_zero_scores():
    level = Bm25Level([str(i) for i in range(len(DOCS))], [Counter(tokenize(d)) for d in DOCS])
    top = level.top("owl river", 10)
    assert {i for i, _ in top} == {"0", "1", "3"} and top[0][0] in {"1", "3"} and all(s > 0 for _, s in top)


def test_single_chunk_collection_still_matches():
    # rank_bm25's own idf is negative for a term in every chunk, so it scores a one-chunk corpus <= 0
    assert BM25Okapi([["owl"]]).get_scores(["owl"])[0] <= 0
    assert Bm25Level(["a"], [Counter(["owl"])]).top("owl", 3)[0][0] == "a"


def test_tokenize():
    assert tokenize("The Owl's nest, 2024!") == ["owl", "s", "nest", "2024"]
    assert tokenize("猫头鹰") == ["猫", "头", "鹰"]

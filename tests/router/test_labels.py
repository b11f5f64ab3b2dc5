import numpy as np
import pytest

from ingest.types import Chunk
from router.data import TrainQuestion, build_examples, corpus_from_chunks
from router.labels import (
    MISSING,
    hitrate_similarities,
    label_text,
    make_similarity,
    question_soft_labels,
    soft_labels,
    tfidf_similarities,
)

# A hand-made document: one parent of four sentences on different topics, two halves, four quarters.
SENTS = [
    "The lighthouse keeper polished the brass lamp every evening before dusk.",
    "Fishermen traded mackerel and herring at the harbour market on Tuesdays.",
    "A violent storm in October flooded the cellar of the old customs house.",
    "Schoolchildren learned knots and semaphore signals from retired sailors.",
]


def hand_made_doc():
    text = " ".join(SENTS)
    starts = [text.index(s) for s in SENTS]
    spans = [(s, s + len(x)) for s, x in zip(starts, SENTS)]
    P = (0, len(text))
    chunks = [Chunk(text, 0, len(text), 0, *P, "doc")]
    for a, b in ((0, 1), (2, 3)):
        s, e = spans[a][0], spans[b][1]
        chunks.append(Chunk(text[s:e], s, e, 1, *P, "doc"))
    for s, e in spans:
        chunks.append(Chunk(text[s:e], s, e, 2, *P, "doc"))
    return text, chunks


def test_soft_labels_mog_examples_and_ties():
    assert soft_labels([0, 0.32, 0.11, 0.88, 0.45]) == [0, 0, 0, 0.8, 0.2]
    assert soft_labels([0.95, 0.07, 0.22, 0.11, 0.19]) == [0.8, 0, 0.2, 0, 0]
    assert soft_labels([0.5, 0.5, 0.1]) == [0.8, 0.2, 0.0]  # ties: the coarser level first
    assert soft_labels([0.3, MISSING, MISSING]) == [0.8, 0.0, 0.0]  # a level without a snippet gets nothing
    assert soft_labels([0.2, 0.9], values=(0.7, 0.3)) == [0.3, 0.7]


def test_label_text_prefers_evidence_then_question_answer():
    assert label_text(["the storm"], "q?", ["a"]) == "the storm"
    assert label_text([], "When?", ["In October", "later"]) == "When?\nIn October"
    assert label_text([" "], "q?", []) is None


@pytest.mark.parametrize("method", ["encoder", "tfidf"])
def test_known_best_level_is_the_quarter_holding_the_evidence(method, fake_embedder):
    text, chunks = hand_made_doc()
    corpus = corpus_from_chunks({"doc": text}, {"doc": chunks})
    sim = make_similarity(method, fake_embedder)
    q = "Which month did the storm flood the cellar of the customs house?"
    sims, labels = question_soft_labels(q, SENTS[2], corpus.searchers("doc"), sim)
    # the best quarter *is* the evidence, its half contains it plus another sentence, the parent three more
    assert sims[2] == pytest.approx(1.0, abs=1e-5)
    assert sims[2] > sims[1] > sims[0]
    assert labels == [0.0, 0.2, 0.8]


def test_evidence_spanning_the_parent_labels_the_parent(fake_embedder):
    text, chunks = hand_made_doc()
    corpus = corpus_from_chunks({"doc": text}, {"doc": chunks})
    q = "What happened at the harbour, the lighthouse and the customs house?"
    ex = build_examples(corpus, [TrainQuestion("q1", q, "doc", evidence=(text,))],
                        make_similarity("encoder", fake_embedder))
    np.testing.assert_allclose(ex.labels, [[0.8, 0.2, 0.0]])


def test_hitrate_and_tfidf_basics():
    assert hitrate_similarities("storm cellar", ["storm cellar flooded", "storm", None]) == [1.0, 0.5, MISSING]
    s = tfidf_similarities("storm cellar", ["storm cellar", "unrelated words here", None])
    assert s[0] == pytest.approx(1.0) and s[1] == 0.0 and s[2] == MISSING


def test_unknown_similarity_is_refused():
    with pytest.raises(ValueError, match="label similarity must be one of"):
        make_similarity("bleu")
    with pytest.raises(ValueError, match="needs an embedder"):
        make_similarity("encoder")


def test_questions_without_label_or_match_are_counted_not_kept(fake_embedder):
    text, chunks = hand_made_doc()
    corpus = corpus_from_chunks({"doc": text}, {"doc": chunks})
    qs = [TrainQuestion("a", "storm cellar?", "doc"),  # no evidence, no answer
          TrainQuestion("b", "zebra quantum?", "doc", answers=("x",)),  # nothing matches
          TrainQuestion("c", "storm cellar?", "missing-doc", evidence=(SENTS[2],))]  # searched corpus-wide
    ex = build_examples(corpus, qs, make_similarity("tfidf"))
    assert [q.id for q in ex.questions] == ["c"]
    assert ex.notes == {"no evidence or answer": 1, "no BM25 match at any level": 1,
                        "document not in the index (searched the whole corpus)": 1}
    assert ex.labels.shape == (1, 3) and np.argmax(ex.labels[0]) == 2

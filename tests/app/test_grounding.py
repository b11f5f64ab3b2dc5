"""Grounding checks alone: pure functions over texts and vectors (the hashing embedder where vectors matter)."""
import numpy as np
import pytest

from app import grounding as G
from retrieval.search import Source

KEEPER = ("The survey team reached the northern lighthouse on the third morning. The keeper, Mrs. Alder, has tended "
          "the light for twenty-two years. She logs the weather at dawn.")
FERRY = "The ferry runs twice a day. Russia exported grain through the harbour in 1900."


def src(rank, text, start=0, doc="notes.md"):
    return Source(rank, doc, f"p{rank}", start, start + len(text), text, 1.0, 0, start, start + len(text), text)


SOURCES = [src(1, KEEPER, start=100), src(2, FERRY, start=900)]


def scored(question, answer, sources=SOURCES):
    from ingest.embed import HashingEmbedder

    emb = HashingEmbedder(dim=256)
    sents = G.source_sentences(sources)
    vecs = emb.embed_passages([s.text for s in sents])
    claim = emb.embed_queries([f"{question} {G.strip_citations(answer)}"])[0]
    return G.score_sentences(question, answer, sents, vecs, claim)


def test_abstention_and_citation_helpers():
    assert G.is_abstention("I cannot find it in the documents.")
    assert G.is_abstention("The sources do not mention the founder [2].")
    assert G.is_abstention("  [1] ")  # bare markers say nothing
    assert not G.is_abstention("Mrs. Alder [1].")
    assert G.strip_citations("A [1][2] and B [3].") == "A and B."
    assert G.answer_terms("Yes, according to the document [1].") == set()


def test_sentences_carry_document_offsets():
    for s in G.source_sentences(SOURCES):
        src_ = SOURCES[s.source - 1]
        assert src_.start <= s.start < s.end <= src_.end
        assert src_.text[s.start - src_.start:s.end - src_.start] == s.text


def test_support_prefers_the_sentence_that_answers_the_question():
    rows = scored("How long has the keeper tended the light?", "Twenty-two years [1].")
    best = max(rows, key=lambda x: x.score)
    assert best.sentence.source == 1 and "twenty-two years" in best.sentence.text
    assert best.answer_recall == 1.0 and best.score > 0.3


def test_made_up_answer_naming_a_word_of_the_source_is_not_supported():
    # "Russia" is in source 2, but source 2 is not about who keeps the lighthouse
    rows = scored("Who keeps the northern lighthouse?", "Russia [2].")
    by_source = G.best_per_source(rows)
    assert by_source[2].answer_recall == 1.0
    assert by_source[2].score < G.floors_for("hashing").support
    v = G.ground("Who keeps the northern lighthouse?", "Russia [2].",
                 [("Russia [2].", [2], rows)], G.floors_for("hashing").support)
    assert v.abstained and v.cited == [] and "[" not in v.text


def test_ground_keeps_supported_citation_and_records_support():
    q = "How long has the keeper tended the light?"
    rows = scored(q, "Twenty-two years [1].")
    v = G.ground(q, "Twenty-two years [1].", [("Twenty-two years [1].", [1], rows)], 0.3)
    assert not v.abstained and v.cited == [1] and v.text == "Twenty-two years [1]."
    sup = v.support[1][0]
    assert "twenty-two years" in sup.sentence.text and SOURCES[0].start <= sup.sentence.start


def test_ground_moves_a_wrong_citation_to_the_supporting_source():
    q = "How long has the keeper tended the light?"
    rows = scored(q, "Twenty-two years [2].")
    v = G.ground(q, "Twenty-two years [2].", [("Twenty-two years [2].", [2], rows)], 0.3)
    assert v.cited == [1] and v.text == "Twenty-two years [1]."


def test_ground_drops_unsupported_claims_and_abstains_on_model_refusal():
    q = "How long has the keeper tended the light?"
    good, bad = "She has tended it for twenty-two years [1].", "She was born in Lisbon [1]."
    rows = [(good, [1], scored(q, good)), (bad, [1], scored(q, bad))]
    v = G.ground(q, f"{good} {bad}", rows, 0.3)
    assert v.dropped == 1 and "Lisbon" not in v.text and v.cited == [1]
    assert G.ground(q, "I cannot find it in the documents.", [], 0.3).abstained


def test_floors_for_known_unknown_and_overridden_embedders():
    assert G.floors_for("all-MiniLM-L6-v2") == G.FLOORS["all-MiniLM-L6-v2"]
    assert G.floors_for("sentence-transformers/all-MiniLM-L6-v2") == G.FLOORS["all-MiniLM-L6-v2"]
    assert G.floors_for("/models/bge-small").context == G.UNKNOWN_EMBEDDER.context
    assert G.floors_for("hashing", context=0.9).context == 0.9


def test_hashing_floors_are_the_ones_fitted_on_their_own_fixture_corpus():
    """The test embedder's floors come from tests/fixtures/hashing_floors (a corpus no unit test asks questions of),
    not from the tests' own corpus: FLOORS holds what the derivation gives, and its groups are apart there."""
    from tests.fixtures.hashing_floors.derive import derive, scores

    s = scores()
    assert max(s["context_unanswerable"]) < min(s["context_answerable"])
    assert max(s["support_made_up"]) < min(s["support_right"])
    assert derive() == (G.FLOORS["hashing"].context, G.FLOORS["hashing"].support, G.FLOORS["hashing"].reader)


def test_sentence_vectors_cache_embeds_each_text_once(fake_embedder):
    class Counting:
        dim = 64

        def __init__(self):
            self.n = 0

        def embed_passages(self, texts):
            self.n += len(texts)
            return fake_embedder.embed_passages(texts)

        def embed_queries(self, texts):
            return fake_embedder.embed_queries(texts)

    emb = Counting()
    cache = G.SentenceVectors(emb, cache_size=2)
    a = cache.passages(["one", "two", "one"])
    assert emb.n == 2 and np.allclose(a[0], a[2])
    cache.passages(["three"])  # evicts "two", the least recently used
    assert np.allclose(cache.passages(["one"])[0], a[0]) and emb.n == 3
    assert np.allclose(cache.passages(["two"])[0], a[1]) and emb.n == 4


@pytest.mark.parametrize("text", ["", "   "])
def test_split_claims_of_nothing(text):
    assert G.split_claims(text) == []

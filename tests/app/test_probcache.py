"""The benchmark caches: one LM pass serves many cutting rules; one embedding serves many chunkings."""
import numpy as np

from app.evaluation.probcache import CachedScorer, DiskCachedEmbedder, VectorCache


class CountingScorer:
    """A stand-in LM: p(boundary) after sentence k of a window starting at i is 1 / (2 + k - i) (causal: a longer
    window's first entries are a shorter one's)."""

    def __init__(self):
        self.window_calls, self.stream_calls = [], 0
        self.tokens_processed = self.forward_passes = 0

    def tokenize(self, text, sentences):
        return list(sentences)

    def window_probs(self, doc, i, j):
        self.window_calls.append((i, j))
        return np.array([1.0 / (2 + k - i) for k in range(i, j)])

    def stream_probs(self, doc):
        self.stream_calls += 1
        return np.linspace(0.1, 0.9, len(doc))


TEXT = "One. Two. Three. Four. Five."
SENTS = [(0, 4), (5, 9), (10, 16), (17, 22), (23, 28)]


def test_windows_and_streams_are_computed_once_and_persist(tmp_path):
    inner = CountingScorer()
    made = []
    sc = CachedScorer(tmp_path, {"lm": "x", "prompt": "p"}, lambda: made.append(1) or inner)
    doc = sc.tokenize(TEXT, SENTS)
    np.testing.assert_allclose(sc.window_probs(doc, 1, 4), [1 / 2, 1 / 3, 1 / 4])
    np.testing.assert_allclose(sc.window_probs(doc, 1, 3), [1 / 2, 1 / 3])  # a prefix of the cached window
    sc.stream_probs(doc)
    sc.stream_probs(doc)
    assert inner.window_calls == [(1, 4)] and inner.stream_calls == 1 and (sc.hits, sc.misses) == (2, 2)
    assert made == [1]  # the LM was loaded once, on the first miss
    # a new process (a new CachedScorer) reads everything back without loading the LM
    again = CachedScorer(tmp_path, {"lm": "x", "prompt": "p"}, lambda: (_ for _ in ()).throw(AssertionError))
    d2 = again.tokenize(TEXT, SENTS)
    np.testing.assert_allclose(again.window_probs(d2, 1, 2), [1 / 2])
    np.testing.assert_allclose(again.stream_probs(d2), np.linspace(0.1, 0.9, 5))
    # another LM key or another segmentation is another entry
    other = CachedScorer(tmp_path, {"lm": "y", "prompt": "p"}, lambda: inner)
    other.window_probs(other.tokenize(TEXT, SENTS), 1, 2)
    assert inner.window_calls[-1] == (1, 2)


def test_two_writers_of_one_document_keep_each_others_entries(tmp_path):
    a = CachedScorer(tmp_path, {"lm": "x"}, CountingScorer)
    b = CachedScorer(tmp_path, {"lm": "x"}, CountingScorer)
    da, db = a.tokenize(TEXT, SENTS), b.tokenize(TEXT, SENTS)  # both read the (empty) entry first
    a.stream_probs(da)
    b.window_probs(db, 0, 3)
    c = CachedScorer(tmp_path, {"lm": "x"}, lambda: (_ for _ in ()).throw(AssertionError))
    dc = c.tokenize(TEXT, SENTS)
    assert dc.stream is not None and 0 in dc.windows


def test_vector_cache_embeds_each_text_once(tmp_path):
    calls = []

    class Emb:
        name, dim = "e", 2

        def embed_passages(self, texts):
            calls.append(list(texts))
            return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)

        def embed_queries(self, texts):
            return self.embed_passages(texts)

    emb = DiskCachedEmbedder(Emb(), VectorCache(tmp_path / "v.sqlite"))
    v = emb.embed_passages(["a", "bb", "a"])
    assert v.shape == (3, 2) and v[0, 0] == 1 and v[1, 0] == 2 and calls == [["a", "bb"]]
    emb2 = DiskCachedEmbedder(Emb(), VectorCache(tmp_path / "v.sqlite"))
    emb2.embed_passages(["bb", "ccc"])
    assert calls[-1] == ["ccc"]

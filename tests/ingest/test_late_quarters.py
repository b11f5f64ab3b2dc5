"""One MiniLM pass for two levels (issue 37, ``late_quarters``): each θ/4 child's vector is pooled from its θ/2
child's pass; parents and θ/2 children keep the vector of their text; reuse from a first pass stays exact."""
from __future__ import annotations

import numpy as np
import pytest

from ingest.jobs.work import embed_chunks, quarter_spans

CONTEXT = "Annual report › Item 1A. Risk Factors"
TEXT = " ".join(
    f"Sentence {i} says that demand for the company's products in region {i % 7} may fall if prices rise."
    for i in range(40))


def _cut(text: str, theta: int = 120):
    from ingest.chunkers.multigranular import MultiGranularChunker
    from ingest.text.chunk_context import indexed_text

    chunks = MultiGranularChunker(theta=theta).chunk_document(text, "a.md", "h" * 64)
    return chunks, [indexed_text(CONTEXT, c.text) for c in chunks]


class Counting:
    """The embedder with its calls recorded: the texts embedded alone and those run for their spans."""

    def __init__(self, inner):
        self.inner, self.dim, self.alone, self.passes = inner, inner.dim, [], []

    def embed_passages(self, texts):
        self.alone += list(texts)
        return self.inner.embed_passages(texts)

    def embed_spans(self, texts, spans, on_fraction=None):
        self.passes += list(texts)
        return self.inner.embed_spans(texts, spans, on_fraction=on_fraction)


@pytest.fixture(scope="module")
def minilm():
    from ingest.embed import load_embedder

    return load_embedder("all-MiniLM-L6-v2")


def test_each_quarter_is_found_in_its_half_s_text():
    chunks, texts = _cut(TEXT)
    spans = quarter_spans(chunks, texts)
    quarters = [i for i, c in enumerate(chunks) if c.level == 2]
    assert spans and set(spans) <= set(quarters)
    for i, (h, span) in spans.items():
        assert chunks[h].level == 1 and chunks[h].parent_span == chunks[i].parent_span
        (a, b), (s, e) = span  # the θ/2 child's context line, then the θ/4 child's own text
        assert texts[h][a:b] == CONTEXT + "\n" and texts[h][s:e] == chunks[i].text


@pytest.mark.integration
def test_quarters_are_pooled_from_their_half_s_pass(minilm):
    chunks, texts = _cut(TEXT)
    emb = Counting(minilm)
    seen = []
    vecs, reused = embed_chunks(emb, chunks, texts, {}, late_quarters=True, on_fraction=seen.append)
    assert reused == 0 and seen[-1] == 1.0 and seen == sorted(seen)
    spans = quarter_spans(chunks, texts)
    halves = [i for i, c in enumerate(chunks) if c.level == 1]
    # the θ/2 children with θ/4 children of their own are run once each for their spans, the others embedded alone
    # (a one-sentence θ/2 child is its θ/4 child too); no θ/4 child is embedded alone
    assert sorted(emb.passes) == sorted({texts[h] for h, _ in spans.values()})
    assert set(emb.passes) | set(emb.alone) == {x for i, x in enumerate(texts) if i not in spans}
    assert len(emb.alone) == len(set(emb.alone))
    assert not {texts[i] for i in spans} & set(emb.alone) and not set(emb.passes) & set(emb.alone)
    assert len(emb.passes) < len(halves)
    # parents and θ/2 children: the vector of their text, as embedded alone
    alone = minilm.embed_passages(texts)
    for i, c in enumerate(chunks):
        if c.level < 2:
            assert float(vecs[i] @ alone[i]) >= 0.999
    # a θ/4 child: pooled from its θ/2 child's pass, near its own text alone but not the same vector
    for i, (h, span) in spans.items():
        want = minilm.embed_spans([texts[h]], [[span]])[0][0]
        np.testing.assert_allclose(vecs[i], want, atol=1e-5)
        assert 0.8 < float(vecs[i] @ alone[i]) < 0.9999


@pytest.mark.integration
def test_a_first_pass_s_vectors_are_reused_only_where_the_half_is_unchanged(minilm):
    chunks, texts = _cut(TEXT)
    first, _ = embed_chunks(minilm, chunks, texts, {}, late_quarters=True)
    known = dict(zip(texts, first))
    emb = Counting(minilm)
    again, reused = embed_chunks(emb, chunks, texts, known, late_quarters=True)
    assert reused == len(texts) and not emb.alone and not emb.passes
    np.testing.assert_array_equal(again, first)
    # the text read on (a page range's end): the last θ/2 child changes, its θ/4 children are pooled again from the
    # new pass even where their own text is the same, so the vectors are those of a cut with nothing known
    longer = TEXT + " One more sentence about the outlook for the year ahead closes the section."
    chunks2, texts2 = _cut(longer)
    emb = Counting(minilm)
    got, reused = embed_chunks(emb, chunks2, texts2, known, late_quarters=True)
    fresh, _ = embed_chunks(minilm, chunks2, texts2, {}, late_quarters=True)
    np.testing.assert_allclose(got, fresh, atol=1e-5)
    assert 0 < reused < len(texts2) and emb.passes and set(emb.passes) <= set(texts2) - set(known)
    stale = [i for i, (h, _) in quarter_spans(chunks2, texts2).items() if texts2[h] not in known and texts2[i] in known]
    assert stale  # a θ/4 child whose text was known, whose θ/2 child changed: not taken from the first pass
    for i in stale:
        assert not np.allclose(got[i], known[texts2[i]], atol=1e-5)


@pytest.mark.integration
def test_without_late_quarters_every_text_is_embedded_alone(minilm):
    chunks, texts = _cut(TEXT)
    emb = Counting(minilm)
    vecs, _ = embed_chunks(emb, chunks, texts, {}, late_quarters=False)
    assert not emb.passes and sorted(emb.alone) == sorted(set(texts))
    np.testing.assert_allclose(vecs, minilm.embed_passages(texts), atol=1e-5)


def test_an_embedder_without_spans_embeds_every_text_alone():
    from ingest.embed import HashingEmbedder

    chunks, texts = _cut(TEXT)
    emb = HashingEmbedder(dim=32)
    vecs, reused = embed_chunks(emb, chunks, texts, {}, late_quarters=True)
    np.testing.assert_allclose(vecs, emb.embed_passages(texts), atol=1e-6)
    assert reused == 0


def test_the_queue_and_a_reingest_pool_the_quarters_when_set(tmp_path):
    """Both ways a document is cut (the queue's passes and ``mgrag reingest``) follow ``late_quarters``."""
    from dataclasses import dataclass, field

    from app.context import AppContext
    from core.settings import Settings
    from ingest.embed import HashingEmbedder
    from ingest.jobs.queue import ingest_now
    from ingest.jobs.rebuild import reingest

    @dataclass
    class SpanHashing(HashingEmbedder):
        passes: list = field(default_factory=list)

        def embed_spans(self, texts, spans, on_fraction=None):
            self.passes += list(texts)
            pick = [[t[a:b] if np.ndim(a) == 0 else "".join(t[x:y] for x, y in (a, b)) for a, b in sp]
                    for t, sp in zip(texts, spans)]
            return [self.embed_passages(p) for p in pick]

    for late in (True, False):
        emb = SpanHashing()
        ctx = AppContext(Settings(data_dir=tmp_path / str(late), embedder="hashing", chunker="mg", theta=40,
                                  late_quarters=late), embedder=emb)
        try:
            report = ingest_now(ctx, [("a.md", TEXT.encode())])
            assert [r.status for r in report.results] == ["ingested"]
            assert bool(emb.passes) is late
            emb.passes.clear()
            reingest(ctx)
            assert bool(emb.passes) is late
        finally:
            ctx.close()

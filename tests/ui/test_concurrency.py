"""The shipped embedder under the web app's concurrency: sessions embed at the same time (found by the load test)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest


@pytest.mark.integration
def test_minilm_concurrent_embedding_matches_serial():
    from ingest.embed import load_embedder

    emb = load_embedder("all-MiniLM-L6-v2")
    texts = [[("word " * n).strip() + f" {i}" for n in (3, 40, 90, 7)] for i in range(16)]
    serial = [emb.embed_passages(t) for t in texts]
    with ThreadPoolExecutor(8) as pool:
        parallel = list(pool.map(emb.embed_passages, texts))
    for a, b in zip(serial, parallel):
        assert np.allclose(a, b, atol=1e-5)


@pytest.mark.integration
def test_a_question_does_not_wait_for_a_document_s_whole_embedding():
    """The newcomer run: a question asked while a 168-page PDF's first pass was embedding waited 137 s for it. A
    document's embedding now gives way between slices: the question's vector comes back while the document's
    embedding is still going, and the document's vectors are those it gets alone."""
    import threading

    from ingest.embed import load_embedder

    emb = load_embedder("all-MiniLM-L6-v2")
    doc = [f"Passage {i} of the report: the harbour fee rose to {i} euros a night in the second quarter." * 2
           for i in range(1500)]
    shares: list[float] = []
    started = threading.Event()
    out = {}

    def on_fraction(f: float) -> None:
        shares.append(f)
        if f > 0:
            started.set()

    t = threading.Thread(target=lambda: out.update(v=emb.embed_passages_with_progress(doc, on_fraction)))
    t.start()
    assert started.wait(120)
    q = emb.embed_queries(["What is the harbour fee?"])
    share_when_answered = shares[-1]
    t.join()
    assert q.shape == (1, emb.dim)
    assert share_when_answered < 0.9, "the question waited for the whole document"
    alone = emb.embed_passages_with_progress(doc[:300], lambda f: None)
    assert np.allclose(out["v"][:300], alone, atol=1e-4)


@pytest.mark.integration
def test_two_documents_embeddings_take_turns():
    """Two first-pass lanes embed at once: the second document's progress moves (its row does not freeze behind the
    first's whole embedding) and ends before a much longer first document does."""
    import threading

    from ingest.embed import load_embedder

    emb = load_embedder("all-MiniLM-L6-v2")
    long_doc = [f"Section {i}: the harbour fee rose to {i} euros a night in the second quarter of the year." * 2
                for i in range(1500)]
    short_doc = [f"Note {i}: pilots board at the outer buoy at dawn." for i in range(300)]
    shares: list[float] = []
    started = threading.Event()

    def on_fraction(f: float) -> None:
        shares.append(f)
        if f > 0:
            started.set()

    t = threading.Thread(target=lambda: emb.embed_passages_with_progress(long_doc, on_fraction))
    t.start()
    assert started.wait(120)
    moved: list[float] = []
    emb.embed_passages_with_progress(short_doc, moved.append)
    share_when_short_done = shares[-1]
    t.join()
    assert moved[-1] == 1.0 and len(moved) >= 3
    assert share_when_short_done < 0.9, "the second document waited for the whole first one"

"""The shipped embedder under the web app's concurrency: sessions embed at the same time (found by the load test)."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tests.sync import eventually


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


def _encodes_in_order(emb, order: list) -> None:
    """Record in ``order`` whose slice the embedder encodes each time it runs the model: the calling thread's name."""
    real = emb._encode
    emb._encode = lambda texts: order.append(threading.current_thread().name) or real(texts)


def _held_until_another_waits(emb, what: str) -> None:
    """Called holding the embedder between two slices: return once another call waits for it (bounded), so that
    the next slice boundary is where that call either goes first or does not."""
    eventually(lambda: emb._waiting > 0, 120, what)


@pytest.mark.integration
def test_a_question_does_not_wait_for_a_document_s_whole_embedding():
    """The newcomer run: a question asked while a 168-page PDF's first pass was embedding waited 137 s for it. A
    document's embedding now gives way between slices: the question's vector comes back while the document's
    embedding is still going, and the document's vectors are those it gets alone. The document is held after its
    first slice until the question waits, so the question arrives at the same point every run."""
    from ingest.embed import load_embedder

    emb = load_embedder("all-MiniLM-L6-v2")
    doc = [f"Passage {i} of the report: the harbour fee rose to {i} euros a night in the second quarter." * 2
           for i in range(1500)]
    started = threading.Event()
    out = {}

    def on_fraction(f: float) -> None:
        if 0 < f < 1 and not started.is_set():
            started.set()
            _held_until_another_waits(emb, "the question waiting for the embedder")

    t = threading.Thread(target=lambda: out.update(v=emb.embed_passages_with_progress(doc, on_fraction)),
                         name="document")
    order: list[str] = []
    _encodes_in_order(emb, order)
    t.start()
    assert started.wait(120)
    q = emb.embed_queries(["What is the harbour fee?"])
    t.join()
    assert q.shape == (1, emb.dim)
    slices = order.count("document")
    assert slices >= 10 and order.index(threading.current_thread().name) == 1, order  # after the document's first
    del emb._encode
    alone = emb.embed_passages_with_progress(doc[:300], lambda f: None)
    assert np.allclose(out["v"][:300], alone, atol=1e-4)


@pytest.mark.integration
def test_two_documents_embeddings_take_turns():
    """Two first-pass lanes embed at once: the second document's progress moves (its row does not freeze behind the
    first's whole embedding) and ends before a much longer first document does. Each holds the embedder at a slice
    boundary until the other waits for it, so the turns are the same every run."""
    from ingest.embed import load_embedder

    emb = load_embedder("all-MiniLM-L6-v2")
    long_doc = [f"Section {i}: the harbour fee rose to {i} euros a night in the second quarter of the year." * 2
                for i in range(1500)]
    short_doc = [f"Note {i}: pilots board at the outer buoy at dawn." for i in range(300)]
    started, short_done = threading.Event(), threading.Event()

    def on_long(f: float) -> None:
        if 0 < f < 1 and not short_done.is_set():
            started.set()
            eventually(lambda: emb._waiting > 0 or short_done.is_set(), 120, "the short document waiting")

    moved: list[float] = []

    def on_short(f: float) -> None:
        moved.append(f)
        if f == 1.0:
            short_done.set()
        elif f > 0:
            _held_until_another_waits(emb, "the long document waiting")

    order: list[str] = []
    _encodes_in_order(emb, order)
    t = threading.Thread(target=lambda: emb.embed_passages_with_progress(long_doc, on_long), name="long")
    t.start()
    assert started.wait(120)
    emb.embed_passages_with_progress(short_doc, on_short)
    t.join()
    short = threading.current_thread().name
    assert moved[-1] == 1.0 and len(moved) >= 3
    turns = [name for i, name in enumerate(order) if i == 0 or order[i - 1] != name]
    n_short = order.count(short)
    # one slice each in turn while both embed: long, short, long, short … until the short one is done
    assert order[:2 * n_short + 1] == ["long"] + [short, "long"] * n_short, order
    assert turns[-1] == "long" and order.count("long") > n_short + 1, order  # the long one goes on alone

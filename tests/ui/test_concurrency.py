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

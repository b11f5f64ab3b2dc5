"""`mgrag export-index --to URL`: the live generation copied to a Qdrant server (qdrant-client in memory stands
in for it), in batches, resumable after a failure, and then served from there with the same answers."""
from __future__ import annotations

import numpy as np
import pytest

from cli import main as cli
from ingest.jobs.queue import ingest_files

ANIMALS = ("cat", "owl", "elk", "yak", "bird", "fox", "hen")
TEXT = " ".join(f"Note {i}: the {ANIMALS[i % 7]} number {i * 7} sang at hour {i % 24}." for i in range(60))


class FlakyClient:
    """A qdrant-client whose upserts fail after ``ok`` calls (a dropped connection), counting the points sent."""

    def __init__(self, inner, ok: int):
        self.inner, self.ok, self.sent = inner, ok, 0

    def upsert(self, name, points, wait=True):
        if self.ok == 0:
            raise ConnectionError("server went away")
        self.ok -= 1
        self.sent += len(points)
        return self.inner.upsert(name, points=points, wait=wait)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_export_round_trips_the_live_generation_and_resumes(make_ctx, write, monkeypatch, capsys):
    from qdrant_client import QdrantClient

    from app.context import AppContext
    from retrieval.search import retrieve

    ctx = make_ctx(theta=40, chunker="mg")
    other = " ".join(f"Entry {i}: a {ANIMALS[i % 5]} of weight {i * 11} flew at dawn {i % 9}." for i in range(50))
    ingest_files(ctx, [write("a.txt", TEXT), write("b.txt", other)])
    live = ctx.catalog.live_generation()
    total = sum(ctx.index.count(live.gen, lv) for lv in range(3))
    monkeypatch.setattr(cli, "_ctx", lambda args: ctx)
    server = QdrantClient(":memory:")
    url = "http://qdrant.example:6333"
    flaky = FlakyClient(server, ok=3)
    args = cli.build_parser().parse_args(["export-index", "--to", url, "--batch", "5", "--quiet"])
    with pytest.raises(ConnectionError, match="server went away"):
        cli.cmd_export_index(args, client=flaky)
    assert 0 < flaky.sent < total
    again = FlakyClient(server, ok=10**6)
    assert cli.cmd_export_index(args, client=again) == 0
    out = capsys.readouterr().out
    assert f"exported generation {live.gen} to {url}" in out and "resumed" in out
    assert again.sent == total - flaky.sent  # only what the first run had not sent
    # the server now holds the same points, vectors and payloads, and the aliases name the generation
    from ingest.store.index import ClientIndex

    remote = ClientIndex(server, ctx.catalog.live_gen, ctx.settings.collection_prefix, owns_client=False)
    assert remote.live_collections() == {remote.alias(lv): remote.collection(live.gen, lv) for lv in range(3)}
    for lv in range(3):
        mine = {p.id: p for p in ctx.index.points(live.gen, lv, with_vectors=True)}
        theirs = {p.id: p for p in remote.points(live.gen, lv, with_vectors=True)}
        assert mine.keys() == theirs.keys()
        for i, p in mine.items():
            assert p.payload == theirs[i].payload and np.allclose(p.vector, theirs[i].vector, atol=1e-6)
    # served from the server with the same catalog: every point scores the same (ties may be ordered otherwise)
    served = AppContext(ctx.settings, embedder=ctx.embedder, client=server)
    for q in ("Where did the bird sing?", "the owl number 35"):
        qv = ctx.embedder.embed_queries([q])[0]
        for lv in range(3):
            n = ctx.index.count(live.gen, lv)
            a = {h.id: h.score for h in served.index.search(lv, qv, n)}
            b = {h.id: h.score for h in ctx.index.search(lv, qv, n)}
            assert a.keys() == b.keys() and all(abs(a[i] - b[i]) < 1e-5 for i in a)
        assert retrieve(served, q, k=n).sources[0].score == pytest.approx(retrieve(ctx, q, k=n).sources[0].score)
    # a finished export run again copies anew (nothing stale stays on the server)
    third = FlakyClient(server, ok=10**6)
    assert cli.cmd_export_index(args, client=third) == 0 and third.sent == total


def test_export_of_an_empty_index_says_so(make_ctx, monkeypatch, capsys):
    from qdrant_client import QdrantClient

    ctx = make_ctx(theta=40)
    monkeypatch.setattr(cli, "_ctx", lambda args: ctx)
    args = cli.build_parser().parse_args(["export-index", "--to", "http://x:6333", "--quiet"])
    assert cli.cmd_export_index(args, client=QdrantClient(":memory:")) == 2
    assert "the index is empty; nothing to export" in capsys.readouterr().err

"""One write path (issue 48): a chunker is rebuilt from the description its index recorded, every write of a
document's chunks is one commit (:func:`ingest.store.write.commit_document`), and a re-ingestion cuts as the queue
does."""
import time

import numpy as np
import pytest

from ingest.chunkers import build_chunker
from ingest.jobs.queue import ingest_files
from ingest.jobs.rebuild import reingest
from ingest.jobs.work import chunker_for
from ingest.readers.loaders import LoadedDoc
from ingest.store.write import commit_document

TEXT = ("The harbour opened in 1911. Pilots meet every ship at the outer buoy.\n\n"
        "Dredging keeps the channel at twelve metres. The board reviews it every spring.\n\n") * 6


def test_a_recorded_lg_rule_wins_over_the_settings(make_ctx):
    ctx = make_ctx(chunker="lgmgc", theta=40, lg_mode="streaming", lg_size_prior=1.0)
    now = chunker_for(ctx, "lgmgc", 40, describe_only=True).describe()
    assert now["mode"] == "streaming" and now["size_prior"] == 1.0  # no record: the settings
    recorded = {**now, "mode": "exact", "size_prior": 0.0, "min_words": 3}
    back = chunker_for(ctx, "lgmgc", 40, {**recorded, "chunk_context": "title+headings+table"}, describe_only=True)
    assert back.describe() == recorded  # the generation's record, its context rule aside
    assert chunker_for(ctx, "lgmgc", 60, recorded, describe_only=True).config.theta == 60  # θ as asked


def test_a_recorded_description_rebuilds_the_chunker_it_names(make_ctx):
    ctx = make_ctx(chunker="mg", theta=40)
    old = {"chunker": "mg", "theta": 40, "blocks": False}
    assert chunker_for(ctx, "mg", 40, old).describe() == old
    assert chunker_for(ctx, "mg", 40, {"chunker": "mg", "theta": 40}) == build_chunker("mg", 40)
    # another chunker's description is not this one's: the settings' chunker
    assert chunker_for(ctx, "recursive", 40, old).describe() == build_chunker("recursive", 40).describe()


def test_a_reingest_cuts_as_the_queue_does(make_ctx, write):
    ctx = make_ctx(chunker="mg", theta=40)
    ingest_files(ctx, [write("a.txt", TEXT)])
    before = ctx.catalog.live_generation()
    ids = ctx.catalog.chunk_ids(before.gen, "a.txt")
    r = reingest(ctx)
    assert [x.status for x in r.results] == ["ingested"]
    after = ctx.catalog.live_generation()
    assert after.gen != before.gen and ctx.catalog.chunk_ids(after.gen, "a.txt") == ids


def test_the_commit_rolls_back_and_adds_up_the_seconds_of_a_version(make_ctx, write, monkeypatch):
    ctx = make_ctx(chunker="mg", theta=40)
    ingest_files(ctx, [write("a.txt", TEXT)])
    gen = ctx.catalog.live_generation()
    row = next(d for d in ctx.catalog.documents(gen.gen) if d["doc_id"] == "a.txt")
    ids = ctx.catalog.chunk_ids(gen.gen, "a.txt")
    points = [p for lv in sorted(ids) for p in ctx.index.retrieve(lv, ids[lv], gen=gen.gen, with_vectors=True)]
    chunks = build_chunker("mg", 20).chunk_document(TEXT, "a.txt", row["hash"])
    vectors = np.asarray(ctx.embedder.embed_passages([c.text for c in chunks]), dtype=np.float32)
    doc = LoadedDoc("a.txt", b"", TEXT, row["kind"])

    def fail(*a, **k):
        raise RuntimeError("catalog down")

    real = ctx.catalog.record_indexed
    monkeypatch.setattr(ctx.catalog, "record_indexed", fail)
    with pytest.raises(RuntimeError):
        commit_document(ctx, gen, doc, "a.txt", row["hash"], chunks, vectors, time.time(), size=row["size"])
    monkeypatch.setattr(ctx.catalog, "record_indexed", real)
    assert ctx.catalog.chunk_ids(gen.gen, "a.txt") == ids and not ctx.catalog.pending()
    assert sum(ctx.index.count(gen.gen, lv) for lv in range(gen.n_levels)) == len(points)  # nothing left over

    commit_document(ctx, gen, doc, "a.txt", row["hash"], chunks, vectors, time.time() - 5.0, size=row["size"])
    again = next(d for d in ctx.catalog.documents(gen.gen) if d["doc_id"] == "a.txt")
    assert again["seconds"] >= row["seconds"] + 5.0  # the same version's writes add up
    assert sum(ctx.index.count(gen.gen, lv) for lv in range(gen.n_levels)) == len(chunks)  # the old points went

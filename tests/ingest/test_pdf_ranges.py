"""Issue 37: a long PDF is searchable in its first range of pages while the rest is read; each further range is
committed as it is read; a kill between ranges leaves whole ranges searchable and the job resumes."""
from __future__ import annotations

import pytest

import ingest.jobs.queue as Q
from ingest.jobs.queue import Runner, document_states, enqueue
from ingest.readers.loaders import Limits, load_bytes, load_pdf_ranges
from tests.ingest.test_durability import assert_one_truth
from tests.pdfgen import make_pdf

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]


def _pdf() -> bytes:
    """Seven pages, each naming its own word, with a running header (learnt from the first range)."""
    return make_pdf([[f"The harbour log of page {i + 1} records the {w} shipment in full detail.",
                      f"Nothing else arrived on the {w} day, said the harbour master."] for i, w in enumerate(WORDS)],
                    header="Harbour log | annual", headings={0: "Arrivals", 4: "Departures"})


def _pages_found(ctx, doc_id: str) -> set[int]:
    live = ctx.catalog.live_generation()
    known = {i for ids in ctx.catalog.chunk_ids(live.gen, doc_id).values() for i in ids}
    return {p for lv in range(live.n_levels) for pt in ctx.index.points(live.gen, lv) if pt.id in known
            for p in range(pt.payload["pages"][0], pt.payload["pages"][1] + 1)}


def test_each_range_s_text_extends_the_last_and_the_last_is_the_whole_document():
    data = _pdf()
    limits = Limits(pdf_pages_per_range=3)
    docs = list(load_pdf_ranges("log.pdf", data, limits))
    assert [(d.layout.get("read") or {}).get("pages") for d in docs] == [3, 6, None]
    assert docs[0].text and all(b.text.startswith(a.text) for a, b in zip(docs, docs[1:]))
    assert docs[-1].text == load_bytes("log.pdf", data, limits=limits).text
    assert "charlie" in docs[0].text and "delta" not in docs[0].text and "golf" in docs[-1].text
    assert "Harbour log | annual" not in docs[-1].text  # the running header, learnt from the first range, gone
    assert [h[2] for h in docs[-1].layout["headings"]] == ["Arrivals", "Departures"]


def test_reading_resumes_after_a_range_without_reading_its_pages_again(monkeypatch):
    import ingest.readers.loaders as L

    data = _pdf()
    limits = Limits(pdf_pages_per_range=3)
    whole = list(load_pdf_ranges("log.pdf", data, limits))
    ranges: list[tuple] = []
    real = L.run_limited

    def counted(target, args, **kw):
        ranges.append(args[2:4])  # (first, last) pages of the range read
        return real(target, args, **kw)

    monkeypatch.setattr(L, "run_limited", counted)
    resumed = list(load_pdf_ranges("log.pdf", data, limits, resume=whole[0]))
    assert ranges == [(3, 6), (6, 9)]

    def spent(d) -> float:  # the CPU-seconds read so far (issue 47's budget): measured, so never equal run to run
        return d.layout.get("read", {}).pop("cpu_s", 0.0)

    assert spent(resumed[0]) > spent(whole[0]) > 0  # carried on from the range resumed after
    spent(whole[1])
    assert [(d.text, d.layout) for d in resumed] == [(d.text, d.layout) for d in whole[1:]]


def test_a_long_pdf_is_searchable_in_its_first_pages_then_range_by_range_then_ready(make_ctx):
    ctx = make_ctx(chunker="mg", theta=40, pdf_pages_per_range=3)
    [q] = enqueue(ctx, [("log.pdf", _pdf())])
    runner = Runner(ctx)
    runner.drain("searchable")  # first passes only
    job = ctx.jobs.get(q.job.job_id)
    assert job.state == "searchable" and job.message == "searchable (pages 1–3 of 7)"
    assert _pages_found(ctx, "log.pdf") == {1, 2, 3}
    [row] = document_states(ctx)
    assert row["state"] == "searchable" and row["detail"] == "searchable (pages 1–3 of 7) · the rest queued"
    first_text = ctx.store.text(job.hash)
    runner.drain("ready")
    job = ctx.jobs.get(q.job.job_id)
    assert job.state == "ready" and job.message == "read in full (7 pages)"
    assert _pages_found(ctx, "log.pdf") == set(range(1, 8))
    live = ctx.catalog.live_generation()
    assert ctx.catalog.phase(live.gen, "log.pdf")[1] is None  # nothing of a first pass left
    assert ctx.store.text(job.hash).startswith(first_text) and "golf" in ctx.store.text(job.hash)
    assert not any(p.payload.get("first_pass") for lv in range(3) for p in ctx.index.points(live.gen, lv))
    assert_one_truth(ctx)


def test_a_crash_between_ranges_leaves_whole_ranges_searchable_and_the_job_resumes(make_ctx, monkeypatch):
    ctx = make_ctx(chunker="mg", theta=40, pdf_pages_per_range=3)
    [q] = enqueue(ctx, [("log.pdf", _pdf())])
    Runner(ctx).drain("searchable")
    real, cuts = Q.cut, []

    def dies_on_the_third_range(models, text, *a, **kw):
        cuts.append(len(text))
        if len(cuts) == 2:  # the pages 7 of 7: the process dies before it is committed
            raise SystemExit("killed")
        return real(models, text, *a, **kw)

    monkeypatch.setattr(Q, "cut", dies_on_the_third_range)
    with pytest.raises(SystemExit):
        Runner(ctx).drain("ready")
    assert _pages_found(ctx, "log.pdf") == set(range(1, 7))  # pages 1–6: the two ranges committed, whole
    assert ctx.jobs.get(q.job.job_id).message == "searchable (pages 1–6 of 7)"
    monkeypatch.setattr(Q, "cut", real)
    ctx.jobs.recover()  # what the next start does with the job the dead process held
    Runner(ctx).drain("ready")
    assert ctx.jobs.get(q.job.job_id).state == "ready" and _pages_found(ctx, "log.pdf") == set(range(1, 8))
    assert_one_truth(ctx)


def test_a_pdf_of_one_range_or_a_one_phase_queue_is_read_whole_in_the_first_pass(make_ctx):
    ctx = make_ctx(chunker="mg", theta=40, pdf_pages_per_range=3, first_pass=False)
    [q] = enqueue(ctx, [("log.pdf", _pdf())])
    Runner(ctx).drain("searchable")
    assert ctx.jobs.get(q.job.job_id).state == "ready" and _pages_found(ctx, "log.pdf") == set(range(1, 8))


def test_a_re_ingestion_while_a_long_pdf_is_read_keeps_it_to_be_read_on(make_ctx):
    from ingest.jobs.rebuild import reingest

    ctx = make_ctx(chunker="mg", theta=40, pdf_pages_per_range=3)
    [q] = enqueue(ctx, [("log.pdf", _pdf())])
    Runner(ctx).drain("searchable")
    reingest(ctx, theta=30)  # a new generation, cut from what was read so far
    live = ctx.catalog.live_generation()
    assert live.theta == 30 and ctx.catalog.phase(live.gen, "log.pdf")[1] == "first"
    assert _pages_found(ctx, "log.pdf") == {1, 2, 3}
    Runner(ctx).drain("ready")
    assert ctx.jobs.get(q.job.job_id).state == "ready" and _pages_found(ctx, "log.pdf") == set(range(1, 8))
    assert ctx.catalog.phase(ctx.catalog.live_generation().gen, "log.pdf")[1] is None


def test_a_long_pdf_s_ingest_time_is_the_sum_of_its_ranges(make_ctx, monkeypatch):
    """`mgrag docs` and the Admin tab show a document's whole ingest time: each range's write adds its seconds to
    those before it (3cd4e12 showed the last range's alone: 14 s for ~127 s of work)."""
    ctx = make_ctx(chunker="mg", theta=40, pdf_pages_per_range=3)
    written: list[float] = []
    real = ctx.catalog.record_indexed

    def record(gen, doc_id, name, h, size, kind, chunks, seconds, *a, **k):
        written.append(seconds)
        return real(gen, doc_id, name, h, size, kind, chunks, seconds, *a, **k)

    monkeypatch.setattr(ctx.catalog, "record_indexed", record)
    [q] = enqueue(ctx, [("log.pdf", _pdf())])
    Runner(ctx).drain("ready")
    assert len(written) == 3  # pages 1–3, 4–6, 7
    [row] = document_states(ctx)
    assert row["seconds"] == pytest.approx(sum(written))
    assert row["seconds"] > max(written)


def test_a_long_pdf_another_browser_had_read_ends_ready_in_full_not_at_its_first_pages(make_ctx):
    """The same bytes uploaded from a second browser: the store already holds the whole text the first upload read,
    so the refinement cuts that at once instead of reading the rest range by range; the job must still end as one
    read range by range does ("read in full"), not at its first pass's "searchable (pages 1–3 of 7)"."""
    from ui.rooms.uploads import upload_state

    ctx = make_ctx(chunker="mg", theta=40, pdf_pages_per_range=3)
    [first] = enqueue(ctx, [("log.pdf", _pdf())], owner="browser-a")
    Runner(ctx).drain("ready")
    before = {p.id: p.payload for lv in range(3) for p in ctx.index.points(ctx.catalog.live_generation().gen, lv)}
    [again] = enqueue(ctx, [("log.pdf", _pdf())], owner="browser-b")
    assert again.status == "queued"  # not a duplicate: the first copy is another browser's, out of this one's view
    Runner(ctx).drain("ready")
    job = ctx.jobs.get(again.job.job_id)
    assert job.state == "ready" and job.message == "read in full (7 pages)"
    assert upload_state({"status": job.state, "message": job.message}) == "ready: read in full (7 pages)"
    assert job.message == ctx.jobs.get(first.job.job_id).message
    live = ctx.catalog.live_generation()
    assert _pages_found(ctx, job.doc_id) == _pages_found(ctx, first.job.doc_id) == set(range(1, 8))
    assert ctx.catalog.phase(live.gen, job.doc_id)[1] is None
    assert not any(p.payload.get("first_pass") for lv in range(3) for p in ctx.index.points(live.gen, lv))
    after = {p.id: p.payload for lv in range(3) for p in ctx.index.points(live.gen, lv)}
    assert {i: after[i] for i in before} == before  # the first browser's document untouched
    assert_one_truth(ctx)

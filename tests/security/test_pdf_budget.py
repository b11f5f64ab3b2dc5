"""Issue 47: a PDF of 100,000 real pages was read for days (2.5 s a page, "about 6 min left"), and a one-page PDF
whose page tree's /Count says 100,000 was estimated at hours. Now a PDF of more than ``max_pdf_pages`` pages (as its
page tree holds them, not as its /Count claims) is refused before any page is read, with one sentence and nothing
stored; the ranges of one PDF share ``doc_cpu_budget_s`` CPU-seconds, past which it stops with one sentence, the
ranges already made searchable staying so; and the estimate follows the pages the reader counted."""
from __future__ import annotations

import re

import pytest

from ingest.jobs.queue import Runner, document_states, enqueue
from ingest.jobs.work import Reporter, expected_s, extract_ranges, first_pass_stages
from ingest.readers.loaders import IngestError, Limits, load_bytes, load_pdf_ranges, pdf_pages_hint
from tests.ingest.test_durability import assert_one_truth
from tests.pdfgen import make_pdf, pdf_from_objects

NOTE = ("# Harbour rules\n\nThe harbour master opens the lock gates at six every morning. Boats longer than twelve "
        "metres must book a berth a day ahead.\n")


def _repeated_page_pdf(pages: int, count: int | None = None) -> bytes:
    """A PDF whose page tree lists one page object ``pages`` times (each a page that pdfium and pypdf read: 6 bytes
    a page, so 100,000 pages are 600 KB made at once), its /Count ``count`` (default: the truth)."""
    stream = b"BT /F1 11 Tf 72 720 Td (The lock gate log records every boat that passed the harbour today.) Tj ET"
    return pdf_from_objects([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join([b"5 0 R"] * pages), pages if count is None else count),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 3 0 R >> >> >>",
    ])


def _pages_found(ctx, doc_id: str) -> set[int]:
    live = ctx.catalog.live_generation()
    known = {i for ids in ctx.catalog.chunk_ids(live.gen, doc_id).values() for i in ids}
    return {p for lv in range(live.n_levels) for pt in ctx.index.points(live.gen, lv) if pt.id in known
            for p in range(pt.payload["pages"][0], pt.payload["pages"][1] + 1)}


def test_a_pdf_of_100000_pages_is_refused_with_one_sentence_and_nothing_stored(make_ctx):
    ctx = make_ctx(chunker="mg", theta=40)  # max_pdf_pages: the default
    runner = Runner(ctx)
    [note] = enqueue(ctx, [("rules.md", NOTE.encode())])
    runner.drain("ready")
    [big] = enqueue(ctx, [("big.pdf", _repeated_page_pdf(100_000))])
    runner.drain("searchable")  # the first pass: on 3cd4e12 it made the first 40 pages searchable and read on
    job = ctx.jobs.get(big.job.job_id)
    sentence = "100,000 pages, more than max_pdf_pages (2,000); split it or raise MGRAG_MAX_PDF_PAGES"
    assert job.state == "failed" and job.error == sentence
    rows = {r["doc_id"]: r for r in document_states(ctx)}
    assert rows["big.pdf"]["state"] == "failed" and not rows["big.pdf"]["searchable"]
    assert rows["big.pdf"]["detail"] == f"failed: {sentence}"
    live = ctx.catalog.live_generation()
    assert [d["doc_id"] for d in ctx.catalog.documents(live.gen)] == ["rules.md"]  # nothing of big.pdf stored
    assert rows["rules.md"]["state"] == "ready" and ctx.catalog.chunk_ids(live.gen, "rules.md")  # the other intact
    assert ctx.jobs.get(note.job.job_id).state == "ready"
    assert_one_truth(ctx)


def test_the_page_limit_is_checked_before_any_page_is_read():
    data = make_pdf([[f"Entry {i} of the harbour log."] for i in range(6)])
    seen: list[tuple[int, int]] = []
    with pytest.raises(IngestError) as e:
        load_bytes("log.pdf", data, limits=Limits(max_pdf_pages=5), on_progress=lambda d, n: seen.append((d, n)))
    assert str(e.value) == "log.pdf: 6 pages, more than max_pdf_pages (5); split it or raise MGRAG_MAX_PDF_PAGES"
    assert seen == []  # no page was read
    assert load_bytes("log.pdf", data, limits=Limits(max_pdf_pages=6)).text  # at the limit: read


def test_a_forged_count_is_neither_refused_nor_estimated_as_100000_pages(make_ctx):
    data = _repeated_page_pdf(1, count=100_000)
    assert pdf_pages_hint(data) == 1  # the page tree's /Kids hold one page, whatever /Count says
    ctx = make_ctx(chunker="mg", theta=40, max_pdf_pages=5)
    reports: list[tuple] = []
    real = ctx.jobs.report
    ctx.jobs.report = lambda job_id, label, share, eta: reports.append((label, share, eta)) or real(
        job_id, label, share, eta)
    [q] = enqueue(ctx, [("forged.pdf", data)])
    assert ctx.jobs.get(q.job.job_id).pages == 1
    Runner(ctx).drain("ready")
    job = ctx.jobs.get(q.job.job_id)
    assert job.state == "ready", job.error
    assert _pages_found(ctx, "forged.pdf") == {1}
    # the first estimate, before anything is read, is a one-page PDF's (3cd4e12: 100,000 pages', "about 4.6 h")
    assert reports[0][2] == pytest.approx(expected_s({}, "first", "forged.pdf", len(data), pages=1))
    assert "reading pages 1 of 1" in [label for label, _, _ in reports]


def test_the_estimate_follows_the_pages_the_reader_counts():
    """A first pass estimated from a page count the file states wrongly (or not at all) follows the reader's count
    once the first page is read: the pages of its first range."""
    data = make_pdf([[f"Entry {i} of the harbour log, with the tide and the wind."] for i in range(3)])
    rep = Reporter()
    rep.begin(first_pass_stages(rep.rates, "log.pdf", len(data), pages=1000))
    next(extract_ranges("log.pdf", data, Limits(pdf_pages_per_range=40), rep))
    assert rep.stages[0] == ("reading", pytest.approx(3 / rep.rates["pdf_pages_s"]))


def test_a_pdf_past_its_cpu_budget_stops_keeping_the_ranges_already_searchable(make_ctx):
    data = make_pdf([[f"The harbour log of page {i + 1} records the {w} shipment in full detail."]
                     for i, w in enumerate(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"])])
    ctx = make_ctx(chunker="mg", theta=40, pdf_pages_per_range=2, doc_cpu_budget_s=0.01)  # one child uses more
    [q] = enqueue(ctx, [("log.pdf", data)])
    runner = Runner(ctx)
    runner.drain("searchable")
    job = ctx.jobs.get(q.job.job_id)
    assert job.state == "searchable" and job.message == "searchable (pages 1–2 of 6)"
    first_text = ctx.store.text(job.hash)
    runner.drain("ready")  # the rest: stopped before its next range
    job = ctx.jobs.get(q.job.job_id)
    assert job.state == "failed"
    assert re.fullmatch(r"reading stopped after page 2 of 6: its ranges used [\d,]+ CPU-seconds, more than "
                        r"doc_cpu_budget_s \(0\.01\); split it or raise MGRAG_DOC_CPU_BUDGET_S", job.error), job.error
    [row] = document_states(ctx)
    assert row["searchable"] and row["detail"] == f"failed (refinement; the first pass stays searchable): {job.error}"
    assert _pages_found(ctx, "log.pdf") == {1, 2}  # what was searchable stays so, and nothing else came in
    assert ctx.store.text(job.hash) == first_text and "charlie" not in first_text
    assert_one_truth(ctx)


def test_the_budget_spans_the_ranges_of_one_read_and_its_resumes():
    data = make_pdf([[f"Entry {i} of the harbour log, with the tide and the wind."] for i in range(5)])
    limits = Limits(pdf_pages_per_range=2, doc_cpu_budget_s=0.01)
    ranges = load_pdf_ranges("log.pdf", data, limits)
    first = next(ranges)
    assert first.layout["read"]["pages"] == 2 and first.layout["read"]["cpu_s"] > 0.01
    with pytest.raises(IngestError, match=r"^log\.pdf: reading stopped after page 2 of 5: .*MGRAG_DOC_CPU_BUDGET_S$"):
        next(ranges)
    with pytest.raises(IngestError, match="doc_cpu_budget_s"):  # a resume (another process, a worker) as well
        next(load_pdf_ranges("log.pdf", data, limits, resume=first))
    assert len(list(load_pdf_ranges("log.pdf", data, Limits(pdf_pages_per_range=2)))) == 3  # the default: read


def test_the_rest_of_a_long_pdf_is_estimated_from_the_pages_the_reader_counted(make_ctx):
    """A page tree whose /Kids array is an object of its own gives a scan no count it can check (no hint, where
    3cd4e12 took its /Count, here forged, on trust): the rest of the PDF, read after its first range, is estimated
    from the pages the reader counted (3cd4e12: from the hint, or one page without it, which showed "about 6 min
    left" for days of reading)."""
    stream = b"BT /F1 11 Tf 72 720 Td (The lock gate log records every boat that passed the harbour today.) Tj ET"
    data = pdf_from_objects([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids 6 0 R /Count 100000 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 3 0 R >> >> >>",
        b"[%s]" % b" ".join([b"5 0 R"] * 6),
    ])
    assert pdf_pages_hint(data) is None
    ctx = make_ctx(chunker="mg", theta=40, pdf_pages_per_range=2)
    [q] = enqueue(ctx, [("log.pdf", data)])
    runner = Runner(ctx)
    runner.drain("searchable")
    assert ctx.jobs.get(q.job.job_id).message == "searchable (pages 1–2 of 6)"
    reports: list[tuple] = []
    real = ctx.jobs.report
    ctx.jobs.report = lambda job_id, label, share, eta: reports.append((label, share, eta)) or real(
        job_id, label, share, eta)
    runner.drain("ready")
    assert ctx.jobs.get(q.job.job_id).state == "ready"
    rate = Reporter(rates=ctx.jobs.get_meta("rates", {})).rates["pdf_pages_s"]
    assert reports[0][0] == "reading" and reports[0][2] == pytest.approx(6 / rate)

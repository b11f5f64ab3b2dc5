"""Issue 48: a queued row's "starts in about N" is the work ahead of it (:meth:`ingest.jobs.state.JobStore.starts_in`):
the running first passes' time left plus the expected seconds, at the measured rates, of every file a worker takes
before it, a long PDF counted at the first range of pages its first pass reads, on the workers its owner may use."""
from __future__ import annotations

import pytest

from ingest.jobs.queue import enqueue, queued_text, starts_in
from ingest.jobs.work import expected_s

RATES = {"embed_words_s": 200.0, "pdf_pages_s": 4.0, "lm_words_s": 50.0}  # slow, so every file's work is seconds
TEXT = "Dawn at the harbour. The boats come in.\n\n" * 300


def _pdf(pages: int, word: str) -> bytes:
    from tests.pdfgen import make_pdf

    return make_pdf([[f"{word} at the harbour."] * 30 for _ in range(pages)])


def _run(ctx, eta_s: float, owner_cap: int | None = None):
    """Claim the next first pass and have it report ``eta_s`` seconds left."""
    job = ctx.jobs.claim("first", "t", owner_cap=owner_cap)
    ctx.jobs.report(job.job_id, "embedding", 0.5, eta_s)
    return job


def _when(wait_s: float) -> str:
    return f"{wait_s / 60:.0f} min" if wait_s >= 90 else f"{wait_s:.0f} s"


def test_a_queued_row_starts_after_the_work_ahead_of_it_at_the_measured_rates(make_ctx):
    ctx = make_ctx(chunker="mg", theta=40, ingest_workers=1, pdf_pages_per_range=40)
    ctx.jobs.set_meta("rates", RATES)
    enqueue(ctx, [("a.md", TEXT.encode())])
    _run(ctx, 30.0)
    files = {"long.pdf": _pdf(120, "Dusk"), "notes.md": TEXT.replace("Dawn", "Night").encode(),
             "short.pdf": _pdf(10, "Rain")}
    queued = {q.name: q.job for q in enqueue(ctx, list(files.items()))}
    assert queued["long.pdf"].pages == 120

    def work(name: str) -> float:  # a first pass at the rates: a PDF's first 40 pages only (the rest is read later)
        j = queued[name]
        return expected_s(RATES, "first", name, j.size, pages=min(j.pages, 40) if j.pages else None)

    # 40 pages read at 4 a second, their 16,000 words (400 a page before reading) chunked, embedded at 200/s, written
    assert work("long.pdf") == pytest.approx(40 / 4 + (0.5 + 16_000 / 50_000) + 16_000 / 200 + (0.5 + 16_000 / 100_000))
    assert work("long.pdf") < expected_s(RATES, "first", "long.pdf", queued["long.pdf"].size, pages=120) / 2
    order = sorted(queued, key=lambda n: ctx.jobs.position(queued[n]))
    ahead = 30.0  # the running job's time left, then each file ahead
    for name in order:
        assert starts_in(ctx, queued[name]) == pytest.approx(ahead, abs=0.01), name
        ahead += work(name)
    last = queued[order[-1]]
    assert queued_text(ctx, last) == f"queued (2 ahead) · starts in about {_when(ahead - work(order[-1]))}"
    assert queued_text(ctx, queued[order[0]]) == "queued (next) · starts in about 30 s"


def test_a_user_s_files_wait_for_the_workers_that_user_may_use(make_ctx):
    """Two workers, a user's files on one of them (``owner_workers`` 0: every worker but one): the user's second
    file starts when the first is done, not on the idle worker kept for others; another user's file starts now."""
    ctx = make_ctx(chunker="mg", theta=40, ingest_workers=2)
    ctx.jobs.set_meta("rates", RATES)
    big = TEXT * 3  # about 36 s each at these rates: no short file slips beside the running one
    enqueue(ctx, [("a.md", big.encode())], "browser:a")
    _run(ctx, 20.0, owner_cap=1)
    [b, c] = [q.job for q in enqueue(ctx, [("b.md", big.replace("Dawn", "Noon").encode()),
                                            ("c.md", big.replace("Dawn", "Dusk").encode())], "browser:a")]
    [other] = [q.job for q in enqueue(ctx, [("d.md", big.replace("Dawn", "Rain").encode())], "browser:b")]
    first, second = sorted((b, c), key=ctx.jobs.position)
    assert starts_in(ctx, first) == pytest.approx(20.0, abs=0.01)
    assert starts_in(ctx, second) == pytest.approx(20.0 + expected_s(RATES, "first", first.name, first.size),
                                                   abs=0.01)
    assert starts_in(ctx, other) == 0
    assert ctx.jobs.claim("first", "t", owner_cap=1).name == "d.md"  # as the runner does


def test_a_row_with_nothing_ahead_says_it_is_next(make_ctx):
    ctx = make_ctx(chunker="mg", theta=40)
    ctx.jobs.set_meta("rates", RATES)
    [q] = enqueue(ctx, [("notes.md", TEXT.encode())])
    assert starts_in(ctx, q.job) == 0
    assert queued_text(ctx, q.job) == "queued (next)"
    assert starts_in(ctx, ctx.jobs.claim("first", "t")) is None  # running: not waiting

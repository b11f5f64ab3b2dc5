"""Issue 48's newcomer friction: `mgrag ingest` returns when its documents are read to the end (complete: ready or
failed; a PDF longer than one range of pages searchable in every page), unless ``--wait searchable`` asks for the
first pass only (a long PDF's first range); either way it ends by saying which documents are complete and which are
searchable only so far."""
from __future__ import annotations

import pytest

from ingest.jobs.queue import Runner
from tests.ingest.test_pdf_ranges import _pages_found
from tests.pdfgen import make_pdf

WORDS = ["alpha", "bravo", "charlie", "delta", "echo"]


@pytest.fixture
def pdf_cli(make_ctx, monkeypatch, tmp_path):
    """(the CLI module, its context, a 5-page PDF's path) with ranges of 2 pages: the PDF is read in 3 ranges."""
    from cli import main as cli

    ctx = make_ctx(chunker="mg", theta=40, pdf_pages_per_range=2)
    monkeypatch.setattr(cli, "_ctx", lambda args: ctx)
    path = tmp_path / "log.pdf"
    path.write_bytes(make_pdf([[f"The harbour log of page {i + 1} records the {w} shipment in full detail.",
                                f"Nothing else arrived on the {w} day, said the harbour master."]
                               for i, w in enumerate(WORDS)]))
    return cli, ctx, str(path)


def test_ingest_returns_with_a_long_pdf_read_to_the_end(pdf_cli, capsys):
    cli, ctx, path = pdf_cli
    assert cli.main(["ingest", path]) == 0
    out = capsys.readouterr().out
    [job] = ctx.jobs.jobs(None)
    assert job.state == "ready" and job.message == "read in full (5 pages)"
    assert _pages_found(ctx, "log.pdf") == {1, 2, 3, 4, 5}
    assert "complete (read to the end): log.pdf" in out and "not complete" not in out, out


def test_wait_searchable_returns_after_the_first_range(pdf_cli, capsys, monkeypatch):
    cli, ctx, path = pdf_cli
    # the refinement lane held back: what the command waited for, not a race with the rest's reading, decides
    monkeypatch.setattr(Runner, "_first_pending", lambda self: True)
    assert cli.main(["ingest", "--wait", "searchable", path]) == 0
    out = capsys.readouterr().out
    [job] = ctx.jobs.jobs(None)
    assert job.state == "searchable" and job.message == "searchable (pages 1–2 of 5)"
    assert _pages_found(ctx, "log.pdf") == {1, 2}
    assert "searchable, not complete yet: log.pdf (pages 1–2 of 5 only)" in out and "complete (read" not in out, out
    assert "they go on when `mgrag serve` or `mgrag worker` runs" in out

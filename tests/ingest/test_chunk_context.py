"""Contextual chunk text (ingest/text/chunk_context.py, issue 35): each chunk is embedded and keyword-indexed with the
document's title, the heading path where it starts and a table's caption and header row; what is stored, shown and
quoted stays the document's own text; the index records the rule, so an index built without it keeps working (and
keeps its rule for new documents) until it is re-ingested."""
from __future__ import annotations

import numpy as np

from ingest.jobs.queue import Runner, enqueue, ingest_files, wait
from ingest.jobs.rebuild import reingest
from ingest.text.chunk_context import CONTEXT_KEY, chunk_contexts, context_line, indexed_text, text_headings, title_of

FILING = ("Acme Corp\n\nForm 10-Q\n\nPART I — FINANCIAL INFORMATION\n\nItem 1. Financial Statements\n\n"
          "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (In millions)\n\n"
          "| | Three Months Ended July 1, 2023 | Three Months Ended June 25, 2022 |\n|---|---|---|\n"
          + "".join(f"| Line item {i} | {i},100 | {i},050 |\n" for i in range(1, 30))
          + "| Total net sales | 81,797 | 82,959 |\n\n"
          "Item 2. Management's Discussion and Analysis\n\n"
          + "The Company's gross margin was affected by foreign currency. " * 40
          + "\n\nPART II — OTHER INFORMATION\n\nItem 1. Legal Proceedings\n\n"
          + "Epic Games filed a lawsuit against the Company alleging violations of antitrust law. " * 10)


def test_headings_of_filings_and_contracts_are_found_in_plain_text():
    heads = [(lv, t) for _, lv, t in text_headings(FILING)]
    assert heads == [(1, "PART I — FINANCIAL INFORMATION"), (2, "Item 1. Financial Statements"),
                     (2, "Item 2. Management's Discussion and Analysis"), (1, "PART II — OTHER INFORMATION"),
                     (2, "Item 1. Legal Proceedings")]
    contract = ("the Parties agree as follows.  ARTICLE VIII TERMINATION   Section 8.1.   Termination by Mutual "
                "Agreement. This Agreement may be terminated as provided in Section 8.3 of this Agreement at any "
                "time.   Section 8.2.   Termination by Either Party. Either party may end it.")
    assert [t for _, _, t in text_headings(contract)] == [
        "ARTICLE VIII TERMINATION", "Section 8.1. Termination by Mutual Agreement",
        "Section 8.2. Termination by Either Party"]  # "as provided in Section 8.3 of" is a reference, not a heading
    assert text_headings("We discussed Item 2 of the agenda and Part 3 of the plan at length today.") == ()


def test_a_table_row_gets_the_path_caption_and_header_and_prose_gets_its_section():
    row = FILING.index("| Line item 20")
    line = context_line("Acme Corp 10-Q", FILING, row, text_headings(FILING))
    assert line == ("Acme Corp 10-Q › PART I — FINANCIAL INFORMATION › Item 1. Financial Statements\n"
                    "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (In millions) "
                    "| | Three Months Ended July 1, 2023 | Three Months Ended June 25, 2022 |")
    legal = FILING.index("Epic Games")
    assert context_line("Acme Corp 10-Q", FILING, legal, text_headings(FILING)) == \
        "Acme Corp 10-Q › PART II — OTHER INFORMATION › Item 1. Legal Proceedings"
    assert title_of("2023 Q3 AAPL.pdf") == "2023 Q3 AAPL" and title_of("reports/annual_report-v2.docx") == \
        "annual report-v2"
    assert indexed_text("", "text") == "text" and indexed_text("ctx", "text") == "ctx\ntext"


def _points(ctx):
    live = ctx.catalog.live_generation()
    return live, [p for lv in range(live.n_levels) for p in ctx.index.points(live.gen, lv, with_vectors=True)]


def test_ingest_embeds_and_indexes_the_context_and_stores_the_documents_own_text(make_ctx, fake_embedder):
    """Through the queue (the path every upload takes): each chunk's payload keeps the document's own text and its
    context line; its vector is the embedding of context + text; BM25 finds the Legal Proceedings passage by the
    heading's words although the passage itself never says "legal proceedings"."""
    ctx = make_ctx(chunker="mg", theta=60)
    [q] = enqueue(ctx, [("acme_10q.md", FILING.encode())])
    runner = Runner(ctx).start()
    try:
        wait(ctx.jobs, [q.job.job_id], "ready", timeout_s=120)
    finally:
        runner.stop()
    live, points = _points(ctx)
    assert live.params[CONTEXT_KEY]
    for p in points:
        pl = p.payload
        assert pl["text"] == FILING[pl["start"]:pl["end"]]
        want = chunk_contexts(FILING, "acme_10q.md", None, [pl["start"]])[0]
        assert pl.get("context", "") == want
        assert np.allclose(p.vector, fake_embedder.embed_passages([indexed_text(want, pl["text"])])[0], atol=1e-5)
    legal = [p for p in points if "Epic Games" in p.payload["text"]]
    assert legal and all("Item 1. Legal Proceedings" in p.payload["context"] for p in legal)
    assert _found_by_heading(ctx)


def _found_by_heading(ctx) -> bool:
    """Whether a BM25 search for the heading's words finds a passage of the section that does not hold the
    heading itself (only its context line says "Legal Proceedings")."""
    from retrieval.search import retrieve

    res = retrieve(ctx, "legal proceedings", retriever="bm25")
    return any("Epic Games" in s.text and "Legal Proceedings" not in s.text for s in res.sources)


def test_an_index_built_without_context_keeps_working_and_its_rule_until_reingested(make_ctx, write):
    from core.settings import Settings
    from retrieval.search import retrieve

    old = make_ctx(chunker="mg", theta=60, chunk_context=False)
    ingest_files(old, [write("acme_10q.md", FILING)])
    live, points = _points(old)
    assert CONTEXT_KEY not in live.params and not any("context" in p.payload for p in points)
    assert not _found_by_heading(old)
    # the same data dir opened with today's default (chunk_context on): searches work, a new document follows the
    # index's rule (no context), and a re-ingestion rebuilds every document with the context
    old.close()
    new = make_ctx(data_dir=old.settings.data_dir, chunker="mg", theta=60)
    assert Settings.model_fields["chunk_context"].default is True and new.settings.chunk_context
    assert retrieve(new, "Epic Games lawsuit antitrust", retriever="dense").sources
    ingest_files(new, [write("notes.md", "Item 1. Notes\n\n" + "A second document about birds. " * 20)])
    live, points = _points(new)
    assert live.gen == old.catalog.live_generation().gen and not any("context" in p.payload for p in points)
    reingest(new)
    live, points = _points(new)
    assert live.params[CONTEXT_KEY] and {p.payload["doc_id"] for p in points if p.payload.get("context")} == \
        {"acme_10q.md", "notes.md"}
    assert _found_by_heading(new)

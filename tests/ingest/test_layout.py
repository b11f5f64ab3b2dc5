"""Pages and headings: PDF page boundaries (running headers, footers and page numbers removed before chunking, the
outline as headings), Markdown/HTML/DOCX headings, and each chunk's pages and heading path in its payload."""
from __future__ import annotations

import io
import re

import pytest

from ingest.jobs.queue import ingest_files
from ingest.readers.layout import Layout, PageCleaner, cite_label, heading_path, markdown_headings, page_span
from ingest.readers.loaders import Limits, load_bytes
from tests.pdfgen import make_pdf

BODY = [
    ["The harbour authority met four times this year.", "It approved the new crane for the east quay.",
     "Dredging of the channel began in March."],
    ["Berth fees rose by three percent in April.", "Visiting yachts pay forty euros a night.",
     "Fishing boats registered here pay no berth fee."],
    ["The lock gates open at six every morning.", "They close at ten at night in winter.",
     "A pilot is required for ships over ninety metres."],
    ["The lighthouse was automated in 1998.", "Its lamp is inspected every month.",
     "The old cottage of the keeper is now a museum."],
]


def _pdf(**kw) -> bytes:
    return make_pdf(BODY, header="Harbour Authority Annual Report 2024", **kw)


def test_pdf_pages_lose_running_header_footer_and_page_numbers():
    doc = load_bytes("report.pdf", _pdf(footer="Page {n} of {total}"))
    assert "Annual Report 2024" not in doc.text and "Page 2 of 4" not in doc.text
    for lines in BODY:
        for line in lines:
            assert line in doc.text
    lay = Layout.from_json(doc.layout)
    assert len(lay.pages) == 4 and lay.pages[0] == 0
    for n, lines in enumerate(BODY, 1):
        at = doc.text.index(lines[1])
        assert page_span(lay, at, at + len(lines[1])) == (n, n)


@pytest.mark.parametrize("footer", ["{n}", "- {n} -", "Page {n}"])
def test_bare_page_numbers_are_removed(footer):
    doc = load_bytes("r.pdf", make_pdf(BODY, header=None, footer=footer))
    assert not any(line.strip() in {"1", "2", "- 3 -", "Page 4"} for line in doc.text.splitlines())


def test_a_line_on_a_few_pages_only_is_kept():
    pages = [list(p) for p in BODY]
    pages[0].insert(0, "Confidential draft")  # first line of one page out of four: not a running header
    doc = load_bytes("r.pdf", make_pdf(pages, header=None, footer=None))
    assert "Confidential draft" in doc.text


def test_page_cleaner_needs_a_line_on_half_the_pages():
    pages = ["Report 2024\nA\nB", "Report 2024\nC\nD", "Other\nE\nF", "Report 2024\nG\nH"]
    assert [PageCleaner(pages).clean(p).splitlines()[0] for p in pages] == ["A", "C", "Other", "G"]


def test_pdf_outline_becomes_headings_and_a_citation_label():
    doc = load_bytes("report.pdf", _pdf(outline=[("Meetings", 0), ("Fees", 1), ("Operations", 2)]))
    lay = Layout.from_json(doc.layout)
    at = doc.text.index("Visiting yachts")
    assert heading_path(lay, at) == ["Fees"]
    end = doc.text.index("close at ten")
    assert cite_label(lay, at, end) == "p. 2–3 · Fees"


def test_markdown_headings_with_setext_and_code_fences():
    text = "# Harbour\n\nIntro.\n\n## Fees\n\nForty euros.\n\n```\n# not a heading\n```\n\nHours\n-----\n\nSix."
    heads = markdown_headings(text)
    assert [(lv, t) for _, lv, t in heads] == [(1, "Harbour"), (2, "Fees"), (2, "Hours")]
    assert heading_path(Layout((), heads), text.index("Forty")) == ["Harbour", "Fees"]
    assert heading_path(Layout((), heads), text.index("Six")) == ["Harbour", "Hours"]


def test_html_and_docx_headings():
    html = b"<h1>Harbour</h1><p>Intro text.</p><h2>Fees</h2><p>Forty euros a night.</p>"
    doc = load_bytes("h.html", html)
    assert heading_path(Layout.from_json(doc.layout), doc.text.index("Forty")) == ["Harbour", "Fees"]

    import docx

    d = docx.Document()
    d.add_heading("Harbour", level=1)
    d.add_paragraph("Intro text.")
    d.add_heading("Fees", level=2)
    d.add_paragraph("Forty euros a night.")
    buf = io.BytesIO()
    d.save(buf)
    doc = load_bytes("d.docx", buf.getvalue())
    assert heading_path(Layout.from_json(doc.layout), doc.text.index("Forty")) == ["Harbour", "Fees"]


def test_chunks_carry_pages_and_headings_in_their_payload(make_ctx, write):
    from app.answer import answer
    from ingest.jobs.rebuild import reingest

    ctx = make_ctx(chunker="mg", theta=24, synth_backend="extractive")
    ingest_files(ctx, [write("report.pdf", _pdf(outline=[("Meetings", 0), ("Fees", 1), ("Operations", 2)]))])
    points = [p.payload for lv in range(3) for p in ctx.index.points(ctx.catalog.live_gen(), lv)]
    assert points and all(len(p["pages"]) == 2 and p["pages"][0] <= p["pages"][1] for p in points)
    fees = [p for p in points if "Visiting yachts" in p["text"] and p["level"] == 2]
    assert fees and fees[0]["pages"] == [2, 2] and fees[0]["headings"] == ["Fees"]
    a = answer(ctx, "How much do visiting yachts pay a night?", backend="extractive")
    src = next(s for s in a.sources if "Visiting yachts" in s.parent_text)
    assert src.pages[0] <= 2 <= src.pages[1] and "p. " in src.label
    # a re-ingestion keeps them (from the stored layout)
    reingest(ctx, theta=30)
    again = [p.payload for p in ctx.index.points(ctx.catalog.live_gen(), 2) if "Visiting yachts" in p.payload["text"]]
    assert again[0]["pages"] == [2, 2]


def test_a_sentence_running_over_a_page_break_stays_one_sentence():
    from ingest.text.sentences import PASSAGE_MIN_LINES, split_sentences

    wrapped = ["The harbour committee met on Monday morning in the old customs house by", "the quay, where the",
               "members heard the engineers report on the state of the northern breakwater and"]
    page1 = wrapped + ["the lighthouse. When the reading was over, its chair said the breakwater bill"]
    page2 = ["was a good bill and that the vote would be held the following week without", "further delay.",
             "The engineers were thanked for their long and careful work on the survey."]
    page3 = ["A third page opens here with a new paragraph about the ferry timetable and its", "fares."]
    doc = load_bytes("speech.pdf", make_pdf([page1, page2, page3], header=None, footer=None))
    sentences = [" ".join(doc.text[s:e].split()) for s, e in split_sentences(doc.text, min_lines=PASSAGE_MIN_LINES)]
    assert ("When the reading was over, its chair said the breakwater bill was a good bill and that the vote would "
            "be held the following week without further delay.") in sentences  # pages 1 → 2: a line break
    assert "survey.\n\nA third page" in doc.text  # pages 2 → 3: the page ends a sentence, a paragraph break


# -- templated pages (receipts, statements, forms) are content, not running headers --------------------------------
def _receipt(n: int) -> list[str]:
    return [f"Receipt {1000 + n}", f"Date 2024-03-{n:02d} Customer {4200 + 7 * n}",
            f"Item {n * 3} units at $ {n}.25", f"Total $ {12 + n}.{(n * 37) % 100:02d}"]


@pytest.mark.parametrize("n_pages", [20, 3])
def test_templated_receipt_pages_keep_every_line(n_pages):
    """Lines repeating on every page with only their numbers changed are each page's content: kept, and the PDF
    (which has a text layer) is not refused as having none."""
    pages = [_receipt(n) for n in range(1, n_pages + 1)]
    doc = load_bytes("receipts.pdf", make_pdf(pages, header=None, footer=None))
    for lines in pages:
        for line in lines:
            assert line in doc.text
    assert len(Layout.from_json(doc.layout).pages) == n_pages


def test_page_with_only_repeated_lines_keeps_them():
    """A page whose every line would go as a header or footer keeps its lines (a text layer never ends empty)."""
    pages = [f"ACME Statement\nThank you for your custom\n{n}" for n in range(1, 4)]
    assert [PageCleaner(pages).clean(p) for p in pages] == pages


def test_running_header_and_page_numbers_still_removed_beside_templated_lines():
    pages = [["ACME Corp - Annual Report"] + _receipt(n) for n in range(1, 6)]
    doc = load_bytes("acme.pdf", make_pdf(pages, header=None, footer="Page {n}"))
    assert "ACME Corp" not in doc.text and "Page 3" not in doc.text
    for lines in pages:
        for line in lines[1:]:
            assert line in doc.text


def test_numbered_running_header_is_removed():
    pages = [f"Harbour Report 2024 | page {n}\nBody line {n * 13} of the report.\nMore text {n}.\nEnd {n * 7}."
             for n in range(1, 6)]
    cleaned = [PageCleaner(pages).clean(p) for p in pages]
    assert not any("Harbour Report" in c for c in cleaned)
    assert all(c.startswith("Body line") for c in cleaned)


def test_a_books_chapter_heads_go_though_each_runs_through_one_chapter():
    """A LaTeX book's even pages start with "<page> <chapter title>", a different title per chapter, so no head is on
    half the pages; each still follows the page number (printed 10 pages after the file's place) and goes. A line
    whose number does not follow the page stays (newcomer run r7: "52 How to use NOMAD" quoted as an answer)."""
    chapters = ["Introduction"] * 8 + ["Getting started"] * 8 + ["Advanced parameters"] * 8
    pages = []
    for i, chapter in enumerate(chapters):
        head = f"{i + 11} {chapter}" if i % 2 else f"{i // 8 + 1}.{i % 3} Section of the {chapter.lower()}"
        pages.append(f"{head}\nThe solver reads the parameter file number {i * 3 + 2} of the run.\nMore text {i}.\n"
                     f"Table {i // 4 + 1} lists the defaults.")
    cleaned = [PageCleaner(pages).clean(p) for p in pages]
    assert not any(c.split("\n")[0].endswith(("Introduction", "Getting started", "Advanced parameters"))
                   for c in cleaned), cleaned[:4]
    assert all(f"parameter file number {i * 3 + 2} " in c for i, c in enumerate(cleaned))
    assert all(f"Table {i // 4 + 1} lists" in c for i, c in enumerate(cleaned))


def test_a_chapter_head_that_starts_after_the_first_range_of_a_long_pdf_goes_too():
    """A long PDF is read range by range and the running lines are learnt from the first range; a chapter that starts
    later has a head of its own, learnt from its range when its number follows the page (newcomer run r7: 13 of a
    manual's "N How to use NOMAD" heads were left in the text)."""
    chapters = ["Introduction"] * 8 + ["Getting started"] * 8 + ["Advanced parameters"] * 8
    pages = [[f"{i + 11} {ch}" if i % 2 else f"Section {i // 2 + 1} of the {ch.lower()}",
              f"The solver reads parameter file number {i * 3 + 2} of the run.", f"More text on sheet {i}."]
             for i, ch in enumerate(chapters)]
    doc = load_bytes("manual.pdf", make_pdf(pages, header=None, footer=None),
                     limits=Limits(sandbox=True, pdf_pages_per_range=8))
    assert not re.search(r"\d+ (Introduction|Getting started|Advanced parameters)\b", doc.text), doc.text[:600]
    for i in range(len(pages)):
        assert f"parameter file number {i * 3 + 2} of the run" in doc.text


def test_a_docx_place_is_its_paragraph_and_bold_section():
    """Issue 21 (17): DOCX sources carried only the document's heading, never a place inside it. Each paragraph is
    numbered (¶) and a short all-bold paragraph, how most documents mark a section, is a heading."""
    import docx

    from ingest.readers.layout import cite_label

    d = docx.Document()
    d.add_paragraph("Harbour rules")
    d.add_paragraph().add_run("Fees").bold = True
    d.add_paragraph("Forty euros a night.")
    d.add_paragraph("")  # an empty paragraph is not counted
    d.add_paragraph().add_run("Opening hours").bold = True
    d.add_paragraph("The office opens at nine.")
    d.add_paragraph().add_run("A bold sentence that ends like one.").bold = True
    buf = io.BytesIO()
    d.save(buf)
    doc = load_bytes("d.docx", buf.getvalue())
    lay = Layout.from_json(doc.layout)
    forty, office = doc.text.index("Forty"), doc.text.index("The office")
    assert cite_label(lay, forty, forty + 5) == "¶ 3 · Fees"
    assert cite_label(lay, office, office + 5) == "¶ 5 · Opening hours"
    assert heading_path(lay, doc.text.index("A bold sentence")) == ["Opening hours"]  # not a heading itself

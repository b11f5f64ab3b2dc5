"""Documents read as documents (issue 20): tables kept whole and quoted with their headers, headings as structure,
image-only pages read by OCR, and the pptx, xlsx, csv, epub and image formats, each with its limits. Every file
is made in the test."""
from __future__ import annotations

import io
import zipfile

import pytest

from ingest.jobs.queue import ingest_files
from ingest.readers.layout import Layout
from ingest.readers.loaders import IngestError, Limits, load_bytes
from ingest.text.sentences import split_sentences
from ingest.text.tables import markdown_tables, row_quote
from tests.pdfgen import make_pdf, table_ops

SEGMENTS = [["Segment", "2023", "2022"], ["Widgets", "4,210", "3,980"], ["Gadgets", "1,375", "1,512"],
            ["Total revenue", "5,585", "5,492"]]
PROSE = ["The company makes widgets and gadgets in two plants near the harbour.",
         "Its board met four times during the year to review the results."]


def _table_pdf() -> bytes:
    page2 = ["Revenue by segment is shown in the table below, in thousands of dollars."]
    return make_pdf([PROSE, page2], footer=None, extra={1: table_ops(SEGMENTS, top=600)},
                    headings={1: "Segment Results"})


# -- tables ------------------------------------------------------------------------------------------------------------
def test_a_running_header_above_a_table_is_no_column_label_and_a_one_column_box_is_text():
    """Issue 32 (8): a 10-Q's running header "Table of Contents" (top margin, every page) became the label of a
    table's last column, pushing the real column headers into the body; a ruled one-column banner (the running
    header with the page title) came out as a table of its own."""
    rows = [["Non-GAAP measure", "Definition", "Usefulness"], ["Acquisition-related", "Amortization", "Comparison"]]
    banner = table_ops([["Statements of Income"]], top=745, widths=(400,))
    data = make_pdf([[], [], []], header="Table of Contents", footer=None,
                    extra={0: banner, 1: table_ops(rows, top=750, widths=(150, 150, 150))})
    doc = load_bytes("10q.pdf", data)
    assert "| Non-GAAP measure | Definition | Usefulness |\n|---|---|---|\n| Acquisition-related |" in doc.text
    assert "Table of Contents |" not in doc.text and "| Statements of Income |" not in doc.text
    assert "Statements of Income" in doc.text



def test_a_long_table_is_split_by_rows_with_its_header_repeated():
    rows = [[f"Item {i}", str(i * 10), str(i * 7)] for i in range(40)]
    groups = markdown_tables(["Name", "2023", "2022"], rows, max_words=60)
    assert len(groups) > 3
    for g in groups:
        lines = g.split("\n")
        assert lines[0] == "| Name | 2023 | 2022 |" and lines[1] == "|---|---|---|"
    body = [ln for g in groups for ln in g.split("\n")[2:]]
    assert body == [f"| Item {i} | {i * 10} | {i * 7} |" for i in range(40)]  # every row once, whole, in order


def test_the_sentence_splitter_never_cuts_inside_a_row():
    table = "\n".join(markdown_tables(["", "Q1", "Q2"], [["Sales rose. Costs fell", "1.5", "2.5"],
                                                         ["Net. income", "3", "4"]]))
    text = f"Intro sentence here. Another one.\n\n{table}\n\nAfter the table."
    units = [text[s:e] for s, e in split_sentences(text)]
    assert table in units  # one unit for the chunkers
    rows = [text[s:e] for s, e in split_sentences(text, table_rows=True)]
    assert "| Sales rose. Costs fell | 1.5 | 2.5 |" in rows and "| Net. income | 3 | 4 |" in rows
    bounded = [text[s:e] for s, e in split_sentences(text, max_words=12)]
    assert all(u.startswith("|") == u.endswith("|") for u in bounded)  # cut between rows, never inside one
    t = text.index("| Net. income")
    assert row_quote(text, t, text.index("\n", t)) == "Net. income — Q1: 3; Q2: 4"


def test_pdf_table_is_read_as_a_markdown_table_with_its_page_and_heading():
    doc = load_bytes("report.pdf", _table_pdf())
    lay = Layout.from_json(doc.layout)
    assert "| Segment | 2023 | 2022 |\n|---|---|---|\n| Widgets | 4,210 | 3,980 |" in doc.text
    (start, end, kind), = [b for b in lay.blocks if b[2] == "table"]
    assert doc.text[start:end].startswith("| Segment") and doc.text[start:end].endswith("| 5,585 | 5,492 |")
    assert start >= lay.pages[1]  # on page 2
    heads = [b for b in lay.blocks if b[2] == "heading"]
    assert [doc.text[s:e] for s, e, _ in heads] == ["Segment Results"]
    assert [t for _, _, t in lay.headings] == ["Segment Results"]


def test_a_question_about_a_cell_quotes_the_row_with_its_header_cited_at_its_page(make_ctx, write):
    from app.answer import answer

    ctx = make_ctx(chunker="mg", theta=60, synth_backend="extractive")
    ingest_files(ctx, [write("report.pdf", _table_pdf())])
    payloads = [p.payload for lv in range(3) for p in ctx.index.points(ctx.catalog.live_gen(), lv)]
    assert any(b[2] == "table" for p in payloads for b in p.get("blocks", []))  # chunk payloads mark the table
    a = answer(ctx, "What was the Widgets revenue in 2023?", backend="extractive")
    assert "Widgets — 2023: 4,210; 2022: 3,980" in a.text, a.text
    cited = [c for c in a.citations if "Widgets" in c.parent_text]
    support = [x for x in cited[0].support if "| Widgets | 4,210 | 3,980 |" in x["text"]]
    assert support and support[0]["pages"] == [2, 2]  # the quoted row is on page 2 (its passage runs over 1–2)


def test_docx_and_html_tables_are_markdown_tables():
    import docx

    d = docx.Document()
    d.add_heading("Fleet", level=1)
    d.add_paragraph("The fleet is listed below.")
    t = d.add_table(rows=3, cols=2)
    for i, (a, b) in enumerate([("Ship", "Tonnage"), ("Aurora", "12,000"), ("Borealis", "9,500")]):
        t.cell(i, 0).text, t.cell(i, 1).text = a, b
    d.add_paragraph("After the table.")
    buf = io.BytesIO()
    d.save(buf)
    doc = load_bytes("fleet.docx", buf.getvalue(), limits=Limits(sandbox=False))
    assert "The fleet is listed below.\n\n| Ship | Tonnage |\n|---|---|\n| Aurora | 12,000 |\n| Borealis | 9,500 |" \
           "\n\nAfter the table." in doc.text
    html = ("<h1>Fleet</h1><p>Ships:</p><table><caption>Ships in service</caption><tr><th>Ship</th><th>Tonnage</th>"
            "</tr><tr><td>Aurora</td><td>12,000</td></tr></table><p>End.</p>")
    doc = load_bytes("fleet.html", html.encode(), limits=Limits(sandbox=False))
    assert "Ships in service\n\n| Ship | Tonnage |\n|---|---|\n| Aurora | 12,000 |\n\nEnd." in doc.text
    assert any(k == "table" for _, _, k in Layout.from_json(doc.layout).blocks)


def test_docx_text_inside_content_controls_is_read_in_order():
    """A Word template can hold the body in block-level content controls (``w:sdt``) and custom XML; python-docx's
    own iteration skips them, and a 16,455-word thesis was read as its 760-word appendix (newcomer run r7)."""
    import docx
    from docx.oxml import OxmlElement

    d = docx.Document()
    d.add_paragraph("Cover page before the controls.")
    inside = d.add_paragraph("The plant bought parts from more than 14,000 suppliers in 2011.")
    t = d.add_table(rows=2, cols=2)
    for i, (a, b) in enumerate([("Region", "Suppliers"), ("Mexico", "3,100")]):
        t.cell(i, 0).text, t.cell(i, 1).text = a, b
    nested = d.add_paragraph("A paragraph inside custom XML inside the control.")
    d.add_paragraph("Appendix after the controls.")
    sdt, content, custom = OxmlElement("w:sdt"), OxmlElement("w:sdtContent"), OxmlElement("w:customXml")
    inside._p.addprevious(sdt)
    sdt.append(OxmlElement("w:sdtPr"))
    sdt.append(content)
    for el in (inside._p, t._tbl):
        content.append(el)
    content.append(custom)
    custom.append(nested._p)
    buf = io.BytesIO()
    d.save(buf)
    assert "14,000" not in "\n".join(p.text for p in docx.Document(io.BytesIO(buf.getvalue())).paragraphs)
    doc = load_bytes("thesis.docx", buf.getvalue(), limits=Limits(sandbox=False))
    order = ["Cover page before", "more than 14,000 suppliers", "| Mexico | 3,100 |", "inside custom XML",
             "Appendix after"]
    at = [doc.text.find(s) for s in order]
    assert -1 not in at and at == sorted(at), doc.text


# -- headings and title lines are not answers --------------------------------------------------------------------------
@pytest.mark.parametrize("line,title", [
    ("EXHIBIT 21 The Boeing Company Subsidiaries", True),
    ("BEST BUY CO., INC. FORM 10-Q FOR THE QUARTER ENDED JULY 29, 2023", True),
    ("Best Buy Co., Inc. Shareholders' Equity", True),
    ("Item 1A. Risk Factors", True),
    ("Multiple legal actions have been filed against us as a result of the accident.", False),
    ("Note that revenue increased in the quarter.", False),
])
def test_title_lines_are_told_from_statements(line, title):
    from app.grounding import is_title_line

    assert is_title_line(line) is title


def test_the_extractive_answer_never_quotes_a_heading_or_title_line(make_ctx, write):
    from app.answer import answer

    text = ("# Legal Proceedings of the Company\n\nLEGAL PROCEEDINGS AND CLAIMS OF THE COMPANY\n\n"
            "Multiple legal actions have been filed against the company as a result of the harbour accident.\n\n"
            "# Exhibits\n\nExhibit 21 Legal Proceedings Subsidiaries List\n")
    ctx = make_ctx(chunker="mg", theta=60, synth_backend="extractive")
    ingest_files(ctx, [write("filing.md", text)])
    a = answer(ctx, "What legal proceedings has the company reported?", backend="extractive")
    assert "Multiple legal actions" in a.text
    assert "LEGAL PROCEEDINGS AND CLAIMS" not in a.text and "Exhibit 21" not in a.text
    assert "Legal Proceedings of the Company [" not in a.text


# -- OCR ---------------------------------------------------------------------------------------------------------------
def _page_image(lines: list[str], size=(1275, 1650), font_size: int = 30, step: int = 48):
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("L", size, 255)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=font_size)
    for i, ln in enumerate(lines):
        draw.text((100, 150 + i * step), ln, fill=0, font=font)
    return img


SCAN = ["The lighthouse keeper lit the lamp at dusk.", "The lamp burned whale oil until the year 1890.",
        "After that the keeper used kerosene instead."]


def _scanned_pdf() -> bytes:
    buf = io.BytesIO()
    first = _page_image(["Harbour Records"] + SCAN[:1])
    first.save(buf, "PDF", resolution=150, save_all=True, append_images=[_page_image(SCAN[1:])])
    return buf.getvalue()


def _engines():
    from ingest.readers.ocr import _rapidocr_installed, tesseract_path

    out = []
    if _rapidocr_installed():
        out.append("rapidocr")
    if tesseract_path():
        out.append("tesseract")
    return out


@pytest.mark.parametrize("engine", ["rapidocr", "tesseract"])
def test_an_image_only_pdf_is_read_by_ocr_with_its_pages(engine):
    import os

    if engine not in _engines():
        if os.environ.get("MGRAG_REQUIRE_SERVICES") == "1":
            pytest.fail(f"OCR engine {engine} is not installed (CI installs both)")
        pytest.skip(f"{engine} not installed")
    doc = load_bytes("scan.pdf", _scanned_pdf(), limits=Limits(ocr_engine=engine))
    lay = Layout.from_json(doc.layout)
    assert doc.layout["ocr_pages"] == [1, 2]
    words = doc.text.lower()
    assert "lighthouse keeper" in words and "whale oil" in words and "1890" in words
    oil = words.index("whale oil")
    assert len(lay.pages) == 2 and lay.pages[1] <= oil  # the second page's text is on page 2


def test_a_question_about_a_scanned_pdf_is_answered(make_ctx, write):
    from app.answer import answer

    ctx = make_ctx(chunker="mg", theta=40, synth_backend="extractive")
    report = ingest_files(ctx, [write("scan.pdf", _scanned_pdf())])
    assert report.results[0].status == "ingested", report.results[0].message
    a = answer(ctx, "What did the lamp burn until 1890?", backend="extractive")
    assert "whale oil" in a.text.lower() and a.citations
    quote = [x for c in a.citations for x in c.support if "whale oil" in x["text"]]
    assert quote and quote[0].get("pages", a.citations[0].pages) == [2, 2]


def test_a_pdf_with_an_array_of_more_than_100_000_elements_is_read():
    """pypdf 7 refuses arrays of more than 100,000 elements, and a real 10-Q (Microsoft's, 72 pages) has one: its
    extraction failed. The child's own caps bound it; the text is read."""
    from tests.pdfgen import pdf_from_objects

    stream = b"BT /F1 11 Tf 72 720 Td (The harbour opened at dawn.) Tj ET"
    data = pdf_from_objects([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 3 0 R >> "
        b">> /PieceInfo [" + b"0 " * 150_000 + b"] >>"])
    doc = load_bytes("big-array.pdf", data)
    assert "harbour opened at dawn" in doc.text


def _dense_scan(pages: int = 4) -> bytes:
    """An image-only PDF of ``pages`` letter pages scanned at 150 dpi, each full of text (32 lines of ~11-pt type,
    as a filing's page), the ledger's facts on page 3."""
    filler = ("The harbour board reviewed the quarterly accounts of the ferry service, the pilot station and the "
              "dry dock in the presence of the auditors")
    imgs = []
    for p in range(pages):
        lines = [f"{filler[: 60 + (i * 7) % 45]}." for i in range(32)]
        if p == 2:
            lines[10] = "The new breakwater cost 412 thousand pounds in 1887."
        imgs.append(_page_image(lines, font_size=22, step=44))
    buf = io.BytesIO()
    imgs[0].save(buf, "PDF", resolution=150, save_all=True, append_images=imgs[1:])
    return buf.getvalue()


def test_a_dense_four_page_scan_is_ingested_and_answered_with_the_shipped_defaults(make_ctx):
    """Issue 32 (1): a 4-page image-only 10-Q scanned at 150 dpi failed with the defaults (RapidOCR ran out of the
    extraction child's 2 GB cap) and the user saw a traceback. Through the queue with the shipped extraction
    settings it is read (every page by OCR) and answered from page 3."""
    from app.answer import answer
    from core.settings import Settings
    from ingest.jobs.queue import Runner, enqueue, wait

    defaults = Settings()
    ctx = make_ctx(chunker="mg", theta=60, synth_backend="extractive")
    assert (ctx.settings.extract_memory_mb, ctx.settings.extract_timeout_s, ctx.settings.ocr_engine) == (
        defaults.extract_memory_mb, defaults.extract_timeout_s, defaults.ocr_engine)
    [q] = enqueue(ctx, [("harbour-scan.pdf", _dense_scan())])
    runner = Runner(ctx).start()
    try:
        [job] = wait(ctx.jobs, [q.job.job_id], "ready", timeout_s=600)
    finally:
        runner.stop()
    assert job.state == "ready", job.describe()
    layout = ctx.store.layout(job.hash)
    assert layout["ocr_pages"] == [1, 2, 3, 4]
    a = answer(ctx, "How much did the new breakwater cost?", backend="extractive")
    assert not a.abstained and "412 thousand pounds" in a.text
    assert a.citations[0].pages == [3, 3]


def test_a_scan_is_read_under_half_the_default_memory_cap():
    """The OCR engine's memory is its own allowance (ingest/readers/sandbox.py): the file's cap can be half the default
    and the scan is still read (before, RapidOCR's detector failed with std::bad_alloc under a 1.5 GB cap here)."""
    doc = load_bytes("scan.pdf", _dense_scan(1), limits=Limits(memory_mb=1024, ocr_engine="rapidocr"))
    assert doc.layout["ocr_pages"] == [1] and "harbour board" in doc.text.lower()


def test_an_image_is_read_by_ocr_and_a_page_without_ocr_is_refused_clearly(monkeypatch):
    buf = io.BytesIO()
    _page_image(SCAN).save(buf, "PNG")
    doc = load_bytes("photo.png", buf.getvalue(), limits=Limits(sandbox=False))
    assert doc.kind == "image" and "whale oil" in doc.text.lower() and doc.layout["pages"] == [0]
    with pytest.raises(IngestError, match="photo.png.*needs OCR.*tesseract-ocr.*rapidocr"):
        load_bytes("photo.png", buf.getvalue(), limits=Limits(sandbox=False, ocr_engine="none"))


# -- formats -----------------------------------------------------------------------------------------------------------
def _pptx() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    s1 = prs.slides.add_slide(prs.slide_layouts[1])
    s1.shapes.title.text = "Harbour plan"
    s1.placeholders[1].text = "The new pier opens in May."
    s2 = prs.slides.add_slide(prs.slide_layouts[5])
    s2.shapes.title.text = "Berth fees"
    tbl = s2.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(1.5)).table
    for i, (a, b) in enumerate([("Vessel", "Fee per night"), ("Yacht", "40 euros"), ("Ferry", "300 euros")]):
        tbl.cell(i, 0).text, tbl.cell(i, 1).text = a, b
    s2.notes_slide.notes_text_frame.text = "Fees were last raised in 2021."
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def _xlsx(rows_per_sheet: int = 3) -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Staff"
    ws.append(["Name", "Role"])
    ws.append(["Ada", "Harbour master"])
    ws2 = wb.create_sheet("Revenue")
    ws2.append(["Quarter", "Revenue"])
    for i in range(rows_per_sheet):
        ws2.append([f"Q{i + 1}", 1000 + i])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def _epub(chapters=(("ch1.xhtml", "ch1.xhtml", "<h1>The Voyage</h1><p>The ship left port at dawn.</p>"),
                   ("ch2.xhtml", "ch2.xhtml", "<h1>The Storm</h1><p>A storm broke the foremast.</p>"))) -> bytes:
    """An EPUB of ``chapters``: (the manifest's link, the file's name under OEBPS/, its body)."""
    items = "".join(f'<item id="c{i}" href="{href}" media-type="application/xhtml+xml"/>'
                    for i, (href, _, _) in enumerate(chapters))
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:'
                   'tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type='
                   '"application/oebps-package+xml"/></rootfiles></container>')
        z.writestr("OEBPS/content.opf", '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
                   f'version="3.0"><manifest>{items}</manifest><spine>{spine}</spine></package>')
        for _, path, body in chapters:
            z.writestr(f"OEBPS/{path}", f"<html><body>{body}</body></html>")
    return buf.getvalue()


def test_pptx_slides_tables_and_notes():
    doc = load_bytes("plan.pptx", _pptx(), limits=Limits(sandbox=False))
    lay = Layout.from_json(doc.layout)
    assert lay.unit == "slide" and len(lay.pages) == 2
    assert "| Vessel | Fee per night |\n|---|---|\n| Yacht | 40 euros |" in doc.text
    assert "Notes: Fees were last raised in 2021." in doc.text
    assert doc.text.index("Berth fees") >= lay.pages[1] and [t for _, _, t in lay.headings] == ["Harbour plan",
                                                                                                "Berth fees"]


def test_text_inside_grouped_shapes_of_a_slide_is_read():
    """A diagram's boxes are often grouped (and groups nested); a group has no text frame of its own, so reading only
    the slide's top-level shapes lost their text and still reported the deck ingested."""
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[5])
    slide.shapes.title.text = "Architecture"
    outer = slide.shapes.add_group_shape()
    outer.shapes.add_textbox(Inches(1), Inches(2), Inches(3), Inches(1)).text_frame.text = "Ingestion parses uploads"
    inner = outer.shapes.add_group_shape()
    inner.shapes.add_textbox(Inches(1), Inches(3), Inches(3), Inches(1)).text_frame.text = "The index stores vectors"
    slide.shapes.add_textbox(Inches(1), Inches(5), Inches(3), Inches(1)).text_frame.text = "Ungrouped caption"
    buf = io.BytesIO()
    prs.save(buf)
    doc = load_bytes("arch.pptx", buf.getvalue(), limits=Limits(sandbox=False))
    for t in ("Ingestion parses uploads", "The index stores vectors", "Ungrouped caption"):
        assert t in doc.text, doc.text


def test_a_docx_table_merged_down_from_a_row_that_starts_later_keeps_the_document():
    """python-docx follows a vertically merged cell to the row above and fails where that row has no cell in the
    same column (it starts with ``gridBefore``): the whole document was refused as "not a readable DOCX file
    (ValueError)", its prose with it. The row is read from its own cells."""
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    d = docx.Document()
    d.add_paragraph("The harbour board met in March to set the berth fees.")
    t = d.add_table(rows=2, cols=2)
    t.cell(0, 1).text, t.cell(1, 0).text, t.cell(1, 1).text = "Sales", "Yachts", "42"
    tr0 = t.rows[0]._tr
    tr0.remove(tr0.tc_lst[0])  # the first row starts one grid column later ...
    pr = tr0.get_or_add_trPr()
    before = OxmlElement("w:gridBefore")
    before.set(qn("w:val"), "1")
    pr.insert(0, before)
    tc = t.rows[1]._tr.tc_lst[0]  # ... and the cell below its gap says it continues a merge from above
    tc.get_or_add_tcPr().append(OxmlElement("w:vMerge"))
    d.add_paragraph("Fees rise by five percent from June.")
    buf = io.BytesIO()
    d.save(buf)
    doc = load_bytes("fees.docx", buf.getvalue(), limits=Limits(sandbox=False))
    assert "set the berth fees" in doc.text and "five percent from June" in doc.text
    assert "| Sales |" in doc.text and "42" in doc.text


def test_the_text_of_a_docx_text_box_is_read_once():
    """A text box (a shape's text) is in no paragraph's text; Word writes it twice, as a drawing and as a VML
    fallback for old readers: it is read once, after the paragraph it is anchored in."""
    import docx
    from docx.oxml import parse_xml

    ns = ('xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
          'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
          'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
          'xmlns:v="urn:schemas-microsoft-com:vml"')
    text = '<w:txbxContent><w:p><w:r><w:t>The pier closes at dusk in winter.</w:t></w:r></w:p></w:txbxContent>'
    run = parse_xml(f'<w:r {ns}><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wps:wsp><wps:txbx>'
                    f'{text}</wps:txbx></wps:wsp></w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox>'
                    f'{text}</v:textbox></v:shape></w:pict></mc:Fallback></mc:AlternateContent></w:r>')
    d = docx.Document()
    anchor = d.add_paragraph("The harbour opens at six.")
    anchor._p.append(run)
    d.add_paragraph("Boats leave every hour.")
    buf = io.BytesIO()
    d.save(buf)
    doc = load_bytes("notice.docx", buf.getvalue(), limits=Limits(sandbox=False))
    assert doc.text.count("The pier closes at dusk in winter.") == 1, doc.text
    assert doc.text.index("opens at six") < doc.text.index("pier closes") < doc.text.index("every hour")


def test_an_epub_chapter_whose_link_is_percent_encoded_is_read():
    """EPUB links are URIs: "chapter%201.xhtml" is the file "chapter 1.xhtml" (and "ch.xhtml#start" the file
    "ch.xhtml"); the chapter was skipped without a word."""
    data = _epub((("Text/chapter%201.xhtml", "Text/chapter 1.xhtml", "<p>The ship left port at dawn.</p>"),
                  ("Text/ch2.xhtml#start", "Text/ch2.xhtml", "<p>A storm broke the foremast.</p>")))
    doc = load_bytes("voyage.epub", data, limits=Limits(sandbox=False))
    assert "The ship left port at dawn." in doc.text and "A storm broke the foremast." in doc.text


def test_a_sheet_of_two_stacked_tables_under_title_lines_is_read_as_two_tables_with_their_own_headers():
    """A results workbook (Nestlé's half-year segments, Unstructured's example-docs): three title lines, a band label
    ("January–June 2023") over the columns' names, the segments; an empty row; the same for 2022. The first title line
    was made the header of every group of rows ("| 3. Analyses by segment |") and 2022's figures were read under
    2023's columns. Now: the title lines said once above, each table its own header, the band over every column."""
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Segments"
    for year, na, eur in (("2023", 12553, 9467), ("2022", 12138, 9283)):
        ws.append(["3. Analyses by segment"])
        ws.append(["Revenue and results"])
        ws.append([])
        ws.append(["In millions of CHF", None, f"January–June {year}"])
        ws.append([None, "Sales", "Trading operating profit"])
        ws.append(["Zone NA", na, na // 5])
        ws.append(["Zone EUR", eur, eur // 6])
        ws.append([])
    buf = io.BytesIO()
    wb.save(buf)
    text = load_bytes("segments.xlsx", buf.getvalue(), limits=Limits(sandbox=False)).text
    assert "| 3. Analyses by segment |" not in text and "3. Analyses by segment Revenue and results" in text, text
    head = "| In millions of CHF | January–June {y} Sales | January–June {y} Trading operating profit |"
    assert text.index(head.format(y=2023)) < text.index("| Zone NA | 12553 |") < text.index(head.format(y=2022)) \
        < text.index("| Zone NA | 12138 |"), text


def test_a_year_merged_over_its_columns_heads_each_of_them_and_a_merged_title_stays_a_title():
    """A workbook's header merges "2023" over its Sales and Profit columns: a read-only workbook gives the label in
    the first column only, so the second read "Profit" with no year and a 2023 question could read 2022's profit.
    The merge ranges are read from the sheet's XML; a title merged across the table stays its title."""
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Results"
    ws.append(["Segment results (USD m)"])
    ws.merge_cells("A1:E1")
    ws.append(["Region", "2023", None, "2022", None])
    ws.merge_cells("B2:C2")
    ws.merge_cells("D2:E2")
    ws.append([None, "Sales", "Profit", "Sales", "Profit"])
    ws.append(["West", 100, 20, 90, 15])
    buf = io.BytesIO()
    wb.save(buf)
    text = load_bytes("results.xlsx", buf.getvalue(), limits=Limits(sandbox=False)).text
    assert "Segment results (USD m)\n\n| Region | 2023 Sales | 2023 Profit | 2022 Sales | 2022 Profit |" in text, text
    assert "| West | 100 | 20 | 90 | 15 |" in text


def test_xlsx_sheets_as_tables_and_csv_rows(make_ctx, write):
    doc = load_bytes("books.xlsx", _xlsx(), limits=Limits(sandbox=False))
    lay = Layout.from_json(doc.layout)
    assert lay.unit == "sheet" and len(lay.pages) == 2
    assert "Revenue\n\n| Quarter | Revenue |\n|---|---|\n| Q1 | 1000 |" in doc.text
    rows = "\n".join(["city,population"] + [f"Town{i},{1000 + i}" for i in range(60)])
    doc = load_bytes("towns.csv", rows.encode(), limits=Limits(sandbox=False))
    lay = Layout.from_json(doc.layout)
    groups = doc.text.split("\n\n")
    assert len(groups) > 1 and all(g.startswith("| city | population |\n|---|---|\n") for g in groups)
    from ingest.readers.layout import cite_label

    i = doc.text.index("| Town40 |")
    assert cite_label(lay, i, i + 10) == "row 42"  # line 42 of the file (the header is line 1)


@pytest.mark.parametrize("name,make,question,quote,label", [
    ("plan.pptx", _pptx, "What is the berth fee per night for a ferry?", "300 euros", "slide 2 · Berth fees"),
    ("books.xlsx", _xlsx, "What was the revenue in Q2?", "| Q2 | 1001 |", "sheet 2 · Revenue"),
    ("voyage.epub", _epub, "What broke in the storm?", "foremast", "The Storm"),
])
def test_formats_are_cited_by_slide_sheet_and_chapter(make_ctx, write, name, make, question, quote, label):
    from app.answer import answer

    ctx = make_ctx(chunker="mg", theta=40, synth_backend="extractive")
    report = ingest_files(ctx, [write(name, make())])
    assert report.results[0].status == "ingested", report.results[0].message
    from ingest.readers.layout import source_place

    a = answer(ctx, question, backend="extractive")
    assert a.citations, a.text
    c = a.citations[0]
    support = [x for x in c.support if quote in x["text"]]
    assert support, (a.text, c.support)
    # the quoted sentence's own place (a tiny document is one passage over every slide or sheet)
    assert source_place(None, None, unit=c.unit, support=support) == label
    assert label.split(" · ")[0].split()[0] in c.label and label.split()[0] in c.quote_label  # the unit is named


def test_format_limits_refuse_by_name():
    with pytest.raises(IngestError, match="books.xlsx.*more than 3 rows.*MGRAG_MAX_ROWS"):
        load_bytes("books.xlsx", _xlsx(rows_per_sheet=5), limits=Limits(sandbox=False, max_rows=3))
    with pytest.raises(IngestError, match="towns.csv.*more than 2 rows"):
        load_bytes("towns.csv", b"a,b\n1,2\n3,4\n5,6\n", limits=Limits(sandbox=False, max_rows=2))
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("ppt/slides/slide1.xml", b"\0" * (3 * 2**20))
    with pytest.raises(IngestError, match="plan.pptx.*unpacks to.*decompression bomb"):
        load_bytes("plan.pptx", bomb.getvalue(), limits=Limits(sandbox=False, max_unpacked_bytes=2**20))
    with pytest.raises(IngestError, match="plan.pptx.*not a readable PPTX"):
        load_bytes("plan.pptx", b"PK\x03\x04 not really a zip", limits=Limits(sandbox=False))
    with pytest.raises(IngestError, match="book.epub.*not a readable EPUB"):
        z = io.BytesIO()
        with zipfile.ZipFile(z, "w") as zz:
            zz.writestr("mimetype", "application/epub+zip")
        load_bytes("book.epub", z.getvalue(), limits=Limits(sandbox=False))


def test_a_password_protected_or_old_binary_office_file_is_named_as_such():
    """Office's encryption and the 97-2003 formats are OLE compound documents, not zip containers: the error says
    which, naming the file, instead of "not a zip container"."""
    from pathlib import Path

    locked = (Path(__file__).resolve().parents[1] / "fixtures" / "office" / "password_protected.xlsx").read_bytes()
    with pytest.raises(IngestError, match=r"budget\.xlsx.*password-protected XLSX file; remove the password"):
        load_bytes("budget.xlsx", locked, limits=Limits(sandbox=False))
    with pytest.raises(IngestError, match=r"budget\.docx.*password-protected DOCX"):
        load_bytes("budget.docx", locked, limits=Limits(sandbox=False))
    old = bytes.fromhex("d0cf11e0a1b11ae1") + b"\0" * 504 + "WordDocument".encode("utf-16-le")
    with pytest.raises(IngestError, match=r"memo\.docx.*older binary Office file.*save it as \.docx"):
        load_bytes("memo.docx", old, limits=Limits(sandbox=False))


def test_the_viewer_shows_a_table_passage_as_a_table_with_the_quoted_row_marked():
    from services.viewer import View, marked_text

    table = "\n".join(markdown_tables(["Segment", "2023"], [["Widgets", "4,210"], ["<b>Gadgets</b>", "1,375"]]))
    text = f"Revenue by segment.\n\n{table}\n\nThe end."
    row = text.index("| Widgets")
    html = marked_text(text, View("r.pdf", "h", 0, len(text), support=((row, text.index("\n", row)),)))
    assert '<table class="mg-table"><tr class=mg-passage><th>Segment</th><th>2023</th></tr>' in html
    assert "<tr class=mg-support><td>Widgets</td><td>4,210</td></tr>" in html
    assert "<td>&lt;b&gt;Gadgets&lt;/b&gt;</td>" in html and "|---|" not in html  # escaped; no separator line


def test_the_chat_sources_show_a_table_passage_as_a_table():
    from services.render import highlight

    table = "\n".join(markdown_tables(["Segment", "2023"], [["Widgets", "4,210"], ["Gadgets", "1,375"]]))
    text = f"Revenue by segment.\n\n{table}"
    row = text.index("| Widgets")
    out = highlight(text, 100, 100 + len(text), 100, 100 + 19, [(100 + row, 100 + text.index("\n", row))])
    assert out.startswith("<mark>Revenue by segment.</mark>") and "|---|" not in out
    assert "<tr class=mg-support><td>Widgets</td><td>4,210</td></tr><tr><td>Gadgets</td>" in out


def test_a_sheets_title_row_is_its_title_and_every_group_of_rows_names_the_periods():
    """Issue 46: a sheet with a title row above its header ("Sales by region (USD thousands)" over "Region | 2023-Q1 |
    …") had the title repeated as the header of every group of rows and the periods only in the first group, so a
    row further down could not say which column was which quarter."""
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sales"
    ws.append(["Sales by region (USD thousands)"])
    ws.append(["Region", "2022-Q1", "2023-Q3"])
    for i in range(80):
        ws.append([f"Region {i} with a long descriptive name for its district", 100 + i, 200 + i])
    buf = io.BytesIO()
    wb.save(buf)
    doc = load_bytes("sales.xlsx", buf.getvalue())
    groups = [g for g in doc.text.split("\n\n") if g.startswith("|")]
    assert len(groups) > 1
    assert all(g.startswith("| Region | 2022-Q1 | 2023-Q3 |") for g in groups)
    assert "Sales by region (USD thousands)" in doc.text.split("| Region |")[0]


def test_stacked_header_rows_are_one_header():
    html = ("<table><tr><td></td><td>30 June 2019</td><td>30 June 2018</td></tr>"
            "<tr><td></td><td>$'000</td><td>$'000</td></tr>"
            "<tr><td>Net profit</td><td>9,819</td><td>6,639</td></tr></table>").encode()
    doc = load_bytes("notes.html", html)
    assert "| | 30 June 2019 $'000 | 30 June 2018 $'000 |" in doc.text
    assert "| Net profit | 9,819 | 6,639 |" in doc.text

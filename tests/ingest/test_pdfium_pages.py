"""Issue 37: pages are read by pdfium, their ruled tables found by pdfplumber's table finder in pdfium's paths and
their cells read from pdfium's characters (``auto``); ``pdfplumber-tables`` leaves the pages with a ruled table to
pdfplumber, ``pdfplumber`` every page — and the document reads the same every way (text, headings, tables)."""
from __future__ import annotations

import io

import pdfplumber
import pypdfium2 as pdfium
import pytest

import ingest.readers.pdf as P
from ingest.readers.loaders import Limits, load_bytes
from ingest.readers.pdfium_page import may_have_table, read_lines
from tests.pdfgen import make_pdf, table_ops

ROWS = [["Segment", "2023", "2022"], ["Widgets", "4,210", "3,980"], ["Total revenue", "5,585", "5,492"]]
PROSE = ["The company makes widgets and gadgets in two plants near the harbour.",
         "Its board met four times during the year to review the results."]
RULE = "0.5 w 72 700 m 540 700 l S"  # one rule under a heading: no table
BANNER = table_ops([["Statements of Income"]], top=600, widths=(400,))  # a ruled one-cell box: no table of 2 rows
SHIFTED = "q 1 0 0 1 30 -200 cm " + table_ops(ROWS, top=600) + " Q"  # a table drawn under a moved coordinate system


def _pdf() -> bytes:
    return make_pdf([PROSE, PROSE + ["Revenue by segment, in thousands:"], PROSE, PROSE, PROSE],
                    header="Acme Corp | Quarterly report", headings={0: "Overview", 1: "Segment Results"},
                    extra={1: table_ops(ROWS, top=600), 2: RULE, 3: BANNER, 4: SHIFTED})


def test_a_page_is_sent_to_pdfplumber_exactly_when_pdfplumber_finds_a_table_there():
    data = _pdf()
    doc = pdfium.PdfDocument(data)
    guess = [may_have_table(doc[i]) for i in range(len(doc))]
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        truth = [any(len(t.rows) >= 2 for t in p.find_tables()) for p in pdf.pages]
    assert truth == [False, True, False, False, True]
    assert guess == truth


def test_pdfium_lines_are_pdfplumbers_lines():
    data = _pdf()
    doc = pdfium.PdfDocument(data)
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        for i in (0, 2):
            theirs = P._line_items(pdf.pages[i], [])
            ours = read_lines(doc[i], doc[i].get_textpage())
            assert [x["text"] for x in ours] == [x["text"] for x in theirs]
            assert [(x["size"], x["bold"]) for x in ours] == [(x["size"], x["bold"]) for x in theirs]
            for a, b in zip(ours, theirs):  # the gaps that make paragraphs: within a point
                assert a["top"] == pytest.approx(b["top"], abs=1.0) and a["x0"] == pytest.approx(b["x0"], abs=1.0)
    assert [x["bold"] for x in read_lines(doc[0], doc[0].get_textpage())][:2] == [False, True]  # header, heading


@pytest.mark.parametrize("reader, to_pdfplumber", [("auto", []), ("pdfplumber-tables", [2, 5])])
def test_every_reader_reads_the_document_as_pdfplumber_does(monkeypatch, reader, to_pdfplumber):
    data = _pdf()
    plumbed: list[int] = []
    real = P.read_page

    def spy(page, ocr_engine=None):
        plumbed.append(page.page_number)
        return real(page, ocr_engine)

    monkeypatch.setattr(P, "read_page", spy)
    n, pages, outline = P.read_pages("r.pdf", data, 0, None, None, reader)
    assert plumbed == to_pdfplumber  # 1-based: pdfplumber reads the table pages, or none
    plumbed.clear()
    _, plumber_pages, _ = P.read_pages("r.pdf", data, 0, None, None, "pdfplumber")
    assert plumbed == [1, 2, 3, 4, 5]
    ours = P.assemble("r.pdf", pages, outline)
    plumber = P.assemble("r.pdf", plumber_pages, outline)
    assert ours == plumber
    text, layout = ours
    assert "| Widgets | 4,210 | 3,980 |" in text  # the table, as Markdown
    assert [h[2] for h in layout["headings"]] == ["Overview", "Segment Results"]


def test_a_table_s_cells_read_from_pdfium_are_pdfplumbers_cells():
    """The cells' text (an empty one included), the table's box and the page's words."""
    from ingest.readers.pdfium_page import read_ruled, ruled_tables

    rows = [["Segment", "Three Months Ended", "2022"], ["Widgets and", "4,210", ""],
            ["Total revenue", "5,585", "5,492"]]
    data = make_pdf([["Revenue by segment, in thousands:"]], extra={0: table_ops(rows, top=600)})
    doc = pdfium.PdfDocument(data)
    found = ruled_tables(doc[0])
    tables, words, _ = read_ruled(doc[0], doc[0].get_textpage(), found)
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        theirs = [t for t in pdf.pages[0].find_tables() if len(t.rows) >= 2]
        their_words = pdf.pages[0].extract_words()
    assert len(tables) == len(theirs) == 1
    assert tables[0].bbox == pytest.approx(theirs[0].bbox)
    assert tables[0].extract() == theirs[0].extract()
    assert [w["text"] for w in words] == [w["text"] for w in their_words]


def test_the_setting_chooses_the_reader_in_the_extraction_child(monkeypatch):
    from core.settings import Settings

    assert Limits.of(Settings()).pdf_reader == "auto"
    assert Limits.of(Settings(pdf_reader="pdfplumber")).pdf_reader == "pdfplumber"
    data = _pdf()
    a = load_bytes("r.pdf", data, limits=Limits(pdf_reader="auto"))
    b = load_bytes("r.pdf", data, limits=Limits(pdf_reader="pdfplumber"))
    assert a.text == b.text and "| Total revenue | 5,585 | 5,492 |" in a.text


def test_a_rotated_page_is_left_to_pdfplumber(monkeypatch):
    """pdfium boxes a rotated page's characters in its unrotated space; pdfplumber turns the page as it is shown."""
    from pypdf import PdfReader, PdfWriter

    w = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf([PROSE, PROSE], footer=None))))
    w.pages[1].rotate(90)
    buf = io.BytesIO()
    w.write(buf)
    plumbed: list[int] = []
    real = P.read_page
    monkeypatch.setattr(P, "read_page", lambda page, ocr=None: plumbed.append(page.page_number) or real(page, ocr))
    _, pages, _ = P.read_pages("r.pdf", buf.getvalue(), 0, None, None, "auto")
    assert plumbed == [2] and len(pages) == 2


@pytest.mark.parametrize("kern", [150, 300, 400])
def test_a_figure_s_closing_parenthesis_is_spaced_as_pdfplumber_spaces_it(kern):
    """A statement sets its negative figures' ")" apart by kerning ("(260 )" in Microsoft's 10-Q): pdfium sees a space
    in a gap that pdfplumber's 3-point tolerance does not; read as pdfplumber reads it, at each width ("(260)" up to
    the tolerance, "(260 )" beyond it: 400 thousandths of 9 pt is 3.6 pt)."""
    line = f"[(Net change related to investments \\(260) -{kern} (\\)) -2000 (\\(1,897) -{kern} (\\))] TJ"
    data = make_pdf([["Comprehensive income."]], extra={0: f"BT /F1 9 Tf 72 500 Td {line} ET"})
    doc = pdfium.PdfDocument(data)
    ours = [x["text"] for x in read_lines(doc[0], doc[0].get_textpage()) if x["text"].startswith("Net")]
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        theirs = [x["text"] for x in P._line_items(pdf.pages[0], []) if x["text"].startswith("Net")]
    assert ours == theirs
    assert ("(260)" in ours[0]) == (kern < 400)


@pytest.mark.parametrize("reader", ["auto", "pdfplumber"])
def test_a_rotated_note_in_the_margin_is_not_spliced_into_the_lines(reader):
    """A publisher's note set sideways in the margin (NIST's "This publication is available free of charge ...") came
    out a few letters at a time at the start of body lines ("lic numeric, a PIN", newcomer run r8)."""
    lines = [f"Line {i} of the body says the secret is at least eight characters long." for i in range(20)]
    note = "BT /F1 9 Tf 0 1 -1 0 60 420 Tm (This publication is available free of charge from the publisher) Tj ET"
    doc = load_bytes("standard.pdf", make_pdf([lines], footer=None, extra={0: note}),
                     limits=Limits(sandbox=False, pdf_reader=reader))
    said = [ln.strip() for ln in doc.text.splitlines() if ln.strip()]
    assert said == lines or " ".join(said) == " ".join(lines), said


LEFT = ("The river rises in the northern hills and flows south for ninety miles before it meets the sea at the old "
        "port town. Its valley was farmed for grain until the mills closed in the last century and the farms turned "
        "to sheep and orchards.")
RIGHT = ("The railway reached the valley in the spring of the year the bridge was finished. It carried wool to the "
         "coast and brought coal inland, and the station still stands beside the market square where it was built.")


def _columns(left: str, right: str, title: str = "A Short History of the Valley") -> bytes:
    """One page: a title across it, then two columns of text 10-point lines apart (as papers and reports set
    them), each column's lines drawn at the same heights as the other's."""
    import textwrap

    ops = [f"BT /F2 14 Tf 72 720 Td ({title}) Tj ET"]
    for x, text in ((72, left), (320, right)):
        for i, line in enumerate(textwrap.wrap(text, 42)):
            ops.append(f"BT /F1 10 Tf {x} {690 - 12 * i} Td ({line}) Tj ET")
    return make_pdf([[]], footer=None, extra={0: "\n".join(ops)})


def test_a_page_in_two_columns_is_read_column_by_column():
    """A line of each column at one height was read as one line, so the two columns' sentences interleaved line
    by line (a 1977 journal page, an ingest sweep): the page is read title, left column, right column."""
    text = load_bytes("valley.pdf", _columns(LEFT, RIGHT), limits=Limits(sandbox=False)).text
    flat = " ".join(text.split())
    assert flat.startswith("A Short History of the Valley")
    assert LEFT in flat and RIGHT in flat, text
    assert flat.index(LEFT) < flat.index(RIGHT)


def test_a_table_of_labels_and_figures_is_not_taken_for_two_columns():
    """Lines with a wide gap in the middle that are a table's rows (a label, then figures) stay rows."""
    rows = [(f"Revenue from segment {name}", f"{4000 + 17 * i:,}  {3900 + 13 * i:,}") for i, name in
            enumerate(("North", "South", "East", "West", "Central", "Online", "Wholesale", "Licensing"))]
    ops = [f"BT /F1 10 Tf 72 {690 - 14 * i} Td ({label}) Tj ET BT /F1 10 Tf 400 {690 - 14 * i} Td ({figs}) Tj ET"
           for i, (label, figs) in enumerate(rows)]
    text = load_bytes("segments.pdf", make_pdf([[]], footer=None, extra={0: "\n".join(ops)}),
                      limits=Limits(sandbox=False)).text
    assert "Revenue from segment North 4,000 3,900" in " ".join(text.split()), text


def test_a_word_broken_at_a_line_s_end_is_joined_and_a_compound_keeps_its_hyphen():
    """Typesetting breaks a long word with a hyphen at a line's end ("ef-" / "ficient"): kept, the word was not the
    word a search or a quote looks for. Joined when the two parts make a word (the shipped embedder's vocabulary, or
    one the page prints unbroken); a compound broken at its own hyphen ("open-" / "domain") keeps it."""
    lines = ["Dense retrieval finds passages ef-", "ficiently with a dual encoder trained for open-",
             "domain question answering over a large cor-", "pus of Wikipedia articles, where the em-",
             "beddings are built once. Those embeddings are then indexed for search."]
    text = load_bytes("dpr.pdf", make_pdf([lines], footer=None), limits=Limits(sandbox=False)).text
    flat = " ".join(text.split())
    assert "passages efficiently with" in flat, text
    assert "open-domain question" in flat and "large corpus of" in flat and "the embeddings are" in flat


def _filled_form() -> bytes:
    """A one-page form as form software saves it: the labels are page text, the answers are in the fields' widget
    annotations (a text field filled in, a ticked and an unticked box, an empty field)."""
    from tests.pdfgen import pdf_from_objects

    ops = ("BT /F1 11 Tf 72 700 Td (Applicant name:) Tj ET BT /F1 11 Tf 72 670 Td (Policy number:) Tj ET "
           "BT /F1 11 Tf 92 640 Td (I agree to the terms of service) Tj ET "
           "BT /F1 11 Tf 92 620 Td (Send me the newsletter) Tj ET").encode("latin-1")
    objs = [b"<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [5 0 R 6 0 R 7 0 R 8 0 R] >> >>",
            b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 9 0 R /Annots [5 0 R 6 0 R 7 0 R 8 0 R]"
            b" /Resources << /Font << /F1 3 0 R >> >> >>",
            b"<< /Type /Annot /Subtype /Widget /FT /Tx /T (name) /V (Jane Q. Roe) /Rect [180 695 400 712] /P 4 0 R >>",
            b"<< /Type /Annot /Subtype /Widget /FT /Tx /T (policy) /V () /Rect [180 665 400 682] /P 4 0 R >>",
            b"<< /Type /Annot /Subtype /Widget /FT /Btn /T (agree) /V /Yes /AS /Yes /Rect [72 637 84 649] /P 4 0 R >>",
            b"<< /Type /Annot /Subtype /Widget /FT /Btn /T (news) /V /Off /AS /Off /Rect [72 617 84 629] /P 4 0 R >>",
            b"<< /Length %d >>\nstream\n" % len(ops) + ops + b"\nendstream"]
    return pdf_from_objects(objs)


def test_the_answers_filled_into_a_pdf_form_are_read_where_the_fields_sit():
    """A filled form's answers are in its fields, not in the page's text: only the labels were read (an ingest
    sweep: LibreOffice's sample form with "Alice" filled in). A filled field's value is a line where the field sits,
    a ticked box "[x]" before its label; an empty field or an unticked box adds nothing."""
    text = load_bytes("claim.pdf", _filled_form(), limits=Limits(sandbox=False)).text
    flat = " ".join(text.split())
    assert "Applicant name: Jane Q. Roe" in flat or flat.index("Jane Q. Roe") > flat.index("Applicant name:"), text
    assert flat.index("Jane Q. Roe") < flat.index("Policy number:")
    assert "[x] I agree to the terms of service" in flat, text
    assert flat.count("[x]") == 1


def test_a_year_above_a_ruled_table_heads_its_own_column_when_a_group_line_spans_both():
    """A statement whose column headers are printed above its ruled body, and whose first ruled row is a group label
    with one cell across both figure columns ("Net sales:"): that merged cell was taken for the first figure column's
    extent, so the year above the second column headed the first one too ("… March 31, 2022 2023")."""
    ops = ["0.5 w", "72 560 200 18 re S", "272 560 200 18 re S"]  # a group line: label, one cell over both columns
    ops += ["BT /F1 10 Tf 76 565 Td (Net sales:) Tj ET"]
    for i, (label, a, b) in enumerate((("Online stores", "51,129", "51,096"), ("AWS", "18,441", "21,354"))):
        y = 560 - 18 * (i + 1)
        ops += [f"72 {y} 200 18 re S", f"272 {y} 100 18 re S", f"372 {y} 100 18 re S",
                f"BT /F1 10 Tf 76 {y + 5} Td ({label}) Tj ET", f"BT /F1 10 Tf 300 {y + 5} Td ({a}) Tj ET",
                f"BT /F1 10 Tf 400 {y + 5} Td ({b}) Tj ET"]
    ops += ["BT /F1 10 Tf 300 598 Td (Three Months Ended March 31,) Tj ET",
            "BT /F1 10 Tf 305 584 Td (2022) Tj ET", "BT /F1 10 Tf 405 584 Td (2023) Tj ET"]
    data = make_pdf([["Net sales by segment (in millions):"]], footer=None, extra={0: "\n".join(ops)})
    text = load_bytes("amzn.pdf", data, limits=Limits(sandbox=False)).text
    assert "2022 2023" not in text, text
    assert "March 31, 2022 |" in text and "March 31, 2023 |" in text, text
    assert "| AWS | 18,441 | 21,354 |" in text, text


def test_a_numbered_subsection_title_in_the_body_s_font_heads_its_section():
    """A paper prints "6.2 Results" in its body's size, in a weight no font flag reports: it was joined to the
    sentence after it ("6.2 Results Table 4 summarizes …", newcomer run r20), so its section's passage did not
    begin with its title. A line numbered as a subsection, short and without a sentence's end, is a heading; a
    sentence that starts with a figure is not."""
    lines = ["The retriever is trained on question and passage pairs drawn from",
             "the training sets of five datasets", "6.2 Results",
             "Table 4 summarizes our final end-to-end QA results, measured by exact",
             "match with the reference answer.", "2.5 Million passages were left out of the index because",
             "they were too short to hold an answer."]
    text = load_bytes("paper.pdf", make_pdf([lines], footer=None), limits=Limits(sandbox=False)).text
    lines = [ln.strip("# ") for ln in text.splitlines() if ln.strip()]
    assert "6.2 Results" in lines, text
    assert any(ln.startswith("Table 4 summarizes") for ln in lines), text
    assert any(ln.startswith("2.5 Million passages were left out of the index because they were") for ln in lines)

"""Ligature glyphs that a PDF's font maps to no character (pdfplumber reads NUL) are spelled out from pdfium's reading
of the same page; a page pdfium cannot read leaves them "fi" and never stops the extraction."""
from __future__ import annotations

from ingest.readers.pdf import _PdfiumWords, mend_ligatures


def test_a_ligature_is_spelled_as_the_word_pdfium_reads_else_fi():
    page = {"items": [{"kind": "line", "text": "cash \x00ow and the \x00scal year"}, {"groups": [["Snow\x00ake"]]}]}
    got = mend_ligatures(page, {"flow", "snowflake"})
    assert got == {"items": [{"kind": "line", "text": "cash flow and the fiscal year"}, {"groups": [["Snowflake"]]}]}


def test_a_document_pdfium_cannot_open_gives_no_words_and_no_error():
    words = _PdfiumWords(b"%PDF-1.4 not really a pdf", None)
    assert words(0) == set() and words(1) == set()  # tried once
    words.close()

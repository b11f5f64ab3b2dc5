"""What every reader shares: the error that names a file, the limits, text decoding and cleaning, a PDF opened
once (pypdf) with its outline, and the unpacked-size check of zipped formats."""
from __future__ import annotations

import io
import logging
import re
import unicodedata
import zipfile
from dataclasses import dataclass

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): charset_normalizer, pypdf

log = logging.getLogger(__name__)

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")  # keeps \t \n \f \r
_NON_LATIN_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "CYRILLIC", "GREEK", "ARABIC", "HEBREW", "THAI",
                      "DEVANAGARI", "ARMENIAN", "GEORGIAN")


# Each kind's reader version, stamped on what it reads (the layout's ``reader``) and raised when the text it extracts
# from the same bytes changes, so that ``mgrag reingest`` reads again what an older reader read instead of re-cutting
# its stored text (:func:`ingest.jobs.rebuild.reingest`). A text stored before the stamp existed counts as version 1.
# docx 2: block-level content controls and custom XML walked into (a Word template's whole body was missed);
# pdf 2: a book's chapter heads that recur on a few pages removed as running heads; pdf 3: a note set sideways in the
# margin no longer spliced into the lines beside it.
READER_VERSIONS = {"pdf": 3, "docx": 2, "html": 1, "pptx": 1, "xlsx": 1, "csv": 1, "epub": 1, "image": 1, "text": 1}


def reader_version(layout: dict | None) -> int:
    """The version of the reader that read a stored text (its layout's stamp; 1 before stamps)."""
    return int((layout or {}).get("reader") or 1)


def stamped(kind: str, layout: dict | None) -> dict:
    """``layout`` with the version of ``kind``'s reader that produced it."""
    return {**(layout or {}), "reader": READER_VERSIONS.get(kind, 1)}


class IngestError(Exception):
    """A problem with one input file: the message names the file and what to do."""

    def __init__(self, name: str, problem: str):
        super().__init__(f"{name}: {problem}")
        self.name = name
        self.problem = problem


@dataclass(frozen=True)
class LoadedDoc:
    name: str
    data: bytes  # the original bytes, kept in the document store
    text: str  # the text that is chunked; chunk offsets index into it
    kind: str
    warning: str = ""
    layout: dict | None = None  # page starts and headings (ingest/readers/layout.py Layout.to_json), offsets into text


@dataclass(frozen=True)
class Limits:
    """What one file may cost to read (settings: ``max_file_mb``, ``max_unpacked_mb``, ``max_words_per_file``,
    ``extract_timeout_s``, ``extract_memory_mb``, ``max_pdf_pages``, ``doc_cpu_budget_s``)."""

    max_bytes: int | None = None
    max_unpacked_bytes: int = 200 * 2**20
    max_words: int = 4_000_000
    timeout_s: float = 120.0
    memory_mb: int = 2048
    sandbox: bool = True  # PDF, DOCX and HTML extracted in a child process
    pdf_pages_per_range: int = 40  # a PDF is read this many pages at a time, each range in its own child
    ocr_engine: str = "auto"  # pages without a text layer and images: ingest/readers/ocr.py
    pdf_reader: str = "auto"  # auto: pdfium for every page with a text layer, tables too (readers/pdfium_page.py)
    max_rows: int = 200_000  # rows of one spreadsheet or CSV file
    max_pdf_pages: int = 2000  # a PDF of more pages is refused before any page is read
    doc_cpu_budget_s: float = 3600.0  # CPU-seconds all the ranges of one PDF may use together

    @classmethod
    def of(cls, settings) -> "Limits":
        """The limits the settings' reading concern sets (``settings.reading``, or the whole settings)."""
        return cls(max_bytes=int(settings.max_file_mb * 2**20),
                   max_unpacked_bytes=int(settings.max_unpacked_mb * 2**20),
                   max_words=settings.max_words_per_file, timeout_s=settings.extract_timeout_s,
                   memory_mb=settings.extract_memory_mb, pdf_pages_per_range=settings.pdf_pages_per_range,
                   ocr_engine=settings.ocr_engine, max_rows=settings.max_rows, pdf_reader=settings.pdf_reader,
                   max_pdf_pages=settings.max_pdf_pages, doc_cpu_budget_s=settings.doc_cpu_budget_s)


def _too_big(size: int, max_bytes: int) -> str:
    return (f"is {size / 2**20:.1f} MB, over the limit of {max_bytes / 2**20:g} MB; "
            "split it or raise MGRAG_MAX_FILE_MB")


def looks_binary(data: bytes) -> bool:
    head = data[:8192]
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
    return len(head) > 0 and controls / len(head) > 0.1


def _mostly_non_latin(text: str) -> bool:
    """True when most non-ASCII letters of ``text`` belong to a non-Latin script (CJK, Cyrillic, Greek, …)."""
    letters = [c for c in text[:20_000] if ord(c) > 127 and c.isalpha()]
    if not letters:
        return False
    other = sum(1 for c in letters if unicodedata.name(c, "").startswith(_NON_LATIN_SCRIPTS))
    return other > len(letters) / 2


_BOMS = ((b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"), (b"\xff\xfe", "utf-16-le"),
         (b"\xfe\xff", "utf-16-be"))


def decode_text(name: str, data: bytes) -> tuple[str, str]:
    """UTF-8 (BOM allowed); UTF-16 or UTF-32 with a BOM (a truncated or broken one decoded all the same, the pieces
    that are not text replaced and counted in the warning); otherwise the encoding charset-normalizer detects when
    the text is in a non-Latin script (Shift-JIS, GBK, cp1251, …), else cp1252 (then Latin-1), with a warning naming
    it.

    charset-normalizer alone mistakes short Western European text for cp1250 or cp437, so a Latin-script
    detection falls back to cp1252, the usual encoding of such files.
    """
    for bom, enc in _BOMS:  # UTF-32's marks first: FF FE 00 00 also starts with UTF-16's
        if data.startswith(bom):
            text = data[len(bom):].decode(enc, errors="replace")
            bad = text.count("\ufffd") - data[len(bom):].decode(enc, errors="ignore").count("\ufffd")
            return text, (f"{bad} undecodable piece(s) of its {enc.upper()} replaced by \ufffd" if bad else "")
    if looks_binary(data):
        raise IngestError(name, "looks like a binary file, not text; convert it to txt, md, pdf, docx or html")
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError as e:
        bad = e.start
    try:
        from charset_normalizer import from_bytes

        best = from_bytes(data).best()
    except Exception:  # pragma: no cover - detection is a help, never a reason to fail
        best = None
    if best is not None and best.encoding not in ("utf_8", "ascii"):
        text = str(best)
        if _mostly_non_latin(text):
            return text, f"not valid UTF-8 (byte {bad}); decoded as {best.encoding} (detected)"
    for enc in ("cp1252", "latin-1"):
        try:
            return data.decode(enc), f"not valid UTF-8 (byte {bad}); decoded as {enc}"
        except UnicodeDecodeError:
            continue
    raise IngestError(name, "cannot be decoded as text")  # pragma: no cover - latin-1 decodes any bytes


MAX_SPACE_RUN = 100  # a longer run of whitespace is shortened to a paragraph break, a line break or a space
_SPACE_RUN_RE = re.compile(r"\s{%d,}" % (MAX_SPACE_RUN + 1))


def _short_space(m: re.Match) -> str:
    run = m.group()
    return "\n\n" if run.count("\n") >= 2 else "\n" if "\n" in run else " "


def clean_text(text: str) -> tuple[str, int]:
    """``text`` without NULs and other control characters (tab, newline, form feed and carriage return kept), and
    how many were removed. A run of more than :data:`MAX_SPACE_RUN` whitespace characters is shortened to what it
    means (a paragraph break, a line break or a space), so a chunk of a few hundred words is a few hundred words
    long in characters too, whatever lies between them. UTF-16 surrogates are mended (:func:`mend_surrogates`)."""
    cleaned, n = _CONTROL_RE.subn("", mend_surrogates(text))
    return _SPACE_RUN_RE.sub(_short_space, cleaned), n


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def mend_surrogates(text: str) -> str:
    """``text`` with each UTF-16 surrogate pair joined into the character it encodes and a lone half replaced by
    U+FFFD. pdfium hands a character outside the Basic Multilingual Plane (a formula's 𝑦, U+1D466) as its two
    halves; a string holding them cannot be encoded as UTF-8, so the tokenizer, SQLite and JSON refuse it.

    >>> mend_surrogates("the observation \\ud835\\udc66 at t"), mend_surrogates("a \\udc66 b")
    ('the observation 𝑦 at t', 'a � b')
    """
    if not _SURROGATE_RE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


# bidirectional controls (U+061C, U+200E/F, U+202A–E, U+2066–9), invisible characters (U+200B, U+2060, U+FEFF), C0/C1
# controls and line/paragraph separators: in a name they make it read as another ("invoice\u202efdp.md" shows as
# "invoicedm.pdf") or break the line it is shown on. ZWJ/ZWNJ (U+200C/D) stay: some scripts need them.
_NAME_HIDDEN_RE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064"
                             "\u2066-\u206f\ufeff\ufff9-\ufffb]")


def clean_name(name: str) -> str:
    """A document's name without bidirectional, invisible or control characters (see ``_NAME_HIDDEN_RE``).

    >>> clean_name("invoice\u202efdp.md")
    'invoicefdp.md'
    """
    return _NAME_HIDDEN_RE.sub("", name)


# -- extractors (run in the sandbox child for pdf, docx and html) --------------------------------------------------
# Each returns the text and its layout (page starts, headings: ingest/readers/layout.py) as JSON; pieces are cleaned of
# control characters before they are joined, so the layout's offsets are those of the final text.
def _pdf_outline(reader) -> list[tuple[int, int, str]]:
    """(page index, level, title) of the PDF's bookmarks (its outline), outermost level 1."""
    out = []

    def walk(items, level):
        for it in items:
            if isinstance(it, list):
                walk(it, level + 1)
                continue
            try:
                out.append((reader.get_destination_page_number(it), min(level, 6), str(it.title).strip()))
            except Exception:  # a bookmark without a page: skip it
                continue
    try:
        walk(reader.outline, 1)
    except Exception:
        return []
    return [o for o in out if o[0] is not None and o[0] >= 0 and o[2]]


def _lift_pypdf_counts() -> None:
    """pypdf 7 refuses an array or dictionary of more than 100,000 elements; real filings have more (a 72-page
    10-Q of Microsoft's: "Reached maximum array element count"). PDFs are read in the extraction child, whose memory
    and CPU time are capped (:mod:`ingest.readers.sandbox`), so those counts are raised to what the caps allow
    anyway."""
    try:
        from pypdf import overwrite_configuration
    except ImportError:  # pypdf before 7: no such limits
        return
    overwrite_configuration(array_maximum_element_count=10_000_000, dictionary_maximum_element_count=10_000_000)


def _pdf_reader(name: str, data: bytes):
    try:
        from pypdf import PdfReader
        from pypdf.errors import DependencyError
    except ImportError as e:  # pragma: no cover
        raise IngestError(name, "reading PDF needs `pip install pypdf[crypto]`") from e
    _lift_pypdf_counts()
    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")  # many PDFs are encrypted with an empty user password
        except DependencyError as e:
            raise IngestError(name, "is an AES-encrypted PDF and reading it needs "
                                    "`pip install pypdf[crypto]`") from e
        if not opened:
            raise IngestError(name, "is a password-protected PDF; remove the password (e.g. `qpdf --decrypt "
                                    "--password=PW in.pdf out.pdf`) and ingest it again")
    return reader


OLE_MAGIC = bytes.fromhex("d0cf11e0a1b11ae1")  # an OLE compound document: .doc/.xls/.ppt, or an encrypted OOXML file


def _check_unpacked_size(name: str, data: bytes, max_unpacked: int, kind: str = "DOCX") -> None:
    """Refuse a zip container (DOCX, PPTX, XLSX, EPUB) whose members unpack to more than ``max_unpacked`` bytes,
    before parsing."""
    if data.startswith(OLE_MAGIC):  # Office's encryption wraps the zip in an OLE compound file, as the old formats are
        if "EncryptedPackage".encode("utf-16-le") in data:
            raise IngestError(name, f"is a password-protected {kind} file; remove the password (save a copy without "
                                    "it in the program that made it) and ingest it again")
        raise IngestError(name, f"is an older binary Office file (an OLE compound document), not {kind}; save it "
                                f"as .{kind.lower()} and ingest it again")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            total = sum(i.file_size for i in z.infolist())
    except (zipfile.BadZipFile, ValueError, OSError) as e:
        raise IngestError(name, f"is not a readable {kind} file (not a zip container: {e})") from e
    if total > max_unpacked:
        raise IngestError(name, f"unpacks to {total / 2**20:,.0f} MB, over the limit of {max_unpacked / 2**20:g} MB "
                                "(MGRAG_MAX_UNPACKED_MB); it may be a decompression bomb")


def _docx_level(style_name: str) -> int:
    """The heading level of a paragraph style ("Title" 1, "Heading 2" 2), else 0."""
    s = (style_name or "").strip().lower()
    if s == "title":
        return 1
    m = re.match(r"heading\s*(\d)", s)
    return min(int(m.group(1)), 6) if m else 0



"""Read documents (txt, md, pdf, docx, html) into text. Every failure is an :class:`IngestError` naming the file.

Hostile input is contained (README "Security"):

* only regular files are read (FIFOs, devices and sockets are refused before anything is opened for reading), and
  never more than the size limit, even if the file grows while it is read;
* PDF, DOCX and HTML are extracted in a child process (:mod:`ingest.readers.sandbox`) with a memory cap and a
  time limit; a DOCX whose parts unpack to more than ``max_unpacked_bytes`` is refused before it is parsed;
* the extracted text is capped in words, NULs and other control characters are removed, and text that is not
  UTF-8 has its encoding detected (charset-normalizer) instead of being read as Latin-1.
"""
from __future__ import annotations

import dataclasses
import io
import logging
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from ingest.readers import formats as F
from ingest.readers.base import (  # noqa: F401 (re-exported: what callers import from the loaders)
    IngestError,
    Limits,
    LoadedDoc,
    _check_unpacked_size,
    _docx_level,
    _pdf_outline,
    _pdf_reader,
    _too_big,
    clean_name,
    clean_text,
    decode_text,
    looks_binary,
    stamped,
)
from ingest.readers.formats import build, html_blocks
from ingest.readers.layout import Layout, markdown_headings
from ingest.readers.pdf import Assembler, assemble, read_pages
from ingest.readers.sandbox import SandboxError, run_limited
from ingest.text.sentences import count_words

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): bs4, pypdf, docx and
# ingest.readers.formats

log = logging.getLogger(__name__)

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".text", ".rst"}
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".tif", ".tiff"}
SUPPORTED = TEXT_SUFFIXES | IMAGE_SUFFIXES | {".pdf", ".docx", ".html", ".htm", ".pptx", ".xlsx", ".csv", ".tsv",
                                              ".epub"}
def _pdf_pages(name: str, data: bytes, first: int, last: int | None, ocr_engine: str | None = None,
               reader: str = "auto", max_pages: int | None = None):
    """``(page count, page data of pages first..last-1, outline)`` of a PDF (:func:`ingest.readers.pdf.read_pages`; the
    outline only when ``first`` is 0; more than ``max_pages`` pages refused). One call reads one page range, so a
    large PDF is read range by range, each in a fresh child with its own memory cap (:func:`pdf_text`)."""
    try:
        from pypdf.errors import PdfReadError
    except ImportError as e:  # pragma: no cover
        raise IngestError(name, "reading PDF needs `pip install pypdf[crypto]`") from e

    try:
        return read_pages(name, data, first, last, ocr_engine, reader, max_pages)
    except IngestError:
        raise
    except MemoryError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, ZeroDivisionError) as e:
        raise IngestError(name, f"is not a readable PDF ({e.__class__.__name__}: {str(e)[:120]})") from e


def _pdf_range(*args):
    """In the extraction child: :func:`_pdf_pages` of one range, and the CPU-seconds the child has used (its start,
    imports and pages), which the parent adds up against the document's budget (:func:`pdf_ranges`)."""
    return (*_pdf_pages(*args), time.process_time())


def _pdf_text(name: str, data: bytes, ocr_engine: str | None = None, reader: str = "auto",
              max_pages: int | None = None) -> tuple[str, dict]:
    """The text and layout of a whole PDF in this process."""
    _, pages, outline = _pdf_pages(name, data, 0, None, ocr_engine, reader, max_pages)
    return assemble(name, pages, outline)


def _over_budget(done: int, n: int, used: float, budget: float) -> str:
    return (f"reading stopped after page {done:,} of {n:,}: its ranges used {used:,.0f} CPU-seconds, more than "
            f"doc_cpu_budget_s ({budget:,g}); split it or raise MGRAG_DOC_CPU_BUDGET_S")


def pdf_ranges(name: str, data: bytes, limits: "Limits", on_progress=None,
               resume: tuple[str, dict] | None = None) -> Iterator[tuple[str, dict, int, int]]:
    """A PDF read ``limits.pdf_pages_per_range`` pages at a time, each range in a child process with the memory cap
    and the CPU-time limit (:mod:`ingest.readers.sandbox`), so a 300-page filing costs the memory of one range, not
    of the whole parse, and the limit applies per range (plus an allowance per page read by OCR). After each range
    that leaves some text: ``(text, layout, pages read, pages)``, the text of the pages read so far (each a prefix
    of the next, :class:`ingest.readers.pdf.Assembler`; the layout of all but the last says in ``read`` how many
    pages it holds, what the assembler learnt and the CPU-seconds spent so far). ``resume``: the text and layout of
    such a range, to go on after it without reading its pages again. ``on_progress(pages_done, pages)`` after each
    page.

    The ranges of one PDF share ``limits.doc_cpu_budget_s``: before each range after the first, a PDF that has used
    it stops with an :class:`IngestError` (the ranges yielded before it are whole documents, kept by the queue;
    across a resume too, since the CPU-seconds travel in ``read``), so no PDF holds a worker for days."""
    step = max(1, limits.pdf_pages_per_range)
    asm: Assembler | None = None
    n, first, used = None, 0, 0.0
    if resume is not None:
        text, layout = resume
        read = layout["read"]
        asm = Assembler.resume(name, text, layout, read["state"])
        n, first, used = int(read["of"]), int(read["pages"]), float(read.get("cpu_s", 0.0))

    def page_done(payload) -> None:
        if on_progress is not None and payload:
            on_progress(*payload)

    while n is None or first < n:
        if n is not None and used >= limits.doc_cpu_budget_s:
            raise IngestError(name, _over_budget(first, n, used, limits.doc_cpu_budget_s))
        try:
            n, part, ol, cpu_s = run_limited("ingest.readers.loaders:_pdf_range",
                                             (name, data, first, first + step, limits.ocr_engine, limits.pdf_reader,
                                              limits.max_pdf_pages),
                                             name=name, timeout_s=limits.timeout_s, memory_mb=limits.memory_mb,
                                             ocr_pages=step, on_progress=page_done)
        except SandboxError as e:
            where = f" (pages {first + 1}–{min(first + step, n)})" if n is not None and n > step else ""
            raise IngestError(name, e.problem + where) from e
        asm = asm or Assembler(name, ol)
        asm.add(part)
        first += step
        used += cpu_s
        if on_progress is not None:
            on_progress(min(first, n), n)
        if asm.has_text() or first >= n:
            text, layout = asm.result()
            if first < n:
                layout["read"] = {"pages": first, "of": n, "state": asm.state(), "cpu_s": round(used, 3)}
            yield text, layout, min(first, n), n


def pdf_text(name: str, data: bytes, limits: "Limits", on_progress=None) -> tuple[str, dict]:
    """The text and layout of a whole PDF (:func:`pdf_ranges`, to the last range)."""
    last: tuple = ("", {})
    for text, layout, _, _ in pdf_ranges(name, data, limits, on_progress):
        last = (text, layout)
    return last


_PAGES_NODE = re.compile(rb"/Type\s*/Pages\b")
_COUNT = re.compile(rb"/Count\s+(\d+)")
_KIDS = re.compile(rb"/Kids\s*\[([^\[\]]*)\]")  # no bracket inside: each byte scanned once, whatever the file


def pdf_pages_hint(data: bytes) -> int | None:
    """A PDF's page count for estimates, read without parsing the file: the largest ``/Count`` of a ``/Type /Pages``
    object, but no more than the references in the ``/Kids`` arrays of those objects (a ``/Count`` is only a claim: a
    one-page file may state 100,000); None when the tree sits in a compressed object stream or has no ``/Kids``
    array to check it by. One pass over the file, split at ``endobj`` (the page tree of a 20 MB upload is read in
    the web app's thread).

    >>> pdf_pages_hint(b"1 0 obj << /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >> endobj 4 0 obj << /Count 3 >> endobj")
    2
    >>> pdf_pages_hint(b"2 0 obj << /Type /Pages /Kids [3 0 R] /Count 100000 >> endobj")
    1
    """
    counts, kids = [], 0
    for piece in data[: 64 * 2**20].split(b"endobj"):
        if b"/Pages" not in piece:
            continue
        body = piece[piece.rfind(b" obj") + 1:]  # the object this ``endobj`` ends, from its header
        if not _PAGES_NODE.search(body):
            continue
        m = _COUNT.search(body)
        if m:
            counts.append(int(m.group(1)))
        kids += sum(k.group(1).count(b"R") for k in _KIDS.finditer(body))
    return min(max(counts), kids) if counts and kids else None


_OCR_FRAMES = 200  # the most frames of an image file read by OCR (ingest.readers.ocr.image_pages)


def _docx_text(name: str, data: bytes, max_unpacked: int = 200 * 2**20) -> tuple[str, dict]:
    try:
        import docx
    except ImportError as e:  # pragma: no cover
        raise IngestError(name, "reading DOCX needs `pip install python-docx`") from e
    _check_unpacked_size(name, data, max_unpacked)
    try:
        from ingest.readers.formats import docx_blocks

        d = docx.Document(io.BytesIO(data))
        blocks = docx_blocks(d)
    except MemoryError:  # the sandbox's memory cap: reported as such
        raise
    except Exception as e:  # python-docx raises several unrelated types for corrupt files
        raise IngestError(name, f"is not a readable DOCX file ({e.__class__.__name__})") from e

    return build(blocks, unit="paragraph")


def _html_text(name: str, data: bytes) -> tuple[str, dict]:
    from bs4 import BeautifulSoup


    raw, _ = decode_text(name, data)
    return build(html_blocks(BeautifulSoup(raw, "html.parser")))


def _extract(suffix: str, name: str, data: bytes, max_unpacked: int, max_rows: int = 200_000,
             ocr_engine: str | None = None, pdf_reader: str = "auto", max_pdf_pages: int | None = None
             ) -> tuple[str, dict]:
    """The text and layout of a file that is not plain text (the sandbox child's entry point)."""
    if suffix == ".pdf":
        return _pdf_text(name, data, ocr_engine, pdf_reader, max_pdf_pages)
    if suffix == ".docx":
        return _docx_text(name, data, max_unpacked)
    if suffix == ".pptx":
        return F.pptx_text(name, data, max_unpacked)
    if suffix == ".xlsx":
        return F.xlsx_text(name, data, max_unpacked, max_rows)
    if suffix in (".csv", ".tsv"):
        return F.csv_text(name, data, max_rows)
    if suffix == ".epub":
        return F.epub_text(name, data, max_unpacked)
    if suffix in IMAGE_SUFFIXES:
        return F.image_text(name, data, ocr_engine)
    return _html_text(name, data)


_KINDS = {".pdf": "pdf", ".docx": "docx", ".html": "html", ".htm": "html", ".pptx": "pptx", ".xlsx": "xlsx",
          ".csv": "csv", ".tsv": "csv", ".epub": "epub", **{x: "image" for x in IMAGE_SUFFIXES}}


def check_input(name: str, data: bytes, limits: Limits) -> None:
    """The checks a file passes before anything is done with it (type, size, not empty): the web app and the CLI
    refuse such a file at once instead of queueing it."""
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED:
        raise IngestError(
            name, f"unsupported file type {suffix or '(no extension)'!r}; supported: {', '.join(sorted(SUPPORTED))}"
        )
    if limits.max_bytes is not None and len(data) > limits.max_bytes:
        raise IngestError(name, _too_big(len(data), limits.max_bytes))
    if not data.strip():
        raise IngestError(name, "is empty; nothing to ingest")


def load_bytes(name: str, data: bytes, *, max_bytes: int | None = None, limits: Limits | None = None,
               on_progress=None) -> LoadedDoc:
    """Text of a document given its name (for the type; may be a relative path, kept as the document's name) and
    bytes, within ``limits``. ``on_progress(done, total)``: pages read of a PDF."""
    limits = limits or Limits(max_bytes=max_bytes)
    if max_bytes is not None and limits.max_bytes is None:
        limits = dataclasses.replace(limits, max_bytes=max_bytes)
    check_input(name, data, limits)
    suffix = Path(name).suffix.lower()
    warnings = []
    if suffix == ".pdf" and limits.sandbox:
        kind = "pdf"
        text, layout = pdf_text(name, data, limits, on_progress)
    elif suffix in _KINDS:
        kind = _KINDS[suffix]
        if limits.sandbox:
            try:
                text, layout = run_limited("ingest.readers.loaders:_extract", (suffix, name, data,
                limits.max_unpacked_bytes,
                                                                       limits.max_rows, limits.ocr_engine),
                                           name=name, timeout_s=limits.timeout_s, memory_mb=limits.memory_mb,
                                           ocr_pages=_OCR_FRAMES if suffix in IMAGE_SUFFIXES else 0)
            except SandboxError as e:
                raise IngestError(name, e.problem) from e
        else:
            text, layout = _extract(suffix, name, data, limits.max_unpacked_bytes, limits.max_rows,
                                    limits.ocr_engine, limits.pdf_reader, limits.max_pdf_pages)
    else:
        text, warning = decode_text(name, data)
        kind = "text"
        if warning:
            warnings.append(warning)
        text, n_controls = clean_text(text)
        if n_controls:
            warnings.append(f"removed {n_controls} control character(s) (NUL and the like)")
        heads = markdown_headings(text) if suffix in (".md", ".markdown", ".rst") else ()
        layout = Layout((), heads).to_json()
    if not text.strip():
        raise IngestError(name, "contains no text")

    _within_words(name, text, limits)
    return LoadedDoc(name, data, text, kind, "; ".join(warnings), stamped(kind, layout))


def _within_words(name: str, text: str, limits: Limits) -> None:
    n_words = count_words(text)
    if n_words > limits.max_words:
        raise IngestError(name, f"has {n_words:,} words, over the limit of {limits.max_words:,} per file "
                                "(MGRAG_MAX_WORDS_PER_FILE); split it")


def load_pdf_ranges(name: str, data: bytes, limits: Limits, on_progress=None,
                    resume: LoadedDoc | None = None) -> Iterator[LoadedDoc]:
    """A PDF as :func:`load_bytes` reads it, yielded after each range of pages that leaves text
    (:func:`pdf_ranges`): each document's text a prefix of the next one's; all but the last say in their layout's
    ``read`` how many of the pages they hold (``{"pages": 40, "of": 190, ...}``). ``resume``: such a document, to
    go on after its pages."""
    check_input(name, data, limits)
    for text, layout, _, _ in pdf_ranges(name, data, limits, on_progress,
                                         (resume.text, resume.layout or {}) if resume else None):
        _within_words(name, text, limits)
        yield LoadedDoc(name, data, text, "pdf", "", stamped("pdf", layout))


def read_regular_file(path: str | Path, max_bytes: int | None = None) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``max_bytes``; FIFOs, devices, sockets and folders
    are refused without blocking (the file is opened non-blocking and checked with fstat before it is read)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise IngestError(path.name, f"cannot be read ({e.strerror or e})") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode)
                    else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                    else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise IngestError(path.name, f"is {what}; only regular files are read")
        if max_bytes is not None and st.st_size > max_bytes:
            raise IngestError(path.name, _too_big(st.st_size, max_bytes))
        chunks, total = [], 0
        limit = max_bytes + 1 if max_bytes is not None else None
        while True:
            part = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit - total))
            if not part:
                break
            chunks.append(part)
            total += len(part)
            if limit is not None and total >= limit:
                raise IngestError(path.name, _too_big(total, max_bytes) + " (it grew while it was read)")
        return b"".join(chunks)
    except OSError as e:
        raise IngestError(path.name, f"cannot be read ({e.strerror or e})") from e
    finally:
        os.close(fd)


def load_file(path: str | Path, *, max_bytes: int | None = None, limits: Limits | None = None,
              name: str | None = None) -> LoadedDoc:
    """A file on disk, read as :func:`read_regular_file` and extracted as :func:`load_bytes`; ``name`` (default: the
    file name) is the document's name."""
    limits = limits or Limits(max_bytes=max_bytes)
    path = Path(path)
    name = name or path.name
    try:
        data = read_regular_file(path, limits.max_bytes)
    except IngestError as e:
        raise IngestError(name, e.problem) from e
    return load_bytes(name, data, limits=limits)


def input_files(paths) -> list[tuple[Path, str]]:
    """``(path, document name)`` of the files given directly (named by their file name) and of the files under given
    folders (named by their path relative to that folder, so ``sub1/notes.md`` and ``sub2/notes.md`` are two
    documents); sorted, hidden files and folders skipped. Names are distinct: a file named like one before it
    (``mgrag ingest a/notes.md b/notes.md``) is named by as many of its folders as tell it apart (``b/notes.md``),
    else ``notes (2).md``; the same file given twice is listed once."""
    out: list[tuple[Path, str]] = []
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                rel = f.relative_to(p)
                if f.is_dir() or any(x.startswith(".") for x in rel.parts):
                    continue
                out.append((f, clean_name(rel.as_posix())))
        else:
            out.append((p, clean_name(p.name)))
    return _distinct_names(out)


def _distinct_names(files: list[tuple[Path, str]]) -> list[tuple[Path, str]]:
    taken = {name for _, name in files}
    seen: set[str] = set()
    reals: set[Path] = set()
    out: list[tuple[Path, str]] = []
    for f, name in files:
        real = f.resolve()
        if real in reals and f.exists():
            continue  # the same file again
        if name in seen:
            parts = real.parts[:-len(Path(name).parts)]
            name = next((n for n in (clean_name(Path(*parts[-k:], name).as_posix()) for k in range(1, len(parts)))
                         if n not in taken), None) or _numbered(name, taken)
            taken.add(name)
        seen.add(name)
        reals.add(real)
        out.append((f, name))
    return out


def _numbered(name: str, taken: set[str]) -> str:
    """``notes (2).md``, ``notes (3).md``, ...: the first not in ``taken``."""
    p = Path(name)
    stem, suffix = (p.stem, p.suffix) if p.stem else (p.name, "")
    n = 2
    while (cand := (p.parent / f"{stem} ({n}){suffix}").as_posix().removeprefix("./")) in taken:
        n += 1
    return cand


def read_inputs(paths, max_bytes: int) -> list[tuple[str, bytes | str]]:
    """``(name, bytes)`` of each file given (folders walked; names as :func:`input_files`), or ``(name, problem)``
    where it cannot be read (missing, not a regular file, over ``max_bytes``), in order."""
    out: list[tuple[str, bytes | str]] = []
    for f, name in input_files(paths):
        if not f.exists() and not f.is_symlink():
            out.append((name, "no such file or folder"))
            continue
        try:
            out.append((name, read_regular_file(f, max_bytes)))
        except IngestError as e:
            out.append((name, e.problem))
    return out

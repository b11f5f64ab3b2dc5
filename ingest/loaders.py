"""Read documents (txt, md, pdf, docx, html) into text. Every failure is an :class:`IngestError` naming the file."""
from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".text", ".rst"}
SUPPORTED = TEXT_SUFFIXES | {".pdf", ".docx", ".html", ".htm"}


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


def looks_binary(data: bytes) -> bool:
    head = data[:8192]
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27))
    return len(head) > 0 and controls / len(head) > 0.1


def decode_text(name: str, data: bytes) -> tuple[str, str]:
    """UTF-8 (BOM allowed); UTF-16 with a BOM; otherwise cp1252, then Latin-1, with a warning."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16"), ""
    if looks_binary(data):
        raise IngestError(name, "looks like a binary file, not text; convert it to txt, md, pdf, docx or html")
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError as e:
        for enc in ("cp1252", "latin-1"):
            try:
                text = data.decode(enc)
            except UnicodeDecodeError:
                continue
            return text, f"not valid UTF-8 (byte {e.start}); decoded as {enc}"
    raise IngestError(name, "cannot be decoded as text")  # pragma: no cover - latin-1 decodes any bytes


def _pdf_text(name: str, data: bytes) -> str:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError as e:  # pragma: no cover
        raise IngestError(name, "reading PDF needs `pip install pypdf`") from e
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [(p.extract_text() or "").strip() for p in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError) as e:
        raise IngestError(name, f"is not a readable PDF ({e})") from e
    text = "\n\n".join(p for p in pages if p)
    if not text.strip():
        raise IngestError(
            name, f"PDF has {len(pages)} page(s) but no text layer (scanned?); run OCR on it first (e.g. ocrmypdf)"
        )
    return text


def _docx_text(name: str, data: bytes) -> str:
    try:
        import docx
    except ImportError as e:  # pragma: no cover
        raise IngestError(name, "reading DOCX needs `pip install python-docx`") from e
    try:
        d = docx.Document(io.BytesIO(data))
    except Exception as e:  # python-docx raises several unrelated types for corrupt files
        raise IngestError(name, f"is not a readable DOCX file ({e.__class__.__name__})") from e
    return "\n\n".join(p.text.strip() for p in d.paragraphs if p.text.strip())


def _html_text(name: str, data: bytes) -> str:
    from bs4 import BeautifulSoup

    raw, _ = decode_text(name, data)
    soup = BeautifulSoup(raw, "html.parser")
    for tag in soup(["script", "style", "noscript", "template", "head"]):
        tag.decompose()
    blocks = []
    for el in soup.find_all(["h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "blockquote", "td", "th", "dt", "dd"]):
        if el.find(["p", "li", "pre", "blockquote", "table"]):
            continue  # a container; its children are taken one by one
        t = " ".join(el.get_text(" ").split())
        if t:
            blocks.append(t)
    if not blocks:
        blocks = [" ".join(soup.get_text(" ").split())]
    return "\n\n".join(b for b in blocks if b)


def load_bytes(name: str, data: bytes, *, max_bytes: int | None = None) -> LoadedDoc:
    """Text of a document given its file name (for the type) and bytes."""
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED:
        raise IngestError(
            name, f"unsupported file type {suffix or '(no extension)'!r}; supported: {', '.join(sorted(SUPPORTED))}"
        )
    if max_bytes is not None and len(data) > max_bytes:
        raise IngestError(
            name,
            f"is {len(data) / 2**20:.1f} MB, over the limit of {max_bytes / 2**20:.0f} MB; "
            "split it or raise MGRAG_MAX_FILE_MB",
        )
    if not data.strip():
        raise IngestError(name, "is empty; nothing to ingest")
    warning = ""
    if suffix == ".pdf":
        text, kind = _pdf_text(name, data), "pdf"
    elif suffix == ".docx":
        text, kind = _docx_text(name, data), "docx"
    elif suffix in (".html", ".htm"):
        text, kind = _html_text(name, data), "html"
    else:
        text, warning = decode_text(name, data)
        kind = "text"
    if not text.strip():
        raise IngestError(name, "contains no text")
    return LoadedDoc(Path(name).name, data, text, kind, warning)


def load_file(path: str | Path, *, max_bytes: int | None = None) -> LoadedDoc:
    path = Path(path)
    try:
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise IngestError(
                path.name, f"is {size / 2**20:.1f} MB, over the limit of {max_bytes / 2**20:.0f} MB; "
                "split it or raise MGRAG_MAX_FILE_MB",
            )
        data = path.read_bytes()
    except OSError as e:
        raise IngestError(path.name, f"cannot be read ({e.strerror or e})") from e
    return load_bytes(path.name, data, max_bytes=max_bytes)


def expand_paths(paths) -> list[Path]:
    """Files given directly, and the files under given folders (sorted, hidden files skipped)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file() and not any(x.startswith(".") for x in f.parts[len(p.parts):])))
        else:
            out.append(p)
    return out

"""The source viewer: a cited passage opened in its original document, at its page, with the supporting sentence
and the matched child highlighted.

A link in the Sources panel carries a signed token (:class:`ViewTokens`: HMAC of the document, its content hash,
the spans to highlight and an expiry) minted for an answer the reader was allowed to see, so the viewer needs no
login of its own and opens nothing else. PDFs are shown as the rendered page (pypdfium2) with the spans boxed on
it; every format also gets the text around the passage with the spans marked. Rendering is pure (bytes in, HTML
or PNG out); :func:`ui.app.add_viewer_routes` mounts it on the web app, which renders page images through
:class:`PageRenderer`: scaled to a pixel cap, in a capped child process, a few at once, cached.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import html
import io
import json
import math
import re
import threading
import time
import unicodedata
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from urllib.parse import quote

from ingest.readers import sandbox
from ingest.text.tables import table_groups, table_lines
from services.render import HIGHLIGHT, rgb, table_html

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): pypdfium2, PIL

COLORS = {k: rgb(HIGHLIGHT[k]) for k in ("passage", "child", "support")}  # the chat's colours (services/render.py)


@dataclass(frozen=True)
class View:
    doc_id: str
    hash: str
    start: int  # the passage (the cited parent)
    end: int
    matched: tuple[int, int] | None = None  # the child that matched the question
    support: tuple[tuple[int, int], ...] = ()  # the sentences behind the answer
    page: int | None = None  # 1-based page to open (PDF)
    exp: float = field(default=0.0)
    name: str = ""  # the document's name as the reader saw it in the chat ("" = doc_id)


class InvalidViewToken(ValueError):
    """A viewer token that is malformed, not signed by this server, or expired (the routes answer 403)."""


class ViewNotFound(ValueError):
    """A valid viewer token whose document is gone, or a page image asked of a document that is not a PDF; the
    caller answers 404."""


class ViewTokens:
    """Signs and checks viewer tokens with a server secret; a token lives ``ttl_s`` seconds."""

    def __init__(self, secret: str, ttl_s: float = 7 * 24 * 3600):
        self.key = hashlib.sha256(("mgrag-viewer:" + secret).encode()).digest()
        self.ttl_s = ttl_s

    def mint(self, view: View) -> str:
        body = dict(asdict(view), exp=time.time() + self.ttl_s)
        raw = base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode().rstrip("=")
        sig = base64.urlsafe_b64encode(hmac.new(self.key, raw.encode(), hashlib.sha256).digest()[:18]).decode()
        return f"{raw}.{sig}"

    def check(self, token: str) -> View:
        """The view of a valid, unexpired token; :class:`InvalidViewToken` otherwise."""
        try:
            raw, sig = token.split(".")
        except ValueError:
            raise InvalidViewToken("not a viewer link") from None
        try:  # compared as bytes: a signature with other than ASCII in it is simply wrong, not an error
            want = hmac.new(self.key, raw.encode(), hashlib.sha256).digest()[:18]
            ok = hmac.compare_digest(sig.encode(), base64.urlsafe_b64encode(want))
        except UnicodeEncodeError:  # a lone surrogate
            ok = False
        if not ok:
            raise InvalidViewToken("this viewer link is not valid")
        d = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
        if d["exp"] < time.time():
            raise InvalidViewToken("this viewer link has expired; ask the question again")
        d["matched"] = tuple(d["matched"]) if d.get("matched") else None
        d["support"] = tuple(tuple(s) for s in d.get("support") or ())
        return View(**d)


def content_disposition(name: str) -> str:
    """``attachment`` naming the file ``name`` in any script: ``filename*=UTF-8''…`` (RFC 5987, percent-encoded)
    and, for clients that read only ``filename``, an ASCII stand-in (accents dropped, other characters ``_``). The
    header itself stays ASCII, which HTTP requires."""
    fallback = "".join("" if unicodedata.combining(c) else c if " " <= c <= "~" and c not in '"\\' else "_"
                       for c in unicodedata.normalize("NFKD", name)) or "download"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


# -- text ---------------------------------------------------------------------------------------------------------
def marked_text(text: str, view: View, context_chars: int = 1200) -> str:
    """The text around the passage as HTML: the passage, the matched child and the supporting sentences each in
    their own ``<mark>``; everything escaped."""
    lo = max(0, view.start - context_chars)
    hi = min(len(text), view.end + context_chars)
    spans = [(view.start, view.end, "passage")]
    if view.matched:
        spans.append((*view.matched, "child"))
    spans += [(s, e, "support") for s, e in view.support]
    out = ["…" if lo > 0 else ""]
    pos = lo
    for ts, te in _tables(text, lo, hi):  # a Markdown table (how tables are read) is shown as a table
        out.append(_marked(text, pos, ts, spans, view))
        out.append(_table_html(text, ts, te, spans, view))
        pos = te
    out.append(_marked(text, pos, hi, spans, view))
    out.append("…" if hi < len(text) else "")
    return "".join(out)


def _marked(text: str, lo: int, hi: int, spans, view: View) -> str:
    cuts = sorted({lo, hi, *(max(lo, min(hi, x)) for s, e, _ in spans for x in (s, e))})
    out = []
    for a, b in zip(cuts, cuts[1:]):
        if a == b:
            continue
        kinds = [k for s, e, k in spans if s <= a and b <= e]
        piece = html.escape(text[a:b])
        for k in ("support", "child", "passage"):  # the most specific innermost, so its colour shows
            if k in kinds:
                first = " id=mg-first" if k == "passage" and a == view.start else ""
                piece = f'<mark class="mg-{k}"{first}>{piece}</mark>'
        out.append(piece)
    return "".join(out)


def _tables(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """The spans of whole Markdown tables (runs of table lines) inside ``[lo, hi)``."""
    return table_groups(table_lines(text, lo, hi))


def _table_html(text: str, start: int, end: int, spans, view: View) -> str:
    """A Markdown table as an HTML table; each row coloured by the innermost highlight that covers it."""
    return table_html(text, start, end, spans, ("support", "child", "passage"), first=("passage", view.start))


# -- PDF ----------------------------------------------------------------------------------------------------------
def _find(page_text: str, snippet: str) -> tuple[int, int] | None:
    """Where ``snippet`` (extracted by pypdf) lies in pdfium's text of the page: words in order, any whitespace."""
    words = re.findall(r"\S+", snippet)
    if not words:
        return None
    for n in (len(words), min(len(words), 12), min(len(words), 6)):  # the whole, else its beginning
        m = re.search(r"\s+".join(re.escape(w) for w in words[:n]), page_text)
        if m:
            return m.start(), m.end()
    return None


MAX_PAGE_PIXELS = 4_000_000  # a page image holds at most this many pixels (a 7200-pt page is scaled down to it)


def page_scale(width_pt: float, height_pt: float, scale: float = 1.6, max_pixels: int = MAX_PAGE_PIXELS) -> float:
    """``scale`` (pixels per point), lowered so that the rendered page holds at most ``max_pixels`` pixels."""
    w, h = max(width_pt, 1.0), max(height_pt, 1.0)
    s = min(scale, (max_pixels / (w * h)) ** 0.5)
    while s > 1e-6 and math.ceil(w * s) * math.ceil(h * s) > max_pixels:  # pixels are whole: round up, stay under
        s *= 0.995
    return s


def render_pdf_page(data: bytes, page: int, highlights: list[tuple[str, str]], scale: float = 1.6,
                    max_pixels: int = MAX_PAGE_PIXELS) -> tuple[bytes, int]:
    """PNG of page ``page`` (1-based) with each ``(snippet, kind)`` boxed in its colour where it is found on the
    page; and the number of pages. The page is scaled down (:func:`page_scale`) so that the image holds at most
    ``max_pixels`` pixels, whatever size the PDF gives it. In this process: the web app calls it through
    :class:`PageRenderer` (a capped child process)."""
    import pypdfium2 as pdfium
    from PIL import Image, ImageChops, ImageDraw

    pdf = pdfium.PdfDocument(data)
    try:
        n = len(pdf)
        page = min(max(1, page), n)
        pg = pdf[page - 1]
        width, height = pg.get_size()
        scale = page_scale(width, height, scale, max_pixels)
        img = pg.render(scale=scale).to_pil().convert("RGB")
        overlay = Image.new("RGB", img.size, (255, 255, 255))  # multiplied in: a highlighter, the text stays black
        draw = ImageDraw.Draw(overlay)
        tp = pg.get_textpage()
        text = tp.get_text_range()
        boxes = []  # each line of a snippet separately: a passage may begin on the previous page
        for snippet, kind in highlights:
            for line in snippet.splitlines():
                found = _find(text, line) if len(line.split()) >= 3 or line == snippet else None
                if found:
                    boxes.append((found, kind))
        for found, kind in boxes:
            for i in range(*found):
                x0, y0, x1, y1 = tp.get_charbox(i)
                if x1 <= x0:
                    continue
                box = (x0 * scale - 1, (height - y1) * scale - 2, x1 * scale + 1, (height - y0) * scale + 2)
                draw.rectangle(box, fill=COLORS[kind])
        out = io.BytesIO()
        ImageChops.multiply(img, overlay).save(out, format="PNG", optimize=True)
        return out.getvalue(), n
    finally:
        pdf.close()


class RenderBusy(Exception):
    """Every render slot stayed taken while the request waited; the caller answers 503 (try again shortly)."""


class RenderFailed(Exception):
    """A page could not be rendered within the renderer's memory and time limits (its message says so to the
    reader); the caller answers 422."""


class PageRenderer:
    """Renders the viewer's page images for the web app: each render in a child process with a memory cap and a
    time limit (:func:`ingest.readers.sandbox.run_limited`), at most ``at_once`` at a time (a request waits ``wait_s``
    for a slot, then gets :class:`RenderBusy`), each image at most ``max_pixels`` pixels, and the last images kept in a
    small LRU cache (``cache_bytes`` in all) keyed by the document's content hash, the page, the pixel cap and the
    highlights, so opening the same link again costs no render."""

    def __init__(self, *, at_once: int = 2, wait_s: float = 10.0, memory_mb: int = 1024, timeout_s: float = 30.0,
                 max_pixels: int = MAX_PAGE_PIXELS, cache_bytes: int = 64 * 2**20, cache_items: int = 64):
        self.at_once, self.wait_s = at_once, wait_s
        self.memory_mb, self.timeout_s, self.max_pixels = memory_mb, timeout_s, max_pixels
        self.cache_bytes, self.cache_items = cache_bytes, cache_items
        self.slots = threading.BoundedSemaphore(at_once)
        self._cache: OrderedDict[tuple, tuple[bytes, int]] = OrderedDict()
        self._cached_bytes = 0
        self._lock = threading.Lock()

    def key(self, doc_hash: str, page: int, highlights: list[tuple[str, str]]) -> tuple:
        marks = hashlib.sha256(json.dumps(list(highlights)).encode()).hexdigest()
        return doc_hash, int(page), self.max_pixels, marks

    def cached(self, key: tuple) -> tuple[bytes, int] | None:
        with self._lock:
            got = self._cache.get(key)
            if got is not None:
                self._cache.move_to_end(key)
            return got

    def _keep(self, key: tuple, value: tuple[bytes, int]) -> None:
        size = len(value[0])
        if size > self.cache_bytes:
            return
        with self._lock:
            if key in self._cache:
                return
            self._cache[key] = value
            self._cached_bytes += size
            while self._cache and (self._cached_bytes > self.cache_bytes or len(self._cache) > self.cache_items):
                _, (png, _) = self._cache.popitem(last=False)
                self._cached_bytes -= len(png)

    def render(self, doc_hash: str, original, page: int, highlights: list[tuple[str, str]]) -> tuple[bytes, int]:
        """(PNG, number of pages) of page ``page`` of the PDF whose content hash is ``doc_hash``; ``original()``
        gives its bytes (read only when the page is not cached). :class:`RenderBusy` when no slot frees in time,
        :class:`ingest.readers.sandbox.SandboxError` when the render fails or passes its memory or time limit."""
        key = self.key(doc_hash, page, highlights)
        got = self.cached(key)
        if got is not None:
            return got
        if not self.slots.acquire(timeout=self.wait_s):
            raise RenderBusy(f"the server is busy rendering other pages ({self.at_once} at a time); "
                             "try again in a few seconds")
        try:
            got = self.cached(key)  # rendered by another request while this one waited
            if got is None:
                got = sandbox.run_limited("services.viewer:render_pdf_page",
                                          (original(), page, list(highlights), 1.6, self.max_pixels),
                                          name=f"page-{page}", timeout_s=self.timeout_s, memory_mb=self.memory_mb)
                self._keep(key, got)
        finally:
            self.slots.release()
        return got


# -- the page -----------------------------------------------------------------------------------------------------
PAGE_CSS = """
body {font-family: system-ui, sans-serif; margin: 0; background: #f4f4f5; color: #18181b;}
header {padding: 10px 16px; background: #fff; border-bottom: 1px solid #e4e4e7; position: sticky; top: 0;}
main {display: flex; gap: 16px; padding: 16px; align-items: flex-start;}
.mg-page img {max-width: 100%; box-shadow: 0 1px 4px #0003; background: #fff;}
.mg-text {flex: 1; background: #fff; padding: 12px 16px; white-space: pre-wrap; line-height: 1.5; max-width: 70ch;}
mark.mg-passage {background: @PASSAGE;} mark.mg-child {background: @CHILD;}
mark.mg-support {background: @SUPPORT; border-bottom: 2px solid @LINE;}
table.mg-table {border-collapse: collapse; white-space: normal; margin: 4px 0; font-size: 0.92em;}
.mg-table td, .mg-table th {border: 1px solid #d4d4d8; padding: 2px 6px; text-align: right;}
.mg-table td:first-child, .mg-table th:first-child {text-align: left;}
tr.mg-passage {background: @PASSAGE;} tr.mg-child {background: @CHILD;} tr.mg-support {background: @SUPPORT;}
.legend span {padding: 0 6px; margin-right: 8px;} .legend .mg-support {background: @SUPPORT;}
.legend .mg-child {background: @CHILD;} .legend .mg-passage {background: @PASSAGE;} a {color: #c2410c;}
""".replace("@SUPPORT", HIGHLIGHT["support"]).replace("@LINE", HIGHLIGHT["support_line"]).replace(
    "@CHILD", HIGHLIGHT["child"]).replace("@PASSAGE", HIGHLIGHT["passage"])


SCROLL_JS = 'document.getElementById("mg-first")?.scrollIntoView({block: "center"});'  # the page's one script
# The viewer page's Content-Security-Policy (sent by ui.app's SecurityHeaders with every /mgrag/ response): its own
# inline style, that one script (by its hash), the page image from this server; nothing else, so a passage that got
# past the escaping still could neither run nor load anything.
_SCROLL_HASH = base64.b64encode(hashlib.sha256(SCROLL_JS.encode()).digest()).decode()
VIEWER_CSP = (f"default-src 'none'; script-src 'sha256-{_SCROLL_HASH}'; style-src 'unsafe-inline'; img-src 'self'; "
              "base-uri 'none'; form-action 'none'; frame-ancestors 'self'")


def view_page(view: View, text: str, kind: str, n_pages: int | None, page_url: str | None, original_url: str,
              label: str = "") -> str:
    """The viewer's HTML: header, the rendered page (PDF) and the marked text."""
    pages = ""
    if page_url and view.page:
        nav = []
        if view.page > 1:
            nav.append(f'<a href="?page={view.page - 1}">← p. {view.page - 1}</a>')
        if n_pages and view.page < n_pages:
            nav.append(f'<a href="?page={view.page + 1}">p. {view.page + 1} →</a>')
        pages = (f'<section class="mg-page"><div>page {view.page}{f" of {n_pages}" if n_pages else ""} '
                 f'{" · ".join(nav)}</div><img alt="page {view.page}" src="{html.escape(page_url)}"></section>')
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(view.name or view.doc_id)}</title>
<style>{PAGE_CSS}</style></head><body><header><strong>{html.escape(view.name or view.doc_id)}</strong>
{(" · " + html.escape(label)) if label else ""} · <a href="{html.escape(original_url)}">download the original</a>
<div class="legend"><span class="mg-support">supporting sentence</span>\
<span class="mg-child">the chunk that matched the question</span><span class="mg-passage">cited source</span></div>\
</header>
<main>{pages}<div class="mg-text">{marked_text(text, view)}</div></main>
<script>{SCROLL_JS}</script></body></html>"""

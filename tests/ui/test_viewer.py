"""The source viewer: signed links, the marked text around a passage, a PDF page rendered with its highlights, and
the routes (a bad or tampered link, a deleted document, the original served as a download)."""
from __future__ import annotations

import io

import httpx
import pytest

from ingest.jobs.queue import ingest_files
from services.viewer import View, ViewTokens, marked_text, render_pdf_page
from tests.ingest.test_layout import BODY
from tests.pdfgen import make_pdf


def test_tokens_round_trip_and_refuse_tampering_and_expiry():
    t = ViewTokens("secret")
    v = View("a.pdf", "ab" * 32, 10, 50, (20, 30), ((22, 28),), 2)
    tok = t.mint(v)
    got = t.check(tok)
    assert (got.doc_id, got.start, got.matched, got.support, got.page) == ("a.pdf", 10, (20, 30), ((22, 28),), 2)
    raw, sig = tok.split(".")
    with pytest.raises(ValueError, match="not valid"):
        t.check(raw[:-2] + "xx." + sig)
    with pytest.raises(ValueError, match="not valid"):
        ViewTokens("other secret").check(tok)
    old = ViewTokens("secret", ttl_s=-1).mint(v)
    with pytest.raises(ValueError, match="expired"):
        t.check(old)


def test_marked_text_marks_passage_child_and_support_and_escapes():
    text = "<b>Intro</b>. The fee is forty euros. It is paid at the gate. The end."
    s = text.index("The fee")
    e = text.index(" The end")
    v = View("d", "h", s, e, (s, text.index(" It is")), ((text.index("forty"), text.index("forty") + 12),))
    out = marked_text(text, v)
    assert "&lt;b&gt;Intro&lt;/b&gt;" in out
    assert '<mark class="mg-support">forty euros.</mark>' in out
    assert out.count('class="mg-child"') >= 1 and out.count('class="mg-passage"') >= 1


def _green_pixels(png: bytes) -> int:
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    return sum(1 for r, g, b in img.getdata() if g > 200 and r < 215 and b < 215 and g - r > 25)


def test_pdf_page_is_rendered_with_the_supporting_sentence_boxed():
    pdf = make_pdf(BODY, header="Harbour Authority Annual Report 2024")
    plain, n = render_pdf_page(pdf, 2, [])
    marked, _ = render_pdf_page(pdf, 2, [("Visiting yachts pay forty euros a night.", "support")])
    assert n == 4 and plain[:8] == b"\x89PNG\r\n\x1a\n"
    assert _green_pixels(plain) == 0 and _green_pixels(marked) > 500
    elsewhere, _ = render_pdf_page(pdf, 3, [("Visiting yachts pay forty euros a night.", "support")])
    assert _green_pixels(elsewhere) == 0  # not on page 3


def test_pdf_page_is_scaled_down_to_the_pixel_cap():
    from PIL import Image

    png, _ = render_pdf_page(make_pdf(BODY), 1, [], max_pixels=100_000)
    img = Image.open(io.BytesIO(png))
    assert img.width * img.height <= 100_000 and img.width >= 250  # Letter at 1.6 would be 979 x 1267


def test_viewer_routes(ui_server, tmp_path):
    from ingest.store.write import delete_document

    svc = ui_server.service
    p = tmp_path / "viewer-report.pdf"
    p.write_bytes(make_pdf(BODY, header="Harbour Authority Annual Report 2024", outline=[("Fees", 1)]))
    ingest_files(svc.ctx, [p])
    # scoped: the browser tests upload a copy of the same report (harbour-report.pdf) to this shared server, and an
    # unscoped search may return that copy's passages instead (a tie between identical texts)
    a = next(v for k, v in svc.ask("How much do visiting yachts pay a night?", backend="extractive",
                                   scope=["viewer-report.pdf"]) if k == "done")
    src = next(s for s in a.to_dict()["sources"] if s["doc_id"] == "viewer-report.pdf")
    link = svc.view_link(src, [(src["matched_start"], src["matched_end"])])
    page = httpx.get(f"{ui_server.url}/{link}")
    assert page.status_code == 200 and "viewer-report.pdf" in page.text and "page 2 of 4" in page.text
    img = httpx.get(f"{ui_server.url}/{link.replace('/view/', '/page/')}?page=2")
    assert img.status_code == 200 and img.headers["content-type"] == "image/png" and _green_pixels(img.content) > 100
    orig = httpx.get(f"{ui_server.url}/{link.replace('/view/', '/original/')}")
    assert orig.content == p.read_bytes() and "attachment" in orig.headers["content-disposition"]
    bad = httpx.get(f"{ui_server.url}/{link[:-3]}abc")
    assert bad.status_code == 403 and "not valid" in bad.text
    delete_document(svc.ctx, "viewer-report.pdf")
    gone = httpx.get(f"{ui_server.url}/{link}")
    assert gone.status_code == 404 and "no longer in the library" in gone.text  # the link was valid, the doc is gone


def test_the_original_of_a_document_with_a_non_latin1_name_downloads(ui_server, tmp_path):
    """RFC 6266/5987: ``filename*=UTF-8''…`` carries the name, ``filename="…"`` an ASCII stand-in for old clients."""
    from urllib.parse import unquote

    from ingest.store.write import delete_document

    svc = ui_server.service
    name = "naïve–résumé_日本.md"
    p = tmp_path / name
    p.write_text("# Résumé\n\nThe naïve ferry leaves at nine.\n", encoding="utf-8")
    ingest_files(svc.ctx, [p])
    try:
        row = next(r for r in svc.ctx.catalog.documents(None) if r["name"] == name)
        token = svc.view_tokens.mint(View(row["doc_id"], row["hash"], 0, 10))
        r = httpx.get(f"{ui_server.url}/mgrag/original/{token}")
        assert r.status_code == 200, r.text
        assert r.content == p.read_bytes()
        cd = r.headers["content-disposition"]
        assert cd.isascii() and cd.startswith("attachment; ")
        params = dict(part.strip().split("=", 1) for part in cd.split(";")[1:])
        assert params["filename*"].startswith("UTF-8''") and unquote(params["filename*"][7:]) == name
        fallback = params["filename"]
        assert fallback.startswith('"') and fallback.endswith('"') and fallback.endswith('.md"')
        assert '"' not in fallback[1:-1] and "\\" not in fallback
    finally:
        delete_document(svc.ctx, name)


def test_a_viewer_link_with_a_non_ascii_signature_is_refused_not_an_error(ui_server):
    raw = ui_server.service.view_tokens.mint(View("keeper.md", "ab" * 32, 0, 10)).split(".")[0]
    for route in ("view", "page", "original"):
        r = httpx.get(f"{ui_server.url}/mgrag/{route}/{raw}.sig-é日本")
        assert r.status_code == 403 and "not valid" in r.text, (route, r.status_code, r.text)
    with pytest.raises(ValueError, match="not valid"):
        ViewTokens("secret").check("e30.é")


def test_the_chat_and_the_viewer_highlight_in_the_same_colours():
    """Issue 21 (17): the supporting sentence was light green in the chat and another green in the viewer (and the
    matched chunk orange there, yellow in the chat)."""
    import re

    from services.viewer import COLORS, PAGE_CSS
    from ui.app import CSS

    def colour(css, selector):
        return re.search(re.escape(selector) + r" \{background: (#[0-9a-f]{6})", css).group(1)

    assert colour(CSS, ".mg-passage mark.mg-support") == colour(PAGE_CSS, "mark.mg-support")
    assert colour(CSS, ".mg-passage mark") == colour(PAGE_CSS, "mark.mg-child")  # the chunk that matched
    assert colour(CSS, ".mg-passage tr.mg-support") == colour(PAGE_CSS, "tr.mg-support")
    support = colour(PAGE_CSS, "mark.mg-support")
    assert COLORS["support"] == tuple(int(support[i:i + 2], 16) for i in (1, 3, 5))  # the page image's boxes

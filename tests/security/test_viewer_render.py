"""The viewer's page images: a PDF page of any size is rendered scaled down to a pixel cap, in a child process with a
memory cap and a time limit (never in the server), a few at a time (the rest get a "busy" answer), and a page
rendered once is served from a cache the second time."""
from __future__ import annotations

import io

import httpx
import pytest

from ingest.jobs.queue import ingest_files
from tests.pdfgen import pdf_from_objects

MAX_PIXELS = 4_000_000  # what a page image may hold (services.viewer.MAX_PAGE_PIXELS)


def huge_pdf(width: int = 7200, height: int = 7200, pages: int = 2) -> bytes:
    """A few-hundred-byte PDF whose pages are ``width`` x ``height`` points (7200 pt: 100 inches), each with a line
    of text."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for n in range(1, pages + 1):
        stream = b"BT /F1 48 Tf 200 %d Td (Page %d of the huge chart: the tide table of the outer harbour.) Tj ET" % (
            height - 300, n)
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents %d 0 R "
                    b"/Resources << /Font << /F1 3 0 R >> >> >>" % (width, height, len(objs)))
        kids.append(len(objs))
    objs[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), pages)
    return pdf_from_objects(objs)


@pytest.fixture(scope="module")
def huge_link(sec_server):
    """The viewer link of a source in the huge-page PDF (ingested into the shared library)."""

    svc = sec_server.service
    p = sec_server.root / "huge-chart.pdf"
    p.write_bytes(huge_pdf())
    ingest_files(svc.ctx, [p])
    a = next(v for k, v in svc.ask("What is on the huge chart of the outer harbour?", backend="extractive",
                                   scope=["huge-chart.pdf"]) if k == "done")
    src = next(s for s in a.to_dict()["sources"] if s["doc_id"] == "huge-chart.pdf")
    return svc.view_link(src, [(src["matched_start"], src["matched_end"])])


@pytest.fixture
def children(monkeypatch):
    """Every call of the sandbox (:func:`ingest.readers.sandbox.run_limited`): (target, memory_mb, timeout_s)."""
    import ingest.readers.sandbox

    calls, real = [], ingest.readers.sandbox.run_limited

    def spy(target, args, **kw):
        calls.append((target, kw["memory_mb"], kw["timeout_s"]))
        return real(target, args, **kw)

    monkeypatch.setattr(ingest.readers.sandbox, "run_limited", spy)
    return calls


def test_a_huge_pdf_page_is_rendered_under_the_pixel_cap_in_a_capped_child_and_cached(sec_server, huge_link,
                                                                                     children):
    from PIL import Image

    url = f"{sec_server.url}/{huge_link.replace('/view/', '/page/')}?page=1"
    r = httpx.get(url, timeout=120)
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    img = Image.open(io.BytesIO(r.content))
    assert img.width * img.height <= MAX_PIXELS  # 7200 pt at the display scale would be 11,520 px square
    assert img.width >= 1500  # scaled down to the cap, not to a thumbnail
    renders = [c for c in children if c[0].startswith("services.viewer:")]
    assert len(renders) == 1  # rendered in a child process, with a memory cap and a time limit
    _, memory_mb, timeout_s = renders[0]
    assert 0 < memory_mb <= 2048 and 0 < timeout_s <= 120
    again = httpx.get(url, timeout=120)
    assert again.status_code == 200 and again.content == r.content
    assert len([c for c in children if c[0].startswith("services.viewer:")]) == 1  # the second one came from the cache


def test_renders_past_the_concurrency_limit_are_told_the_server_is_busy(sec_server, huge_link, monkeypatch):
    renderer = sec_server.service.page_renderer
    monkeypatch.setattr(renderer, "wait_s", 0.2)
    held = 0
    while renderer.slots.acquire(blocking=False):  # every render slot taken, as by slow renders in flight
        held += 1
    try:
        assert held == renderer.at_once >= 1
        r = httpx.get(f"{sec_server.url}/{huge_link.replace('/view/', '/page/')}?page=2", timeout=60)
    finally:
        for _ in range(held):
            renderer.slots.release()
    assert r.status_code == 503 and "busy" in r.text and "Retry-After" in r.headers
    ok = httpx.get(f"{sec_server.url}/{huge_link.replace('/view/', '/page/')}?page=2", timeout=120)
    assert ok.status_code == 200 and ok.headers["content-type"] == "image/png"

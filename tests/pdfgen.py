"""Multi-page PDFs with a real text layer, written by hand (no PDF library needed to make them; pypdf adds the
outline): each page may have a running header and footer, body lines, and a bookmark."""
from __future__ import annotations

import io


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]], header: str | None = None, footer: str | None = "Page {n} of {total}",
             outline: list[tuple[str, int]] | None = None) -> bytes:
    """A Letter-size PDF: ``pages`` of body lines; ``header``/``footer`` (``{n}``, ``{total}`` filled in) at the top
    and bottom of every page; ``outline`` bookmarks as (title, 0-based page index)."""
    total = len(pages)
    objs: list[bytes] = [b"", b""]  # 1 catalog, 2 pages tree: filled in below
    font_id = 3
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for n, lines in enumerate(pages, 1):
        ops = []
        if header:
            ops.append(f"BT /F1 9 Tf 72 760 Td ({_esc(header.format(n=n, total=total))}) Tj ET")
        body = " ".join(f"({_esc(ln)}) Tj T*" for ln in lines)
        ops.append(f"BT /F1 11 Tf 72 720 Td 15 TL {body} ET")
        if footer:
            ops.append(f"BT /F1 9 Tf 280 40 Td ({_esc(footer.format(n=n, total=total))}) Tj ET")
        stream = "\n".join(ops).encode("latin-1")
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        content_id = len(objs)
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                    b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (content_id, font_id))
        kids.append(len(objs))
    objs[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objs[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), total)
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    data = bytes(out)
    if not outline:
        return data
    from pypdf import PdfReader, PdfWriter

    w = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    for title, page in outline:
        w.add_outline_item(title, page)
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()

"""Multi-page PDFs with a real text layer, written by hand (no PDF library needed to make them; pypdf adds the
outline): each page may have a running header and footer, body lines, and a bookmark."""
from __future__ import annotations

import io


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def table_ops(rows: list[list[str]], x: float = 72, top: float = 500, widths: tuple[float, ...] = (200, 100, 100),
              row_h: float = 18) -> str:
    """PDF drawing operators of a ruled table (every cell boxed, as filings print them) with ``rows`` of text,
    its top-left corner at (``x``, ``top``)."""
    ops = ["0.5 w"]
    for i, row in enumerate(rows):
        y = top - (i + 1) * row_h
        cx = x
        for j, cell in enumerate(row):
            w = widths[j]
            ops.append(f"{cx} {y} {w} {row_h} re S")
            if cell:
                ops.append(f"BT /F1 10 Tf {cx + 4} {y + 5} Td ({_esc(cell)}) Tj ET")
            cx += w
    return "\n".join(ops)


def pdf_from_objects(objs: list[bytes]) -> bytes:
    """A PDF file of the objects ``objs`` (object 1 the catalog), with its cross-reference table and trailer."""
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, o in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def make_pdf(pages: list[list[str]], header: str | None = None, footer: str | None = "Page {n} of {total}",
             outline: list[tuple[str, int]] | None = None, extra: dict[int, str] | None = None,
             headings: dict[int, str] | None = None) -> bytes:
    """A Letter-size PDF: ``pages`` of body lines; ``header``/``footer`` (``{n}``, ``{total}`` filled in) at the top
    and bottom of every page; ``outline`` bookmarks as (title, 0-based page index); ``extra`` drawing operators per
    0-based page (e.g. :func:`table_ops`); ``headings`` a bold 16-pt line at the top of a page's body."""
    total = len(pages)
    objs: list[bytes] = [b"", b""]  # 1 catalog, 2 pages tree: filled in below
    font_id = 3
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold >>")
    kids = []
    for n, lines in enumerate(pages, 1):
        ops = []
        if header:
            ops.append(f"BT /F1 9 Tf 72 760 Td ({_esc(header.format(n=n, total=total))}) Tj ET")
        if headings and n - 1 in headings:
            ops.append(f"BT /F2 16 Tf 72 745 Td ({_esc(headings[n - 1])}) Tj ET")
        body = " ".join(f"({_esc(ln)}) Tj T*" for ln in lines)
        ops.append(f"BT /F1 11 Tf 72 720 Td 15 TL {body} ET")
        if extra and n - 1 in extra:
            ops.append(extra[n - 1])
        if footer:
            ops.append(f"BT /F1 9 Tf 280 40 Td ({_esc(footer.format(n=n, total=total))}) Tj ET")
        stream = "\n".join(ops).encode("latin-1")
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        content_id = len(objs)
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                    b"/Resources << /Font << /F1 %d 0 R /F2 %d 0 R >> >> >>" % (content_id, font_id, font_id + 1))
        kids.append(len(objs))
    objs[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objs[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), total)
    data = pdf_from_objects(objs)
    if not outline:
        return data
    from pypdf import PdfReader, PdfWriter

    w = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    for title, page in outline:
        w.add_outline_item(title, page)
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()

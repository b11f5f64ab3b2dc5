"""Builders of the issue-46 answers corpus, one module per kind of document (``build(out_dir, mirrors)``)."""

import io
import re
import zipfile


def fixed_zip(data: bytes) -> bytes:
    """python-docx, openpyxl and python-pptx stamp the save time into docProps/core.xml: rewrite the package with
    fixed times, so that a rebuild gives the same bytes."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            raw = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                raw = re.sub(rb"(<dcterms:(created|modified)[^>]*>)[^<]*", rb"\g<1>2024-01-01T00:00:00Z", raw)
            z.writestr(zipfile.ZipInfo(info.filename, date_time=(2024, 1, 1, 0, 0, 0)), raw,
                       compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()

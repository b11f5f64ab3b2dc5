"""OCR of page images, offline: RapidOCR (a dependency; its ONNX models ship in the wheel, so OCR works from the
first run with nothing else installed) or Debian's ``tesseract`` (``apt-get install tesseract-ocr
tesseract-ocr-eng``). RapidOCR is the default by measurement (BENCHMARKS.md "OCR"): on rendered pages of real
filings it keeps 91% of the words in reading order against tesseract's 79% (97.6% vs 96.3% recognised in any
order), at 2.6× tesseract's time per page; tesseract is the faster choice for plain single-column scans.

Only pages without a text layer are read this way (scanned PDF pages, images); the extractor calls :func:`ocr_lines`
in its sandboxed child, under its time limit. RapidOCR's models and its detector's feature maps take about 1.4 GB
of address space for a letter page (BENCHMARKS.md "OCR"): while it reads a page the child may use
:data:`ingest.readers.sandbox.OCR_ALLOWANCE_MB` more than the file's cap
(:func:`ingest.readers.sandbox.ocr_allowance`). That memory
is bounded by construction (RapidOCR scales a page to at most 2000 px on its long side before detecting), so it
is no opening for a decompression bomb: parsing the file stays under the cap.

The engine is the ``ocr_engine`` setting: ``auto`` (RapidOCR when it is installed, else tesseract when it is, else
none), ``rapidocr``, ``tesseract`` or ``none`` (a page without text is then refused with a message that says how to
get OCR).
"""
from __future__ import annotations

import functools
import io
import logging
import os
import shutil
import subprocess
import tempfile

from ingest.readers.sandbox import ocr_allowance

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): rapidocr, numpy, PIL,
# onnxruntime

ENGINES = ("auto", "tesseract", "rapidocr", "none")
OCR_DPI = 300  # tesseract's recommended resolution; also fine for RapidOCR
MAX_PIXELS = 40_000_000  # a page rendered larger than this is scaled down (a 7200-pt page would be 900 Mpx)


class OcrUnavailable(RuntimeError):
    """No OCR engine is installed (or the configured one is missing): the message says how to install one."""


def tesseract_path() -> str | None:
    return shutil.which("tesseract")


@functools.lru_cache(maxsize=1)
def _rapidocr_installed() -> bool:
    try:
        import onnxruntime  # noqa: F401
        import rapidocr  # noqa: F401
    except Exception:
        return False
    return True


def resolve_engine(engine: str | None = None) -> str:
    """The engine that will run for ``engine`` (default: ``MGRAG_OCR_ENGINE`` or ``auto``): ``tesseract``,
    ``rapidocr`` or ``none``."""
    engine = (engine or os.environ.get("MGRAG_OCR_ENGINE") or "auto").lower()
    if engine not in ENGINES:
        raise ValueError(f"unknown OCR engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if engine == "auto":
        if _rapidocr_installed():
            return "rapidocr"
        return "tesseract" if tesseract_path() else "none"
    if engine == "tesseract" and not tesseract_path():
        raise OcrUnavailable("OCR engine 'tesseract' is not installed; `apt-get install tesseract-ocr "
                             "tesseract-ocr-eng` (or set MGRAG_OCR_ENGINE=rapidocr)")
    if engine == "rapidocr" and not _rapidocr_installed():
        raise OcrUnavailable("OCR engine 'rapidocr' is not installed; `pip install rapidocr onnxruntime`")
    return engine


HOW_TO_GET_OCR = ("no OCR engine is installed; `apt-get install tesseract-ocr tesseract-ocr-eng` "
                  "(or `pip install rapidocr onnxruntime`) and ingest it again")


def fit_image(img):
    """``img`` scaled down to at most :data:`MAX_PIXELS` pixels (a huge page or image costs bounded memory)."""
    w, h = img.size
    if w * h <= MAX_PIXELS:
        return img
    scale = (MAX_PIXELS / (w * h)) ** 0.5
    return img.resize((max(1, int(w * scale)), max(1, int(h * scale))))


def _tesseract(img, lang: str = "eng", timeout_s: float = 120.0) -> list[str]:
    exe = tesseract_path()
    if not exe:
        raise OcrUnavailable(HOW_TO_GET_OCR)
    with tempfile.TemporaryDirectory(prefix="mgrag-ocr-") as tmp:
        path = os.path.join(tmp, "page.png")
        img.save(path)
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}  # one page per core; extraction runs pages in children
        out = subprocess.run([exe, path, "stdout", "-l", lang, "--psm", "3"], capture_output=True, timeout=timeout_s,
                             env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"tesseract failed: {out.stderr.decode(errors='replace')[:200]}")
    return [ln.rstrip() for ln in out.stdout.decode("utf-8", errors="replace").splitlines()]


@functools.lru_cache(maxsize=1)
def _rapid_engine():
    from rapidocr import RapidOCR

    logging.getLogger("RapidOCR").setLevel(logging.WARNING)  # it logs every model file it opens at INFO
    # one thread: extraction runs in a child per file beside other work, and ONNX Runtime's pool of one thread per
    # core adds address space with every core (a many-core machine ran out of the child's cap)
    return RapidOCR(params={"EngineConfig.onnxruntime.intra_op_num_threads": 1,
                            "EngineConfig.onnxruntime.inter_op_num_threads": 1})


def _rapidocr(img) -> list[str]:
    import numpy as np

    res = _rapid_engine()(np.asarray(img.convert("RGB")))
    boxes, txts = getattr(res, "boxes", None), getattr(res, "txts", None)
    if boxes is None or not txts:
        return []
    # boxes: 4 corner points per text piece; group pieces into lines by their vertical centre, left to right
    items = sorted(((float(b[:, 1].mean()), float(b[:, 0].min()), float(b[:, 1].max() - b[:, 1].min()), t)
                    for b, t in zip(np.asarray(boxes), txts)), key=lambda x: x[0])
    lines: list[list[tuple[float, float, float, str]]] = []
    for it in items:
        if lines and abs(it[0] - lines[-1][0][0]) < 0.5 * max(it[2], lines[-1][0][2]):
            lines[-1].append(it)
        else:
            lines.append([it])
    return [" ".join(t for _, _, _, t in sorted(ln, key=lambda x: x[1])) for ln in lines]


def ocr_lines(img, engine: str | None = None) -> list[str]:
    """The text lines of a page image (a PIL image), read by ``engine`` (:func:`resolve_engine`)."""
    eng = resolve_engine(engine)
    if eng == "none":
        raise OcrUnavailable(HOW_TO_GET_OCR)

    img = fit_image(img)
    if img.mode not in ("RGB", "L"):
        img = img.convert("RGB")
    if eng == "tesseract":
        return _tesseract(img)
    with ocr_allowance():  # the engine's models and a bounded image: memory beyond the file's own cap (sandbox.py)
        return _rapidocr(img)


def image_pages(data: bytes, max_pages: int = 200):
    """The frames of an image file (PNG, JPEG, a multi-page TIFF) as PIL images, at most ``max_pages``."""
    from PIL import Image, ImageSequence

    Image.MAX_IMAGE_PIXELS = 200_000_000  # refuse decompression bombs beyond this (PIL raises)
    im = Image.open(io.BytesIO(data))
    out = []
    for i, frame in enumerate(ImageSequence.Iterator(im)):
        if i >= max_pages:
            break
        out.append(fit_image(frame.copy()))
    return out

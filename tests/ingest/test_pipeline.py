"""Ingestion end to end on embedded Qdrant (tiny LM, fake embedder): idempotence, versions, deletion,
atomic re-ingestion, rollback, and one test per kind of bad input."""
import io

import pytest

from ingest.jobs.queue import ingest_files, ingest_now
from ingest.jobs.rebuild import reingest
from ingest.store.write import delete_document
from tests.pdfgen import pdf_from_objects

GOOD = ("The cat sat on the mat. It was a sunny day.\n\nDogs bark at night. Birds sing in the morning! "
        "Qdrant stores vectors for every chunk. Chunks have parents and children.\n\n") * 6


def counts(ctx):
    live = ctx.catalog.live_generation()
    return [ctx.index.count(live.gen, lv) for lv in range(live.n_levels)]


def statuses(report):
    return {r.name: (r.status, r.message) for r in report.results}


def test_ingest_twice_changes_nothing(make_ctx, write):
    ctx = make_ctx(theta=40)
    paths = [write("a.txt", GOOD), write("b.md", GOOD.replace("cat", "dog"))]
    r1 = ingest_files(ctx, paths)
    assert [r.status for r in r1.results] == ["ingested", "ingested"]
    before = counts(ctx)
    assert all(n > 0 for n in before) and len(before) == 3
    r2 = ingest_files(ctx, paths)
    assert [r.status for r in r2.results] == ["duplicate", "duplicate"]
    assert counts(ctx) == before
    # the catalog's chunk rows match the points, and every child's parent exists
    live = ctx.catalog.live_generation()
    ids = ctx.catalog.chunk_ids(live.gen, "a.txt")
    assert sum(len(v) for v in ids.values()) * 2 == sum(before)
    parents = {p.id for p in ctx.index.points(live.gen, 0)}
    for lv in (1, 2):
        for p in ctx.index.points(live.gen, lv):
            assert p.payload["parent_id"] in parents


def test_changed_file_becomes_new_version_and_replaces_chunks(make_ctx, write):
    ctx = make_ctx(theta=40)
    p = write("a.txt", GOOD)
    ingest_files(ctx, [p])
    n1 = counts(ctx)
    p.write_text("A completely different short text. Only two sentences.", encoding="utf-8")
    r = ingest_files(ctx, [p])
    assert r.results[0].status == "updated"
    assert counts(ctx) == [1, 1, 1] != n1
    docs = ctx.catalog.documents(ctx.catalog.live_generation().gen)
    assert docs[0]["version"] == 2


def test_delete_document(make_ctx, write):
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("a.txt", GOOD), write("b.txt", "Just one sentence here.")])
    assert delete_document(ctx, "a.txt") == "a.txt"
    assert counts(ctx) == [1, 1, 1]
    with pytest.raises(ValueError, match="no document matches 'zzz'"):
        delete_document(ctx, "zzz")


def test_reingest_switches_atomically(make_ctx, write):
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("a.txt", GOOD)])
    g1 = ctx.catalog.live_generation()
    r = reingest(ctx, chunker="recursive", theta=20)
    assert not r.failed
    g2 = ctx.catalog.live_generation()
    assert g2.gen == g1.gen + 1 and g2.chunker == "recursive" and g2.n_levels == 1
    assert ctx.index.generations() == {g2.gen} and ctx.index.levels(g2.gen) == [0]  # old generation dropped
    # and back to three levels
    reingest(ctx, chunker="mg", theta=40)
    assert len(counts(ctx)) == 3


def test_failed_reingest_leaves_live_index_whole_and_searchable(make_ctx, write):
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("a.txt", GOOD), write("b.txt", GOOD.replace("cat", "cow"))])
    g1, before = ctx.catalog.live_generation(), counts(ctx)

    def boom(doc_id):
        if doc_id == "b.txt":
            raise RuntimeError("disk on fire")

    r = reingest(ctx, chunker="recursive", theta=20, _fail_hook=boom)
    assert [x.status for x in r.results] == ["ingested", "failed"]
    assert ctx.catalog.live_generation().gen == g1.gen
    assert counts(ctx) == before
    assert ctx.index.generations() == {g1.gen}
    hits = ctx.index.search(0, ctx.embedder.embed_queries(["cow"])[0], 3)
    assert hits and any("cow" in h.payload["text"] for h in hits)


def test_write_failure_rolls_back(make_ctx, write, monkeypatch):
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("a.txt", GOOD)])
    before = counts(ctx)
    real = ctx.catalog.record_indexed

    def fail(*a, **k):
        raise OSError("catalog disk full")

    monkeypatch.setattr(ctx.catalog, "record_indexed", fail)
    r = ingest_files(ctx, [write("b.txt", GOOD.replace("cat", "owl"))])
    assert r.results[0].status == "failed" and "catalog disk full" in r.results[0].message
    assert counts(ctx) == before  # the points of b.txt written before the failure were removed
    monkeypatch.setattr(ctx.catalog, "record_indexed", real)


# ---- bad input: one test each; every batch also carries a good file that must still be ingested ----

def run_batch(ctx, write, name, content):
    good = write("good.txt", GOOD)
    bad = write(name, content)
    report = ingest_files(ctx, [bad, good])
    st = statuses(report)
    assert st["good.txt"][0] == "ingested"
    return st[name]


def test_empty_file(make_ctx, write):
    assert run_batch(make_ctx(theta=40), write, "empty.txt", b"") == ("failed", "is empty; nothing to ingest")


def test_binary_file(make_ctx, write):
    status, msg = run_batch(make_ctx(theta=40), write, "blob.txt", bytes(range(256)) * 10)
    assert status == "failed" and "binary" in msg


def test_unsupported_type(make_ctx, write):
    status, msg = run_batch(make_ctx(theta=40), write, "setup.exe", b"MZ\x90\x00....")
    assert status == "failed" and "unsupported file type '.exe'" in msg


def test_a_corrupt_image_is_refused_by_name(make_ctx, write):
    status, msg = run_batch(make_ctx(theta=40), write, "photo.png", b"\x89PNG....")
    assert status == "failed" and "not a readable image" in msg and "BytesIO" not in msg


def test_non_utf8_text_is_decoded_with_warning(make_ctx, write):
    status, msg = run_batch(make_ctx(theta=40), write, "latin.txt", "Café crème brûlée. Très bon.".encode("cp1252"))
    assert status == "ingested" and "not valid UTF-8" in msg and "cp1252" in msg


def test_a_text_marked_utf16_or_utf32_is_read_as_marked_even_when_cut_short(make_ctx, write, tmp_path):
    """A byte-order mark names the encoding: UTF-32's marks (FF FE 00 00) are read before UTF-16's they begin with, so
    a letter beyond U+FFFF comes out whole; a UTF-16 file cut mid-character is read with the piece that is not text
    replaced and counted, never "UnicodeDecodeError … (gave up after 3 attempts)"."""
    from ingest.readers.base import decode_text

    body = "The observation \U0001d466 was recorded at noon. The harbour stayed calm all day."
    assert decode_text("a.txt", b"\xff\xfe\x00\x00" + body.encode("utf-32-le")) == (body, "")
    status, msg = run_batch(make_ctx(theta=40), write, "wide.txt", b"\xff\xfe\x00\x00" + body.encode("utf-32-le"))
    assert status == "ingested" and "control" not in msg
    cut = b"\xff\xfe" + body.encode("utf-16-le") + b"\n"  # a newline of one byte: half a UTF-16 character
    status, msg = run_batch(make_ctx(theta=40, data_dir=tmp_path / "second"), write, "cut.txt", cut)
    assert status == "ingested" and "1 undecodable piece(s) of its UTF-16-LE" in msg and "Error" not in msg


def _blank_pdf() -> bytes:
    from pypdf import PdfWriter

    w = PdfWriter()
    w.add_blank_page(width=200, height=200)
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def _text_pdf(text: str) -> bytes:
    """A one-page PDF with a real text layer, written by hand (no PDF library needed)."""
    stream = f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode()
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 200] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    return pdf_from_objects(objs)


def test_pdf_without_text_layer(make_ctx, write):
    status, msg = run_batch(make_ctx(theta=40), write, "scan.pdf", _blank_pdf())
    assert status == "failed" and "no text layer" in msg and "OCR" in msg


def test_pdf_docx_html_with_text(make_ctx, write):
    import docx

    d = docx.Document()
    d.add_paragraph("Docx paragraph one. It has two sentences.")
    buf = io.BytesIO()
    d.save(buf)
    ctx = make_ctx(theta=40)
    report = ingest_files(ctx, [
        write("t.pdf", _text_pdf("Hello from a PDF. Second sentence.")),
        write("t.docx", buf.getvalue()),
        write("t.html", "<html><head><script>var x;</script></head><body><h1>Title</h1>"
                        "<p>Html paragraph here.</p></body></html>"),
    ])
    assert [r.status for r in report.results] == ["ingested"] * 3
    assert all(r.seconds > 0 for r in report.results)  # each file's work, as the catalog keeps it (it read 0.0)
    texts = {p.payload["doc_id"]: p.payload["text"] for p in ctx.index.points(ctx.catalog.live_gen(), 0)}
    assert "Hello from a PDF" in texts["t.pdf"]
    assert "Docx paragraph one" in texts["t.docx"]
    assert "Html paragraph here." in texts["t.html"] and "var x" not in texts["t.html"]


def test_oversized_file(make_ctx, write):
    ctx = make_ctx(theta=40, max_file_mb=20)
    status, msg = run_batch(ctx, write, "huge.txt", b"word " * (10 * 2**20))  # 50 MB
    assert status == "failed" and "50.0 MB, over the limit of 20 MB" in msg and "MGRAG_MAX_FILE_MB" in msg


def test_no_punctuation(make_ctx, write):
    ctx = make_ctx(theta=40)
    assert run_batch(ctx, write, "flat.txt", " ".join(["word"] * 500))[0] == "ingested"
    live = ctx.catalog.live_generation()
    rows = ctx.catalog.documents(live.gen)
    assert next(r for r in rows if r["doc_id"] == "flat.txt")["n_l0"] >= 13  # 500 words, at most 40 a parent


def test_single_10000_word_sentence(make_ctx, write):
    ctx = make_ctx(theta=300)
    text = " ".join(f"w{i}" for i in range(10_000)) + "."
    assert run_batch(ctx, write, "long.txt", text)[0] == "ingested"
    pts = list(ctx.index.points(ctx.catalog.live_gen(), 0))
    mine = [p for p in pts if p.payload["doc_id"] == "long.txt"]
    assert all(len(p.payload["text"].split()) <= 300 for p in mine)
    assert sum(len(p.payload["text"].split()) for p in mine) == 10_000


def test_cjk_text(make_ctx, write):
    ctx = make_ctx(theta=40)
    text = "这是第一句。这是第二句！我们在测试中文。" * 20
    assert run_batch(ctx, write, "zh.txt", text)[0] == "ingested"
    pts = [p for p in ctx.index.points(ctx.catalog.live_gen(), 0) if p.payload["doc_id"] == "zh.txt"]
    assert len(pts) > 1 and all(text[p.payload["start"]:p.payload["end"]] == p.payload["text"] for p in pts)


def test_duplicate_upload_under_another_name(make_ctx, write):
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("orig.txt", GOOD)])
    before = counts(ctx)
    report = ingest_now(ctx, [("copy.txt", GOOD.encode())])
    assert report.results[0].status == "duplicate" and "same content as 'orig.txt'" in report.results[0].message
    assert counts(ctx) == before


def test_missing_path(make_ctx, tmp_path):
    report = ingest_files(make_ctx(theta=40), [tmp_path / "nope.txt"])
    assert report.results[0].status == "failed" and "no such file" in report.results[0].message


def test_document_with_its_own_theta_keeps_it_through_an_update(make_ctx, write):
    ctx = make_ctx(chunker="mg", theta=40)
    ingest_files(ctx, [write("a.txt", GOOD),
                       write("b.txt", GOOD + "\n\nAnd one more paragraph, so that the content differs.")])
    r = reingest(ctx, chunker="recursive", theta=12, only=["a.txt"])  # one level in a three-level index is allowed
    assert {x.name: x.status for x in r.results} == {"a.txt": "ingested", "b.txt": "copied"}
    gen = ctx.catalog.live_generation().gen
    own = ctx.catalog.chunking(gen, "a.txt")
    assert own["chunker"] == "recursive" and own["theta"] == 12
    assert set(ctx.catalog.chunk_ids(gen, "a.txt")) == {0}
    assert set(ctx.catalog.chunk_ids(gen, "b.txt")) == {0, 1, 2}
    r = ingest_files(ctx, [write("a.txt", GOOD + "\n\nA new closing paragraph about the tide tables.")])
    assert [x.status for x in r.results] == ["updated"]
    assert ctx.catalog.chunking(gen, "a.txt") == own  # the new version is cut the same way
    assert set(ctx.catalog.chunk_ids(gen, "a.txt")) == {0}


def test_failed_selected_reingest_leaves_live_index_whole(make_ctx, write):
    ctx = make_ctx(chunker="mg", theta=40)
    ingest_files(ctx, [write("a.txt", GOOD), write("b.txt", GOOD.replace("cat", "cow"))])
    g1, before = ctx.catalog.live_generation(), counts(ctx)
    ids_before = {d: ctx.catalog.chunk_ids(g1.gen, d) for d in ("a.txt", "b.txt")}

    def boom(doc_id):
        if doc_id == "b.txt":  # b is only being copied: a failure there must not switch either
            raise RuntimeError("disk on fire")

    r = reingest(ctx, theta=12, only=["a.txt"], _fail_hook=boom)
    assert {x.name: x.status for x in r.results} == {"a.txt": "ingested", "b.txt": "failed"}
    assert ctx.catalog.live_generation().gen == g1.gen and counts(ctx) == before
    assert {d: ctx.catalog.chunk_ids(g1.gen, d) for d in ("a.txt", "b.txt")} == ids_before
    assert ctx.catalog.chunking(g1.gen, "a.txt") is None
    assert ctx.index.generations() == {g1.gen}
    with pytest.raises(ValueError, match="no such documents: zzz"):
        reingest(ctx, theta=12, only=["zzz"])
    assert ctx.catalog.live_generation().gen == g1.gen

"""A PDF whose formulas use letters outside the Basic Multilingual Plane (𝑦, U+1D466) is read, ingested and
searched: pdfium hands each such letter as two UTF-16 halves, which no tokenizer, SQLite or JSON accepts; a newcomer's
59-page FHWA report failed with "TypeError: TextEncodeInput must be Union[…]" after three attempts. A question holding
a lone half (sent as JSON, "\\ud835") is embedded too."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ingest.readers.base import clean_text
from ingest.readers.loaders import Limits, load_bytes

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pdf" / "fhwa_imrcp_formula_page.pdf"
HALVES = re.compile("[\ud800-\udfff]")


def test_the_formula_letters_come_out_whole_and_nothing_holds_a_half():
    doc = load_bytes(FIXTURE.name, FIXTURE.read_bytes(), limits=Limits())
    assert "\U0001d466" in doc.text  # 𝑦: the pair joined into the letter it encodes
    assert not HALVES.search(doc.text)
    doc.text.encode("utf-8")  # what SQLite and the tokenizer need
    assert clean_text("a \udc66 b")[0] == "a \ufffd b"  # a lone half: the replacement character


def test_the_page_is_ingested_and_found(make_ctx, tmp_path):
    from ingest.jobs.queue import ingest_files

    ctx = make_ctx()
    path = tmp_path / FIXTURE.name
    path.write_bytes(FIXTURE.read_bytes())
    report = ingest_files(ctx, [path])
    assert [r.status for r in report.results] == ["ingested"], report
    assert ctx.catalog.documents(ctx.catalog.live_gen())


@pytest.mark.integration
def test_minilm_embeds_a_text_holding_a_lone_half():
    from ingest.embed import load_embedder

    emb = load_embedder("all-MiniLM-L6-v2")
    q = emb.embed_queries(["what is \ud835 the lead time"])
    p = emb.embed_passages(["the observation \ud835\udc66 at time t"])
    late = emb.embed_spans(["ab \ud835 cd ef"], [[(0, 6)]])
    assert q.shape == (1, emb.dim) and p.shape == (1, emb.dim) and late[0].shape == (1, emb.dim)

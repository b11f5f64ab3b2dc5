"""Integration: the shipped Gemma-3-270M and MiniLM with embedded Qdrant in a temp dir."""
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from cli.main import main
from ingest.jobs.queue import document_states, ingest_files
from ingest.text.boundary import boundary_probs
from ingest.text.sentences import split_sentences

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


@pytest.fixture(scope="module")
def real_ctx(tmp_path_factory):
    from app.context import AppContext
    from core.settings import Settings

    ctx = AppContext(Settings(data_dir=tmp_path_factory.mktemp("data"), chunker="lgmgc"))  # the shipped Gemma's path
    yield ctx
    ctx.close()


@pytest.fixture(scope="module")
def default_ctx(tmp_path_factory):
    """The shipped settings as they are: the default chunker (MG) with the shipped MiniLM."""
    from app.context import AppContext
    from core.settings import Settings

    ctx = AppContext(Settings(data_dir=tmp_path_factory.mktemp("default")))
    assert ctx.settings.chunker == Settings.model_fields["chunker"].default == "mg"
    yield ctx
    ctx.close()


def test_gemma_one_pass_equals_per_prefix(real_ctx):
    from ingest.text.lm import LogitsScorer

    sc = LogitsScorer(real_ctx.scorer.tokenizer, real_ctx.scorer.model, boundary_tokens=("\n\n", "<eos>"))
    text = (SAMPLES / "field_notes.md").read_text(encoding="utf-8")[:1200]
    sents = split_sentences(text)[:6]
    doc = sc.tokenize(text, sents)
    got = sc.window_probs(doc, 0, len(sents))
    want = []
    for k in range(len(sents)):
        ids, _ = sc.window_ids(doc, 0, k + 1)
        with torch.no_grad():
            logits = sc.model(torch.tensor([ids])).logits[0, -1].float().numpy()
        want.append(boundary_probs(logits[None], sc.boundary_ids)[0])
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=1e-6)
    assert got.max() > 0.05  # "\n\n" is a strong signal for Gemma base at a paragraph end


@pytest.mark.parametrize("which, chunker", [("default_ctx", "mg"), ("real_ctx", "lgmgc")])
def test_ingest_samples_twice_and_ask(which, chunker, request):
    """The samples through the queue, end to end on the shipped models: with the default chunker (MG, one phase)
    and with LGMGC (the shipped Gemma, refined to the end)."""
    from retrieval.search import retrieve

    real_ctx = request.getfixturevalue(which)
    r1 = ingest_files(real_ctx, [SAMPLES])
    assert [r.status for r in r1.results] == ["ingested", "ingested"], r1.results
    live = real_ctx.catalog.live_generation()
    assert (live.chunker, live.theta, live.n_levels) == (chunker, 300, 3)
    assert [(d["doc_id"], d["state"], d["phase"]) for d in document_states(real_ctx)] == [
        ("field_notes.md", "ready", None), ("mgrag_overview.md", "ready", None)]  # refined, where there is a phase 2
    counts = [real_ctx.index.count(live.gen, lv) for lv in range(3)]
    assert counts[0] < counts[1] < counts[2]
    by_name = {p.name: p.read_text(encoding="utf-8") for p in SAMPLES.iterdir()}
    parents = {p.id: p.payload for p in real_ctx.index.points(live.gen, 0)}
    for lv in (1, 2):
        for p in real_ctx.index.points(live.gen, lv):
            pl = p.payload
            par = parents[pl["parent_id"]]
            assert par["start"] <= pl["start"] < pl["end"] <= par["end"]
            assert by_name[pl["doc_id"]][pl["start"]:pl["end"]] == pl["text"]
    r2 = ingest_files(real_ctx, [SAMPLES])
    assert [r.status for r in r2.results] == ["duplicate", "duplicate"]
    assert [real_ctx.index.count(live.gen, lv) for lv in range(3)] == counts
    res = retrieve(real_ctx, "How long has the lighthouse keeper tended the light?")
    assert res.sources[0].doc_id == "field_notes.md" and "twenty-two years" in res.sources[0].text


def test_cli_default_chunker_is_one_phase(tmp_path, capsys):
    """The default chunker (MG, no LM: BENCHMARKS.md "Comparable level scores") has one phase: `mgrag ingest`
    returns with the document ready, nothing is left to refine, and an answer's citation is not a first pass."""
    data = str(tmp_path / "d")
    assert main(["--data-dir", data, "ingest", "--quiet", str(SAMPLES / "mgrag_overview.md")]) == 0
    assert "1 ready" in capsys.readouterr().out
    assert main(["--data-dir", data, "docs", "--json"]) == 0
    docs = json.loads(capsys.readouterr().out)["documents"]
    assert [(d["doc_id"], d["state"], d["phase"]) for d in docs] == [("mgrag_overview.md", "ready", None)]
    assert main(["--data-dir", data, "ask", "--json", "--backend", "extractive",
                 "What is the context budget in words?"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "1500" in out["citations"][0]["parent_text"] and not out["citations"][0]["first_pass"]
    assert main(["--data-dir", data, "docs"]) == 0
    assert "chunker=mg theta=300" in capsys.readouterr().out


def test_cli_ingest_docs_ask_json(tmp_path, capsys, monkeypatch):
    """LGMGC (opt-in, the shipped Gemma) in two phases: `mgrag ingest --wait searchable` returns once the document
    is searchable (its MG first pass), an answer cites it as a first pass; `--wait ready` (the default) runs the
    refinements."""
    monkeypatch.setenv("MGRAG_CHUNKER", "lgmgc")
    data = str(tmp_path / "d")
    assert main(["--data-dir", data, "ingest", "--quiet", "--wait", "searchable",
                 str(SAMPLES / "mgrag_overview.md")]) == 0
    assert "0 ready, 1 searchable (refinement pending)" in capsys.readouterr().out
    assert main(["--data-dir", data, "docs", "--json"]) == 0
    docs = json.loads(capsys.readouterr().out)["documents"]
    assert docs[0]["doc_id"] == "mgrag_overview.md" and docs[0]["n_l0"] >= 1
    assert docs[0]["state"] == "searchable" and docs[0]["phase"] == "first" and docs[0]["searchable"]
    assert main(["--data-dir", data, "ask", "--json", "--backend", "extractive",
                 "What is the context budget in words?"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "1500" in out["sources"][0]["parent_text"] and out["citations"] and "1500" in out["text"]
    assert out["citations"][0]["first_pass"]
    assert main(["--data-dir", data, "ingest", "--json", "--wait", "ready", str(SAMPLES / "field_notes.md")]) == 0
    f = json.loads(capsys.readouterr().out)["files"][0]
    assert f["status"] == "ready" and 0 < f["searchable_s"] <= f["ready_s"]
    assert main(["--data-dir", data, "docs", "--json"]) == 0
    docs = json.loads(capsys.readouterr().out)["documents"]
    assert [(d["state"], d["phase"]) for d in docs] == [("ready", None), ("ready", None)]  # both refined
    assert main(["--data-dir", data, "ask", "--json", "--backend", "extractive",
                 "What is the context budget in words?"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "1500" in out["citations"][0]["parent_text"] and not out["citations"][0]["first_pass"]
    assert main(["--data-dir", data, "ask", "   "]) == 2
    assert "the question is empty" in capsys.readouterr().err


def test_offline_backend_answers_grounded_and_abstains_when_unanswerable(real_ctx):
    """The default offline backend (the shipped model of `offline_model`, greedy: the same draft every run) on the
    samples: the answerable question is answered ("22 years"), citing field_notes.md with the sentence that says
    it as support at its offsets; an unanswerable question gets an abstention with no citation."""
    from app.answer import answer

    ingest_files(real_ctx, [SAMPLES])
    ans = answer(real_ctx, "How long has the lighthouse keeper tended the light?", backend="offline")
    assert ans.error is None and ans.backend == "offline" and ans.draft
    assert ans.sources[0].doc_id == "field_notes.md"
    assert ans.timings["time_to_first_token_s"] is not None
    assert not ans.abstained, (ans.draft, ans.grounding)
    assert re.search(r"\b(22|twenty-two) years\b", ans.text) and "do not say" not in ans.text
    assert ans.citations and all(c.support for c in ans.citations)
    assert ans.citations[0].doc_id == "field_notes.md"
    assert any("twenty-two years" in x["text"] for c in ans.citations for x in c.support)
    for c in ans.citations:
        text = (SAMPLES / c.doc_id).read_text(encoding="utf-8")
        assert all(c.start <= x["start"] < x["end"] <= c.end and text[x["start"]:x["end"]] == x["text"]
                   for x in c.support)
    off = answer(real_ctx, "Which submarine sank the cruiser Vesuvius in the Baltic in 1915?", backend="offline")
    assert off.abstained and off.citations == [] and "[" not in off.text and "do not say" in off.text


def test_follow_up_with_the_shipped_models(real_ctx):
    from app.answer import answer

    ingest_files(real_ctx, [SAMPLES])
    first = answer(real_ctx, "Who is the lighthouse keeper?", backend="extractive")
    history = [{"role": "user", "content": first.question, "query": first.query},
               {"role": "assistant", "content": first.text}]
    follow = answer(real_ctx, "How long has she tended it?", backend="extractive", history=history)
    assert follow.rewrite == "rules" and "lighthouse" in follow.query
    assert follow.sources[0].doc_id == "field_notes.md" and "twenty-two years" in follow.sources[0].parent_text

"""The benchmark runner: peers' chunkers located exactly, the chunk cache, a whole retrieval and QA run on a
hand-made set, the CLI's outputs and its errors."""
from __future__ import annotations

import json

import numpy as np
import pytest

from app.evaluation import bench as B
from app.evaluation import harness as H
from app.evaluation.peers import (
    Hierarchy,
    _Embedding,
    chonkie_recursive_spans,
    lc_recursive_spans,
    li_semantic_spans,
    li_sentence_spans,
)
from ingest.embed import HashingEmbedder

TOPICS = ["harbour", "orchard", "glacier", "library", "volcano", "bakery", "railway", "meadow"]


def _doc(seed: int) -> str:
    """Paragraphs on different topics, each with distinctive words, so a bag-of-words embedder can find them."""
    rng = np.random.default_rng(seed)
    paras = []
    for t in TOPICS:
        sents = []
        for i in range(6):
            filler = " ".join(rng.choice(["the", "a", "of", "and", "in", "was", "very", "near"], 6))
            when = " at the founding" if i == 0 else ""
            sents.append(f"The {t} keeper noted{when} {filler} {t} detail number {i}.")
        paras.append(" ".join(sents))
    return "\n\n".join(paras) + "\n"


@pytest.fixture
def bench_dir(tmp_path):
    root = tmp_path / "sets" / "toy"
    (root / "docs").mkdir(parents=True)
    qs = []
    for d in ("alpha", "beta"):
        text = _doc(1 if d == "alpha" else 2)
        (root / "docs" / f"{d}.txt").write_text(text, encoding="utf-8")
        for t in TOPICS[:4]:
            ev = f"The {t} keeper noted at the founding"
            s = text.index(ev)
            qs.append({"id": f"{d}-{t}", "question": f"What did the {t} keeper note at the founding?", "doc_id": d,
                       "answers": [f"{t} detail"], "evidence": [{"text": ev, "start": s, "end": s + len(ev)}],
                       "dataset": "toyqa"})
    # one evidence without offsets: re-labelled by ROUGE-L
    qs.append({"id": "alpha-x", "question": "Which volcano detail?", "doc_id": "alpha", "answers": ["volcano"],
               "evidence": [{"text": "volcano keeper noted volcano detail number 3", "start": None, "end": None}],
               "dataset": "toyqa"})
    (root / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in qs) + "\n", encoding="utf-8")
    return root


@pytest.fixture
def bctx(make_ctx, tmp_path):
    ctx = make_ctx(cache_dir=tmp_path / "cache")
    ctx.__dict__["embedder"] = H.CachedEmbedder(HashingEmbedder(dim=256))
    return ctx


def test_peer_chunkers_give_exact_offsets_within_theta():
    text = _doc(3) * 3
    for spans in (li_sentence_spans(text, 40), lc_recursive_spans(text, 40)):
        assert spans and all(text[s:e].strip() and len(text[s:e].split()) <= 40 for s, e in spans)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # in order, no overlap
        covered = " ".join(text[s:e] for s, e in spans)
        assert covered.split() == text.split()  # every word once
    sem = li_semantic_spans(text, HashingEmbedder(dim=64))
    assert " ".join(text[s:e] for s, e in sem).split() == text.split()


def test_chonkie_recursive_tiles_the_document_within_theta_words():
    """chonkie keeps every character (whitespace and all) in exactly one chunk; it may cut at punctuation inside a
    whitespace word (``“data rooms,|”``), so the check is on characters, not words."""
    text = _doc(3) * 3 + "A list: one, two, three (and “four,” five); then one 60-word paragraph. " + "word " * 60
    spans = chonkie_recursive_spans(text, 40)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous: nothing lost, nothing twice
    assert all(len(text[s:e].split()) <= 40 for s, e in spans) and len(spans) > 3


def test_llama_index_hierarchy_nests_and_automerges():
    text = _doc(4)
    h = Hierarchy(text, 40)
    chunks = h.chunks()
    assert {c.level for c in chunks} == {0, 1, 2}
    assert all(c.text == text[c.start:c.end] for c in chunks)
    assert all(c.parent_start <= c.start and c.end <= c.parent_end for c in chunks)
    assert all(len(c.text.split()) <= (40, 20, 10)[c.level] for c in chunks)
    retrieve = h.automerging(_Embedding.make(HashingEmbedder(dim=256)), top_k=10)
    spans = retrieve("glacier keeper glacier detail")
    assert spans and "glacier" in text[spans[0][0]:spans[0][1]]


def test_chunk_cache_round_trip_and_lg_is_lgmgc_level_0(bctx, bench_dir):
    bench = B.load_set(str(bench_dir))
    first = H.chunk_documents(bench, "recursive", 40, bctx)
    again = H.chunk_documents(bench, "recursive", 40, bctx)
    assert not first.cached and again.cached and again.chunks == first.chunks
    assert again.seconds == first.seconds  # the timing measured when the chunks were made
    lgmgc = H.chunk_documents(bench, "lgmgc", 40, bctx)
    lg = H.chunk_documents(bench, "lg", 40, bctx)
    assert lgmgc.lm_tokens > 0 and lgmgc.lm_tokens_per_doc_token >= 1.0
    assert lg.chunks == {d: [c for c in cs if c.level == 0] for d, cs in lgmgc.chunks.items()}
    # another document text: another cache entry
    bench.docs["alpha"] = bench.docs["alpha"].replace("orchard", "vineyard")
    assert not H.chunk_documents(bench, "recursive", 40, bctx).cached


@pytest.mark.parametrize("setting, value", [("lg_structure_weight", 2.0), ("lg_size_prior", 0.0),
                                            ("lg_children", "parent"), ("lg_min_words", 5), ("lg_mode", "exact")])
def test_a_changed_chunker_setting_misses_the_chunk_cache(bctx, bench_dir, monkeypatch, setting, value):
    """Issue 22: the key left out the LG cutting rule's settings, so a re-run after changing one reused the old
    chunking. Every setting that changes an LG chunking is a new cache entry (and the same settings the old one)."""
    bench = B.load_set(str(bench_dir))
    monkeypatch.setattr(H, "_MADE_THIS_RUN", set())
    assert getattr(bctx.settings, setting) != value
    first = H.chunk_documents(bench, "lgmgc", 40, bctx)
    assert not first.cached and H.chunk_documents(bench, "lgmgc", 40, bctx).cached
    monkeypatch.setattr(bctx.settings, setting, value)
    changed = H.chunk_documents(bench, "lgmgc", 40, bctx)
    assert not changed.cached
    if setting == "lg_children":  # it cuts the toy set differently: the new run shows it
        assert changed.chunks != first.chunks
    monkeypatch.undo()
    assert H.chunk_documents(bench, "lgmgc", 40, bctx).cached


def test_fresh_run_shares_one_lm_pass_between_lg_and_lgmgc(bctx, bench_dir, monkeypatch):
    monkeypatch.setattr(H, "_MADE_THIS_RUN", set())
    bench = B.load_set(str(bench_dir))
    H.chunk_documents(bench, "lgmgc", 40, bctx)  # an old cache entry, made "before this run"
    H._MADE_THIS_RUN.clear()
    lg = H.chunk_documents(bench, "lg", 40, bctx, use_cache=False)
    tokens = bctx.scorer.tokens_processed
    lgmgc = H.chunk_documents(bench, "lgmgc", 40, bctx, use_cache=False)
    assert not lg.cached and lgmgc.cached  # made by lg in this run: read, not made again
    assert bctx.scorer.tokens_processed == tokens


def test_bench_run_section_counts_only_chunkings_made_before_the_run():
    from app.evaluation.cli import bench_run_section

    def run(cached, seconds):
        return {"cached": cached, "chunk_seconds": seconds}

    res = {"set": "toy", "runs": {
        "ppl": {"200": run(True, 120.0), "300": run(True, 0.0)},
        "lg": {"200": run(False, 60.0)}, "lgmgc": {"200": run(True, 60.0)},  # made by lg in this run
        "recursive": {"200": run(False, 0.1)}}}
    info = {"cpu": "cpu", "affinity": 2, "torch": "t", "torch_threads": 2}
    text = bench_run_section(10.0, "standard", False, info, [res], "2026-01-01")
    assert "**10.0 minutes**" in text and "2 retrieval chunkings (toy)" in text
    assert "took 2.0 min" in text and "about **12 minutes**" in text
    res["runs"]["ppl"] = {"200": run(False, 120.0)}
    assert "none read from the cache" in bench_run_section(10.0, "standard", False, info, [res], "2026-01-01")


def test_run_retrieval_scores_every_chunker_and_theta(bctx, bench_dir, tmp_path):
    res = H.run_retrieval(str(bench_dir), ["recursive", "mg", "lumber", "li-sentence", "li-hierarchical",
                                           "li-semantic"], [40, 80], bctx, budget_words=60, progress=None)
    assert "MGRAG_OPENAI_BASE_URL" in res["skipped"]["lumber"]
    assert set(res["runs"]) == {"recursive", "mg", "li-sentence", "li-hierarchical", "li-hierarchical+automerge",
                                "li-semantic"}
    for by_theta in res["runs"].values():
        assert set(by_theta) == {"40", "80"}
        for r in by_theta.values():
            assert r["n_questions"] == 9
            assert 0 <= r["evidence_recall@60w"] <= 1 and 0 <= r["recall@1"] <= r["recall@5"] <= r["recall@20"] <= 1
    assert res["runs"]["li-semantic"]["80"]["same_as_theta"] == 40
    # the toy questions name their topic: the bag-of-words embedder finds the evidence's parent first
    assert res["runs"]["recursive"]["40"]["recall@1"] >= 0.8
    assert res["runs"]["mg"]["40"]["n_evidence_relabelled"] == 1
    assert res["runs"]["recursive"]["40"]["mean_parent_words"] < res["runs"]["recursive"]["80"]["mean_parent_words"]
    table = H.retrieval_tables(res)
    assert "| mg |" in table and " ± " in table and "lumber" in table
    plots = H.retrieval_plots(res, tmp_path / "plots")
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in plots)


class EchoSynth:
    """Answers with the first six words of its first source: F1 then depends on what was retrieved."""

    max_new_tokens = 50

    def stream(self, question, sources):
        yield " ".join(sources[0].text.split()[:6])


def test_run_qa_scores_retrieval_against_no_retrieval(bctx, bench_dir):
    res = H.run_qa(str(bench_dir), bctx, EchoSynth(), chunkers=["recursive"], theta=40, no_retrieval_words=30,
                   progress=None)
    assert set(res["f1"]) == {"no-retrieval", "recursive"}
    assert set(res["f1"]["recursive"]) == {"toyqa", "all"}
    # no-retrieval always starts at the harbour paragraph; retrieval brings the asked topic first
    assert res["f1"]["recursive"]["all"] > res["f1"]["no-retrieval"]["all"]
    row = res["rows"][1]
    assert row["no-retrieval"]["context_words"] <= 30 and row["recursive"]["prediction"]
    assert "| recursive (θ=40) |" in H.qa_table(res)


def test_excerpt_keeps_only_questions_inside(bench_dir):
    bench = B.load_set(str(bench_dir))
    ex = B.excerpt(bench, 0.5)
    assert all(len(ex.docs[d]) < len(bench.docs[d]) and bench.docs[d].startswith(ex.docs[d]) for d in bench.docs)
    assert ex.questions and all(e.end <= len(ex.docs[q.doc_id]) for q in ex.questions for e in q.evidence)
    assert len(ex.questions) < len(bench.questions)
    with pytest.raises(ValueError, match="fraction"):
        B.excerpt(bench, 0)


def test_cli_bench_retrieval_writes_json_and_plots(bench_dir, tmp_path, monkeypatch, capsys):
    from cli.main import main

    monkeypatch.setenv("MGRAG_EMBEDDER", "hashing:128")
    monkeypatch.setenv("MGRAG_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "results"
    rc = main(["bench", "retrieval", "--set", str(bench_dir), "--chunkers", "recursive,paragraph",
               "--peers", "lc-recursive", "--theta", "40,80", "--results-dir", str(out), "--quiet"])
    assert rc == 0
    res = json.loads((out / "retrieval_toy.json").read_text(encoding="utf-8"))
    assert set(res["runs"]) == {"recursive", "paragraph", "lc-recursive"} and res["thetas"] == [40, 80]
    assert (out / "plots" / "toy_retrieval_at_k.png").exists()
    assert "| lc-recursive |" in capsys.readouterr().out


def test_cli_bench_bad_input_is_a_clear_error(bench_dir, tmp_path, capsys):
    from cli.main import main

    assert main(["bench", "retrieval", "--set", str(tmp_path / "missing")]) == 2
    assert "no bench set at" in capsys.readouterr().err
    assert main(["bench", "retrieval", "--set", str(bench_dir), "--chunkers", "recursive,magic"]) == 2
    assert "unknown chunker(s) magic" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "retrieval", "--set", str(bench_dir), "--theta", "abc"])

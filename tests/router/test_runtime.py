"""The router in the app: loading per MGRAG_ROUTER, refusal of a mismatched router, weights in the answer,
MoG selection, and `mgrag train-router` over an ingested corpus."""
import json

import numpy as np
import pytest
import torch

from ingest.jobs.queue import ingest_files
from retrieval.scoring import ChunkSpan, Hit, mog_rank
from retrieval.search import retrieve
from router.model import MoGRouter, RouterConfig, RouterError

DOC = "\n\n".join(
    f"Topic {t} paragraph. "
    + " ".join(f"The {w} of topic {t} is notable." for w in ("owl", "fox", "elk", "cod", "yak"))
    for t in ("alpha", "bravo", "charlie", "delta")
)
Q = "Where is the elk of topic charlie?"


def save_router(path, encoder="hashing", dim=64, levels=("theta", "theta/2", "theta/4"), bias=(2.0, -1.0, -3.0)):
    torch.manual_seed(0)
    r = MoGRouter(RouterConfig(encoder=encoder, dim=dim, levels=levels, hidden=(8,)))
    with torch.no_grad():  # a router that always prefers parents: sigmoid(bias) dominates
        r.net[-1].weight.zero_()
        r.net[-1].bias.copy_(torch.tensor(bias))
    r.save(path)
    return r


@pytest.fixture
def ingested(make_ctx, write, tmp_path):
    """make(**settings): a context on one ingested data dir (one embedded Qdrant client shared by all)."""
    from app.context import AppContext

    base = []

    def make(**settings):
        if not base:
            ctx = make_ctx(theta=40, data_dir=tmp_path / "data")
            ingest_files(ctx, [write("t.txt", DOC)])
            base.append(ctx)
        b = base[0]
        return AppContext(b.settings.model_copy(update=settings), embedder=b.embedder, index=b.index)
    return make


def test_trained_router_weights_reach_the_answer(ingested, tmp_path):
    from app.answer import answer

    save_router(tmp_path / "r")
    ctx = ingested(router=str(tmp_path / "r"))
    res = retrieve(ctx, Q)
    expected = torch.sigmoid(torch.tensor([2.0, -1.0, -3.0])).tolist()
    assert res.weights == pytest.approx(expected, rel=1e-5)
    assert res.router.startswith("trained router") and "router_s" in res.timings
    ans = answer(ctx, Q, backend="extractive")
    d = ans.to_dict()
    assert d["weights"] == pytest.approx(expected, rel=1e-5) and d["router"].startswith("trained router")


def test_no_router_means_uniform_and_says_so(ingested):
    ctx = ingested(router="none")
    res = retrieve(ctx, Q)
    assert res.weights == [1.0, 1.0, 1.0] and res.router.startswith("uniform")
    from core.settings import Settings

    assert Settings().router == "none"  # off by default: no router beat uniform weights (README, BENCHMARKS.md)


def test_explicit_mismatched_router_is_refused(ingested, tmp_path):
    save_router(tmp_path / "mini", encoder="all-MiniLM-L6-v2", dim=384)
    with pytest.raises(RouterError, match="trained on 'all-MiniLM-L6-v2' query embeddings but the index uses"):
        retrieve(ingested(router=str(tmp_path / "mini")), Q)
    save_router(tmp_path / "two", levels=("a", "b"), bias=(1.0, 0.0))
    ctx = ingested(router=str(tmp_path / "two"))
    with pytest.raises(RouterError, match="trained for 2 granularity levels"):
        retrieve(ctx, Q)


def test_missing_explicit_router_folder_is_an_error(ingested, tmp_path):
    ctx = ingested(router=str(tmp_path / "nowhere"))
    with pytest.raises(RouterError, match="no such router folder"):
        retrieve(ctx, Q)


def test_default_router_that_does_not_fit_falls_back_to_uniform(ingested):
    # the shipped router reads MiniLM vectors; this index uses the hashing embedder
    res = retrieve(ingested(router="default"), Q)
    assert res.weights == [1.0, 1.0, 1.0] and res.router.startswith("uniform")


def test_default_prefers_the_index_own_router(ingested, tmp_path):
    save_router(tmp_path / "data" / "router")
    res = retrieve(ingested(router="default"), Q)
    assert res.router.startswith(f"trained router {tmp_path / 'data' / 'router'}")


def test_mog_selection_in_retrieve(ingested, tmp_path):
    save_router(tmp_path / "r", bias=(-3.0, -1.0, 2.0))  # prefers θ/4
    ctx = ingested(router=str(tmp_path / "r"), router_selection="mog")
    res = retrieve(ctx, Q, budget_words=10_000)
    assert res.selection == "mog" and res.retriever == "dense" and res.sources  # the default hybrid: dense here
    assert all(s.matched_level == 2 for s in res.sources)
    assert "charlie" in res.sources[0].text and "elk" in res.sources[0].matched_text
    with pytest.raises(ValueError, match="MoG selection .* one retriever"):
        retrieve(ctx, Q, retriever="hybrid")


def test_mog_rank_matches_brute_force():
    rng = np.random.default_rng(0)
    spans, hits = {}, []
    for p in range(4):  # parents of 8 finest chunks, 4 halves... levels nest by offsets
        base = p * 80
        spans[f"P{p}"] = ChunkSpan(f"P{p}", "d", 0, base, base + 80, f"P{p}")
        for h in range(2):
            spans[f"H{p}{h}"] = ChunkSpan(f"H{p}{h}", "d", 1, base + 40 * h, base + 40 * h + 40, f"P{p}")
            for q in range(2):
                s = base + 40 * h + 20 * q
                spans[f"Q{p}{h}{q}"] = ChunkSpan(f"Q{p}{h}{q}", "d", 2, s, s + 20, f"P{p}")
    for cid in rng.choice(sorted(spans), size=12, replace=False):
        hits.append(Hit(cid, spans[cid].parent_id, spans[cid].level, float(rng.random())))
    w = [0.3, 0.9, 0.5]
    got = mog_rank(hits, spans, w)
    # reference: every finest chunk's weighted ancestor scores, then the level-1 chunk containing it
    def ref_score(f):
        t = [0.0] * 3
        for h in hits:
            s = spans[h.id]
            if s.start <= f.start and f.end <= s.end:
                t[h.level] = max(t[h.level], h.score)
        return sum(a * b for a, b in zip(w, t))
    finest = [s for s in spans.values() if s.level == 2 and any(
        spans[h.id].start <= s.start and s.end <= spans[h.id].end for h in hits)]
    best_unit = {}
    for f in finest:
        unit = next(u for u in spans.values() if u.level == 1 and u.start <= f.start and f.end <= u.end)
        best_unit[unit.id] = max(best_unit.get(unit.id, -1), ref_score(f))
    assert {u: s for u, s, _ in got} == pytest.approx(best_unit)
    assert [s for _, s, _ in got] == sorted(best_unit.values(), reverse=True)
    assert all(spans[u].level == 1 for u, _, _ in got)


def test_train_router_cli_end_to_end(ingested, tmp_path, capsys, monkeypatch):
    from app.context import AppContext
    from cli import main as cli

    ctx = ingested(router="default")
    topics = ("alpha", "bravo", "charlie", "delta")
    animals = ("owl", "fox", "elk", "cod", "yak")
    lines = []
    for i in range(40):
        t, a = topics[i % 4], animals[i % 5]
        ev = f"The {a} of topic {t} is notable." if i % 2 else DOC.split("\n\n")[i % 4]
        lines.append(json.dumps({"id": str(i), "question": f"What about the {a} of topic {t}?", "doc_id": "t",
                                 "answers": [], "evidence": [{"text": ev, "start": None, "end": None}]}))
    qf = tmp_path / "dev.jsonl"
    qf.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(cli, "_ctx", lambda args: ctx)  # the test context: fake embedder, temp data dir
    rc = cli.main(["train-router", "--questions", str(qf), "--similarity", "tfidf", "--epochs", "20",
                   "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0, out
    folder = tmp_path / "data" / "router"
    assert {"config.json", "model.safetensors", "loss.png", "training.json"} <= {p.name for p in folder.iterdir()}
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["encoder"] == "hashing" and cfg["levels"] == ["theta", "theta/2", "theta/4"]
    assert cfg["meta"]["label_similarity"] == "tfidf" and cfg["meta"]["trained_on"] == ["dev"]
    rep = json.loads((folder / "training.json").read_text())
    assert rep["labels"]["train"]["n"] + rep["labels"]["val"]["n"] + rep["labels"]["test"]["n"] == 40
    # `mgrag ask` then uses it (the index's own router), and prints the weights
    ctx2 = AppContext(ctx.settings, embedder=ctx.embedder, index=ctx.index)
    monkeypatch.setattr(cli, "_ctx", lambda args: ctx2)
    assert cli.main(["ask", Q, "--backend", "extractive"]) == 0
    out = capsys.readouterr().out
    assert "level weights: parent " in out and "trained router" in out


def test_train_router_cli_reports_bad_questions_file(ingested, tmp_path, capsys, monkeypatch):
    from cli import main as cli

    ctx = ingested()
    qf = tmp_path / "bad.jsonl"
    qf.write_text('{"id": "1", "question": "ok?"}\n{oops\n')
    monkeypatch.setattr(cli, "_ctx", lambda args: ctx)
    assert cli.main(["train-router", "--questions", str(qf), "--quiet"]) == 2
    assert "bad.jsonl:2: not valid JSON" in capsys.readouterr().err


def test_ask_says_uniform_when_there_is_no_router(ingested, capsys, monkeypatch):
    from cli import main as cli

    ctx = ingested(router="none")
    monkeypatch.setattr(cli, "_ctx", lambda args: ctx)
    assert cli.main(["ask", Q, "--backend", "extractive"]) == 0
    assert "level weights: uniform (MGRAG_ROUTER=none" in capsys.readouterr().out
    assert cli.main(["ask", Q, "--backend", "extractive", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["weights"] == [1.0, 1.0, 1.0] and d["router"].startswith("uniform")


def test_train_router_on_retrieval_labels_and_score_profiles(ingested, tmp_path, capsys, monkeypatch):
    """`--labels retrieval --inputs query,profile`: each question's dense search in its own document gives the
    profile and the label; the saved router reads the hits at query time (and says uniform for BM25)."""
    from app.context import AppContext
    from cli import main as cli

    ctx = ingested(router="default")
    topics, animals = ("alpha", "bravo", "charlie", "delta"), ("owl", "fox", "elk", "cod", "yak")
    lines = [json.dumps({"id": str(i), "question": f"What about the {animals[i % 5]} of topic {topics[i % 4]}?",
                         "doc_id": "t", "answers": [],
                         "evidence": [{"text": f"The {animals[i % 5]} of topic {topics[i % 4]} is notable.",
                                       "start": None, "end": None}]}) for i in range(40)]
    lines.append(json.dumps({"id": "x", "question": "Not in the text?", "doc_id": "t", "answers": [],
                             "evidence": [{"text": "a sentence that is nowhere", "start": None, "end": None}]}))
    qf = tmp_path / "dev.jsonl"
    qf.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(cli, "_ctx", lambda args: ctx)
    rc = cli.main(["train-router", "--questions", str(qf), "--labels", "retrieval", "--inputs", "query,profile",
                   "--hidden", "8", "--epochs", "20", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "retrieval labels, inputs query+profile" in out
    folder = tmp_path / "data" / "router"
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["inputs"] == ["query", "profile"] and len(cfg["profile_mean"]) == 16 and cfg["meta"]["labels"] == \
        "retrieval"
    rep = json.loads((folder / "training.json").read_text())
    assert rep["notes"] == {"no evidence found verbatim in the document": 1} and rep["n_train"] + rep["n_val"] <= 40
    ctx2 = AppContext(ctx.settings, embedder=ctx.embedder, index=ctx.index)
    res = retrieve(ctx2, Q)
    assert res.router.startswith("trained router") and len(res.weights) == 3 and res.weights != [1.0, 1.0, 1.0]
    bm = retrieve(ctx2, Q, retriever="bm25")
    assert bm.weights == [1.0, 1.0, 1.0] and "score profile" in bm.router

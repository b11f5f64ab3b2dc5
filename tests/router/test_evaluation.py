"""The evaluator's MoG selection option (used by bench/router_eval.py)."""
import pytest

from app.evaluation.bench import BenchSet, evaluate_retrieval
from core.questions import Evidence, Question
from ingest.chunkers.multigranular import MultiGranularChunker

TEXT = "\n\n".join(
    f"Section {t}. " + " ".join(f"The {w} of section {t} lives by the {p}." for w, p in
                                 (("owl", "barn"), ("fox", "hedge"), ("elk", "lake"), ("cod", "sea")))
    for t in ("alpha", "bravo", "charlie", "delta"))


def bench():
    s = TEXT.index("The elk of section charlie")
    e = TEXT.index(".", s) + 1
    q = Question("q1", "Where does the elk of section charlie live?", "d", evidence=(Evidence(TEXT[s:e], s, e),))
    return BenchSet("toy", {"d": TEXT}, [q])


def test_mog_selection_returns_units_of_the_best_weighted_level(fake_embedder, monkeypatch):
    import app.evaluation.bench as B

    chunks = {"d": MultiGranularChunker(theta=24).chunk(TEXT)}
    spans = {lv: {(c.start, c.end) for c in chunks["d"] if c.level == lv} for lv in range(3)}
    seen = []
    real = B.question_metrics
    monkeypatch.setattr(B, "question_metrics", lambda q, t, ranked, *a, **k: seen.append(list(ranked)) or
                        real(q, t, ranked, *a, **k))
    for w, level in (([0.1, 0.2, 0.9], 2), ([0.2, 0.9, 0.1], 1), ([0.9, 0.2, 0.1], 0)):
        got = evaluate_retrieval(bench(), chunks, fake_embedder, top_k=5, ks=(1, 5), weights=w, selection="mog")
        assert got["recall@5"] == 1.0
        assert seen[-1] and set(seen[-1]) <= spans[level]  # every ranked unit is a chunk of the best-weighted level
    evaluate_retrieval(bench(), chunks, fake_embedder, top_k=5, ks=(1, 5), weights=[0.1, 0.2, 0.9])
    assert set(seen[-1]) <= spans[0]  # the default ranks parents


def test_unknown_selection_is_refused(fake_embedder):
    with pytest.raises(ValueError, match="selection must be 'max' or 'mog'"):
        evaluate_retrieval(bench(), {"d": MultiGranularChunker(theta=24).chunk(TEXT)}, fake_embedder, selection="x")

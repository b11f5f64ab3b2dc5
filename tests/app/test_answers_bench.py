"""The answers benchmark's definitions (pure functions) and its follow-up set."""
import json

import pytest

from app.evaluation import answers as A
from app.evaluation import bench as B
from app.evaluation.answer_sets import FOLLOWUPS, load_followups
from retrieval.search import Source
from tests.shared_bench import need_sets


def q(answers=(), evidence=(), doc="d.txt"):
    return B.Question("q1", "Who founded the club?", doc, tuple(answers), tuple(evidence), "x")


def src(rank, text, start=0, doc="d.txt"):
    return Source(rank, doc, f"p{rank}", start, start + len(text), text, 1.0, 0, start, start + len(text), text)


def test_contains_reference_ignores_yes_no_and_normalises():
    assert A.contains_reference("It was called the FC Banants!", ["fc banants"])
    assert not A.contains_reference("Yes, it was.", ["yes"])
    assert not A.contains_reference("Banantsky", ["Banants"])


def test_cited_hallucination_definitions():
    # unanswerable: any cited reply that does not abstain
    assert A.cited_hallucination("Russia [1].", {1: "Putin invades Ukraine."}, ["Moscow"], False, False)
    assert not A.cited_hallucination("The documents do not say.", {}, [], False, True)
    assert not A.cited_hallucination("Russia.", {1: "x"}, [], False, False)  # uncited: not a *cited* hallucination
    # answerable: a claim citing a source that does not hold it
    yerevan = {1: "The club was founded in Yerevan.", 2: "It plays in red."}
    assert A.cited_hallucination("Russia [1].", yerevan, ["Yerevan"], True, False)
    assert not A.cited_hallucination("Yerevan [1].", yerevan, ["Yerevan"], True, False)
    assert not A.cited_hallucination("In Armenia's capital [1].", {1: "Founded in Yerevan, Armenia's capital."},
                                     ["Yerevan"], True, False)
    assert not A.cited_hallucination("Yerevan [1]. It plays in red [2].", yerevan, ["Yerevan"], True, False)
    assert A.cited_hallucination("Yerevan [1]. It plays in red [1].", yerevan, ["Yerevan"], True, False)


def test_evidence_in_context_by_offsets_or_reference():
    ev = B.Evidence("founded by Ann", 10, 24)
    assert A.evidence_in_context(q(evidence=[ev]), [src(1, "x" * 30, 0)], None)
    assert not A.evidence_in_context(q(evidence=[ev]), [src(1, "x" * 30, 0, doc="other.txt")], None)
    assert A.evidence_in_context(q(answers=["Ann Lee"]), [src(1, "It was founded by Ann Lee.")], None)
    assert not A.evidence_in_context(q(answers=["Ann Lee"]), [src(1, "It was founded by Bo.")], None)
    assert A.evidence_in_context(q(answers=["yes"]), [src(1, "anything")], None)


def test_summarise_and_sweep():
    rows = [
        {"answerable": True, "abstained": False, "f1": 1.0, "evidence_in_context": True, "cited_hallucination": False,
         "citations": 1, "supported_citations": 1, "ttft_s": 1.0, "total_s": 2.0, "error": None,
         "context_score": 0.6, "support_score": 0.7},
        {"answerable": True, "abstained": True, "f1": 0.0, "evidence_in_context": False, "cited_hallucination": False,
         "citations": 0, "supported_citations": 0, "ttft_s": None, "total_s": 0.5, "error": None,
         "context_score": 0.3, "support_score": None},
        {"answerable": False, "abstained": False, "f1": 0.0, "evidence_in_context": None,
         "cited_hallucination": True, "citations": 1, "supported_citations": 0, "ttft_s": 3.0, "total_s": 4.0,
         "error": None, "context_score": 0.5, "support_score": 0.4},
    ]
    s = A.summarise(rows)
    assert s["f1"] == 0.5 and s["abstain_unanswerable"] == 0.0 and s["cited_hallucinations_unanswerable"] == 1
    assert s["answered_with_evidence"] == 1.0 and s["supported_citation_rate"] == 0.5 and s["ttft_s_median"] == 1.0
    sw = {(r["context_floor"], r["support_floor"]): r for r in A.sweep(rows, [0.45, 0.55], [0.5])}
    assert sw[(0.45, 0.5)]["abstain_unanswerable"] == 1.0 and sw[(0.45, 0.5)]["answered_with_evidence"] == 1.0
    assert sw[(0.55, 0.5)]["answered"] == 0.5


def test_followup_set_has_thirty_conversations_tied_to_dev_questions():
    fus = load_followups(FOLLOWUPS, need_sets("chroma", "gutenqa_emma"))
    assert len(fus) >= 30 and len({f.id for f in fus}) == len(fus)
    assert sum(f.kind != "standalone-check" for f in fus) >= 30
    for f in fus:
        assert f.evidence and f.followup != f.standalone or f.kind == "standalone-check"
        assert f.doc_id.endswith((".md", ".txt"))


def test_followups_file_errors_name_the_line(tmp_path):
    bench = tmp_path / "bench"  # a one-question chroma set: the file is checked against it
    (bench / "chroma" / "docs").mkdir(parents=True)
    (bench / "chroma" / "docs" / "d.txt").write_text("The club was founded in Yerevan.", encoding="utf-8")
    (bench / "chroma" / "questions.jsonl").write_text(json.dumps(
        {"id": "chroma-3", "question": "Where was the club founded?", "doc_id": "d", "answers": ["Yerevan"],
         "evidence": []}) + "\n", encoding="utf-8")
    p = tmp_path / "f.jsonl"
    p.write_text(json.dumps({"id": "x", "set": "chroma", "source_id": "chroma-3", "first": "a"}) + "\n")
    with pytest.raises(ValueError, match=r"f.jsonl:1: missing followup, kind"):
        load_followups(p, bench)
    p.write_text(json.dumps({"id": "x", "set": "chroma", "source_id": "nope", "first": "a", "followup": "b",
                             "kind": "pronoun"}) + "\n")
    with pytest.raises(ValueError, match=r"f.jsonl:1: chroma has no question 'nope'"):
        load_followups(p, bench)


def test_the_filings_run_scores_right_abstained_and_cited_non_answers(make_ctx, tmp_path):
    """`mgrag bench answers --filings`: ingests the set's files from DOCS, asks each question scoped to its file and
    counts right / wrong / abstained and, on the unanswerable ones, abstentions vs cited non-answers."""
    from app.evaluation.filings import filings_table, run_filings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "q3.md").write_text("# Quarterly report\n\nNet sales of widgets were $ 4,210 million in the quarter, up "
                                "from $ 3,980 million a year earlier.\n\nThe company has two factories, in Leeds and "
                                "in Turin.\n", encoding="utf-8")
    qs = [{"id": "f1", "doc": "q3.md", "question": "What were the net sales of widgets in the quarter?",
           "answers": ["4,210"]},
          {"id": "u1", "doc": "q3.md", "question": "Which submarine sank the cruiser Vesuvius in the Baltic?",
           "answers": []}]
    settings = make_ctx(chunker="recursive", theta=40).settings
    res = run_filings(settings, docs, ["extractive"], progress=None, questions=qs)
    c = res["candidates"]["extractive"]
    assert (c["right"], c["wrong"], c["abstained"]) == (1, 0, 0) and c["figure_in_context"] == 1
    assert (c["unanswerable_abstained"], c["cited_non_answer"]) == (1, 0)
    assert "| extractive | 1 / 1 |" in filings_table(res)
    with pytest.raises(FileNotFoundError, match="missing.pdf"):
        run_filings(settings, docs, ["extractive"], progress=None,
                    questions=[{"id": "x", "doc": "missing.pdf", "question": "q?", "answers": []}])

"""bench/external_sets.py: span location and the LegalBench-RAG builder on tiny made-up input (no network)."""
import json

import pytest

from app.evaluation.bench import load_set
from bench.external_sets import HELD_OUT, build_legalbenchrag, doc_id_for, locate_span, subsample_docs, write_set

DOC = "1. Term.\nThe  Agreement\n\tlasts two years.\n\n2. Survival. The Agreement lasts two years. Obligations survive."


def test_hint_offsets_taken_when_they_match():
    s = DOC.index("Obligations")
    assert locate_span(DOC, "Obligations survive.", (s, s + 20)) == (s, s + 20, "offsets")


def test_wrong_hint_falls_back_to_the_occurrence_nearest_the_hint():
    verbatim = DOC.index("The Agreement lasts")  # only the second occurrence has single spaces
    end = len(DOC)
    assert locate_span(DOC, "The Agreement lasts two years.", (end - 5, end)) == (verbatim, verbatim + 30, "exact")


def test_whitespace_normalised_and_mapped_back_to_exact_offsets():
    text = "The Agreement lasts two years."
    # near the first occurrence (whose whitespace differs) the normalised match wins over the far verbatim one
    hint = (DOC.index("The  Agreement"), DOC.index("The  Agreement") + 30)
    s, e, how = locate_span(DOC, text, hint)
    assert how == "whitespace"
    assert DOC[s:e] == "The  Agreement\n\tlasts two years."
    # without a hint the verbatim occurrence is preferred
    s2, e2, how2 = locate_span(DOC, text)
    assert (how2, DOC[s2:e2]) == ("exact", text)


def test_whitespace_only_in_the_query_text():
    s, e, how = locate_span(DOC, "  Obligations\nsurvive. ")
    assert how == "whitespace" and DOC[s:e] == "Obligations survive."


def test_not_found_and_empty():
    assert locate_span(DOC, "Obligations lapse.") is None
    assert locate_span(DOC, "   ") is None
    assert locate_span(DOC, "Obligation survive") is None  # no fuzzy matching beyond whitespace


def test_doc_ids_are_safe_stems_and_unique():
    taken: set[str] = set()
    assert doc_id_for("DBT%20Mutual%20NDA.txt", taken) == "DBT_Mutual_NDA"
    assert doc_id_for("A.pdf||A Amendment No.1.txt", taken) == "A_pdf_A_Amendment_No_1"
    assert doc_id_for("DBT Mutual NDA.txt", taken) == "DBT_Mutual_NDA_2"


def test_subsample_is_deterministic_and_capped():
    by_doc = {f"d{i}": [0] * (i + 1) for i in range(10)}
    a = subsample_docs(by_doc, 7, max_docs=3, max_questions=None)
    assert a == subsample_docs(by_doc, 7, max_docs=3, max_questions=None) and len(a) == 3
    b = subsample_docs(by_doc, 7, max_docs=None, max_questions=12)
    assert sum(len(by_doc[d]) for d in b) <= 12


def _source(tmp_path, subset="nda"):
    (tmp_path / "corpus" / subset).mkdir(parents=True)
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "corpus" / subset / "Acme%20NDA.txt").write_text(DOC, encoding="utf-8", newline="")
    s = DOC.index("Obligations")
    first = DOC.index("The  Agreement")
    tests = [
        {"query": "Does anything survive?", "snippets": [
            {"file_path": f"{subset}/Acme%20NDA.txt", "span": [s, s + 20], "answer": "Obligations survive."}]},
        {"query": "How long is the term?", "snippets": [  # offsets right, text with other whitespace
            {"file_path": f"{subset}/Acme%20NDA.txt", "span": [first, first + 32],
             "answer": "The Agreement lasts two years."},
            {"file_path": f"{subset}/Acme%20NDA.txt", "span": [3, 9], "answer": "nowhere in the text"}]},
    ]
    (tmp_path / "benchmarks" / f"{subset}.json").write_text(json.dumps({"tests": tests}), encoding="utf-8")
    return tmp_path


def test_build_and_write_a_set_the_product_loads(tmp_path):
    built = build_legalbenchrag(_source(tmp_path / "src"), "nda", seed=1, max_docs=None, max_questions=None)
    assert list(built.docs) == ["Acme_NDA"]
    assert built.how == {"offsets": 1, "whitespace": 1, "unlocated": 1}
    stats = write_set(built, tmp_path / "out" / built.name, "made up")
    assert stats["evidence_spans"] == 3 and stats["located"] == 2
    bench = load_set(str(tmp_path / "out" / built.name))  # checks doc[start:end] == text itself
    q = {q.id: q for q in bench.questions}
    assert q["nda-0001"].evidence[0].text == "The  Agreement\n\tlasts two years."
    assert not q["nda-0001"].evidence[1].located


@pytest.mark.parametrize("subset", sorted(HELD_OUT))
def test_held_out_subsets_are_refused(tmp_path, subset):
    with pytest.raises(ValueError, match="held-out"):
        build_legalbenchrag(tmp_path, subset, seed=1, max_docs=None, max_questions=None)


def test_figure_spans_are_whole_figures():
    from bench.external_sets import figure_spans

    text = "Gross margin 36,413; prior 136,413 and 36,4131; again (36,413). Rate 12.5% not 112.5% or 12.55%."
    assert [text[a:b] for a, b in figure_spans(text, "36,413")] == ["36,413", "36,413"]
    assert figure_spans(text, "36,413")[1][0] == text.index("(36,413)") + 1
    assert [text[a:b] for a, b in figure_spans(text, "12.5%")] == ["12.5%"]


def test_filings_set_evidence_is_every_printed_figure(tmp_path):
    """Answered questions become questions whose evidence is each place the text prints a reference figure; the
    unanswerable, a computed reference and a figure the text never prints are left out; a missing PDF is named."""
    from bench.external_sets import build_filings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "2023 Q3 ACME.pdf").write_bytes(b"%PDF stand-in")
    qa = tmp_path / "qa.jsonl"
    rows = [{"id": "f1", "doc": "2023 Q3 ACME.pdf", "question": "Net sales?", "answers": ["81,797"], "source": "x"},
            {"id": "f2", "doc": "2023 Q3 ACME.pdf", "question": "Share?", "answers": ["25.9%"],
             "source": "x; a share computed here"},
            {"id": "f3", "doc": "2023 Q3 ACME.pdf", "question": "Tax?", "answers": ["696.2%"], "source": "x"},
            {"id": "u1", "doc": "2023 Q3 ACME.pdf", "question": "NPS?", "answers": [], "source": "x"}]
    qa.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    text = "| Total net sales | 81,797 | 82,959 |\n\nNet sales were 81,797 million. Services 25.9% of it."
    built = build_filings(docs, qa, read=lambda p: text)
    assert list(built.docs) == ["2023_Q3_ACME"] and built.sources["2023_Q3_ACME"] == "2023 Q3 ACME.pdf"
    assert [q["id"] for q in built.questions] == ["f1"] and built.how["no figure in text"] == 1
    ev = built.questions[0]["evidence"]
    assert [(e["text"], text[e["start"]:e["end"]]) for e in ev] == [("81,797", "81,797")] * 2
    write_set(built, tmp_path / "out" / built.name, "test")
    loaded = load_set(str(tmp_path / "out" / built.name))
    assert [len(q.evidence) for q in loaded.questions] == [2]
    rows[0]["doc"] = "missing.pdf"
    qa.write_text(json.dumps(rows[0]) + "\n")
    with pytest.raises(FileNotFoundError, match="missing.pdf: the filing named by qa.jsonl question f1 is missing"):
        build_filings(docs, qa, read=lambda p: text)

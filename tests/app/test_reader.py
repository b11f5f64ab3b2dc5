"""The reader (app/reader.py) with the shipped scorer (issue 46): the same answer whatever the wording, the row of the
asked period, follow-ups about the year before in several wordings, abstention by confidence, and the LM check
skipped with a log line where it cannot run.

These run the shipped MiniLM and the fitted scorer (app/data/reader_model.json) on made-up documents: they check
behaviour the scorer must have on any document, not the answers it was fitted on."""
from __future__ import annotations

import io
import logging

import pytest

from app import reader
from app.answer import answer
from ingest.jobs.queue import ingest_files

pytestmark = pytest.mark.integration

REPORT = """# Harbour Widgets Inc. Quarterly Report

Harbour Widgets Inc. reports its results for the quarter ended September 30, 2023.

## Results of Operations

| | Three Months Ended September 30, 2023 | Three Months Ended September 30, 2022 |
|---|---|---|
| Total revenue | 530 | 489 |
| Net income | 97 | 83 |

Revenue rose 8% as ferry bookings recovered after the storm season.

## Our People

We employed about 1,240 people at the end of the quarter, most of them at the north quay.

## The Fleet

The flagship ferry's hull is painted a deep red. Its brass bell is rung three times at every departure, a custom
the first harbour master began.
"""


def _sales_xlsx() -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sales"
    ws.append(["Regional sales (USD thousands)"])
    ws.append(["Region", "Quarter", "Sales"])
    for region, base in (("West", 300), ("East", 200), ("North", 100)):
        for i, quarter in enumerate(("2022-Q1", "2022-Q2", "2022-Q3", "2022-Q4", "2023-Q1", "2023-Q2", "2023-Q3")):
            ws.append([region, quarter, base + 17 * i])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    from app.context import AppContext
    from core.settings import Settings

    root = tmp_path_factory.mktemp("reader")
    (root / "harbour.md").write_text(REPORT, encoding="utf-8")
    (root / "sales.xlsx").write_bytes(_sales_xlsx())
    c = AppContext(Settings(data_dir=root / "data", synth_backend="extractive"))
    report = ingest_files(c, [root / "harbour.md", root / "sales.xlsx"])
    assert all(r.status == "ingested" for r in report.results), report.results
    yield c
    c.close()


def _line(a) -> str:
    return a.text.split("\n")[0]


@pytest.mark.parametrize("question", [
    "How many people does Harbour Widgets employ?",  # "we" in the report, the company's name in the question
    # a word the report does not use: issue 46's "done when" asks for these and the fitted scorer misses them (its
    # best candidate is the report's opening sentence); strict, so that they fail loudly once they pass
    pytest.param("What is the headcount of Harbour Widgets?", marks=pytest.mark.xfail(
        strict=True, reason="a synonym the document does not use: not yet answered (issue 46)")),
    pytest.param("How big is the company's workforce?", marks=pytest.mark.xfail(
        strict=True, reason="a synonym the document does not use: not yet answered (issue 46)")),
])
def test_paraphrases_of_one_question_get_the_same_answer(ctx, question):
    a = answer(ctx, question, doc_ids=["harbour.md"])
    assert not a.abstained, a.grounding
    assert "1,240" in _line(a)


def test_a_word_number_and_a_colour_the_sentence_never_calls_a_colour(ctx):
    a = answer(ctx, "How many times is the ferry's bell rung at a departure?", doc_ids=["harbour.md"])
    assert not a.abstained and "three times" in _line(a)
    a = answer(ctx, "What colour is the flagship ferry's hull?", doc_ids=["harbour.md"])
    assert not a.abstained and "red" in _line(a)


@pytest.mark.parametrize("followup", [
    "And the year before?",
    "What about the same quarter a year earlier?",
    "And in the prior-year quarter?",
])
def test_three_wordings_of_the_same_period_a_year_before_get_the_same_figure(ctx, followup):
    first = answer(ctx, "What was Harbour Widgets' total revenue in the third quarter of 2023?", doc_ids=["harbour.md"])
    assert "530" in _line(first)
    history = [{"role": "user", "content": first.question, "query": first.query},
               {"role": "assistant", "content": first.text}]
    a = answer(ctx, followup, doc_ids=["harbour.md"], history=history)
    assert not a.abstained and "489" in _line(a) and "530" not in _line(a).split(":")[-1]


def test_a_question_over_a_spreadsheet_picks_the_row_of_the_asked_period(ctx):
    a = answer(ctx, "What were West region sales in 2023-Q3?", doc_ids=["sales.xlsx"])
    assert not a.abstained
    assert "402" in _line(a)  # West, 2023-Q3: 300 + 17 × 6


def test_a_route_that_leaves_the_reader_unsure_gives_way_to_the_search_the_user_asked_for(ctx, monkeypatch):
    """A route is the product's guess (a name, a year, or a follow-up's inherited name: "In that scanned page …" after
    a question about a thesis searched only the thesis in newcomer run r7). When the routed documents leave the reader
    unsure, the user's own scope is read too and answers when it is sure; when it is not, the routed reply stays."""
    import app.evidence
    from app.routing import Route

    monkeypatch.setattr(app.evidence, "route", lambda *a, **k: Route(["harbour.md"], "a guess"))
    a = answer(ctx, "What were West region sales in 2023-Q3?")
    assert not a.abstained and "402" in _line(a)
    assert a.grounding["widened"] == {"from": ["harbour.md"], "why": "a guess"} and "routed" not in a.grounding
    assert {s.doc_id for s in a.citations} == {"sales.xlsx"}
    a = answer(ctx, "How many container cranes does Harbour Widgets operate at the south pier?")
    assert a.abstained and a.grounding["routed"]["documents"] == ["harbour.md"] and "widened" not in a.grounding
    monkeypatch.undo()
    a = answer(ctx, "What was Harbour Widgets' total revenue in the third quarter of 2023?")  # a route that answers
    assert "530" in _line(a) and "widened" not in a.grounding


def test_a_question_the_documents_do_not_answer_abstains_uncited(ctx):
    a = answer(ctx, "How many container cranes does Harbour Widgets operate at the south pier?",
               doc_ids=["harbour.md"])
    assert a.abstained and a.citations == []
    assert a.grounding["reader"]["confidence"] < a.grounding["reader"]["threshold"]


def test_without_avx512_the_lm_check_is_skipped_with_a_log_line_and_answers_still_come(ctx, monkeypatch, caplog):
    import app.checker as checker

    monkeypatch.setattr(checker, "cpu_flags", lambda: {"sse4_2", "avx2"})
    monkeypatch.setattr(ctx.settings, "lm_check", "on")
    ctx.cache("lm_check").clear()
    with caplog.at_level(logging.INFO, logger="app.checker"):
        a = answer(ctx, "How many people does Harbour Widgets employ?", doc_ids=["harbour.md"])
    assert any("LM check skipped" in r.message and "AVX-512" in r.message for r in caplog.records)
    assert a.error is None and not a.abstained and "1,240" in _line(a)


def test_the_bundled_lm_check_answers_where_the_cpu_and_the_model_allow(ctx, monkeypatch):
    """The default answer path with the real bundled llama-server and Qwen2.5-Coder-1.5B (where it can run: a CPU
    with AVX-512 and `make check-model` done; elsewhere skipped, as the product skips it): the reading carries the
    LM's margins for the fitted stage's top k, the answer still comes, and closing the context stops the server."""
    from app import scorer
    from app.checker import local_support
    from core.models import check_model_path

    why = local_support()
    if why is None and not check_model_path(ctx.settings.cache_dir).is_file():
        why = "the check model is not provisioned (`make check-model`)"
    if why:
        pytest.skip(why)
    monkeypatch.setattr(ctx.settings, "lm_check", "on")
    holder = ctx.cache("lm_check")
    holder.clear()
    try:
        a = answer(ctx, "How many people does Harbour Widgets employ?", doc_ids=["harbour.md"])
        server = holder["server"]
        assert server is not None and server.proc.poll() is None
        assert len(a.grounding["reader"]["check"]["margins"]) == scorer.load().check.top_k
        assert not a.abstained and "1,240" in _line(a)
    finally:
        from app.checker import stop_local

        stop_local(holder)
    assert server.proc is None
    holder.clear()


def test_the_lm_check_picks_among_the_scorer_top_two_and_leaves_abstention_to_the_scorer(ctx, monkeypatch):
    """With no fitted check stage the LM's yes/no margins choose among the scorer's top two candidates; whether
    to answer stays the scorer's decision (its confidence against its threshold)."""
    import app.evidence as evidence
    from app import scorer

    monkeypatch.setattr(scorer.load(), "check", None)
    q = "How many people does Harbour Widgets employ?"
    alone = answer(ctx, q, doc_ids=["harbour.md"])

    class Judge:  # prefers the scorer's second candidate
        seen: list[str] = []

        def margins(self, question, cands):
            Judge.seen = [c.line for c in cands]
            return [4.0 if i == 1 else -4.0 for i in range(len(cands))]

    monkeypatch.setattr(evidence, "checker", lambda ctx: Judge())
    checked = answer(ctx, q, doc_ids=["harbour.md"])
    assert len(Judge.seen) == reader.LM_TOP_K == 2 and Judge.seen[0].split(" [")[0] in _line(alone)
    assert not checked.abstained and Judge.seen[1].split(" [")[0] in _line(checked)
    assert checked.grounding["reader"]["confidence"] == alone.grounding["reader"]["confidence"]
    assert checked.grounding["reader"]["check"]["margins"] == [-4.0, 4.0]


def test_the_lm_check_is_not_asked_when_the_scorer_abstains(ctx, monkeypatch):
    """Without a fitted check stage the LM only reorders what the scorer answers, so a question the scorer abstains
    on costs no check (and abstains as it would without one)."""
    import app.evidence as evidence
    from app import scorer

    monkeypatch.setattr(scorer.load(), "check", None)

    class Judge:
        asked = 0

        def margins(self, question, cands):
            Judge.asked += 1
            return [4.0] * len(cands)

    monkeypatch.setattr(evidence, "checker", lambda ctx: Judge())
    a = answer(ctx, "How many container cranes does Harbour Widgets operate at the south pier?",
               doc_ids=["harbour.md"])
    assert a.abstained and Judge.asked == 0
    b = answer(ctx, "How many people does Harbour Widgets employ?", doc_ids=["harbour.md"])
    assert not b.abstained and Judge.asked == 1


def test_a_fitted_check_stage_decides_with_the_lm_whether_to_answer(ctx, monkeypatch):
    """With a fitted check stage (the shipped model's, bench/fit_reader.py fit-check) the LM is asked about the scorer's
    top k that say different things on every question, and the stage's combined probability both picks the answer and
    decides whether to answer: a confident "no" to every candidate abstains where the scorer alone answers, a
    confident "yes" answers where the scorer alone abstains."""
    import app.evidence as evidence
    from app import scorer
    from app.scorer import CheckStage

    model = scorer.load()
    assert model.check is not None and model.check.top_k >= 1  # the shipped model has one
    monkeypatch.setattr(model, "check", CheckStage(2, 0.5, 1.0, 0.0, 0.5))

    class Judge:
        verdict = 4.0
        asked: list[int] = []

        def margins(self, question, cands):
            Judge.asked.append(len(cands))
            # what it is asked about says different things: never a sentence and the window that holds it
            lines = [" ".join(c.line.lower().split()) for c in cands]
            assert not any(a in b for a in lines for b in lines if a is not b)
            return [Judge.verdict] * len(cands)

    monkeypatch.setattr(evidence, "checker", lambda ctx: Judge())
    answered_q = "How many people does Harbour Widgets employ?"
    unsure_q = "How many container cranes does Harbour Widgets operate at the south pier?"
    Judge.verdict = -8.0
    assert answer(ctx, answered_q, doc_ids=["harbour.md"]).abstained
    Judge.verdict = 8.0
    assert not answer(ctx, answered_q, doc_ids=["harbour.md"]).abstained
    assert not answer(ctx, unsure_q, doc_ids=["harbour.md"]).abstained  # asked although the scorer abstains
    assert Judge.asked == [2, 2, 2]
    monkeypatch.setattr(evidence, "checker", lambda ctx: None)  # no checker: the scorer decides alone
    assert answer(ctx, unsure_q, doc_ids=["harbour.md"]).abstained


def test_an_unsure_abstention_quotes_its_likeliest_lines_marked_as_unsure_and_uncited(ctx, monkeypatch):
    """Between the hedge floor and the threshold the reply still abstains (no claim, no citation) but quotes the
    two likeliest different lines with their passage numbers; below the floor it is the plain abstention."""
    from app.answer import HEDGE_TEXT
    from app.grounding import ABSTAIN_TEXT

    q = "How many container cranes does Harbour Widgets operate at the south pier?"
    monkeypatch.setattr(reader, "HEDGE_FLOOR", 0.0)  # every abstention is "unsure"
    a = answer(ctx, q, doc_ids=["harbour.md"])
    hedge = a.grounding["hedge"]
    assert a.abstained and a.citations == []
    assert 1 <= len(hedge) <= reader.HEDGE_LINES and len({h["line"] for h in hedge}) == len(hedge)
    assert a.text.startswith(HEDGE_TEXT)
    assert all(f"“{h['line']}” [{h['source']}]" in a.text and 1 <= h["source"] <= len(a.sources) for h in hedge)
    monkeypatch.setattr(reader, "HEDGE_FLOOR", 1.01)  # above any confidence
    b = answer(ctx, q, doc_ids=["harbour.md"])
    assert b.abstained and "hedge" not in b.grounding and b.text == ABSTAIN_TEXT


def test_the_hedge_floor_is_the_one_bench_hedge_band_chose_on_train():
    import json
    from pathlib import Path

    res = json.loads((Path(__file__).resolve().parents[2] / "bench" / "results" / "hedge_band.json").read_text())
    assert reader.HEDGE_FLOOR == res["chosen_floor"]

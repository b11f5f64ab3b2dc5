"""A figure question's statement rows looked up in the retrieved documents' tables as more candidates (app/lookup.py),
and the change between the two periods a question names (app/reader.py)."""
from __future__ import annotations

from types import SimpleNamespace

from app.answer import answer
from app.cells import cells_of
from app.lookup import MAX_ROWS, RowIndex, rows_for
from app.question import read_question
from app.reader import change_pair
from ingest.jobs.queue import ingest_files

NARRATIVE = ("Northwind Traders Inc. sells tea and coffee to grocers. During the quarter ended June 30, 2024 the "
             "company opened a roastery in Leeds and hired a new head of sales. Customers bought more green tea "
             "than a year before, and the coffee range was cut to twelve blends. ") * 6
STATEMENT = ("\n\nCONDENSED STATEMENTS OF CASH FLOWS\n\n(In millions) (Unaudited)\n\n"
             "Three Months Ended June 30, 2024 2023\n\n"
             "Net income 41 37\n\n"
             "Employee severance and benefit arrangements 3 9\n\n"
             "Net cash provided by operating activities 95 80\n\n"
             "Net cash used in investing activities (22) (31)\n")
FILING = "# Northwind Traders quarterly report\n\n" + NARRATIVE + STATEMENT
Q = "What was Northwind's net cash from operating activities for the three months ended June 30, 2024?"


def _source(text: str, start: int, end: int, rank: int = 1):
    return SimpleNamespace(rank=rank, doc_id="northwind.md", doc_hash="h1", name="northwind.md", start=start,
                           end=end, text=text[start:end], headings=[])


def test_the_rows_the_search_missed_are_added_as_candidates_with_sources_numbered_after_it():
    narrative = _source(FILING, 0, len(FILING) - len(STATEMENT))  # the search brought the narrative only
    got = rows_for(read_question(Q), [narrative], RowIndex({"h1": FILING}.get))
    rows = {c.row: (c, src) for c, src in got}
    assert "Net cash provided by operating activities" in rows
    c, src = rows["Net cash provided by operating activities"]
    assert src.rank >= 2 and c.source == src.rank and src.doc_id == "northwind.md"
    assert src.text == FILING[src.start:src.end] and "Net cash provided by operating activities 95 80" in src.text
    assert len({s.rank for _, s in got}) <= MAX_ROWS


def test_nothing_is_looked_up_for_a_row_in_the_context_already_or_a_question_that_asks_no_figure():
    index = RowIndex({"h1": FILING}.get)
    whole = _source(FILING, 0, len(FILING))
    assert rows_for(read_question(Q), [whole], index) == []  # every row is in the context already
    narrative = _source(FILING, 0, len(FILING) - len(STATEMENT))
    assert rows_for(read_question("Why did Northwind open a roastery?"), [narrative], index) == []
    assert rows_for(read_question("How many visitors came to the tasting?"), [narrative], index) == []  # no row says


def test_a_change_between_two_named_years_takes_exactly_those_columns():
    text = ("| Code | Performance Measure | FY 2010 Results | FY 2013 Results | FY 2013 Target | FY 2014 Results |\n"
            "|---|---|---|---|---|---|\n"
            "| 7.02A | Average unit cost for processing retirement claims | $105.94 | $91.37 | $90.00 | "
            "$129.83 |\n")
    cells = cells_of([SimpleNamespace(rank=1, start=0, text=text)])
    best = next(c for c in cells if c.column == "FY 2014 Results")
    late, early = change_pair(best, cells, (2013, 2014))
    assert (late.value, early.value) == ("$129.83", "$91.37")
    late, early = change_pair(best, cells)  # no years asked: the same kind of column, an earlier year
    assert late is best and early.column.endswith("Results") and early.value in ("$105.94", "$91.37")


def test_a_failing_lookup_costs_the_answer_nothing(make_ctx, write, monkeypatch):
    import app.evidence

    c = make_ctx(chunker="mg", theta=60, synth_backend="extractive")
    assert ingest_files(c, [write("northwind.md", FILING)]).results[0].status == "ingested"

    def broken(*a, **k):
        raise RuntimeError("a document's text could not be read")

    monkeypatch.setattr(app.evidence, "rows_for", broken)
    a = answer(c, "What was Northwind's net income for the three months ended June 30, 2024?")
    assert a.error is None and a.sources


def test_the_rows_a_reply_quotes_become_sources_numbered_in_the_order_quoted():
    """Rows are numbered after the retrieved passages as they are looked up (n+1, n+2, …), but only the quoted ones
    become sources: a reply whose answer is the second row looked up and whose further quote is the first cites
    them as n+1 and n+2 (a newcomer's follow-up over a 10-Q raised IndexError at the citation before)."""
    from dataclasses import replace

    from app.candidates import Candidate
    from app.evidence import quoted_rows
    from app.reader import Reading

    narrative = _source(FILING, 0, len(FILING) - len(STATEMENT))
    got = rows_for(read_question(Q), [narrative], RowIndex({"h1": FILING}.get))
    by_rank: dict[int, object] = {}
    for _, src in got:
        by_rank.setdefault(src.rank, src)
    assert len(by_rank) >= 2  # two rows looked up: ranks 2 and 3
    first, second = sorted(by_rank)[:2]

    def cand(rank):
        return Candidate("cell", rank, "northwind.md", by_rank[rank].start, by_rank[rank].end,
                         by_rank[rank].text, looked_up=True)

    reading = Reading(read_question(Q), "Net cash …: 95", cand(second), [], [cand(first)], 0.9, 0.3)
    sources = [narrative]
    out = quoted_rows(reading, sources, got)
    assert [s.rank for s in sources] == [1, 2, 3]
    assert out.best.source == 2 and sources[1].text == by_rank[second].text  # the answer's row is cited as [2]
    assert out.more[0].source == 3 and sources[2].text == by_rank[first].text
    plain = replace(reading, best=Candidate("sentence", 1, "northwind.md", 0, 10, "Northwind"), more=[])
    assert quoted_rows(plain, [narrative], got) is plain  # no row quoted: nothing appended

"""A figure question's statement row looked up in the retrieved documents' tables (app/lookup.py, issue 33), the
change between the two periods a question names, blank lines inside a sentence, and groups that stay in their
table."""
from __future__ import annotations

from types import SimpleNamespace

from app.answer import answer
from app.lookup import RowIndex, looked_up
from app.reader import cells_of, read
from ingest.jobs.queue import ingest_files
from ingest.text.sentences import split_sentences

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


def _passage(doc_id: str, text: str):
    """A retrieved passage: a whole made-up text, source [1]."""
    return SimpleNamespace(rank=1, start=0, doc_id=doc_id, headings=[], text=text)


def _source(text: str, start: int, end: int, rank: int = 1):
    return SimpleNamespace(rank=rank, doc_id="northwind.md", doc_hash="h1", name="northwind.md", start=start,
                           end=end, text=text[start:end], headings=[])


def test_a_statement_row_the_search_missed_is_looked_up_in_the_retrieved_document():
    narrative = _source(FILING, 0, len(FILING) - len(STATEMENT))  # the search brought the narrative only
    index = RowIndex({"h1": FILING}.get)
    q = "What was Northwind's net cash from operating activities for the three months ended June 30, 2024?"
    assert read(q, [narrative]).answer is None  # without the lookup: nothing to answer from
    extra = looked_up(q, [narrative], index, known_names={"northwind", "traders"})
    assert len(extra) == 1
    x = extra[0]
    assert x.rank == 2 and x.doc_id == "northwind.md" and x.text == FILING[x.start:x.end]
    assert "Net cash provided by operating activities 95 80" in x.text
    r = read(q, [narrative, *extra], doc_text=lambda s: FILING)
    assert r.answer is not None and "95" in r.answer and "80" not in r.answer and r.best.source == 2


def test_nothing_is_looked_up_when_a_retrieved_passage_holds_the_row_or_no_row_says_what_is_asked():
    index = RowIndex({"h1": FILING}.get)
    whole = _source(FILING, 0, len(FILING))
    q = "What was Northwind's net cash from operating activities for the three months ended June 30, 2024?"
    assert looked_up(q, [whole], index) == []  # the row is in the context already
    narrative = _source(FILING, 0, len(FILING) - len(STATEMENT))
    # "Employee severance and benefit arrangements" holds "employee" and is still no count of employees
    assert looked_up("How many employees did Northwind have at June 30, 2024?", [narrative], index) == []
    assert looked_up("What was Northwind's inventory at June 30, 2024?", [narrative], index) == []
    assert looked_up("Why did Northwind open a roastery?", [narrative], index) == []  # no figure asked


def test_the_looked_up_row_answers_through_the_whole_answer_path_and_is_cited_with_its_page(make_ctx, write):
    c = make_ctx(chunker="mg", theta=60, synth_backend="extractive")
    assert ingest_files(c, [write("northwind.md", FILING)]).results[0].status == "ingested"
    q = "What was Northwind's net cash from operating activities for the three months ended June 30, 2024?"
    a = answer(c, q, budget_words=60)  # room for one passage: the search's own pick
    assert not a.abstained and "95" in a.text.split("\n")[0], a.text
    looked = [s for s in a.sources if "Net cash provided by operating activities 95" in s.parent_text]
    assert len(looked) == 1 and looked[0].number == len(a.sources) and a.citations[0].number == looked[0].number
    assert looked[0].pages is None and looked[0].doc_id == "northwind.md"  # a Markdown file has no pages
    c.settings.table_lookup = False
    off = answer(c, q, budget_words=60)
    assert len(off.sources) == len(a.sources) - 1 and off.abstained


def test_a_change_between_two_named_years_takes_exactly_those_columns():
    text = ("| Code | Performance Measure | FY 2010 Results | FY 2013 Results | FY 2013 Target | FY 2014 Results |\n"
            "|---|---|---|---|---|---|\n"
            "| 7.02A | Average unit cost for processing retirement claims | $105.94 | $91.37 | $90.00 | "
            "$129.83 |\n")
    src = _passage("apr", text)
    r = read("By how much did the average unit cost for processing retirement claims rise from FY 2013 to FY "
             "2014?", [src])
    assert r.answer is not None and "129.83" in r.answer and "91.37" in r.answer and "38.46" in r.answer
    assert "105.94" not in r.answer and "90.00" not in r.answer
    r = read("By how many did the number of user accounts grow from FY 2015 to FY 2016?",
             [_passage("apr", (
                 "| Measure | FY 2012 Results | FY 2015 Results | FY 2016 Results |\n|---|---|---|---|\n"
                 "| Number of user accounts | 567 | 2,156 | 2,459 |\n"))])
    assert r.answer is not None and "303" in r.answer and "2,459" in r.answer and "2,156" in r.answer


def test_a_blank_line_inside_a_sentence_does_not_end_it():
    text = ("Analysis\n\nThe pilot of a Piper PA-31T crossed the initial\n\napproach fix and descended to 2,300 "
            "feet, per the procedure. Upon\n\nreaching the final fix, he selected 1,200 feet.\n\nThe Next part.")
    spans = [" ".join(text[s:e].split()) for s, e in split_sentences(text, min_lines=3)]
    assert "The pilot of a Piper PA-31T crossed the initial approach fix and descended to 2,300 feet, per the " \
           "procedure." in spans
    assert "Upon reaching the final fix, he selected 1,200 feet." in spans
    assert "Analysis" in spans and "The Next part." in spans  # a heading, and a sentence after a full stop


def test_a_group_label_does_not_carry_into_the_next_table():
    text = ("| | 2023 | 2022 |\n|---|---|---|\n| Rest of Asia Pacific: | | |\n| Net sales | 5,630 | 6,150 |\n\n"
            "A reconciliation of segment operating income follows (in millions):\n\n"
            "| | 2023 | 2022 |\n|---|---|---|\n| Research and development expense | (7,442) | (6,797) |\n")
    rows = {c.row for c in cells_of([SimpleNamespace(rank=1, start=0, text=text)])}
    assert "Rest of Asia Pacific: Net sales" in rows and "Research and development expense" in rows


def test_a_change_between_two_named_years_looks_up_a_row_that_has_both():
    older = ("# Northwind Traders quarterly report 2023\n\n" + NARRATIVE + "\n\nSEGMENT INFORMATION (In millions)\n\n"
             "Three Months Ended September 30, 2023 2022\n\nTea: Net sales 120 101\n")
    oldest = ("# Northwind Traders quarterly report 2022\n\n" + NARRATIVE + "\n\nSEGMENT INFORMATION (In millions)\n\n"
              "Three Months Ended September 30, 2022 2021\n\nTea: Net sales 101 90\n")
    texts = {"h1": oldest, "h2": older}
    first = SimpleNamespace(rank=1, doc_id="2022.md", doc_hash="h1", name="2022.md", start=0, end=len(NARRATIVE),
                            text=oldest[:len(NARRATIVE)], headings=[])
    second = SimpleNamespace(rank=2, doc_id="2023.md", doc_hash="h2", name="2023.md", start=0, end=len(NARRATIVE),
                             text=older[:len(NARRATIVE)], headings=[])
    q = ("How much did Northwind's tea net sales grow in the quarter ended September 30, 2023 compared with the "
         "quarter ended September 30, 2022?")
    extra = looked_up(q, [first, second], RowIndex(texts.get), known_names={"northwind", "traders"})
    assert len(extra) == 1 and extra[0].doc_id == "2023.md" and "Tea: Net sales 120 101" in extra[0].text


def test_a_row_whose_label_says_what_is_asked_wins_over_the_same_name_under_another_metric():
    text = ("NET SALES AND GROSS MARGIN (In millions)\n\n"
            "| | Three Months Ended December 31, 2022 | Three Months Ended December 25, 2021 |\n|---|---|---|\n"
            "| Gross margin: | | |\n| Services | 14,709 | 14,123 |\n\nNet sales by category:\n\n"
            "| | Three Months Ended December 31, 2022 | Three Months Ended December 25, 2021 |\n|---|---|---|\n"
            "| Services | 20,766 | 19,516 |\n")
    src = _passage("aapl", text)
    r = read("What were Apple's Services net sales for the quarter ended December 31, 2022?", [src],
             known_names={"apple"})
    assert r.answer is not None and "20,766" in r.answer and "14,709" not in r.answer


def test_a_figure_that_states_no_period_is_no_answer_to_a_period_but_answers_the_filing_named_by_its_period():
    text = ("NVIDIA CORPORATION, quarter ended October 29, 2023\n\nCONDENSED CONSOLIDATED STATEMENTS OF INCOME (In "
            "millions)\n\n| | | | |\n|---|---|---|---|\n"
            "| Revenue | $ 18,120 | $ 5,931 | $ 38,819 |\n| Cost of revenue | 4,720 | 2,754 | 11,309 |\n")
    src = _passage("nvda", text)
    assert read("What was NVIDIA's revenue for the fourth quarter of fiscal year 2024?", [src],
                known_names={"nvidia"}).answer is None
    said = SimpleNamespace(rank=2, start=0, doc_id="nvda", headings=[], text=(
        "Gaming revenue for the third quarter of fiscal year 2024 was $2.86 billion, up 81% from a year ago."))
    assert read("What was NVIDIA's gaming revenue for the fourth quarter of fiscal year 2024?", [said],
                known_names={"nvidia"}).answer is None  # another quarter's figure
    assert "2.86" in read("What was NVIDIA's gaming revenue for the third quarter of fiscal year 2024?", [said],
                          known_names={"nvidia"}).answer
    r = read("What was NVIDIA's revenue as reported in the Q3 2023 10-Q?", [src], known_names={"nvidia"})
    assert r.answer is not None and "18,120" in r.answer


REPORT = ("National Transportation Safety Board\n\nAviation Accident Factual Report\n\nLocation: Chevroux, France\n\n"
          "On December 17, 2007, a Reims F172 M, owned by Airclub Besancon and piloted by a private pilot, impacted "
          "terrain near Chevroux, France.\n\n"
          "| | | | | |\n|---|---|---|---|---|\n"
          "| Lowest Cloud Condition: | Scattered / 100 ft agl | Visibility | | 0.7 Miles |\n"
          "| Lowest Ceiling: | Broken / 200 ft agl | Visibility (RVR): | | |\n")


def test_a_form_label_without_its_colon_gives_the_value_past_the_empty_cells_and_a_follow_up_asks_its_own_word():
    src = _passage("ntsb", REPORT)
    cells = {(c.row, c.value) for c in cells_of([src])}
    assert ("Visibility", "0.7 Miles") in cells and ("Lowest Cloud Condition", "Scattered / 100 ft agl") in cells
    assert not any(row.startswith("Visibility (RVR)") for row, _ in cells)  # a field left empty gives nothing
    first = "Who owned the Reims F172 M that crashed near Chevroux, France on December 17, 2007?"
    history = [{"role": "user", "content": first}, {"role": "assistant", "content": "Airclub Besancon [1]"}]
    r = read("What was the visibility?", [src], history=history)
    assert r.answer is not None and "0.7 Miles" in r.answer


def test_a_sentence_cut_from_a_wide_row_is_quoted_without_its_empty_cells():
    from app.grounding import source_sentences

    text = ("| Background investigations. To counter the loss of investigative resources, OPM and two contractors "
            "increased their field staff in FY 2016. | | | | | | | |\n")
    sents = [x for x in source_sentences([SimpleNamespace(rank=1, start=10, text=text)]) if "field staff" in x.text]
    assert sents and all("|" not in x.shown for x in sents)
    assert sents[-1].shown.endswith("field staff in FY 2016.") and text[sents[-1].start - 10:].startswith(
        sents[-1].text)


def test_a_statement_table_under_period_lines_gets_its_columns_from_them():
    text = ("CONDENSED CONSOLIDATED STATEMENTS OF CASH FLOWS (In millions)\n\nNine Months Ended\n\nJuly 1, June 25,\n\n"
            "2023 2022\n\n| | | |\n|---|---|---|\n| Net income | 74,039 | 79,082 |\n"
            "| Changes in operating assets and liabilities: | | |\n| Accounts payable | (16,790) | (6,108) |\n"
            "| Cash generated by operating activities | 88,945 | 98,024 |\n")
    cells = {(c.row, c.column): c.value for c in cells_of([SimpleNamespace(rank=1, start=0, text=text)])}
    assert cells[("Cash generated by operating activities", "Nine Months Ended July 1, 2023")] == "88,945"
    assert cells[("Changes in operating assets and liabilities: Accounts payable",
                  "Nine Months Ended July 1, 2023")] == "(16,790)"  # a group's line, and its subtotal is its own
    assert cells[("Net income", "Nine Months Ended June 25, 2022")] == "79,082"
    r = read("How much cash did Apple generate from operating activities in the nine months ended July 1, 2023?",
             [_passage("aapl", text)], known_names={"apple"})
    assert r.answer is not None and "88,945" in r.answer and "98,024" not in r.answer.split(":")[-1]


def test_a_question_for_a_value_or_a_sum_of_money_is_not_answered_by_a_sentence_without_one():
    text = ("The rapid test for HCV antibodies may be replaced by another test with similar operational "
            "characteristics (sensitivity and specificity). The study's costs do not include treatment, which is "
            "notified to SIVIGILA (file 340). Participants must have a body mass index (BMI) as defined in the "
            "protocol glossary.")
    src = _passage("hcv", text)
    for q in ("What are the sensitivity and specificity of the rapid HCV antibody test?",
              "What is the total cost of the HCV screening study?",
              "What body mass index (BMI) range is required to take part?"):
        assert read(q, [src]).answer is None, q
    said = _passage("hcv", (
        "The rapid HCV antibody test has a sensitivity of 98% and a specificity of 99%. The total cost of the "
        "screening study is $265,000."))
    assert "98%" in read("What are the sensitivity and specificity of the rapid HCV antibody test?", [said]).answer
    assert "$265,000" in read("What is the total cost of the HCV screening study?", [said]).answer
    words = _passage("harbour", "The council cuts the mooring fees for small boats from forty pounds to twelve pounds.")
    assert "twelve pounds" in read("How much are the mooring fees for small boats cut?", [words]).answer
    budget = _passage("docs", "Parents are added until the budget of 1500 words is reached.")
    assert "1500" in read("What is the context budget in words?", [budget]).answer  # a unit that is no currency


def test_a_failing_lookup_costs_the_answer_nothing(make_ctx, write, monkeypatch):
    import app.lookup

    c = make_ctx(chunker="mg", theta=60, synth_backend="extractive")
    assert ingest_files(c, [write("northwind.md", FILING)]).results[0].status == "ingested"

    def broken(*a, **k):
        raise RuntimeError("a document's text could not be read")

    monkeypatch.setattr(app.lookup, "looked_up", broken)
    a = answer(c, "What was Northwind's net income for the three months ended June 30, 2024?")
    assert a.error is None and a.sources and "41" in a.text.split("\n")[0], a.text

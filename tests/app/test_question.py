"""The question is read once (app/question.py): its kind, names, period, key terms, whether it follows up (issue 46)."""
from __future__ import annotations

import pytest

from app.question import is_name, read_question

FIRST = [{"role": "user", "content": "What was Acme's revenue in the third quarter of 2023?"},
         {"role": "assistant", "content": "Total revenue, Three Months Ended September 30, 2023: $530 million [1]"}]


@pytest.mark.parametrize("question", [
    "What was SG&A in FY2023?",
    "How much Cash & Cash equivalents did it hold at the end of FY2023?",
    "What were sales in USD?",
    "What was revenue for FY2023 in USD millions?",
])
def test_periods_currencies_and_abbreviations_are_never_names(question):
    q = read_question(question)
    assert q.entities == ()
    for word in ("USD", "FY2023", "SG&A", "Cash & Cash", "Cash Cash"):
        assert not is_name(word)


@pytest.mark.parametrize("question", [
    "If I want to report something unethical anonymously, how do I do it?",
    "Once I've picked the output voltage, what's next?",
    "What do I click once I'm there?",
])
def test_the_pronoun_i_and_a_sentence_s_first_words_are_never_names(question):
    """Capitals English puts on "I" and on a sentence's first word name nothing: such a run routed a handbook
    question to a physics manual whose cover holds the word "if"."""
    assert read_question(question).entities == ()


def test_real_names_are_names():
    assert read_question("What did Apple Inc. report as net sales?").entities == ("Apple Inc",)
    assert read_question("How did Colonel Campbell come to know Jane Fairfax?").entities == (
        "Colonel Campbell", "Jane Fairfax")
    # an abbreviation around "&" is a term, whatever it abbreviates (SG&A, R&D, AT&T): it is searched, not routed by
    assert "at&t" in read_question("What did AT&T pay in dividends?").terms
    # a plural's possessive is the name without its apostrophe (the route's reason said "names Flextronics'")
    assert read_question("What share of Flextronics' revenue went on materials?").entities == ("Flextronics",)
    assert read_question("What share of Flextronics’ revenue went on materials?").entities == ("Flextronics",)


@pytest.mark.parametrize("followup", [
    "And the year before?",
    "What about the same quarter a year earlier?",
    "And in the prior-year quarter?",
    "How about the same period last year?",
])
def test_wordings_of_the_same_period_a_year_before_read_alike(followup):
    q = read_question(followup, FIRST)
    assert q.followup
    assert q.period.years == (2022,) and q.period.quarters == (3,)
    assert "revenue" in q.terms and q.entities == ("Acme",)
    assert q.kind == "amount"


def test_the_quarter_before_and_two_years_earlier():
    assert read_question("And the quarter before?", FIRST).period.quarters == (2,)
    before = read_question("What about two years earlier?", FIRST).period
    assert before.years == (2021,) and before.quarters == (3,)


def test_a_question_that_stands_alone_inherits_nothing():
    q = read_question("How many employees did Bolt Gadgets Corp. have at year end?", FIRST)
    assert not q.followup
    assert q.entities == ("Bolt Gadgets Corp",) and q.period.years == () and q.query == q.text


def test_a_follow_up_that_names_no_period_keeps_the_one_before():
    q = read_question("What about services?", FIRST)
    assert q.followup and q.period.years == (2023,) and q.period.quarters == (3,)
    assert "services" in q.terms


def test_a_follow_up_that_names_a_part_of_a_year_keeps_the_year_before():
    """Newcomer run r16: "And for the first nine months of the year?" after a third-quarter-2024 figure was read as
    nine months of no year, and the reader hedged with the quarter's figure."""
    first = [{"role": "user", "content": "What was Spotify's total revenue for the third quarter of 2024?"},
             {"role": "assistant", "content": "Total, Three months ended September 30, 2024: 3,988 [6]"}]
    q = read_question("And for the first nine months of the year?", first)
    assert q.followup and q.period.years == (2024,) and q.period.span == "nine" and not q.period.quarters
    assert read_question("What about the second quarter?", first).period.years == (2024,)
    assert read_question("And in 2022?", first).period.years == (2022,)  # a year of its own stays its own


@pytest.mark.parametrize("text, kind", [
    ("How many stores did the company open?", "count"),
    ("How many times did the bell ring?", "count"),
    ("When was the agreement signed?", "date"),
    ("Who signed the report?", "name"),
    ("Why did gross margin decline?", "explain"),
    ("Did they raise their outlook?", "yesno"),
    ("What percentage of revenue came from services?", "percent"),
    ("How long was the runway?", "measure"),
    ("What was the gross margin?", "amount"),
    ("What colour was the carriage?", "other"),
])
def test_the_kind_of_answer_is_read_from_the_grammar(text, kind):
    assert read_question(text).kind == kind


def test_key_terms_leave_out_names_periods_and_function_words():
    q = read_question("How many people did Aaron's employ at the end of fiscal 2021?")
    assert q.entities == ("Aaron",)
    assert q.period.years == (2021,)
    assert set(q.terms) == {"people", "employ"}
    assert q.focus == ("people",)


@pytest.mark.parametrize("question, months", [
    ("What were sales in the first half of 2023?", (1, 6)),
    ("What were sales in H1 2023?", (1, 6)),
    ("What were sales in the second half of fiscal 2022?", (7, 12)),
    ("What was 2023's first half revenue?", (1, 6)),
])
def test_a_half_of_a_year_is_a_period_not_two_content_words(question, months):
    """"And in the first half of 2023?" after "… Zone EUR's sales in January–June 2022?" was read as asking about
    "first" and "half" (its own two terms, so the question before's "sales" and its kind were dropped) and abstained
    over the row it asked for (newcomer run r21). A half named with its year is a period, as "January–June" is."""
    q = read_question(question)
    assert q.period.months == months and "half" not in q.terms and "first" not in q.terms
    before = [{"role": "user", "content": "What were Zone EUR's sales in January–June 2022?"},
              {"role": "assistant", "content": "Zone EUR, January–June 2022 Sales (a): 9283"}]
    f = read_question("And in the first half of 2023?", before)
    assert f.period.years == (2023,) and f.period.months == (1, 6) and "sales" in f.terms and f.kind == "amount"


def test_a_half_that_is_no_period_stays_a_word():
    q = read_question("What share of puns fall in the second half of the sentence?")
    assert q.period.months == () and "half" in q.terms

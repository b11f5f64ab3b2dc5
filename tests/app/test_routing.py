"""Which documents a question goes to before anything is searched (app/routing.py): names a document is about route
to it; a year alone routes to the reports of that year, also when the question names something no document's
profile holds (a programme inside one agency's yearly reports)."""
from __future__ import annotations

from app.routing import Profile, route

REPORTS = [Profile(f"{y}-annual-performance-report.pdf", f"{y}-annual-performance-report.pdf",
                   {"annual", "performance", "report", "opm"}, [], {y}) for y in (2014, 2015, 2016)]
MIXED = [Profile("msft.pdf", "msft.pdf", {"microsoft"}, ["june 30 2023"], {2023}),
         Profile("handbook.docx", "handbook.docx", {"contoso", "handbook"}, [], set()),
         Profile("manual.pdf", "manual.pdf", {"tiegcm", "if"}, [], {2009})]


def test_a_name_routes_to_the_documents_about_it():
    r = route("What was Microsoft's revenue in fiscal 2023?", MIXED)
    assert r.doc_ids == ["msft.pdf"] and "Microsoft" in r.why


def test_a_year_routes_a_question_about_a_programme_to_that_year_s_report():
    """Measured on issue 33's filings set: withholding the year when the question names something no profile holds
    ("Federal Employee Viewpoint Survey") sent such questions to every report and lost a right answer."""
    q = "How many user accounts did the Federal Employee Viewpoint Survey Online Reporting tool have in 2015?"
    assert route(q, REPORTS).doc_ids == ["2015-annual-performance-report.pdf"]


def test_the_pronoun_i_routes_nowhere():
    assert route("If I want to report something unethical anonymously, how do I do it?", MIXED).doc_ids is None

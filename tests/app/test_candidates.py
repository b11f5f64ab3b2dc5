"""The reader's candidates (app/candidates.py): besides each sentence, two sentences that follow each other in one
passage are one more candidate (a window), so that an answer printed in the sentence after the one that matches the
question's words can be quoted with it; a window never joins two passages, nor runs over a heading."""
from __future__ import annotations

from types import SimpleNamespace

from app.candidates import candidates
from app.question import read_question


def _src(text: str, rank: int, start: int = 0, headings=()):
    return SimpleNamespace(rank=rank, start=start, text=text, doc_id=f"d{rank}", headings=list(headings), score=1.0)


def test_two_sentences_that_follow_each_other_are_also_one_candidate():
    text = "The listen_port setting says which port to listen on. The default is 6432 on every platform."
    cands = candidates(read_question("What port does it listen on by default?"), [_src(text, 1)])
    sentences = [c for c in cands if c.kind == "sentence"]
    windows = [c for c in cands if c.kind == "window"]
    assert [c.text for c in sentences] == ["The listen_port setting says which port to listen on.",
                                           "The default is 6432 on every platform."]
    assert len(windows) == 1
    w = windows[0]
    assert w.text == " ".join(c.text for c in sentences) and w.line == w.text
    assert (w.source, w.doc_id, w.start, w.end) == (1, "d1", sentences[0].start, sentences[1].end)
    assert text[w.start:w.end] == w.text  # its offsets are the passage's, as a sentence's are


def test_a_window_never_joins_two_passages():
    a = _src("The pool holds twenty connections per user.", 1)
    b = _src("Clients may open one hundred connections at most.", 2)
    cands = candidates(read_question("How many connections?"), [a, b])
    assert [c.kind for c in cands] == ["sentence", "sentence"]


def test_a_window_does_not_run_over_a_heading_between_two_sentences():
    text = ("The pool holds twenty connections per user.\n\nClient Limits\n\n"
            "Clients may open one hundred connections at most.")
    cands = candidates(read_question("How many connections?"), [_src(text, 1)])
    assert "Client Limits" not in " ".join(c.text for c in cands)
    assert [c.kind for c in cands] == ["sentence", "sentence"]


def test_an_answer_quoting_a_window_is_kept_with_both_sentences_as_its_support():
    """The extractive answer's check (app/answer.py) keeps a line that is a sentence of its source, or part of one;
    a window is two sentences that follow each other, so both are found and both support the answer; two sentences
    that do not follow each other in their source are not a quote of it."""
    from app.answer import _extractive_verdict
    from app.grounding import source_sentences

    text = "The listen_port setting says which port to listen on. The default is 6432. Logs go to stderr."
    g = SimpleNamespace(sentences=source_sentences([_src(text, 1)]))
    v = _extractive_verdict(g, "The listen_port setting says which port to listen on. The default is 6432. [1]", 1)
    assert not v.abstained and v.cited == [1]
    assert [x.sentence.text for x in v.support[1]] == ["The listen_port setting says which port to listen on.",
                                                       "The default is 6432."]
    apart = _extractive_verdict(g, "The listen_port setting says which port to listen on. Logs go to stderr. [1]", 1)
    assert apart.abstained


def test_further_quotes_and_an_unsure_reply_s_lines_never_quote_the_same_words_twice():
    """Under an answer quoting a window, a further quote that shares one of its sentences (the window before it) is
    not shown again; nor are two overlapping windows the two likeliest lines of an unsure abstention."""
    from app.candidates import Candidate
    from app.reader import _more, hedge_of

    def cand(kind, start, end, text, score, source=1):
        c = Candidate(kind, source, "d", start, end, text)
        c.score = score
        return c

    a, b, z = "Port to listen on.", "The default is 6432.", "Settings follow."
    best = cand("window", 20, 58, f"{a} {b}", 0.40)
    before = cand("window", 0, 38, f"{z} {a}", 0.35)  # shares the sentence a with the answer
    elsewhere = cand("sentence", 0, 30, "Logs go to stderr by default.", 0.30, source=2)
    assert _more([best, before, elsewhere], best) == [elsewhere]
    assert hedge_of([best, before, elsewhere]) == [best, elsewhere]


def test_a_bare_row_of_figures_is_neither_a_further_quote_nor_an_unsure_reply_s_line():
    """A results table read without its labels gives lines of figures only ("32.6 - - - 56.5 39.2"); quoted under
    an answer about the hardware used (a newcomer run, the DPR paper), they told the reader nothing."""
    from app.candidates import Candidate
    from app.reader import _more, hedge_of

    def cand(start, text, score, source=1):
        c = Candidate("sentence", source, "d", start, start + len(text), text)
        c.score = score
        return c

    best = cand(0, "All experiments were done on eight 32GB GPUs.", 0.5)
    bare = cand(100, "32.6 - - - 56.5 39.2 - 40.2 46.8 -", 0.45)
    other = cand(200, "Training took three days on one server.", 0.3, source=2)
    assert _more([best, bare, other], best) == [other]
    assert hedge_of([best, bare, other]) == [best, other]

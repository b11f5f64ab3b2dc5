import pytest

from ingest.text.sentences import PASSAGE_MIN_LINES, count_words, is_hard_wrapped, split_sentences


def texts(t, **kw):
    return [t[s:e] for s, e in split_sentences(t, **kw)]


def test_abbreviations_and_decimals_do_not_end_sentences():
    t = "Mr. Smith paid $3.14 for it, e.g. at 5 p.m. today. Dr. J. R. Jones agreed."
    assert texts(t) == ["Mr. Smith paid $3.14 for it, e.g. at 5 p.m. today.", "Dr. J. R. Jones agreed."]


def test_quotes_and_lowercase_continuation_stay_in_sentence():
    t = '"Really?" she said. He left! Then... and so on.'
    assert texts(t) == ['"Really?" she said.', "He left!", "Then... and so on."]


def test_newlines_lists_and_headings():
    t = "# Title\nIntro line\n- item one\n- item two\n\nLast paragraph here"
    assert texts(t) == ["# Title", "Intro line", "- item one", "- item two", "Last paragraph here"]


def test_hard_wrapped_prose_joins_lines():
    line = "this is a line of wrapped prose that continues on the next line and"
    t = "\n".join([line] * 30) + " ends here."
    assert is_hard_wrapped(t)
    assert len(split_sentences(t)) == 1


def test_cjk_punctuation_needs_no_space():
    assert texts("第一句。第二句！第三句？") == ["第一句。", "第二句！", "第三句？"]
    assert count_words("第一句。") == 4  # each CJK character (and the mark) counts


def test_long_sentence_split_on_word_boundaries():
    t = " ".join(f"w{i}" for i in range(10_000))
    spans = split_sentences(t, max_words=300)
    assert len(spans) == 34
    assert all(count_words(t[s:e]) <= 300 for s, e in spans)
    assert " ".join(t[s:e] for s, e in spans) == t


def test_offsets_map_back_and_gaps_are_whitespace():
    t = "  One. Two!\n\nThree?  "
    spans = split_sentences(t)
    prev = 0
    for s, e in spans:
        assert t[prev:s].strip() == ""
        assert t[s:e] == t[s:e].strip()
        prev = e
    assert t[prev:].strip() == ""


@pytest.mark.parametrize("t", ["", "   \n\t", "x"])
def test_edge_cases(t):
    assert texts(t) == ([t] if t.strip() else [])


def test_bad_max_words():
    with pytest.raises(ValueError, match="max_words must be >= 1"):
        split_sentences("a b", max_words=0)


def test_numbered_list_markers_stay_with_their_item():
    t = "Payment is due.\n\n1. Data we collect\n- your e-mail"
    assert texts(t) == ["Payment is due.", "1. Data we collect", "- your e-mail"]
    t = "Intro.\n2.3. Scope of work\n(a) first thing\niv. fourth"
    assert texts(t) == ["Intro.", "2.3. Scope of work", "(a) first thing", "iv. fourth"]


def test_a_marker_or_heading_label_alone_joins_the_next_sentence():
    t = "The parties agree as follows:\n\n1.\n\nDEFINITIONS. Words mean what they say."
    assert texts(t) == ["The parties agree as follows:", "1.\n\nDEFINITIONS.", "Words mean what they say."]
    t = "Clause 1. Definitions. The terms below apply. Clause 2. Scope."
    assert texts(t) == ["Clause 1. Definitions.", "The terms below apply.", "Clause 2. Scope."]


def test_numbers_that_end_sentences_still_end_them():
    t = "He was born in 1990. Then he left. See Section 3. We go on."
    assert texts(t) == ["He was born in 1990.", "Then he left.", "See Section 3.", "We go on."]
    assert texts("The end. -") == ["The end.", "-"]  # a trailing marker with nothing after it stays


def test_sentences_between_matches_clipping_every_sentence():
    from ingest.text.sentences import sentences_between

    t = "One two. Three four five!\n\nSix? Seven eight nine ten. " * 20
    full = split_sentences(t)
    for start, end in [(0, len(t)), (5, 60), (9, 9), (100, 400), (len(t) - 3, len(t)), (0, 1)]:
        ref = [(max(s, start), min(e, end)) for s, e in full if e > start and s < end and max(s, start) < min(e, end)]
        assert sentences_between(t, start, end) == ref


def test_a_short_passage_of_wrapped_pdf_lines_keeps_its_sentences_whole():
    """A passage cut from a PDF page (~10 printed lines) is judged hard-wrapped on its own lines, so a sentence that
    runs over a line end stays one sentence (the extractive answer and the supporting sentence quote it whole)."""
    page = ("Look, I'm also getting rid of junk fees - those hidden fees - at the end of your bill that\n"
            "are there without your knowledge. My administration announced we're cutting credit card\n"
            "late fees from $32 to $8.\n"
            "Banks and credit card companies are allowed to charge what it costs them to in- - to\n"
            "instigate the collection. And that's more - a hell of a lot like $8 than 30-some dollars.\n"
            "But they don't like it. The credit card companies don't like it, but I'm saving American\n"
            "families $20 billion a year with all of the junk fees I'm eliminating.\n")
    sentences = [page[s:e] for s, e in split_sentences(page, min_lines=PASSAGE_MIN_LINES)]
    assert "My administration announced we're cutting credit card\nlate fees from $32 to $8." in sentences
    assert not any(s.endswith("credit card") for s in sentences)
    # a short list is not mistaken for wrapped prose: its lines stay apart
    items = "Bring:\n- a torch\n- two ropes\n- the map of the northern coast\n- water for a day\n"
    spans = split_sentences(items, min_lines=PASSAGE_MIN_LINES)
    assert [items[s:e] for s, e in spans][-2:] == ["- the map of the northern coast", "- water for a day"]


def test_a_setting_s_name_between_blank_lines_is_a_sentence_of_its_own():
    """A configuration reference (PgBouncer's, read from HTML) prints each setting as its name, its description and
    "Default: …", each a paragraph: a paragraph without a sentence mark followed by one starting in lower case was
    taken for a line wrapped across a blank line, so "Default: 6432" and the next setting's name "unix_socket_dir"
    were one sentence. A line of a few words between blank lines is a sentence of its own; a wrapped line is not."""
    text = ("Which port to listen on. Applies to both TCP and Unix sockets.\n\nDefault: 6432\n\nunix_socket_dir\n\n"
            "Specifies the location for Unix sockets.")
    spans = [text[s:e] for s, e in split_sentences(text)]
    assert "Default: 6432" in spans and "unix_socket_dir" in spans, spans
    wrapped = ("The pilot of a Piper PA-31T crossed the initial\n\napproach fix and descended to 2,300 feet, per the "
               "procedure.")
    assert [wrapped[s:e] for s, e in split_sentences(wrapped, min_lines=3)] == [wrapped]

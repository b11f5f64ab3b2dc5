import pytest

from ingest.sentences import count_words, is_hard_wrapped, split_sentences


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

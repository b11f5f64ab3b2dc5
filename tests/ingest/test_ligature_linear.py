"""Issue 47: the ligature repair (:func:`ingest.readers.pdf.mend_ligatures`) matched its words with
``[\\w\\x00]*\\x00[\\w\\x00]*``, which tries every start inside a long run of word characters without a NUL and scans to
the run's end from each: quadratic (a 97 KB PDF cost 120 CPU-seconds of extraction per upload). It now matches run
by run; the results are those of the old pattern, kept here as the reference."""
from __future__ import annotations

import random
import re

import pytest

from ingest.readers.pdf import mend_ligatures

_OLD = re.compile(r"[\w\x00]*\x00[\w\x00]*")  # the pattern of commit 3cd4e12
_LIGATURES = ("fi", "fl", "ff", "ffi", "ffl")
WORDS = {"fiscal", "reflects", "flow", "snowflake", "office", "baffled", "offer", "affluent", "fi_x", "éfilé"}


def _old_mend(text: str, words: set[str]) -> str:
    """mend_ligatures of 3cd4e12 on one string."""
    if "\x00" not in text:
        return text

    def mend(m):
        token = m.group()
        for lig in _LIGATURES:
            if token.replace("\x00", lig).lower() in words:
                return token.replace("\x00", lig)
        return token.replace("\x00", "fi")

    return _OLD.sub(mend, text)


TYPICAL = [
    "the full \x00scal year; re\x00ects the cash \x00ow",
    "Snow\x00ake Inc. and O\x00ce Depot",  # "Office": the ligature "ffi"
    "ba\x00ed, o\x00er, a\x00uent",
    "\x00", "\x00\x00", "a\x00\x00b", "\x00 \x00", " \x00start", "end\x00", "end\x00.",
    "no ligature at all",
    "NUL\x00 in CAPS \x00SCAL",
    "\x00_x and under_score\x00",
    "numbers 12\x0034 and 2023\x00",
    "é\x00lé, naïve\x00, 東京\x00",
    "line one \x00rst\nline two se\x00ng\ttab",
    "hyphen-\x00ed word—dash\x00",
    "",
]


@pytest.mark.parametrize("text", TYPICAL)
def test_the_same_words_are_mended_as_before(text):
    assert mend_ligatures(text, WORDS) == _old_mend(text, WORDS)


def test_the_same_as_before_on_random_strings():
    rnd = random.Random(47)
    alphabet = ["a", "f", "i", "l", "\x00", "\x00", " ", "-", ".", "é", "1", "_", "\n", "O", "ce"]
    words = {"affi", "afl", "fil", "office", "a", "ffi"}
    for _ in range(3000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 24)))
        assert mend_ligatures(text, words) == _old_mend(text, words), repr(text)


def test_page_data_is_mended_through_lists_and_dicts():
    page = {"width": 612.0, "items": [{"kind": "line", "text": "the \x00scal year"}, {"groups": [["re\x00ects"]]}]}
    assert mend_ligatures(page, WORDS) == {"width": 612.0, "items": [{"kind": "line", "text": "the fiscal year"},
                                                                     {"groups": [["reflects"]]}]}


# The old pattern's worst case: a long run of word characters with no NUL in it, and a NUL elsewhere in the string
# (so the string is not skipped). At 20,000 characters it took 1-1.5 CPU-seconds, growing with the square of the
# run: these 300,000-character runs took it minutes each; run by run they take milliseconds.
RUN = "a" * 300_000


SHAPES = [lambda run: run + " \x00scal", lambda run: "re\x00ects " + run, lambda run: (run + " \x00 ") * 2,
          lambda run: "-".join([run] * 10) + " \x00"]


@pytest.mark.parametrize("shape", SHAPES, ids=["run-then-nul", "nul-then-run", "two-runs", "ten-runs"])
def test_a_long_word_beside_a_nul_is_mended_in_one_pass(shape):
    got = mend_ligatures({"items": [{"text": shape(RUN)}]}, WORDS)["items"][0]["text"]
    assert got == _old_mend(shape("aaaaa"), WORDS).replace("aaaaa", RUN)  # the old result, on a short run

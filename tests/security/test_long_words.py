"""A file of one enormous "word" (megabytes with no space) or of enormous runs of whitespace: the chunks are bounded
in characters as well as in words (a word counts at most ``MAX_WORD_CHARS`` characters; longer runs are split into
pieces of that length; whitespace runs are shortened when the text is read), and what a question stores in its
conversation (and sends to the page) is bounded in bytes."""
from __future__ import annotations

import pytest

MAX_WORD_CHARS = 200  # ingest.sentences.MAX_WORD_CHARS: URLs and hashes fit
MAX_GAP = 100  # ingest.loaders.MAX_SPACE_RUN: whitespace between two words after reading
UNIT = "harbourlockgate12345"  # 20 characters: every 200-character piece of the word is the same
ONE_WORD = UNIT * 100_000  # 2 MB with no space


@pytest.mark.parametrize("chunker", ["recursive", "paragraph", "mg"])
def test_a_one_word_file_is_chunked_in_pieces_bounded_in_characters(chunker):
    from ingest.chunkers import build_chunker
    from ingest.loaders import load_bytes

    theta = 300
    text = load_bytes("one-word.txt", ONE_WORD.encode()).text
    chunks = build_chunker(chunker, theta).chunk(text)
    assert chunks and max(len(c.text) for c in chunks) <= theta * (MAX_WORD_CHARS + MAX_GAP)
    assert sum(len(c.text) for c in chunks if c.level == 0) == len(text)  # nothing lost: the pieces are the word


def test_whitespace_runs_do_not_make_huge_chunks():
    from ingest.chunkers import build_chunker
    from ingest.loaders import load_bytes

    raw = "Tides are high. " + " " * 1_000_000 + "Boats wait. " + "\n" * 500_000 + "The gate opens at six."
    text = load_bytes("gaps.txt", raw.encode()).text
    assert len(text) < 1_000
    chunks = build_chunker("mg", 300).chunk(text)
    assert chunks and max(len(c.text) for c in chunks) <= 300 * (MAX_WORD_CHARS + MAX_GAP)

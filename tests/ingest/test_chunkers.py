import dataclasses

import pytest

from ingest.chunkers import build_chunker
from ingest.chunkers.base import recursive_spans
from ingest.chunkers.multigranular import MultiGranularChunker, children_of
from ingest.chunkers.paragraph import ParagraphChunker
from ingest.chunkers.recursive import RecursiveChunker
from ingest.chunkers.semantic import SemanticChunker, semantic_breaks
from ingest.text.sentences import count_words, split_sentences
from tests.shared_bench import need_sets

TEXT = "\n\n".join(
    " ".join(f"Sentence {p}.{i} has some words about topic {p} and more words here." for i in range(12))
    for p in range(8)
)


def assert_offsets(text, chunks):
    for c in chunks:
        assert text[c.start:c.end] == c.text


def assert_cover(text, spans, start, end):
    """Spans are ordered, start at ``start``, end at ``end``, and only whitespace lies between them."""
    assert spans[0][0] == start and spans[-1][1] == end
    for (_s1, e1), (s2, _e2) in zip(spans, spans[1:]):
        assert e1 <= s2 and text[e1:s2].strip() == ""


@pytest.mark.parametrize("theta", [20, 40, 300])
def test_recursive_bound_and_cover(theta):
    spans = recursive_spans(TEXT, 0, len(TEXT), theta)
    assert all(count_words(TEXT[s:e]) <= theta for s, e in spans)
    assert_cover(TEXT, spans, 0, len(TEXT))


def test_recursive_never_splits_sentences_that_fit():
    sents = set(split_sentences(TEXT))
    starts_ends = {s for s, _ in sents} | {e for _, e in sents}
    for s, e in recursive_spans(TEXT, 0, len(TEXT), 40):
        assert s in starts_ends and e in starts_ends


def test_mg_children_tie_exactly_to_parent():
    chunks = MultiGranularChunker(theta=60).chunk(TEXT)
    assert_offsets(TEXT, chunks)
    parents = [c for c in chunks if c.level == 0]
    assert_cover(TEXT, [(p.start, p.end) for p in parents], 0, len(TEXT))
    sent_bounds = {b for s in split_sentences(TEXT) for b in s}
    for p in parents:
        for level, size in ((1, 30), (2, 15)):
            kids = [c for c in chunks if c.level == level and c.parent_span == (p.start, p.end)]
            assert kids, f"parent {p.start} has no level-{level} children"
            assert_cover(TEXT, [(k.start, k.end) for k in kids], p.start, p.end)
            assert all(count_words(k.text) <= size for k in kids)
            assert all(k.start in sent_bounds and k.end in sent_bounds for k in kids)
    halves = [c for c in chunks if c.level == 1]
    for q in (c for c in chunks if c.level == 2):  # every quarter lies inside one half
        assert sum(h.start <= q.start and q.end <= h.end for h in halves) == 1


def test_children_of_oversized_sentence_split_on_words():
    text = " ".join(f"w{i}" for i in range(100)) + "."
    kids = children_of(text, (0, len(text)), 40)
    assert [count_words(k.text) for k in kids if k.level == 1] == [20] * 5
    assert [count_words(k.text) for k in kids if k.level == 2] == [10] * 10


def test_paragraph_chunker_follows_paragraphs():
    chunks = ParagraphChunker(300).chunk(TEXT)
    assert len(chunks) == 8
    assert_offsets(TEXT, chunks)


def test_semantic_breaks_at_topic_change(fake_embedder):
    a = "Cats purr softly. Cats purr loudly. Cats purr often. Cats purr always."
    b = "Rockets launch fast. Rockets launch high. Rockets launch far."
    text = a + " " + b
    assert semantic_breaks(fake_embedder.embed_passages(["x y", "x y", "p q"]), 50) == [1]
    chunks = SemanticChunker(fake_embedder, max_words=300, buffer_size=0, breakpoint_percentile=80).chunk(text)
    assert [c.text for c in chunks] == [a, b]


def test_ids_are_deterministic():
    c1 = MultiGranularChunker(60).chunk_document(TEXT, "d", "h" * 64)
    c2 = MultiGranularChunker(60).chunk_document(TEXT, "d", "h" * 64)
    assert [c.id for c in c1] == [c.id for c in c2]
    assert len({c.id for c in c1}) == len(c1)
    parent_ids = {c.id for c in c1 if c.level == 0}
    assert all(c.parent_id in parent_ids for c in c1)


@pytest.mark.parametrize("text", ["", "x", "第一句。第二句！这是中文。" * 50, " ".join(["word"] * 10_000)])
@pytest.mark.parametrize("name", ["recursive", "paragraph", "mg"])
def test_edge_cases(name, text):
    chunks = build_chunker(name, 40).chunk(text)
    assert_offsets(text, chunks)
    assert all(count_words(c.text) <= 40 for c in chunks)
    if text:
        assert [c for c in chunks if c.level == 0]


def test_whole_book_levels_rebuild_the_text():
    text = (need_sets("gutenqa_emma") / "gutenqa_emma" / "docs" / "emma.txt").read_text(encoding="utf-8")
    chunks = MultiGranularChunker(300).chunk(text)
    for level in range(3):
        spans = [(c.start, c.end) for c in chunks if c.level == level]
        assert " ".join(text[s:e] for s, e in spans).split() == text.split()


@pytest.mark.parametrize("bad", [0, 3, -1, 2.5])
def test_theta_validated(bad):
    with pytest.raises(ValueError, match="theta must be an integer >= 4"):
        RecursiveChunker(bad)


def test_unknown_chunker():
    with pytest.raises(ValueError, match="unknown chunker 'nope'; choose one of"):
        build_chunker("nope")


PASSAGES = "\n\n".join(
    f"Passage {p}:\nTitle {p}\n"
    + "\n".join(f"Line {p}.{i} says a few words about passage {p}." for i in range(1 + p % 3))
    for p in range(1, 13))


@pytest.mark.parametrize("chunker", [RecursiveChunker(40), MultiGranularChunker(40)])
def test_a_block_that_fits_is_never_cut_between_chunks(chunker):
    """Blank-line blocks come before lines: each passage (a title line and its lines, at most 33 words) lies whole
    inside one parent, so a parent starts at a passage; the cut before blocks counted filled each parent line by
    line and cut passages in two."""
    starts = [i for i in range(len(PASSAGES)) if PASSAGES.startswith("Passage ", i)]
    ends = [PASSAGES.find("\n\n", s) for s in starts]
    blocks = [(s, len(PASSAGES) if e < 0 else e) for s, e in zip(starts, ends)]
    parents = [c for c in chunker.chunk(PASSAGES) if c.level == 0]
    assert_cover(PASSAGES, [(c.start, c.end) for c in parents], 0, len(PASSAGES))
    assert all(any(p.start <= s and e <= p.end for p in parents) for s, e in blocks)
    assert all(PASSAGES.startswith("Passage ", p.start) for p in parents)
    lines = [c for c in dataclasses.replace(chunker, blocks=False).chunk(PASSAGES) if c.level == 0]
    assert any(not PASSAGES.startswith("Passage ", p.start) for p in lines)


def test_an_index_recorded_before_blocks_counted_is_cut_with_blocks_on_re_ingest():
    from ingest.chunkers import from_description

    assert from_description({"chunker": "mg", "theta": 300}) == MultiGranularChunker(300)
    assert MultiGranularChunker(300).describe() == {"chunker": "mg", "theta": 300}
    old = MultiGranularChunker(300, blocks=False)
    assert from_description(old.describe()).chunk(PASSAGES) == old.chunk(PASSAGES)


REPORT = ("Annual report of the harbour board\n\n"
          + " ".join(f"The board met {i} times to review the pilots' rota and the dredging schedule." for i in range(9))
          + "\n\nLegal Proceedings\n\n"
          + " ".join(f"The board is party to claim {i} about the north quay lease, which it contests."
                     for i in range(9))
          + "\n\n3.2 Staffing\n\nThe harbour employed 112 people at the year end.")


@pytest.mark.parametrize("theta", [60, 100, 140])
def test_a_heading_line_begins_its_sections_passage_and_never_ends_one(theta):
    """Issue 46: in a report whose paragraphs do not repeat their headings, a parent of one section could end with
    the next section's heading, so a question naming that section ranked the section before it first. At every
    level the chunk that holds a heading holds the text after it too; a cut near it falls before it."""
    chunks = MultiGranularChunker(theta).chunk(REPORT)
    for heading in ("Legal Proceedings", "3.2 Staffing"):
        at = REPORT.index(heading)
        after = REPORT.index(" ", REPORT.index("\n\n", at) + 3)  # into the first sentence of its section
        for c in chunks:
            assert not c.text.rstrip().endswith(heading), (c.level, c.text[-80:])
            if c.start <= at < c.end:
                assert c.end > after, (c.level, heading)
    big = REPORT.index("Legal Proceedings")
    assert any(c.start == big for c in chunks if c.level == 0)  # a section too long to join the one before starts one

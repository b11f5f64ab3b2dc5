"""Late chunking (issue 37): ``SentenceTransformerEmbedder.embed_spans`` pools a span's vector from one pass over the
whole text; the whole text's span is what ``embed_passages`` gives today, a child's span is pooled from its tokens."""
from __future__ import annotations

import numpy as np
import pytest

CONTEXT = "Emma › Volume I › Chapter I"
BODY = ("Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition, seemed to unite "
        "some of the best blessings of existence; and had lived nearly twenty-one years in the world with very little "
        "to distress or vex her. She was the youngest of the two daughters of a most affectionate, indulgent father.")


@pytest.fixture(scope="module")
def minilm():
    from ingest.embed import load_embedder

    return load_embedder("all-MiniLM-L6-v2")


@pytest.mark.integration
def test_the_whole_text_s_span_is_today_s_vector(minilm):
    text = f"{CONTEXT}\n{BODY}"
    long = " ".join([BODY] * 6)  # over the limit: three windows, averaged as embed_passages averages them
    assert len(minilm.windows(text)) == 1 and len(minilm.windows(long)) > 1
    late = minilm.embed_spans([text, long], [[(0, len(text))], [(0, len(long))]])
    today = minilm.embed_passages([text, long])
    assert late[0].shape == (1, minilm.dim)
    assert float(late[0][0] @ today[0]) >= 0.999
    assert float(late[1][0] @ today[1]) >= 0.999


@pytest.mark.integration
def test_a_child_span_pools_its_own_tokens_from_the_parent_pass(minilm):
    from ingest.text.chunk_context import indexed_text

    text = indexed_text(CONTEXT, BODY)
    s = text.index("She was")
    child, ctx_child = (s, len(text)), ((0, len(CONTEXT)), (s, len(text)))
    late = minilm.embed_spans([text], [[child, ctx_child, (0, len(text))]])[0]
    assert np.allclose(np.linalg.norm(late, axis=1), 1.0, atol=1e-5)
    alone, alone_ctx, other = minilm.embed_passages(
        [text[s:], indexed_text(CONTEXT, text[s:]), "Quarterly net sales of the segment fell by nine percent."])
    # the child's vector is about the child: nearer its own text embedded alone than to an unrelated sentence ...
    assert float(late[0] @ alone) > float(late[0] @ other) + 0.2
    assert float(late[1] @ alone_ctx) > float(late[1] @ other) + 0.2
    # ... but not the same as the whole text's, nor as the child embedded alone (its tokens saw the parent)
    assert float(late[0] @ late[2]) < 0.99 and float(late[0] @ alone) < 0.99
    # a span given as a tuple of ranges pools the tokens of every range
    assert not np.allclose(late[0], late[1])


def test_the_windows_are_unchanged_by_their_bounds():
    """``windows`` is ``_window_bounds`` read back: one window is the whole text, several are its slices."""
    from ingest.embed import SentenceTransformerEmbedder

    class Tok:
        def __call__(self, text, add_special_tokens=False, return_offsets_mapping=False):
            import re

            offs = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
            return {"input_ids": list(range(len(offs))), "offset_mapping": offs}

    class Model:
        tokenizer, max_seq_length = Tok(), 6

        def get_embedding_dimension(self):
            return 4

    emb = SentenceTransformerEmbedder(Model(), "toy")
    text = "a b c d e f g h i j"
    bounds = emb._window_bounds(text)
    assert [(text[s:e], n) for s, e, n in bounds] == emb.windows(text) == [("a b c d", 4), ("e f g h", 4),
                                                                            ("i j", 2)]
    assert emb.windows(" a b ") == [(" a b ", 2)] and emb._window_bounds(" a b ") == [(0, 5, 2)]


def test_a_pooled_parent_is_the_word_weighted_mean_of_its_half_children():
    """bench/late_chunking.py's *pooled parents*: no parent embedded; its vector is its θ/2 children's, weighted by
    their words and normalised; the θ/4 children keep their own."""
    from bench.late_chunking import pooled_parents
    from ingest.chunkers.multigranular import MultiGranularChunker

    text = BODY + "\n\n" + BODY.replace("Emma", "Harriet")
    chunks = MultiGranularChunker(40).chunk(text)
    texts = [c.text for c in chunks]
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(len(chunks), 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    out = pooled_parents(chunks, texts, vecs)
    several = 0
    for i, c in enumerate(chunks):
        if c.level:
            assert np.array_equal(out[i], vecs[i])
            continue
        kids = [j for j, k in enumerate(chunks) if k.level == 1 and k.parent_span == (c.start, c.end)]
        assert kids
        several += len(kids) > 1
        want = sum(len(texts[j].split()) * vecs[j] for j in kids)
        assert np.allclose(out[i], want / np.linalg.norm(want), atol=1e-6)
    assert several  # a parent pooled from more than one child

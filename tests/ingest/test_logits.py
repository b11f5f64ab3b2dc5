import numpy as np
import pytest
import torch

from ingest.chunkers.logits import LGConfig, LGMGCChunker, LogitsGuidedChunker
from ingest.text.boundary import boundary_probs, lg_breaks, spans_from_breaks, window_end
from ingest.text.lm import LogitsScorer, resolve_boundary_ids
from ingest.text.sentences import count_words, split_sentences

TEXT = ("The cat sat on the mat. It was a sunny day.\n\nDogs bark at night. Birds sing in the morning! "
        "Mr. Smith paid 3.14 dollars. Is this the end? Yes, it is.\n\nA new paragraph starts here. "
        "Qdrant stores vectors. Chunks have parents.")


def per_prefix_probs(tok, model, scorer, text, sents, i, j):
    """Reference: one separate forward pass per prefix ρ ⊕ s_i ⊕ … ⊕ s_k, full model head, last position."""
    doc = scorer.tokenize(text, sents)
    out = []
    for k in range(i, j):
        ids, _ = scorer.window_ids(doc, i, k + 1)
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1].float().numpy()
        out.append(boundary_probs(logits[None], scorer.boundary_ids)[0])
    return np.array(out)


def test_one_pass_equals_per_prefix_recomputation(tiny_lm, scorer):
    tok, model = tiny_lm
    sents = split_sentences(TEXT)
    doc = scorer.tokenize(TEXT, sents)
    for i, j in [(0, len(sents)), (3, 7)]:
        before = scorer.forward_passes
        got = scorer.window_probs(doc, i, j)
        assert scorer.forward_passes == before + 1  # all sentence ends of the window from ONE pass
        want = per_prefix_probs(tok, model, scorer, TEXT, sents, i, j)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)


def test_window_ids_are_prefix_consistent(scorer):
    sents = split_sentences(TEXT)
    doc = scorer.tokenize(TEXT, sents)
    full, ends = scorer.window_ids(doc, 2, 6)
    for k in range(2, 6):
        part, _ = scorer.window_ids(doc, 2, k + 1)
        assert full[: len(part)] == part and ends[k - 2] == len(part) - 1
    assert tokdecode(scorer, full[len(scorer.prompt_ids):]) == TEXT[sents[2][0]:sents[5][1]]


def tokdecode(scorer, ids):
    return scorer.tokenizer.decode(ids)


def test_streaming_equals_exact_when_context_covers_document(tiny_lm):
    tok, model = tiny_lm
    sc = LogitsScorer(tok, model, prompt="Continue:", boundary_tokens=("\n\n",), block_tokens=4096, context_tokens=0)
    sents = split_sentences(TEXT)
    doc = sc.tokenize(TEXT, sents)
    np.testing.assert_allclose(sc.stream_probs(doc), sc.window_probs(doc, 0, len(sents)), rtol=1e-4, atol=1e-7)


def test_streaming_blocks_cover_every_sentence(tiny_lm):
    tok, model = tiny_lm
    sc = LogitsScorer(tok, model, boundary_tokens=("\n\n",), block_tokens=16, context_tokens=4, batch_size=3)
    text = " ".join(f"Sentence number {i} ends here." for i in range(40))
    sents = split_sentences(text)
    probs = sc.stream_probs(sc.tokenize(text, sents))
    assert probs.shape == (40,) and np.all(probs > 0) and np.all(probs <= 1)
    assert sc.forward_passes >= 2  # several batches of blocks


def test_blocks_batched_or_one_by_one_give_the_same_probabilities(tiny_lm):
    """The CPU default is one block per pass, CUDA's four: the chunking must not depend on it."""
    tok, model = tiny_lm
    text = " ".join(f"Sentence number {i} ends here." for i in range(40))
    sents = split_sentences(text)
    out = []
    for b in (1, 3):
        sc = LogitsScorer(tok, model, boundary_tokens=("\n\n",), block_tokens=16, context_tokens=4, batch_size=b)
        out.append(sc.stream_probs(sc.tokenize(text, sents)))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-4, atol=1e-6)


def test_boundary_probs_is_softmax_mass():
    logits = np.log(np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]))
    np.testing.assert_allclose(boundary_probs(logits, [2]), [0.25, 0.8])
    np.testing.assert_allclose(boundary_probs(logits, [0, 2]), [0.75, 0.9])


def test_lg_breaks_argmax_bound_and_remainder():
    words = [10] * 10
    calls = []

    def score(i, j):
        calls.append((i, j))
        p = np.zeros(j - i)
        p[min(1, j - i - 1)] = 1.0  # always break after the window's 2nd sentence
        return p

    breaks = lg_breaks(words, 35, score)
    assert calls[0] == (0, 3)  # 35 words of whole sentences: 3 sentences
    assert calls[1] == (2, 5)  # the remainder (sentence 2) opens the next window
    assert breaks == [2, 4, 6, 8, 10]  # after 8 the rest (20 words) fits in θ and becomes the last chunk
    spans = spans_from_breaks([(i * 10, i * 10 + 9) for i in range(10)], breaks)
    assert spans[0] == (0, 19) and spans[-1] == (80, 99)


def test_lg_breaks_min_words_and_bad_scorer():
    assert lg_breaks([5] * 6, 20, lambda i, j: [1.0] + [0.0] * (j - i - 1), min_rest=0, min_words=10) == [2, 4, 6]
    with pytest.raises(ValueError, match="returned 1 scores, expected"):
        lg_breaks([5] * 6, 20, lambda i, j: [1.0], min_rest=0)


def test_window_end_takes_at_least_one_sentence():
    assert window_end([50, 1], 0, 10) == 1
    assert window_end([3, 3, 3, 3], 1, 7) == 3


@pytest.mark.parametrize("mode", ["exact", "streaming"])
def test_lg_chunker_bound_offsets_and_levels(scorer, mode):
    text = " ".join(f"Sentence {i} is here." for i in range(120))
    ch = LGMGCChunker(scorer, LGConfig(theta=40, mode=mode))
    chunks = ch.chunk(text)
    parents = [c for c in chunks if c.level == 0]
    assert all(text[c.start:c.end] == c.text for c in chunks)
    assert all(count_words(p.text) <= 40 for p in parents)
    assert " ".join(p.text for p in parents).split() == text.split()
    assert {c.level for c in chunks} == {0, 1, 2}
    lg = LogitsGuidedChunker(scorer, LGConfig(theta=40, mode=mode)).chunk(text)
    assert [(c.start, c.end) for c in lg] == [(p.start, p.end) for p in parents]


def test_lg_chunker_on_empty_text(scorer):
    assert LogitsGuidedChunker(scorer, LGConfig(theta=40)).chunk("   ") == []


def test_boundary_token_must_be_single_token(tiny_lm):
    tok, _ = tiny_lm
    assert resolve_boundary_ids(tok, ["<eos>"]) == [tok.eos_token_id]
    with pytest.raises(ValueError, match="is .* tokens in this tokenizer, not one"):
        resolve_boundary_ids(tok, ["a whole phrase of words"])
    with pytest.raises(ValueError, match="lg_boundary_tokens is empty"):
        resolve_boundary_ids(tok, [])


@pytest.mark.parametrize("kw,msg", [({"mode": "fast"}, "lg mode must be one of"),
                                     ({"min_rest": 500}, "min_rest must be between"),
                                     ({"min_words": 300}, "min_words must be between")])
def test_lg_config_validated(kw, msg):
    with pytest.raises(ValueError, match=msg):
        LGConfig(theta=300, **kw)


def test_pick_threads_prefers_fewer_unless_more_clearly_pay():
    from ingest.text.lm import pick_threads

    assert pick_threads({1: 200.0, 2: 2.5}) == 1  # a contended machine: the second thread only waits
    assert pick_threads({1: 200.0, 2: 380.0}) == 2
    assert pick_threads({1: 200.0, 2: 215.0}) == 1  # within the margin: keep one
    with pytest.raises(ValueError, match="at least one measured rate"):
        pick_threads({})


def test_choose_threads_measures_or_obeys_the_setting(tiny_lm):
    from ingest.text.lm import choose_threads

    _, model = tiny_lm
    before = torch.get_num_threads()
    try:
        n, note = choose_threads(model, 1)
        assert (n, torch.get_num_threads()) == (1, 1) and "MGRAG_TORCH_THREADS" in note
        n, note = choose_threads(model, None)
        assert torch.get_num_threads() == n and n >= 1
        assert "measured" in note or "one core" in note
    finally:
        torch.set_num_threads(before)


class FlatScorer:
    """p(boundary) the same after every sentence: only the cutting rule decides."""

    prompt, boundary_tokens = "", ()

    def tokenize(self, text, sentences):
        return list(sentences)

    def window_probs(self, doc, i, j):
        return np.full(j - i, 0.01)

    def stream_probs(self, doc):
        return np.full(len(doc), 0.01)


PARAS = "\n\n".join(" ".join(f"Sentence {p}.{k} has five words." for k in range(6)) for p in range(12))


def test_size_prior_fills_theta_and_structure_weight_cuts_at_paragraphs():
    plain = LogitsGuidedChunker(FlatScorer(), LGConfig(theta=50))._spans(PARAS)
    assert max(count_words(PARAS[s:e]) for s, e in plain[:-1]) == 5  # ties: the earliest sentence end
    filled = LogitsGuidedChunker(FlatScorer(), LGConfig(theta=50, size_prior=1.0))._spans(PARAS)
    words = [count_words(PARAS[s:e]) for s, e in filled]
    assert all(w <= 50 for w in words) and min(words[:-1]) >= 45  # each window cut at its end
    paras = LogitsGuidedChunker(FlatScorer(), LGConfig(theta=70, structure_weight=100))._spans(PARAS)
    assert all(PARAS[e:e + 2] == "\n\n" or e == len(PARAS) for _, e in paras)  # only at paragraph breaks
    assert [count_words(PARAS[s:e]) for s, e in paras][:-1] == [30] * (len(paras) - 1)


def test_children_sized_by_their_parent():
    ch = LGMGCChunker(FlatScorer(), LGConfig(theta=200, structure_weight=100, children="parent"))
    chunks = ch.chunk(PARAS)
    parents = {(c.start, c.end): count_words(c.text) for c in chunks if c.level == 0}
    for c in chunks:
        if c.level:
            limit = -(-parents[c.parent_span] // 2) if c.level == 1 else -(-parents[c.parent_span] // 4) + 1
            assert count_words(c.text) <= limit
    theta_kids = LGMGCChunker(FlatScorer(), LGConfig(theta=200, structure_weight=100)).chunk(PARAS)
    assert sum(c.level == 2 for c in chunks) > sum(c.level == 2 for c in theta_kids)


@pytest.mark.parametrize("kw,msg", [({"structure_weight": -1}, "structure_weight must be between"),
                                     ({"size_prior": 101}, "size_prior must be between"),
                                     ({"children": "half"}, "children must be one of")])
def test_lg_rule_options_validated(kw, msg):
    with pytest.raises(ValueError, match=msg):
        LGConfig(theta=300, **kw)


def test_lg_config_from_settings_and_a_generations_recorded_params():
    from core.settings import Settings

    s = Settings(lg_structure_weight=2.0, lg_size_prior=1.0, lg_children="parent", lg_mode="streaming", theta=200)
    cfg = LGConfig.from_settings(s)
    assert (cfg.theta, cfg.mode, cfg.structure_weight, cfg.size_prior, cfg.children) == (200, "streaming", 2.0, 1.0,
                                                                                           "parent")
    old = LGConfig.from_settings(s, 300, {"mode": "exact", "min_words": 0})  # recorded before the rule existed
    assert (old.theta, old.mode, old.structure_weight, old.size_prior, old.children) == (300, "exact", 0.0, 0.0,
                                                                                         "theta")

"""The seeds' other chunkers: Meta-Chunking perplexity, LlamaChunk, LumberChunker."""
import numpy as np
import pytest

from ingest.chunkers import build_chunker
from ingest.chunkers.llamachunk import LlamaChunkChunker, detrend
from ingest.chunkers.lumber import LumberChunker, parse_answer
from ingest.chunkers.perplexity import PerplexityChunker, local_minima, sentence_perplexities
from ingest.text.sentences import count_words, split_sentences

TEXT = "\n\n".join(" ".join(f"Paragraph {p} sentence {i} talks about topic {p}." for i in range(6)) for p in range(8))


def check(text, chunks, bound):
    assert chunks and all(text[c.start:c.end] == c.text for c in chunks)
    assert all(count_words(c.text) <= bound for c in chunks)
    assert " ".join(c.text for c in chunks).split() == text.split()


def test_local_minima_rule():
    assert local_minima([5, 2, 5, 5, 1, 1.2, 3], 1.0) == [1]
    assert local_minima([5, 2, 5, 5, 1, 1.2, 3], 0.1) == [1, 4]
    assert local_minima([1, 2], 0) == []


def test_sentence_perplexity_is_mean_token_loss(tiny_lm, scorer):
    import torch

    tok, model = tiny_lm
    text = "The cat sat on the mat. Dogs bark at night. Birds sing."
    sents = split_sentences(text)
    ppl = sentence_perplexities(scorer, text, sents, block_tokens=5)
    doc = scorer.tokenize(text, sents)
    ids = list(scorer.prompt_ids) + scorer._opening(doc, 0) + doc.segments[1] + doc.segments[2]
    with torch.no_grad():
        lp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1).numpy()
    n0, n1 = len(scorer.prompt_ids), len(scorer.prompt_ids) + len(scorer._opening(doc, 0))
    want = -np.mean([lp[t - 1, ids[t]] for t in range(n1, n1 + len(doc.segments[1]))])
    assert ppl[1] == pytest.approx(want, rel=1e-4)
    assert ppl.shape == (3,) and n0 > 0


def test_ppl_chunker_bound_and_cover(scorer):
    check(TEXT, PerplexityChunker(scorer, theta=40).chunk(TEXT), 40)
    long = " ".join(f"w{i}" for i in range(700)) + "."  # one 700-word sentence: split, never truncated
    check(long, PerplexityChunker(scorer, theta=300).chunk(long), 300)


def test_detrend_removes_linear_decay():
    pos = np.arange(10.0)
    assert np.allclose(detrend(pos, -0.5 * pos + np.where(pos == 4, 3.0, 0.0)).argmax(), 4)


def test_llamachunk_bound_and_cover(scorer):
    ch = LlamaChunkChunker(scorer, theta=40, window_words=80)
    scores = ch.scores(TEXT, split_sentences(TEXT, 40))
    assert scores.shape == (48,) and np.isfinite(scores).all()
    check(TEXT, ch.chunk(TEXT), 40)
    with pytest.raises(ValueError, match="window_words .* must be at least theta"):
        LlamaChunkChunker(scorer, theta=300, window_words=100)


class ScriptedLLM:
    """Answers with the next scripted reply; records the prompts."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.prompts = []

    def complete(self, messages, max_tokens=None):
        self.prompts.append(messages[-1]["content"])
        return self.replies.pop(0) if self.replies else "no idea"


def test_parse_answer():
    assert parse_answer("Answer: ID 0012") == 12
    assert parse_answer("The shift is at ID 7.\nAnswer: ID 9") == 9
    assert parse_answer("nothing") is None


def test_lumber_follows_the_llm_and_retries():
    llm = ScriptedLLM(["Answer: ID 3", "garbage", "Answer: ID 1", "Answer: ID 5", "Answer: ID 7"])
    ch = LumberChunker(llm, max_words=400, window_tokens=200)
    chunks = ch.chunk(TEXT)
    check(TEXT, chunks, 400)
    assert llm.prompts[0].startswith("ID 0: Paragraph 0")
    assert chunks[0].text.startswith("Paragraph 0") and chunks[0].text.endswith("topic 2.")  # cut before ID 3
    assert chunks[1].text.startswith("Paragraph 3")
    # "garbage" then "ID 1" (not after the window start 3) were rejected; "ID 5" accepted on the third try
    assert chunks[2].text.startswith("Paragraph 5")


def test_lumber_through_the_openai_stub():
    from app.synth.openai_compat import OpenAICompatSynthesizer
    from tests.app.stub_openai import StubOpenAI

    with StubOpenAI(reply="Answer: ID 2") as stub:
        ch = LumberChunker(OpenAICompatSynthesizer(stub.base_url, "m"), window_tokens=200)
        chunks = ch.chunk(TEXT)
    check(TEXT, chunks, 400)
    assert chunks[0].text.endswith("topic 1.")
    assert "ID 0: Paragraph 0" in stub.requests[0]["body"]["messages"][1]["content"]


def test_lumber_without_llm_is_a_clear_error():
    with pytest.raises(ValueError, match="needs an instruction-following model .* MGRAG_OPENAI_BASE_URL"):
        build_chunker("lumber", 300)


@pytest.mark.parametrize("name", ["ppl", "llamachunk"])
def test_factory_builds_lm_chunkers(scorer, name):
    assert build_chunker(name, 40, scorer=scorer).name == name
    with pytest.raises(ValueError, match="needs a LogitsScorer"):
        build_chunker(name, 40)


def test_lm_scores_are_reused_across_theta(scorer):
    """ppl and llamachunk scores do not depend on θ: chunking the same text again at another θ runs no LM pass,
    and gives exactly what a fresh computation gives."""
    from ingest.chunkers import llamachunk, perplexity

    text = TEXT + " Appendix."  # a text no other test has memoised
    for make, memo in ((lambda t: PerplexityChunker(scorer, theta=t), perplexity._MEMO),
                       (lambda t: LlamaChunkChunker(scorer, theta=t, window_words=80), llamachunk._MEMO)):
        make(40).chunk(text)
        n0 = scorer.tokens_processed
        again = make(60).chunk(text)
        assert scorer.tokens_processed == n0
        memo.clear()
        assert make(60).chunk(text) == again and scorer.tokens_processed > n0

import contextlib
import socket

import pytest

from app.answer import AskOptions, answer, ask, cited_numbers
from app.synth import SynthesisError, build_completion_prompt, build_messages, make_synthesizer
from app.synth.extractive import ExtractiveSynthesizer
from app.synth.hf import HFSynthesizer
from app.synth.openai_compat import OpenAICompatSynthesizer
from ingest.jobs.queue import ingest_files
from retrieval.search import Source
from tests.app.stub_openai import StubOpenAI

LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)
NOTES = ("The keeper, Mrs. Alder, has tended the light for twenty-two years. She keeps a logbook of every ship.\n\n"
         "The tide pools hold fourteen kinds of anemone. A storm closed the harbour on the fourth day.")


def src(rank, text, doc="notes.md"):
    return Source(rank, doc, f"p{rank}", 0, len(text), text, 1.0 / rank, 2, 0, len(text), text)


SOURCES = [src(1, "The keeper has tended the light for twenty-two years."), src(2, "The ferry runs twice a day.")]


def test_prompts_number_the_sources_and_ask_for_citations():
    msgs = build_messages("How long?", SOURCES)
    assert msgs[0]["role"] == "system" and "[1]" in msgs[0]["content"]
    assert "[1] (from notes.md)\nThe keeper" in msgs[1]["content"] and "[2] (from notes.md)" in msgs[1]["content"]
    p = build_completion_prompt("How long?", SOURCES)
    assert p.endswith("Question: How long?\nAnswer:") and "[2] (from notes.md)" in p


def test_cited_numbers():
    assert cited_numbers("A [2] and B [1][2] and C [9].", 3) == [2, 1]


def test_openai_streams_from_stub():
    with StubOpenAI() as stub:
        synth = OpenAICompatSynthesizer(stub.base_url, "llama3", "sk-test")
        pieces = list(synth.stream("How long?", SOURCES))
    assert len(pieces) > 3 and "".join(pieces).strip() == stub.reply
    req = stub.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-test"
    assert req["body"]["stream"] is True and req["body"]["temperature"] == 0
    assert "[1] (from notes.md)" in req["body"]["messages"][1]["content"]


def test_openai_non_streaming_server():
    with StubOpenAI(mode="json") as stub:
        assert "".join(OpenAICompatSynthesizer(stub.base_url, "m").stream("q", SOURCES)) == stub.reply


@contextlib.contextmanager
def _nothing_listening():
    """A loopback port bound by this test and not listening, so no other process takes it meanwhile: a connection
    to it is refused at once. Yields its base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_openai_endpoint_down():
    with _nothing_listening() as url:
        synth = OpenAICompatSynthesizer(url, "m", connect_timeout=30)
        with pytest.raises(SynthesisError, match=r"cannot connect to .* \(is the server running\?"):
            list(synth.stream("q", SOURCES))


def test_openai_endpoint_slow():
    """The stub sends the stream's headers and then nothing until the test is over: the read times out, whatever
    the machine's load."""
    with StubOpenAI(mode="slow") as stub:
        synth = OpenAICompatSynthesizer(stub.base_url, "m", read_timeout=0.2)
        with pytest.raises(SynthesisError, match=r"timed out \(ReadTimeout; connect 5 s, read 0 s: "):
            list(synth.stream("q", SOURCES))


def test_openai_total_time_limit(monkeypatch):
    """A stream that keeps coming but past ``total_timeout`` is cut off with the setting named; the synthesizer's
    clock is the test's, a minute a line."""
    import types

    import app.synth.openai_compat as oc

    now = [0.0]

    def tick():
        now[0] += 60.0
        return now[0]

    monkeypatch.setattr(oc, "time", types.SimpleNamespace(monotonic=tick))
    with StubOpenAI() as stub:
        synth = OpenAICompatSynthesizer(stub.base_url, "m", total_timeout=150)
        pieces = []
        with pytest.raises(SynthesisError, match=r"exceeded the total time limit of 150 s \(MGRAG_LLM_TOTAL_T"):
            for piece in synth.stream("q", SOURCES):
                pieces.append(piece)
    assert pieces == ["The "]  # the deadline at 210 s: the first word's line at 120 s, the blank one at 180, then 240


def test_openai_endpoint_garbage_and_http_error():
    with StubOpenAI(mode="garbage") as stub:
        with pytest.raises(SynthesisError, match="not chat-completions JSON"):
            list(OpenAICompatSynthesizer(stub.base_url, "m").stream("q", SOURCES))
    with StubOpenAI(mode="error") as stub:
        with pytest.raises(SynthesisError, match="answered HTTP 500"):
            list(OpenAICompatSynthesizer(stub.base_url, "m").stream("q", SOURCES))


def test_openai_not_configured():
    with pytest.raises(SynthesisError, match="set MGRAG_OPENAI_BASE_URL"):
        list(OpenAICompatSynthesizer(None, "m").stream("q", SOURCES))


def test_transformers_backend_with_llama3_template(tiny_lm):
    tok, model = tiny_lm
    tok.chat_template = LLAMA3_TEMPLATE
    try:
        synth = HFSynthesizer(tok, model, chat=True, max_new_tokens=12)
        ids = synth.prompt_ids("How long?", SOURCES)[0].tolist()
        prompt = tok.decode(ids)
        assert "<|start_header_id|>system<|end_header_id|>" in prompt
        assert prompt.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
        pieces = list(synth.stream("How long?", SOURCES))
        assert 1 <= len(pieces) <= 12  # greedy, bounded by max_new_tokens (one streamed piece per token at most)
        assert pieces == list(synth.stream("How long?", SOURCES))  # greedy decoding is deterministic
    finally:
        tok.chat_template = None


def test_transformers_backend_needs_a_chat_template(tiny_lm):
    tok, model = tiny_lm
    with pytest.raises(SynthesisError, match="has no chat template"):
        list(HFSynthesizer(tok, model, chat=True).stream("q", SOURCES))


def test_completion_backend_stops_at_stop_sequence(tiny_lm):
    """The stop string is taken from what the model generates without one (issue 22: a fixed "e" the tiny model
    never emitted let the test pass with stop handling deleted): with it, the output ends just before it."""
    tok, model = tiny_lm
    full = "".join(HFSynthesizer(tok, model, chat=False, max_new_tokens=40).stream("q", SOURCES))
    assert len(full) >= 8  # greedy decoding of the tiny model: the same text every run
    stop = full[len(full) // 2:len(full) // 2 + 2]
    out = "".join(HFSynthesizer(tok, model, chat=False, max_new_tokens=40, stops=(stop,)).stream("q", SOURCES))
    cut = full.index(stop)  # the output is the text before the stop (a piece already shown may hold its first part)
    assert out.startswith(full[:cut]) and len(out) < cut + len(stop) and stop not in out


def test_extractive_picks_answer_sentence(fake_embedder):
    sources = [src(1, "Cats purr. The keeper tended the light for twenty-two years."), src(2, "Ferries run daily.")]
    out = "".join(ExtractiveSynthesizer(fake_embedder, max_sentences=1).stream("keeper tended light years", sources))
    assert out == "The keeper tended the light for twenty-two years. [1]"


def test_extractive_quotes_a_sentence_once_even_when_a_piece_of_it_recurs(fake_embedder):
    """A sentence found twice (two sources, or a piece of it elsewhere) is quoted once; the next best one follows."""
    s = "The keeper tended the light for twenty-two years."
    sources = [src(1, f"Cats purr. {s}"), src(2, "tended the light for twenty-two years."),
               src(3, f"{s} Ferries run daily.")]
    out = "".join(ExtractiveSynthesizer(fake_embedder, max_sentences=2).stream("keeper tended light years", sources))
    assert out.count("twenty-two years") == 1 and out.startswith(f"{s} [1]"), out


def test_ask_streams_then_answers_with_citations(make_ctx, write):
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("notes.md", NOTES)])
    events = list(ask(ctx, "How long has the keeper tended the light?", AskOptions(backend="extractive")))
    kinds = [k for k, _ in events if k != "status"]
    assert kinds[0] == "sources" and kinds[-1] == "done" and "token" in kinds
    statuses = [v for k, v in events if k == "status"]
    assert statuses[0] == "retrieving" and any("quoting the answer" in x for x in statuses)
    ans = events[-1][1]
    assert ans.error is None and ans.citations and ans.citations[0].doc_id == "notes.md"
    c = ans.citations[0]
    assert NOTES[c.start:c.end] == c.parent_text and NOTES[c.matched_start:c.matched_end] == c.matched_text
    assert ans.timings["retrieval_s"] > 0 and ans.timings["time_to_first_token_s"] is not None


def test_openai_backend_end_to_end_and_failure_keeps_sources(make_ctx, write):
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("notes.md", NOTES)])
    with StubOpenAI() as stub:
        ctx.settings.openai_base_url = stub.base_url
        ans = answer(ctx, "How long has the keeper tended the light?", backend="openai")
    assert "twenty-two years [1]" in ans.text and [c.number for c in ans.citations] == [1]
    with _nothing_listening() as url:  # now the endpoint is down
        ctx.settings.openai_base_url = url
        ans = answer(ctx, "How long has the keeper tended the light?", backend="openai")
    assert ans.text == "" and "cannot connect" in ans.error and ans.sources


def test_unknown_backend(make_ctx):
    with pytest.raises(ValueError, match="unknown synthesizer backend 'gpt9'"):
        make_synthesizer("gpt9", make_ctx())


def test_no_retrieval_baseline_uses_the_truncated_document(make_ctx, write):
    ctx = make_ctx(theta=40, no_retrieval_words=50)
    long_notes = NOTES + "\n\n" + " ".join(f"Day {i} was calm." for i in range(30))
    ingest_files(ctx, [write("notes.md", long_notes)])
    ans = answer(ctx, "How long has the keeper tended the light?", backend="extractive", no_retrieval_doc="notes.md")
    assert ans.retriever == "none" and len(ans.sources) == 1
    kept = ans.sources[0].parent_text
    assert long_notes.startswith(kept) and 40 < len(kept.split()) <= 50 < len(long_notes.split())
    with pytest.raises(ValueError, match="no document matches 'missing.md'"):
        answer(ctx, "q?", backend="extractive", no_retrieval_doc="missing.md")


class _Replying:
    """A stand-in for a causal LM's ``generate``: it streams a fixed reply through the streamer it is given, as
    ``model.generate`` does (the prompt first, then the new tokens), so what ``HFSynthesizer.stream`` does with the
    text is what is tested, on a reply known in advance (the tiny random LM's own text is gibberish)."""

    def __init__(self, tok, reply):
        import torch

        self.device = torch.device("cpu")
        self.tok, self.reply = tok, reply

    def generate(self, *, input_ids, streamer, **kw):
        streamer.put(input_ids)
        for i in self.tok(self.reply, return_tensors="pt")["input_ids"][0]:
            streamer.put(i[None])
        streamer.end()


def test_chat_backend_gets_the_sources_and_its_quote_of_source_one_is_a_grounded_citation(make_ctx, write):
    """The openai backend end to end with an LLM that quotes the first sentence of the source the prompt numbers
    [1] (the stub's echo): the sources reach the model numbered, and the quote comes back as a citation of the
    first source with that sentence as its support."""
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("notes.md", NOTES)])
    with StubOpenAI(reply=None) as stub:
        ctx.settings.openai_base_url = stub.base_url
        ans = answer(ctx, "How long has the keeper tended the light?", backend="openai")
    first = ans.sources[0]
    assert not ans.abstained and ans.draft.endswith(" [1]") and ans.draft[:-4] in " ".join(first.parent_text.split())
    assert [c.number for c in ans.citations] == [1] and ans.citations[0].doc_id == first.doc_id == "notes.md"
    assert ans.citations[0].support and ans.citations[0].support[0]["text"] in NOTES


def test_uncited_offline_answer_gets_the_supporting_source(tiny_lm):
    from app.synth.base import attribute

    tok, model = tiny_lm
    assert attribute("The keeper tended the light twenty-two years.", SOURCES) == 1
    assert attribute("Ferry runs twice daily.", SOURCES) == 2
    assert attribute("zzz", SOURCES) is None
    synth = HFSynthesizer(tok, model, chat=False, max_new_tokens=8, attribute_uncited=True)
    assert synth.citation_suffix("The ferry runs twice a day.", SOURCES) == " [2]"
    assert synth.citation_suffix("The ferry runs [2].", SOURCES) == ""  # already cited
    assert synth.citation_suffix("   ", SOURCES) == ""
    assert HFSynthesizer(tok, model, chat=True).citation_suffix("The ferry runs.", SOURCES) == ""  # chat: off


def test_uncited_streamed_answer_ends_with_the_citation_of_its_source(tiny_lm):
    """A completion model that answers without a citation: the stream ends with " [n]" of the source the answer
    draws on, as its own piece after the answer; an answer that cites, or a backend without attribution, gets none."""
    tok, _ = tiny_lm

    def pieces(reply, **kw):
        return list(HFSynthesizer(tok, _Replying(tok, reply), chat=False, **kw).stream("How often?", SOURCES))

    out = pieces("The ferry runs twice a day.", attribute_uncited=True)
    assert out[-1] == " [2]" and "".join(out[:-1]).strip() == "The ferry runs twice a day."
    assert "".join(pieces("The ferry runs [2].", attribute_uncited=True)).strip() == "The ferry runs [2]."
    assert "".join(pieces("The ferry runs twice a day.")).strip() == "The ferry runs twice a day."


def test_extractive_reuses_sentence_vectors_of_recent_contexts(fake_embedder):
    class Counting:
        def __init__(self, inner):
            self.inner, self.passages = inner, 0

        def embed_queries(self, texts):
            return self.inner.embed_queries(texts)

        def embed_passages(self, texts):
            self.passages += len(texts)
            return self.inner.embed_passages(texts)

    emb = Counting(fake_embedder)
    sources = [Source(1, "d", "p1", 0, 60, "The keeper tended the light for 22 years. Gulls nest on the rocks.", 1.0,
                      0, 0, 10, "x")]
    synth = ExtractiveSynthesizer(emb, max_sentences=1, cache_size=10)
    first = "".join(synth.stream("keeper tended light years", sources))
    n = emb.passages
    assert "22 years" in first and n >= 2  # the two sentences, their windows and the words cov_soft compares
    assert "".join(synth.stream("keeper tended light years", sources)) == first
    assert emb.passages == n  # asked again: sentences, windows and words all came from the caches
    # the answer shown is the two-sentence window holding the answering sentence (app.scorer.answer_mass)
    assert "".join(synth.stream("where do gulls nest", sources)).endswith("Gulls nest on the rocks. [1]")
    assert emb.passages - n <= 2  # at most the new question's own words; both sentences came from the cache
    tiny = ExtractiveSynthesizer(emb, max_sentences=1, cache_size=1)  # eviction keeps answers right
    assert "".join(tiny.stream("keeper tended light years", sources)) == first


def test_extractive_backend_is_one_per_context(make_ctx):
    from app.synth import make_synthesizer

    ctx = make_ctx()
    assert make_synthesizer("extractive", ctx) is make_synthesizer("extractive", ctx)
    assert make_synthesizer("extractive", make_ctx(data_dir=ctx.settings.data_dir.parent / "other")) is not \
        make_synthesizer("extractive", ctx)


def test_copies_of_one_file_do_not_make_its_sentences_boilerplate(fake_embedder):
    """A sentence the passages of two documents print word for word is boilerplate (a certification); two copies of
    one file (the same content hash under two names: an upload made twice) are one document, so their sentences
    are not."""
    text = "They mainly specialize in domestic SUVs and motorcycles, and they open at eight."

    def src(rank, doc_id, doc_hash):
        s = Source(rank, doc_id, f"p{rank}", 0, len(text), text, 1.0, 0, 0, len(text), text)
        s.doc_hash = doc_hash
        return s

    synth = ExtractiveSynthesizer(fake_embedder)
    copies = synth.signals([src(1, "sample.docx", "h1"), src(2, "sample (2).docx", "h1")])
    assert not copies.recurring(text)
    two = synth.signals([src(1, "sample.docx", "h1"), src(2, "other.docx", "h2")])
    assert two.recurring(text)

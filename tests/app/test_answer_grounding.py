"""ask() end to end on a small index (hashing embedder): abstention on an unanswerable question with no
citation, the supporting sentence's offsets inside the cited source, a follow-up that resolves its pronoun and
retrieves the right document, and the history reaching a chat backend."""
import pytest

from app.answer import AskOptions, answer, ask, synth_sources
from app.synth.openai_compat import OpenAICompatSynthesizer
from ingest.jobs.queue import ingest_files
from tests.app.stub_openai import StubOpenAI

KEEPER = ("# Lighthouse log\n\nThe survey team reached the northern lighthouse on the third morning. The keeper, "
          "Mrs. Alder, has tended the light for twenty-two years. She logs the weather at dawn.\n\n"
          "The lamp burns paraffin and is wound by hand every four hours through the night.\n")
ORCHARD = ("# Orchard notes\n\nThe orchard has forty apple trees and six pear trees. Pruning happens in February. "
           "The oldest tree was planted in 1911 by the first owner, Thomas Greaves.\n")


class Scripted:
    """A fake LLM that answers with a fixed text, whatever it is asked (a small model making things up)."""

    name = "scripted"

    def __init__(self, reply):
        self.reply, self.calls = reply, []

    def stream(self, question, sources, history=None):
        self.calls.append((question, [s.rank for s in sources], history))
        yield from self.reply.split(" ")[:1]
        for w in self.reply.split(" ")[1:]:
            yield " " + w


@pytest.fixture
def ctx(indexed):
    return indexed({"keeper.md": KEEPER, "orchard.md": ORCHARD})


def test_unanswerable_question_abstains_before_generating_and_cites_nothing(ctx):
    synth = Scripted("Russia [1].")
    ans = answer(ctx, "Which submarine sank the cruiser Vesuvius in the Baltic?", synthesizer=synth)
    assert ans.abstained and ans.citations == [] and "do not say" in ans.text and "[" not in ans.text
    assert ans.grounding["context_score"] < ans.grounding["context_floor"]
    assert synth.calls == []  # no generation below the floor
    assert ans.sources  # the closest passages are still returned


def test_made_up_answer_is_replaced_by_an_abstention(ctx):
    # the context is about the question, but the model's answer is in no source
    ans = answer(ctx, "How long has the keeper tended the light?", synthesizer=Scripted("Since the Crimean war [1]."))
    assert ans.draft == "Since the Crimean war [1]." and ans.abstained and ans.citations == []


def test_supported_answer_keeps_its_citation_and_supporting_sentence_offsets(ctx):
    ans = answer(ctx, "How long has the keeper tended the light?", synthesizer=Scripted("Twenty-two years [1]."))
    assert not ans.abstained and ans.text == "Twenty-two years [1]." and len(ans.citations) == 1
    c = ans.citations[0]
    assert c.doc_id == "keeper.md" and c.support
    for x in c.support:
        assert c.start <= x["start"] < x["end"] <= c.end
        assert KEEPER[x["start"]:x["end"]] == x["text"]
    assert "twenty-two years" in c.support[0]["text"]
    assert ans.to_dict()["citations"][0]["support"][0]["start"] == c.support[0]["start"]  # in --json


def test_wrong_citation_moves_to_the_source_that_supports_it(ctx):
    ans = answer(ctx, "How many apple trees does the orchard have?", synthesizer=Scripted("Forty apple trees [9]."))
    assert not ans.abstained and [c.doc_id for c in ans.citations] == ["orchard.md"]
    assert ans.text == f"Forty apple trees [{ans.citations[0].number}]."


def test_extractive_sentences_are_their_own_support(ctx):
    ans = answer(ctx, "How many apple trees does the orchard have?", backend="extractive")
    assert not ans.abstained and ans.citations
    docs = {"orchard.md": ORCHARD, "keeper.md": KEEPER}
    for c in ans.citations:
        assert c.support
        for x in c.support:  # each support is a sentence the answer quotes, at its offsets in the cited document
            assert " ".join(x["text"].split()) in ans.text
            assert docs[c.doc_id][x["start"]:x["end"]] == x["text"]


def test_ungrounded_answers_pass_through(ctx):
    ans = answer(ctx, "How long has the keeper tended the light?", synthesizer=Scripted("Russia [1]."),
                 grounded=False)
    assert ans.text == "Russia [1]." and not ans.abstained and len(ans.citations) == 1


def test_a_why_question_that_names_its_own_subject_stands_alone_mid_conversation(ctx):
    """Issue 32 (3): any "Why …?" mid-conversation was searched with the previous question in brackets and
    abstained, though a new conversation answered it. A question that names its own subject stands alone."""
    first = answer(ctx, "Who planted the oldest tree in the orchard?", backend="extractive")
    history = [{"role": "user", "content": first.question, "query": first.query},
               {"role": "assistant", "content": first.text}]
    q = "Why does the keeper Mrs. Alder log the weather at dawn at the northern lighthouse?"
    follow = answer(ctx, q, backend="extractive", history=history)
    alone = answer(ctx, q, backend="extractive")
    assert follow.rewrite == "none" and follow.query == q
    assert follow.text == alone.text and [s.doc_id for s in follow.sources] == [s.doc_id for s in alone.sources]
    assert follow.sources[0].doc_id == "keeper.md"


def test_follow_up_resolves_its_pronoun_and_retrieves_the_right_document(ctx):
    first = answer(ctx, "Who planted the oldest tree in the orchard?", backend="extractive")
    history = [{"role": "user", "content": first.question, "query": first.query},
               {"role": "assistant", "content": first.text}]
    alone = answer(ctx, "How many of them are pear trees?", backend="extractive")
    follow = answer(ctx, "How many of them are pear trees?", backend="extractive", history=history)
    assert follow.rewrite == "rules" and "orchard" in follow.query.lower()
    assert follow.sources[0].doc_id == "orchard.md"
    assert not follow.abstained and "six pear trees" in follow.text
    assert alone.query == "How many of them are pear trees?"


def test_chat_backend_receives_the_history_and_the_llm_rewrite(ctx):
    """A follow-up on a chat backend: the backend's own model is asked to rewrite the question with the
    conversation in the prompt; its rewrite (served by the stub LLM) is what is searched and what the answer
    prompt asks, after the earlier turns (their citation numbers removed)."""
    history = [{"role": "user", "content": "Who keeps the northern lighthouse?"},
               {"role": "assistant", "content": "Mrs. Alder [1]."}]
    with StubOpenAI(reply="What does Mrs. Alder log at dawn?") as stub:
        synth = OpenAICompatSynthesizer(stub.base_url, "m")
        events = list(ask(ctx, "What does she log at dawn?", synthesizer=synth, history=history))
        asked = [r["body"]["messages"] for r in stub.requests]
    assert len(asked) == 2  # the rewrite, then the answer
    rewrite_prompt = asked[0][-1]["content"]
    assert "Who keeps the northern lighthouse?" in rewrite_prompt and "Mrs. Alder" in rewrite_prompt
    assert rewrite_prompt.rstrip().endswith("Last question: What does she log at dawn?\n\nRewritten question:")
    done = events[-1][1]
    assert done.rewrite == "llm" and done.query == "What does Mrs. Alder log at dawn?"
    assert done.sources[0].doc_id == "keeper.md"
    assert [m["role"] for m in asked[1]] == ["system", "user", "assistant", "user"]
    assert asked[1][2]["content"] == "Mrs. Alder."  # earlier citation numbers are not passed on
    last = asked[1][-1]["content"].rstrip()
    assert last.endswith("Question: What does Mrs. Alder log at dawn?\nAnswer with citations:")


def test_small_model_budget_reads_the_first_sources(ctx):
    from retrieval.search import retrieve

    r = retrieve(ctx, "keeper light orchard trees")
    assert synth_sources(r.sources, None) == r.sources
    few = synth_sources(r.sources, 60)
    assert few and sum(len(s.text.split()) for s in few) <= 60 or len(few) == 1
    assert [s.rank for s in few] == sorted(s.rank for s in few)


def test_status_events_while_the_user_waits(ctx):
    events = list(ask(ctx, "How many apple trees does the orchard have?", AskOptions(backend="extractive")))
    statuses = [v for k, v in events if k == "status"]
    assert statuses[0] == "retrieving" and any(s.endswith("quoting the answer") for s in statuses)
    assert statuses[-1] == "checking the answer against the sources"


WRAPPED = ("Harbour report for the spring season, as read to the council on the first Monday of April,\n"
           "with the figures the harbour master collected over the winter months and the works planned.\n"
           "The harbour master said the council is cutting the mooring fees for small fishing boats\n"
           "from forty pounds to twelve pounds a year, starting in May, and that the larger boats\n"
           "will pay the same as last year while the new pontoon is being built on the east side.\n"
           "The works on the east pontoon will take about eleven weeks and close the slipway for a\n"
           "fortnight in June, when the crane is on the quay and the divers are in the water there.\n")


def test_an_extractive_answer_quoting_wrapped_lines_keeps_its_support(make_ctx, write):
    """A sentence that runs over a PDF's line ends is printed with spaces; it is still found in its source, so the
    answer keeps its citation and supporting sentence instead of abstaining ("nothing to quote")."""
    c = make_ctx(theta=200)  # one passage of seven printed lines, as a parent cut from a PDF page is
    ingest_files(c, [write("harbour.txt", WRAPPED)])
    ans = answer(c, "How much are the mooring fees for small fishing boats cut?", backend="extractive")
    assert not ans.abstained and ans.citations
    assert "from forty pounds to twelve pounds a year" in ans.text and "\n" not in ans.text
    support = [x for cit in ans.citations for x in cit.support]
    assert any("mooring fees for small fishing boats\nfrom forty pounds" in x["text"] for x in support)
    for x in support:
        assert WRAPPED[x["start"]:x["end"]] == x["text"]


def test_a_heading_copied_as_the_answer_is_not_an_answer(make_ctx, write):
    """Issue 20: on a real 10-Q the offline model answered "$1,447 Q3 2023 CCG Operating Income [1]", a chart label
    of the filing (with another year). A claim that copies a heading or title line is dropped; the same figure
    said as a statement stands."""
    doc = ("# Client computing results\n\nThe client computing group sells notebook and desktop processors to PC "
           "makers worldwide.\n\n$ 1,447 Q3 2022 CCG Operating Income\n\n"
           "Operating income of the client computing group was $1,447 million in the third quarter of 2022.\n")
    c = make_ctx(theta=60)
    ingest_files(c, [write("intel.md", doc)])
    q = "What was the operating income of the client computing group in the third quarter?"
    copied = answer(c, q, synthesizer=Scripted("$1,447 Q3 2023 CCG Operating Income [1]"), style="generated")
    assert copied.abstained and copied.citations == []
    said = answer(c, q, synthesizer=Scripted("Operating income was $1,447 million in the third quarter of 2022 [1]."),
                  style="generated")
    assert not said.abstained and "1,447" in said.text

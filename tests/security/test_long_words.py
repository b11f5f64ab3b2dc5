"""A file of one enormous "word" (megabytes with no space) or of enormous runs of whitespace: the chunks are bounded
in characters as well as in words (a word counts at most ``MAX_WORD_CHARS`` characters; longer runs are split into
pieces of that length; whitespace runs are shortened when the text is read), and what a question stores in its
conversation (and sends to the page) is bounded in bytes."""
from __future__ import annotations

import json

import pytest

from tests.security.conftest import BROWSER_A, upload

MAX_WORD_CHARS = 200  # ingest.text.sentences.MAX_WORD_CHARS: URLs and hashes fit
MAX_GAP = 100  # ingest.readers.loaders.MAX_SPACE_RUN: whitespace between two words after reading
MAX_SOURCE_CHARS = 6_000  # services.conversations.MAX_SOURCE_CHARS: each text of a source kept with an answer
UNIT = "harbourlockgate12345"  # 20 characters: every 200-character piece of the word is the same
ONE_WORD = UNIT * 100_000  # 2 MB with no space


@pytest.mark.parametrize("chunker", ["recursive", "paragraph", "mg"])
def test_a_one_word_file_is_chunked_in_pieces_bounded_in_characters(chunker):
    from ingest.chunkers import build_chunker
    from ingest.readers.loaders import load_bytes

    theta = 300
    text = load_bytes("one-word.txt", ONE_WORD.encode()).text
    chunks = build_chunker(chunker, theta).chunk(text)
    assert chunks and max(len(c.text) for c in chunks) <= theta * (MAX_WORD_CHARS + MAX_GAP)
    assert sum(len(c.text) for c in chunks if c.level == 0) == len(text)  # nothing lost: the pieces are the word


def test_whitespace_runs_do_not_make_huge_chunks():
    from ingest.chunkers import build_chunker
    from ingest.readers.loaders import load_bytes

    raw = "Tides are high. " + " " * 1_000_000 + "Boats wait. " + "\n" * 500_000 + "The gate opens at six."
    text = load_bytes("gaps.txt", raw.encode()).text
    assert len(text) < 1_000
    chunks = build_chunker("mg", 300).chunk(text)
    assert chunks and max(len(c.text) for c in chunks) <= 300 * (MAX_WORD_CHARS + MAX_GAP)


def test_a_question_about_a_one_word_file_stores_a_bounded_turn(sec_server, client, tmp_path):
    """Through the web app: upload the file, ask about it (the question holds a piece of the word, so its passages
    are the sources); the turn kept in conversations.sqlite and the chat sent back to the page are bounded."""
    import sqlite3

    p = tmp_path / "one-word.txt"
    p.write_text(ONE_WORD, encoding="utf-8")
    table = upload(client, p, BROWSER_A)
    assert "ready" in str(table)
    question = f"What does {UNIT * 10} mean?"
    history, *_ = client.predict(question, [], 5, 800, "dense", "extractive", BROWSER_A, None, [], api_name="/ask")
    assert "one-word.txt" in str(history)  # its passages are the sources
    assert len(json.dumps(history)) < 400_000  # the page got 20 MB for a 10 MB word before
    db = sqlite3.connect(sec_server.data_dir / "conversations.sqlite")
    try:
        stored, answer = db.execute("SELECT question, answer FROM turns ORDER BY created DESC LIMIT 1").fetchone()
    finally:
        db.close()
    assert stored == question
    assert len(answer.encode()) < 400_000
    a = json.loads(answer)
    ours = [s for s in a["sources"] if s["doc_id"] == "one-word.txt"]
    assert ours and all(s["shortened"] for s in ours)  # a passage of 40 "words" of 200 characters is over the cap
    assert all(len(s["parent_text"]) <= MAX_SOURCE_CHARS for s in a["sources"] + a["citations"])
    assert "shortened: open ↗ shows the whole passage" in str(history)
    src = dict(ours[0], matched_text=ours[0]["matched_text"][:100] + "…")  # as a cut child would come back
    svc = sec_server.service
    svc.evaluate(dict(a, sources=[src]), relevant=[src["number"]], rating="good", owner="browser:long-words")
    (ev,) = svc.feedback.rows(owner="browser:long-words")[-1]["evidence"]
    assert ev["text"] == svc.ctx.store.text(src["doc_hash"])[src["matched_start"]:src["matched_end"]]  # the whole


def test_a_stored_turn_is_bounded_in_bytes_whatever_its_sources_hold(tmp_path):
    """The store bounds what it keeps even when an answer's passages are huge (a 2 MB chunk, as before chunks were
    bounded in characters, or an index built before that)."""
    import sqlite3

    from services.conversations import ConversationStore

    def source(n):
        return {"number": n, "doc_id": "one-word.txt", "start": 0, "end": 2_000_000, "parent_text": ONE_WORD,
                "matched_level": 1, "matched_start": 0, "matched_end": 1_000_000, "matched_text": ONE_WORD[:1_000_000],
                "score": 0.5, "level_scores": {0: 0.5}, "support": [{"start": 0, "end": 200_000,
                                                                     "text": ONE_WORD[:200_000], "score": 0.4}]}

    sources = [source(n) for n in range(1, 6)]
    answer = {"question": "q", "text": ONE_WORD[:500_000], "draft": ONE_WORD[:500_000], "backend": "extractive",
              "retriever": "dense", "citations": sources[:2], "sources": sources, "weights": [1, 1, 1],
              "timings": {}, "grounding": {"context_score": 0.5}}
    store = ConversationStore(tmp_path / "conversations.sqlite")
    cid = store.create("browser:a")
    store.add_turn("browser:a", cid, "q", answer)
    (size,) = sqlite3.connect(tmp_path / "conversations.sqlite").execute("SELECT length(answer) FROM turns").fetchone()
    assert size < 200_000  # 23 MB before
    got = store.get("browser:a", cid)["turns"][0]["answer"]
    s = got["sources"][0]
    assert s["shortened"] and s["parent_text"].startswith(UNIT) and len(s["parent_text"]) <= MAX_SOURCE_CHARS
    assert (s["start"], s["end"], s["matched_end"], s["level_scores"]) == (0, 2_000_000, 1_000_000, {"0": 0.5})
    assert len(got["text"]) <= 20_000 and answer["sources"][0]["parent_text"] == ONE_WORD  # the caller's is intact

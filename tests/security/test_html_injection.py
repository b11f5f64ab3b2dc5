"""Text from a document never becomes live HTML, a fetched image or a live link in anyone's answers: the answer, the
question, error messages and the Evaluate tab render literally (HTML escaped, Markdown punctuation escaped, URL
schemes broken); the Sources panel escapes passages. Checked in Chromium against a local tracking server."""
from __future__ import annotations

import httpx
import pytest

from ingest.jobs.queue import ingest_files
from services.render import answer_markdown, plain_text_markdown, sources_html
from tests.browser_fixtures import ask_and_open_sources

HOSTILE = [
    '<img src="http://tracker.example/pixel.png">',
    "![logo](http://tracker.example/md.png)",
    "[click me](javascript:alert(1))",
    "<script>window.__pwned = 1</script>",
    "see http://tracker.example/auto and www.tracker.example",
    "<a href='http://tracker.example/a'>x</a>",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_plain_text_markdown_leaves_no_tag_link_or_image(text):
    out = plain_text_markdown(text)
    assert "<" not in out and "](" not in out and "![" not in out
    assert "http://" not in out and "www." not in out and "javascript:" not in out


def test_answer_links_setting_keeps_links_but_never_html_or_images():
    out = answer_markdown('See [the rules](https://harbour.example/rules) ![x](http://t/p.png) <img src=x>', True)
    assert "[the rules](https://harbour.example/rules)" in out
    assert "<img" not in out and "![" not in out


def test_sources_panel_escapes_passages():
    src = {"number": 1, "doc_id": "<b>doc</b>", "start": 0, "end": 40, "score": 0.5, "matched_level": 0,
           "matched_start": 0, "matched_end": 40, "parent_text": HOSTILE[0] + HOSTILE[3], "level_scores": {}}
    out = sources_html([src])
    assert "<img" not in out and "<script" not in out and "<b>doc" not in out


@pytest.mark.browser
def test_a_hostile_document_cannot_make_a_readers_browser_fetch_anything(sec_server, page, tmp_path, tracker):
    """A document in the shared library (so it reaches every user's answers) carries an image tag, a Markdown
    image, a Markdown link, a bare URL and a script, all aimed at the tracker; the extractive answer quotes them."""
    from playwright.sync_api import expect


    t = tracker.url
    doc = tmp_path / "beacon.md"
    doc.write_text(
        "# Beacon notes\n\n"
        f'The beacon keeper signs the log every night. <img src="{t}/img.png"> The beacon keeper signs in ink.\n\n'
        f"The beacon keeper signs with a stamp ![stamp]({t}/md.png) and a date.\n\n"
        f"The beacon keeper signs at {t}/autolink and at [the office]({t}/link).\n\n"
        "The beacon keeper signs <script>window.__pwned = 1</script> twice.\n", encoding="utf-8")
    assert ingest_files(sec_server.service.ctx, [doc]).results[0].status == "ingested"
    ask_and_open_sources(page, sec_server.url, "What does the beacon keeper sign every night?")
    page.locator("#chatbot .title.expanded").first.wait_for()
    chat = page.locator("#chatbot")
    expect(chat).to_contain_text("window.__pwned = 1", timeout=30_000)  # the passages are there, as text
    assert "beacon keeper signs" in chat.inner_text() and "tracker" not in str(tracker.hits)
    assert tracker.hits == [], tracker.hits
    live = chat.evaluate("el => [...el.querySelectorAll('img[src], a[href], script, iframe')]"
                         ".map(e => e.getAttribute('src') || e.getAttribute('href') || e.tagName)")
    assert not [x for x in live if t in x or x == "SCRIPT"], live
    assert page.evaluate("window.__pwned") is None
    page.screenshot(path=str(sec_server.root / "html-injection.png"), full_page=True)
    # control: the tracker does count a request (this one made outside the page), and a live image added to the page
    # never reaches it: the page's Content-Security-Policy (issue 47, tests/security/test_headers.py) refuses it, a
    # second guard behind the escaping checked above (no live element in the passages)
    httpx.get(f"{t}/control.png", timeout=10)
    assert tracker.hits == ["/control.png"]
    page.evaluate(f"() => new Promise(done => {{ const i = new Image(); i.onload = i.onerror = done; "
                  f"i.src = '{t}/live.png'; document.body.appendChild(i); }})")
    assert tracker.hits == ["/control.png"]

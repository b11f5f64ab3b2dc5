"""End to end in headless Chromium (Debian's /usr/bin/chromium, driven by Playwright): upload and ask, admin
login and re-ingestion, re-ingestion while a chat runs, an evaluation saved and exported. Screenshots go to
test-artifacts/.

The tests share one server (``ui_server``) but not its state: :func:`baseline` puts back before each test what
another test may have changed (the index's chunking, a trained router, an LLM endpoint, a held or slowed
embedder), so they pass in any order. On CI (MGRAG_REQUIRE_SERVICES=1) a missing Chromium or Playwright fails
them (tests/browser_fixtures.py)."""
from __future__ import annotations

import json
import re

import pytest

from tests.ui.conftest import ADMIN_PASSWORD, ARTIFACTS, ORCHARD

pytestmark = pytest.mark.browser

SEED_CHUNKING = ("recursive", 40)  # the server's settings (tests/ui/conftest.py): one level, so no router applies


@pytest.fixture(autouse=True)
def baseline(browser, ui_server):  # the browser first: without one, no server is started
    """The server as it starts, whatever ran before: the index cut with the seed chunking (re-ingested if a test
    changed it), no router trained on the data dir, no LLM endpoint, the embedder neither held nor slowed."""
    import shutil

    svc, emb = ui_server.service, ui_server.embedder
    emb.gate.set()
    emb.holds = lambda texts: True
    emb.delay_s = 0.0
    token = None
    live = svc.ctx.catalog.live_generation()
    if (live.chunker, live.theta) != SEED_CHUNKING:
        token = svc.login("admin", ADMIN_PASSWORD)
        svc.reingest(token, None, *SEED_CHUNKING)
    if (ui_server.data_dir / "router").exists():
        shutil.rmtree(ui_server.data_dir / "router")
    svc.ctx.__dict__.pop("router", None)  # the next question reloads it: none on a one-level index
    if svc.ctx.settings.openai_base_url:
        svc.set_llm(token or svc.login("admin", ADMIN_PASSWORD), "", "", password=ADMIN_PASSWORD)
    live = svc.ctx.catalog.live_generation()
    assert (live.chunker, live.theta) == SEED_CHUNKING and not svc.ctx.settings.openai_base_url
    yield


def _see(locator, text):
    """Wait until ``locator``'s text contains ``text``."""
    from playwright.sync_api import expect

    expect(locator).to_contain_text(text, timeout=30_000)


def _open(page, url, tab="Chat"):
    page.goto(url)
    page.get_by_role("tab", name=tab).click()


def _login(page, password):
    """Log in on the Admin tab and wait for the panel. The form is filled again if the first click reached the
    server before the page had bound the inputs (seen once on a loaded CI machine); a failure says what the page
    showed."""
    from playwright.sync_api import TimeoutError as PwTimeout

    msg = page.locator("#admin-login-msg")
    msg.wait_for(state="visible")
    for attempt in range(3):
        page.locator("#admin-user textarea").fill("admin")
        page.locator("#admin-password input").fill(password)
        page.locator("#admin-login-btn").click()
        try:
            page.locator("#admin-panel").wait_for(state="visible", timeout=15_000)
            return
        except PwTimeout:
            if attempt == 2:
                page.screenshot(path=str(ARTIFACTS / "login-failed.png"), full_page=True)
                raise AssertionError("admin login did not open the panel; "
                                     f"the page says: {msg.inner_text()!r}") from None


def _ask(page, question):
    page.locator("#question textarea").fill(question)
    page.locator("#ask").click()


def _wait_sources(page, n):
    """Wait until the chat shows ``n`` answers with their sources (the collapsible "Sources (k)" message)."""
    from playwright.sync_api import expect

    expect(page.locator("#chatbot").get_by_text("Sources (")).to_have_count(n, timeout=30_000)


def test_upload_ask_streamed_answer_and_sources(ui_server, page, tmp_path):
    notes = tmp_path / "orchard.md"
    notes.write_text(ORCHARD, encoding="utf-8")
    bad = tmp_path / "tool.exe"
    bad.write_bytes(b"MZ\x00\x00binary")
    _open(page, ui_server.url)
    page.locator("#upload input[type=file]").set_input_files([str(notes), str(bad)])
    report = page.locator("#upload-report")
    _see(report, "ready")
    _see(report, "refused")
    assert "unsupported file type" in report.inner_text()
    assert ui_server.service.ctx.catalog.find_document("orchard.md") == "orchard.md"

    _ask(page, "How many apple trees does the orchard have?")
    _wait_sources(page, 1)
    chat = page.locator("#chatbot")
    assert "forty apple trees" in chat.inner_text()
    _see(page.locator("#weights-plot"), "level weights: uniform")  # no router by default: one line, no bars
    for toast_close in page.locator(".toast-close").all():
        toast_close.click()
    chat.get_by_text("Sources (").first.click()  # open the sources under the answer
    page.locator("#chatbot .title.expanded").first.wait_for()
    page.locator("#chatbot mark").first.wait_for(state="visible")
    text = chat.inner_text()
    assert "orchard.md" in text and "Router weights" not in text and "dense:" in text
    page.wait_for_timeout(500)  # let the accordion finish opening before the screenshot
    page.screenshot(path=str(ARTIFACTS / "chat.png"), full_page=True)


def test_pdf_citation_with_its_page_opens_the_viewer_there(ui_server, page, tmp_path):
    from tests.ingest.test_layout import BODY
    from tests.pdfgen import make_pdf

    pdf = tmp_path / "harbour-report.pdf"
    pdf.write_bytes(make_pdf(BODY, header="Harbour Authority Annual Report 2024",
                             outline=[("Meetings", 0), ("Fees", 1), ("Operations", 2), ("Lighthouse", 3)]))
    _open(page, ui_server.url)
    page.locator("#upload input[type=file]").set_input_files([str(pdf)])
    _see(page.locator("#upload-report"), "ready")
    _ask(page, "How much do visiting yachts pay a night at the harbour?")
    _wait_sources(page, 1)
    chat = page.locator("#chatbot")
    chat.get_by_text("Sources (").first.click()
    page.locator("#chatbot .title.expanded").first.wait_for()
    source = chat.locator(".mg-source").filter(has_text="harbour-report.pdf").first
    head = source.locator(".mg-src-head")
    from playwright.sync_api import expect

    expect(head).to_contain_text(__import__("re").compile(r"p\. 2(–\d)? · Fees"), timeout=30_000)
    with page.expect_popup() as popup:
        head.locator("a.mg-open").click()
    viewer = popup.value
    viewer.wait_for_load_state()
    _see(viewer.locator(".mg-page"), "page 2 of 4")
    assert viewer.locator(".mg-page img").evaluate("img => img.complete && img.naturalWidth > 0")
    cited = " ".join(source.locator(".mg-passage").inner_text().split())
    marked = " ".join(viewer.locator("mark.mg-passage").first.inner_text().split())
    assert cited[:60] == marked[:60] and viewer.locator("mark.mg-child").count() >= 1
    viewer.screenshot(path=str(ARTIFACTS / "viewer.png"), full_page=True)
    viewer.close()


def test_upload_progress_moves_within_one_large_file(ui_server, page, tmp_path):
    """A slow embedder (1 s per block) makes one file take seconds; the progress text under the upload shows the
    phase within the file and changes as it goes, with an estimate of the time left."""
    big = tmp_path / "ledger.md"
    big.write_text(" ".join(f"Entry {i}: the ferry {i % 9} carried {i * 3 % 50} passengers on day {i}."
                            for i in range(750)), encoding="utf-8")
    assert big.stat().st_size < 50_000  # under the test server's upload limit
    _open(page, ui_server.url)
    ui_server.embedder.delay_s = 1.0
    try:
        page.locator("#upload input[type=file]").set_input_files([str(big)])
        seen = []  # the progress shown in the file's row, in order ("embedding 40% · about 3 s left")
        for _ in range(300):
            text = page.locator("#upload-report").inner_text()
            m = re.search(r"(?:extracting|chunking|embedding|writing) \d+%[^\n\t]*", text)
            if m and m.group(0).strip() not in seen:
                seen.append(m.group(0).strip())
            if "ready" in text:
                break
            page.wait_for_timeout(100)
    finally:
        ui_server.embedder.delay_s = 0.0
    _see(page.locator("#upload-report"), "ready")
    embedding = [int(re.search(r"embedding (\d+)%", t).group(1)) for t in seen if t.startswith("embedding")]
    assert len(set(embedding)) >= 2 and embedding == sorted(embedding), seen  # moved within the one file
    assert any("left" in t for t in seen), seen


def test_a_small_file_is_searchable_and_in_search_in_while_a_long_pdf_is_still_read(ui_server, page, tmp_path):
    """Issue 32 (2): a .docx waited minutes behind a 10-K uploaded with it, and *Search in* listed none of the new
    files until the whole batch was done. A long PDF (120 pages by its page tree, its embedding held until the test
    lets it go) and a small note go up together: the note is searchable and ticked-able under *Search in* while the
    PDF is still being read."""
    from tests.pdfgen import make_pdf

    pdf = tmp_path / "annual-report.pdf"
    pdf.write_bytes(make_pdf([[f"Page {p}: the harbour board met."] for p in range(120)], footer=None))
    assert pdf.stat().st_size < 50_000  # under the test server's upload limit
    note = tmp_path / "ferry-note.md"
    note.write_text("# Ferry note\n\nThe ferry to the island leaves at seven every morning.\n", encoding="utf-8")
    _open(page, ui_server.url)
    emb = ui_server.embedder
    emb.holds = lambda texts: any("harbour board" in t for t in texts)  # the PDF's chunks, not the note's
    emb.gate.clear()
    try:
        page.locator("#upload input[type=file]").set_input_files([str(pdf), str(note)])
        _see(page.locator("#scope"), "ferry-note.md")
        rows = page.locator("#upload-report").inner_text()
        page.screenshot(path=str(ARTIFACTS / "upload-small-first.png"), full_page=True)
        pdf_row = next(ln for ln in rows.splitlines() if "annual-report.pdf" in ln)
        assert not re.search(r"searchable|ready", pdf_row), rows  # the PDF is still being read
        assert "annual-report.pdf" not in page.locator("#scope").inner_text()
    finally:
        emb.gate.set()
    _see(page.locator("#scope"), "annual-report.pdf")


def test_admin_login_form_gives_way_to_a_log_out(ui_server, page):
    _open(page, ui_server.url, "Admin")
    _login(page, ADMIN_PASSWORD)
    page.locator("#admin-login").wait_for(state="hidden")
    page.locator("#admin-logout-btn").click()
    page.locator("#admin-panel").wait_for(state="hidden")
    _see(page.locator("#admin-login-msg"), "Logged out")
    assert page.locator("#admin-login").is_visible()


def test_admin_requires_login_then_reingests(ui_server, page):
    _open(page, ui_server.url, "Admin")
    assert not page.locator("#admin-panel").is_visible()
    page.locator("#admin-user textarea").fill("admin")
    page.locator("#admin-password input").fill("wrong")
    page.locator("#admin-login-btn").click()
    _see(page.locator("#admin-login-msg"), "wrong user name or password")
    assert not page.locator("#admin-panel").is_visible()

    _login(page, ADMIN_PASSWORD)
    _see(page.locator("#docs-table"), "keeper.md")
    gen = ui_server.service.ctx.catalog.live_generation().gen
    page.locator("#reingest-theta input").fill("30")
    page.locator("#reingest").click()
    _see(page.locator("#admin-msg"), "Re-ingested")
    live = ui_server.service.ctx.catalog.live_generation()
    assert live.gen > gen and live.theta == 30
    page.locator("#stats").click()
    page.locator("#stats-plot img").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "admin.png"), full_page=True)


def test_llm_endpoint_set_in_the_admin_tab_then_used_by_the_chat(ui_server, page):
    from tests.app.stub_openai import StubOpenAI

    with StubOpenAI(api_key="sk-browser-secret") as stub:  # answers "… twenty-two years [1]."
        _open(page, ui_server.url)
        page.locator("#session-settings").click()
        note = page.locator("#backend-note")
        _see(note, "openai cannot run: no endpoint")
        _open(page, ui_server.url, "Admin")
        _login(page, ADMIN_PASSWORD)
        page.locator("#llm-url textarea").fill(stub.base_url)
        page.locator("#llm-key input").fill("sk-wrong")
        page.locator("#llm-list").click()
        _see(page.locator("#llm-msg"), "refused the API key (HTTP 401)")
        page.locator("#llm-key input").fill("sk-browser-secret")
        page.locator("#llm-list").click()
        _see(page.locator("#llm-msg"), "2 model(s): stub-llm, stub-llm-large")
        page.locator("#llm-test").click()
        _see(page.locator("#llm-msg"), "connected: 2 model(s) listed; stub-llm answered")
        page.locator("#llm-save").click()  # saving asks for the admin password again
        _see(page.locator("#llm-msg"), "type the admin password again")
        page.locator("#llm-password input").fill("wrong")
        page.locator("#llm-save").click()
        _see(page.locator("#llm-msg"), "wrong admin password")
        assert not ui_server.service.ctx.settings.openai_base_url
        page.locator("#llm-password input").fill(ADMIN_PASSWORD)
        page.locator("#llm-save").click()
        _see(page.locator("#llm-msg"), "Saved:")
        page.screenshot(path=str(ARTIFACTS / "admin-llm.png"), full_page=True)
        assert "sk-browser-secret" not in page.content()
        # the chat now offers the openai backend and answers through the endpoint
        page.get_by_role("tab", name="Chat").click()
        page.locator("#session-settings").click()
        page.locator("#backend input").click()
        page.get_by_role("option", name="openai").click()
        _ask(page, "How long has the keeper tended the light?")
        _wait_sources(page, 1)
        assert "twenty-two years" in page.locator("#chatbot").inner_text()
        chat_calls = [r for r in stub.requests if r["path"].endswith("/chat/completions")]
        assert chat_calls and chat_calls[-1]["auth"] == "Bearer sk-browser-secret"
        assert chat_calls[-1]["body"]["model"] == "stub-llm"
        assert "sk-browser-secret" not in page.content()


def test_reingestion_while_a_chat_runs(ui_server, page, browser):
    admin = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    admin.set_default_timeout(30_000)
    _open(admin, ui_server.url, "Admin")
    _login(admin, ADMIN_PASSWORD)
    emb = ui_server.embedder
    gen = ui_server.service.ctx.catalog.live_generation().gen
    emb.waiting.clear()
    emb.gate.clear()  # the re-ingestion will wait inside its first embedding, until the chat has answered
    try:
        admin.locator("#reingest-theta input").fill("24")
        admin.locator("#reingest").click()
        assert emb.waiting.wait(30), "the re-ingestion did not start"
        assert ui_server.service.job.running and ui_server.service.job.kind == "reingest"

        _open(page, ui_server.url)
        _ask(page, "How long has the keeper tended the light?")
        _wait_sources(page, 1)
        assert "twenty-two years" in page.locator("#chatbot").inner_text()
        assert ui_server.service.job.running  # answered while the re-ingestion was still running
        page.screenshot(path=str(ARTIFACTS / "chat-during-reingest.png"), full_page=True)
    finally:
        emb.gate.set()
    _see(admin.locator("#admin-msg"), "Re-ingested")
    assert ui_server.service.ctx.catalog.live_generation().gen > gen
    _ask(page, "How long has the keeper tended the light?")  # and after the switch
    _wait_sources(page, 2)
    admin.context.close()


def test_evaluation_saved_and_exported(ui_server, page):
    _open(page, ui_server.url)
    _ask(page, "How long has the keeper tended the light?")
    _wait_sources(page, 1)
    page.get_by_role("tab", name="Evaluate").click()
    _see(page.locator("#answer-md"), "How long has the keeper")
    _see(page.locator("#level-hits"), "keeper.md")
    page.locator("#reference textarea").fill("twenty-two years")
    _see(page.locator("#f1"), "F1: 0.")
    page.locator("#rating").get_by_text("good").click()
    page.locator("#comment textarea").fill("correct, cites the log")
    boxes = page.locator("#relevant input[type=checkbox]")
    _see(page.locator("#relevant"), "keeper.md")
    assert boxes.count() >= 1 and not any(boxes.nth(i).is_checked() for i in range(boxes.count()))  # none for you
    page.locator("#relevant").get_by_text("keeper.md").first.click()  # the user ticks the source with the answer
    page.locator("#save-eval").click()
    _see(page.locator("#eval-msg"), "Saved evaluation #")
    page.locator("#export").click()
    _see(page.locator("#eval-msg"), "record(s) in feedback.jsonl")
    _see(page.locator("#export-file"), "feedback.jsonl")
    page.screenshot(path=str(ARTIFACTS / "evaluate.png"), full_page=True)
    rows = ui_server.service.feedback.rows()
    assert any(r["comment"] == "correct, cites the log" and r["rating"] == "good" for r in rows)
    # the export holds this browser's evaluations only, in a file of its own
    path = max((ui_server.data_dir / "exports").glob("*/feedback.jsonl"), key=lambda p: p.stat().st_mtime)
    recs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert recs and recs[-1]["answers"] == ["twenty-two years"] and recs[-1]["doc_id"] == "keeper.md"
    assert set(recs[-1]) == {"id", "question", "doc_id", "answers", "evidence"}


def test_router_trained_from_the_admin_tab(ui_server, page):
    """The index in three levels (mg, θ=24; :func:`baseline` puts the seed chunking back for the next test). Ten
    answers rated good (stored through the service, as the Evaluate tab does) are the training questions; the
    button trains, plots the loss, and the chat uses the new router."""
    svc = ui_server.service
    svc.reingest(svc.login("admin", ADMIN_PASSWORD), None, "mg", 24)
    for q in ("How long has the keeper tended the light?", "What does the lamp burn?", "When are the weather logs?",
              "Who is the keeper?", "How often is the lamp wound?", "What is wound by hand?", "Which fuel is used?",
              "When did the survey team arrive?", "Where is the lighthouse?", "Who tends the light?"):
        answer = next(v for kind, v in svc.ask(q, backend="extractive") if kind == "done")
        svc.evaluate(answer.to_dict(), rating="good")
    _open(page, ui_server.url)
    _ask(page, "How long has the keeper tended the light?")
    _wait_sources(page, 1)
    _see(page.locator("#weights-plot"), "level weights: uniform")
    _open(page, ui_server.url, "Admin")
    _login(page, ADMIN_PASSWORD)
    page.locator("#train-router").click()
    _see(page.locator("#train-msg"), "The chat now uses it")
    page.locator("#loss-plot img").first.wait_for()
    assert (ui_server.data_dir / "router" / "config.json").exists()
    page.screenshot(path=str(ARTIFACTS / "admin-router.png"), full_page=True)
    _open(page, ui_server.url)  # the reload reopens this browser's conversation: its first answer is there
    _wait_sources(page, 1)
    _ask(page, "How long has the keeper tended the light?")
    _wait_sources(page, 2)
    weights = page.locator("#weights-plot").inner_text()
    assert "θ/4" in weights and "uniform" not in weights


def test_two_turn_conversation_with_the_supporting_sentence_highlighted(ui_server, page):
    """A follow-up ("she") is understood from the first turn; the reply's supporting sentence is highlighted in
    the Sources view apart from the retrieval-matched child; a question the documents do not answer gets a plain
    abstention with the closest passages and no citation."""
    _open(page, ui_server.url)
    chat = page.locator("#chatbot")
    n0 = chat.get_by_text("Sources (").count()
    _ask(page, "Who is the keeper of the northern lighthouse?")
    _wait_sources(page, n0 + 1)
    _ask(page, "How long has she tended the light?")
    _wait_sources(page, n0 + 2)
    assert "twenty-two years" in chat.inner_text()
    chat.get_by_text("Sources (").last.click()
    _see(chat, "searched for: How long has she tended the light? (")
    support = chat.locator("mark.mg-support", has_text="twenty-two years").last
    support.wait_for(state="visible")
    assert support.evaluate("e => getComputedStyle(e).backgroundColor") != \
        chat.locator("mark:not(.mg-support)").last.evaluate("e => getComputedStyle(e).backgroundColor")
    assert chat.locator("mark:not(.mg-support)").count() >= 1  # the matched child, marked apart
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / "chat-follow-up.png"), full_page=True)

    page.locator("#new-conversation").click()
    _ask(page, "Which submarine sank the cruiser Vesuvius in the Baltic?")
    from playwright.sync_api import expect

    expect(chat.get_by_text("Closest passages (")).to_have_count(1, timeout=30_000)
    text = chat.inner_text()
    assert "The documents do not say" in text and "★ cited" not in text


def test_a_conversation_scoped_to_one_document(ui_server, page, tmp_path):
    """Ticking one document under "Search in" limits the conversation's questions to it (and the choice is kept
    with the conversation)."""
    notes = tmp_path / "orchard-notes.md"
    notes.write_text(ORCHARD.replace("# Orchard notes", "# Orchard notes (scoped)"), encoding="utf-8")
    _open(page, ui_server.url)
    page.locator("#new-conversation").click()
    page.locator("#upload input[type=file]").set_input_files([str(notes)])
    _see(page.locator("#upload-report"), "ready")
    scope = page.locator("#scope")
    _see(scope, "orchard-notes.md")
    scope.get_by_label("orchard-notes.md").check()
    _ask(page, "How long has the keeper tended the light?")
    from playwright.sync_api import expect

    chat = page.locator("#chatbot")
    expect(chat.get_by_text(re.compile(r"(Sources|Closest passages) \(")).first).to_be_visible(timeout=30_000)
    chat.get_by_text(re.compile(r"(Sources|Closest passages) \(")).last.click()
    heads = " ".join(chat.locator(".mg-src-head").all_inner_texts())
    assert "orchard-notes.md" in heads and "keeper.md" not in heads
    page.screenshot(path=str(ARTIFACTS / "chat-scoped.png"), full_page=True)
    stored = ui_server.service.conversations.db.execute(  # the conversation was stored with its scope
        "SELECT scope FROM conversations WHERE scope LIKE '%orchard-notes.md%'").fetchall()
    assert stored


def test_a_reload_keeps_the_conversation_and_the_session_settings(ui_server, page):
    _open(page, ui_server.url)
    page.locator("#new-conversation").click()
    page.locator("#session-settings").click()
    page.locator("#session-settings").get_by_label("bm25").check()
    # a question in the source's own words ("burns", not "burn": the test embedder does not stem), so that it is
    # answered whatever the grounding floor is fitted to
    _ask(page, "What burns in the lamp?")
    _wait_sources(page, 1)
    first = page.locator("#chatbot").inner_text()
    assert "paraffin" in first
    _see(page.locator("#conversations"), "What burns in the lamp?")
    page.reload()
    page.get_by_role("tab", name="Chat").click()
    _see(page.locator("#chatbot"), "paraffin")
    _see(page.locator("#conversations"), "What burns in the lamp?")
    page.locator("#session-settings").click()
    assert page.locator("#session-settings").get_by_label("bm25").is_checked()
    # and a follow-up in the reopened conversation is understood from its stored turns: its search names the lamp
    _ask(page, "How often is it wound?")
    from playwright.sync_api import expect

    chat = page.locator("#chatbot")
    replies = chat.get_by_text(re.compile(r"^(Sources|Closest passages) \("))
    expect(replies).to_have_count(2, timeout=30_000)
    replies.last.click()
    _see(chat, "searched for: How often is it wound?")
    assert "lamp" in chat.locator(".mg-scores", has_text="searched for").last.inner_text()
    page.screenshot(path=str(ARTIFACTS / "chat-reloaded.png"), full_page=True)


def test_a_table_in_the_sources_keeps_its_words_whole(ui_server, page, tmp_path):
    """A wide table quoted in Sources is not squeezed until words break ("Ch an ge"): each header word stays on
    one line, and the table scrolls sideways when it is wider than the chat."""
    doc = tmp_path / "sales.md"
    head = "Three Months Ended July 1, 2023 | Three Months Ended June 25, 2022 | Change"
    doc.write_text("# Net sales\n\nNet sales by category, in millions of dollars.\n\n"
                   f"| | {head} | Nine Months Ended July 1, 2023 | Nine Months Ended June 25, 2022 | Change |\n"
                   "|---|---|---|---|---|---|---|\n"
                   "| Services | 21,213 | 19,604 | 8% | 62,886 | 58,941 | 7% |\n", encoding="utf-8")
    _open(page, ui_server.url)
    page.locator("#upload input[type=file]").set_input_files([str(doc)])
    _see(page.locator("#upload-report"), "ready")
    _ask(page, "How much net sales came from Services in the three months ended July 1, 2023?")
    panel = page.locator("#chatbot").get_by_text(re.compile(r"^(Sources|Closest passages) \("))  # either shows it
    panel.first.wait_for(timeout=30_000)
    panel.first.click()
    cell = page.locator("#chatbot .mg-table th").filter(has_text="Change").first
    cell.wait_for()
    lines = cell.evaluate("th => { const r = document.createRange(); r.selectNodeContents(th);"
                          " return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; }")
    assert lines == 1, f"'Change' is drawn on {lines} lines"

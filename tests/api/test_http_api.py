"""The HTTP API over real HTTP: the official `openai` client against /v1/chat/completions (streamed and not, with
citations, follow-ups), keys and what each user sees, REST for documents and search, the OpenAPI schema."""
from __future__ import annotations

import json

import httpx
import pytest

from tests.api.conftest import auth, upload

SECRET = ("# Alice's notes\n\nThe vault code for the greenhouse is kept by the gardener Tobias Wren. "
          "The greenhouse grows seventeen kinds of orchids under glass.\n")


@pytest.fixture(scope="module")
def client(api):
    import openai

    return openai.OpenAI(base_url=api.base, api_key=api.alice, max_retries=0, timeout=120)


def test_openai_client_gets_a_cited_answer(api, client):
    out = client.chat.completions.create(model="mgrag", messages=[
        {"role": "user", "content": "How long has Mrs. Alder tended the light?"}])
    text = out.choices[0].message.content
    assert "twenty-two years" in text and "[1]" in text
    extra = out.model_extra
    cite = extra["citations"][0]
    assert cite["index"] == 1 and cite["document"] == "lighthouse.md" and cite["section"] == "Lighthouse log"
    assert any("twenty-two years" in s["text"] for s in cite["support"])
    assert cite["view_url"].startswith("/mgrag/view/")
    assert extra["mgrag"]["abstained"] is False and extra["mgrag"]["backend"] == "extractive"


def test_openai_client_streams_the_checked_answer_with_citations_last(api, client):
    stream = client.chat.completions.create(model="mgrag-extractive", stream=True, messages=[
        {"role": "user", "content": "How often is the lamp wound by hand through the night?"}])
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert "four hours" in text and "[1]" in text
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["citations"][0]["document"] == "lighthouse.md"
    assert len(chunks) >= 3  # a role chunk, the text, the closing chunk with the citations


def test_follow_up_uses_the_earlier_turn(api, client):
    first = "How long has Mrs. Alder tended the light?"
    a = client.chat.completions.create(model="mgrag", messages=[{"role": "user", "content": first}])
    out = client.chat.completions.create(model="mgrag", messages=[
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": first},
        {"role": "assistant", "content": a.choices[0].message.content},
        {"role": "user", "content": "When does she log the weather?"}])
    info = out.model_extra["mgrag"]
    assert info["rewrite"] == "rules" and "Mrs. Alder" in info["query"]  # searched with the earlier question
    assert "dawn" in out.choices[0].message.content
    alone = client.chat.completions.create(model="mgrag", messages=[
        {"role": "user", "content": "When does she log the weather?"}])
    assert alone.model_extra["mgrag"]["rewrite"] == "none"


def test_unanswerable_question_abstains_not_errors(api, client):
    out = client.chat.completions.create(model="mgrag", messages=[
        {"role": "user", "content": "What is the quarterly revenue of the semiconductor division?"}])
    assert out.model_extra["mgrag"]["abstained"] is True and out.model_extra["citations"] == []
    assert "[1]" not in out.choices[0].message.content


def test_models_and_unknown_model(api, client):
    ids = [m.id for m in client.models.list()]
    assert ids[0] == "mgrag" and "mgrag-extractive" in ids
    import openai

    with pytest.raises(openai.NotFoundError, match="no model 'gpt-4o'"):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi there?"}])


def test_no_key_or_wrong_key_is_401(api):
    for headers in ({}, auth("mgrag-AAAAAAAA-" + "x" * 43), {"Authorization": "Basic abc"}):
        r = httpx.get(f"{api.base}/models", headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert "valid API key" in r.json()["error"]["message"]
    r = httpx.post(f"{api.base}/chat/completions", json={"model": "mgrag", "messages": [
        {"role": "user", "content": "What does the lamp burn?"}]})
    assert r.status_code == 401


def test_revoked_key_and_removed_user_are_401(api):
    key = api.service.api_keys.add("temp", "alice")
    assert httpx.get(f"{api.base}/models", headers=auth(key)).status_code == 200
    api.service.api_keys.revoke("temp")
    assert httpx.get(f"{api.base}/models", headers=auth(key)).status_code == 401
    api.service.users.add("carol", "carol-password")
    key = api.service.api_keys.add("carol-key", "carol")
    assert httpx.get(f"{api.base}/models", headers=auth(key)).status_code == 200
    token = api.service.login("admin", "test-admin-pw", token="t" * 40)
    api.service.remove_user(token, "carol")
    assert httpx.get(f"{api.base}/models", headers=auth(key)).status_code == 401


def test_another_users_key_cannot_see_a_private_document(api):
    r = upload(api, api.alice, "alice-notes.md", SECRET)
    assert r.status_code == 200, r.text
    [row] = r.json()["documents"]
    assert row["status"] in ("searchable", "refining", "ready") and row["id"] == "alice-notes.md"
    q = {"query": "Who keeps the vault code for the greenhouse?", "k": 5}
    mine = httpx.post(f"{api.base}/search", headers=auth(api.alice), json=q).json()
    assert mine["passages"][0]["document"] == "alice-notes.md"
    theirs = httpx.post(f"{api.base}/search", headers=auth(api.bob), json=q).json()
    assert all(p["document"] != "alice-notes.md" for p in theirs["passages"] + theirs["levels"])
    listed = httpx.get(f"{api.base}/documents", headers=auth(api.bob)).json()["documents"]
    assert [d["id"] for d in listed] == ["lighthouse.md"]
    for call in (httpx.get, httpx.delete):
        r = call(f"{api.base}/documents/alice-notes.md", headers=auth(api.bob))
        assert r.status_code == 404 and "alice-notes.md" in r.json()["error"]["message"]
    r = httpx.post(f"{api.base}/chat/completions", headers=auth(api.bob), json={
        "model": "mgrag", "messages": [{"role": "user", "content": "Who keeps the vault code?"}],
        "mgrag": {"documents": ["alice-notes.md"]}})
    assert r.status_code == 404
    r = httpx.post(f"{api.base}/chat/completions", headers=auth(api.bob), json={
        "model": "mgrag", "messages": [{"role": "user", "content": "Who keeps the vault code for the greenhouse?"}]})
    assert "Tobias" not in r.text
    assert api.service.ctx.catalog.find_document("alice-notes.md") == "alice-notes.md"  # still there
    httpx.delete(f"{api.base}/documents/alice-notes.md", headers=auth(api.alice)).raise_for_status()


def test_upload_list_search_delete_round_trip(api):
    text = "# Bees\n\nThe apiary keeps nine hives of Carniolan bees beside the old mill.\n"
    r = upload(api, api.bob, "bees.md", text)
    assert r.status_code == 200 and r.json()["documents"][0]["job_id"]
    docs = {d["id"]: d for d in httpx.get(f"{api.base}/documents", headers=auth(api.bob)).json()["documents"]}
    assert docs["bees.md"]["owner"] == "you" and docs["bees.md"]["searchable"]
    assert docs["lighthouse.md"]["owner"] == "library"
    one = httpx.get(f"{api.base}/documents/bees.md", headers=auth(api.bob)).json()
    assert one["name"] == "bees.md" and one["state"] in ("searchable", "refining", "ready")
    hits = httpx.post(f"{api.base}/search", headers=auth(api.bob), json={
        "query": "How many hives does the apiary keep?", "documents": ["bees.md"]}).json()
    assert hits["passages"][0]["document"] == "bees.md" and "nine hives" in hits["passages"][0]["text"]
    assert {r["level"] for r in hits["levels"]} and all(r["document"] == "bees.md" for r in hits["levels"])
    assert httpx.delete(f"{api.base}/documents/bees.md", headers=auth(api.bob)).json() == {"deleted": "bees.md"}
    assert httpx.get(f"{api.base}/documents/bees.md", headers=auth(api.bob)).status_code == 404
    r = httpx.delete(f"{api.base}/documents/lighthouse.md", headers=auth(api.bob))
    assert r.status_code == 403 and "only the admin" in r.json()["error"]["message"]


def test_a_same_named_private_upload_is_known_by_its_own_name(api):
    """Bob uploads a file named like Alice's private one: it is stored under another internal id, but every id,
    name and citation Bob's key sees is plain "plan.md", so nothing tells Bob that Alice has a plan.md; each key
    reaches, searches and deletes only its own."""
    assert upload(api, api.alice, "plan.md", SECRET).status_code == 200
    text = "# Plan\n\nThe ferry timetable changes on the first of May, with a boat every forty minutes.\n"
    r = upload(api, api.bob, "plan.md", text)
    assert r.status_code == 200 and "(2)" not in r.text and r.json()["documents"][0]["id"] == "plan.md"
    assert api.service.ctx.catalog.find_document("plan (2).md") == "plan (2).md"  # the internal id
    listed = httpx.get(f"{api.base}/documents", headers=auth(api.bob)).json()["documents"]
    assert sorted(d["id"] for d in listed) == ["lighthouse.md", "plan.md"] and "(2)" not in str(listed)
    assert httpx.get(f"{api.base}/documents/plan.md", headers=auth(api.bob)).json()["owner"] == "you"
    q = {"query": "What does the ferry timetable change to on the first of May?", "documents": ["plan.md"]}
    hits = httpx.post(f"{api.base}/search", headers=auth(api.bob), json=q).json()
    assert hits["passages"][0]["document"] == "plan.md" and "forty minutes" in hits["passages"][0]["text"]
    assert "(2)" not in str(hits)
    out = httpx.post(f"{api.base}/chat/completions", headers=auth(api.bob), json={
        "model": "mgrag", "messages": [{"role": "user", "content": q["query"]}],
        "mgrag": {"documents": ["plan.md"]}}).json()
    assert out["citations"][0]["document"] == "plan.md" and "(2)" not in str(out)
    assert httpx.delete(f"{api.base}/documents/plan.md", headers=auth(api.bob)).json() == {"deleted": "plan.md"}
    assert api.service.ctx.catalog.find_document("plan (2).md") is None
    assert api.service.ctx.catalog.find_document("plan.md") == "plan.md"  # Alice's is untouched
    httpx.delete(f"{api.base}/documents/plan.md", headers=auth(api.alice)).raise_for_status()


@pytest.mark.parametrize("name, body, status, match", [
    ("tool.exe", b"MZ", 200, "unsupported file type '.exe'"),
    ("big.md", b"word " * 20000, 413, "larger than the 0.05 MB limit"),
])
def test_upload_limits_as_in_the_web_app(api, name, body, status, match):
    r = httpx.post(f"{api.base}/documents", headers=auth(api.bob), files=[("files", (name, body, "text/plain"))])
    assert r.status_code == status, r.text
    assert match in r.text
    assert api.service.ctx.catalog.find_document(name) is None


def test_bad_requests_say_what_is_wrong(api):
    r = httpx.post(f"{api.base}/chat/completions", headers=auth(api.bob), json={"model": "mgrag", "messages": [
        {"role": "assistant", "content": "hello"}]})
    assert r.status_code == 400 and "last message must be the user's" in r.json()["error"]["message"]
    r = httpx.post(f"{api.base}/chat/completions", headers=auth(api.bob), json={"messages": "nope"})
    assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
    r = httpx.post(f"{api.base}/search", headers=auth(api.bob), json={"query": "x", "k": 0})
    assert r.status_code == 400 and "k" in r.json()["error"]["message"]


def test_rate_limit_per_key(api):
    from api.v1 import RateLimit

    limit = RateLimit(2)
    assert limit.take("a") == 0 and limit.take("a") == 0
    assert limit.take("a") > 50 and limit.take("b") == 0


def test_openapi_schema_validates(api):
    from openapi_spec_validator import validate

    spec = httpx.get(f"{api.base}/openapi.json").json()
    validate(spec)
    assert {"/chat/completions", "/models", "/documents", "/search"} <= set(spec["paths"])


def test_a_body_past_the_limit_is_refused_before_it_is_read(api):
    """16 files of max_file_mb (0.05 MB here) plus 1 MB of form overhead: a bigger body is refused with 413 whether it
    declares its length or streams without one, and nothing is stored."""
    big = b"x" * (2 * 2**20)
    r = httpx.post(f"{api.base}/documents", headers=auth(api.bob), files=[("files", ("big.md", big, "text/plain"))])
    assert r.status_code == 413 and "larger than" in r.json()["error"]["message"]

    def chunks():
        yield b'--b\r\nContent-Disposition: form-data; name="files"; filename="big.md"\r\n\r\n'
        for _ in range(40):
            yield b"y" * 65536

    r = httpx.post(f"{api.base}/documents", headers={**auth(api.bob), "Content-Type": "multipart/form-data; "
                                                     "boundary=b"}, content=chunks())
    assert r.status_code == 413
    assert api.service.ctx.catalog.find_document("big.md") is None


def test_a_chat_or_search_body_has_a_limit_of_its_own(api):
    """A hostile run froze the server with an 80 MB ``messages`` array under the upload-sized cap: chat and search
    bodies past 2 MB are refused before they are read (declared or streamed), a conversation of more than 200
    messages is refused, and the server answers the next request at once."""
    huge = json.dumps({"model": "mgrag", "messages": [{"role": "user", "content": "x" * 4096}] * 800}).encode()
    r = httpx.post(f"{api.base}/chat/completions", headers={**auth(api.bob), "Content-Type": "application/json"},
                   content=huge)
    assert r.status_code == 413 and "chat or search request" in r.json()["error"]["message"]

    def chunks():
        yield b'{"query": "'
        for _ in range(48):
            yield b"y" * 65536
        yield b'"}'

    r = httpx.post(f"{api.base}/search", headers={**auth(api.bob), "Content-Type": "application/json"},
                   content=chunks())
    assert r.status_code == 413
    many = {"model": "mgrag", "messages": [{"role": "user", "content": "hi"}] * 201}
    r = httpx.post(f"{api.base}/chat/completions", headers=auth(api.bob), json=many)
    assert r.status_code in (400, 422) and "messages" in r.text
    r = httpx.get(f"{api.base}/documents", headers=auth(api.bob), timeout=10)
    assert r.status_code == 200


def test_an_unpaired_surrogate_in_a_question_is_a_400_not_a_500(api):
    body = b'{"model": "mgrag", "messages": [{"role": "user", "content": "What is the harbour fee? \\ud800"}]}'
    r = httpx.post(f"{api.base}/chat/completions", headers={**auth(api.bob), "Content-Type": "application/json"},
                   content=body)
    assert r.status_code == 400 and "not text" in r.json()["error"]["message"], r.text
    r = httpx.post(f"{api.base}/search", headers={**auth(api.bob), "Content-Type": "application/json"},
                   content=b'{"query": "harbour \\udfff fee"}')
    assert r.status_code == 400 and "not text" in r.json()["error"]["message"], r.text


def test_one_key_cannot_take_every_thread(api, monkeypatch):
    """A hostile run's 45 concurrent uploads with ?wait=true from one key held every request thread: the others'
    requests timed out for minutes. Now a waiting upload holds no thread, and a key has at most 4 requests in flight
    (the 5th and later get 429 at once) while another key is served at once."""
    import asyncio
    import threading

    import api.v1 as A
    from tests.sync import eventually

    gate, held = threading.Event(), []

    async def held_wait(service, ids, timeout_s, poll_s=0.5):  # a long ingestion: until the test lets it end
        held.append(ids)
        while not gate.is_set():
            await asyncio.sleep(0.01)

    monkeypatch.setattr(A, "wait_searchable", held_wait)
    codes: list[int] = []

    def one(i):
        r = upload(api, api.bob, f"slow-{i}.md", f"# Slow {i}\n\nThe ferry leaves at {i} o'clock.\n", wait=True)
        codes.append(r.status_code)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(10)]
    try:
        for t in threads:
            t.start()
        eventually(lambda: len(held) == 4 and len(codes) == 6, 60, "four of bob's uploads waiting, six refused")
        assert codes == [429] * 6
        r = httpx.get(f"{api.base}/documents", headers=auth(api.alice), timeout=30)  # while bob's four still wait
        assert r.status_code == 200 and len(held) == 4 and len(codes) == 6
    finally:
        gate.set()
        for t in threads:
            t.join(60)
    assert sorted(codes) == [200] * 4 + [429] * 6, codes


def _first_search_fails(monkeypatch) -> list[str]:
    """Every retrieval (the API's search and the answer's) fails once, as one that raced a re-ingestion fails (the
    generation it read dropped under it), then runs; returns the calls, "failed" or "ran"."""
    import app.evidence
    import services.chat

    real, calls = services.chat.retrieve, []

    def flaky(*a, **kw):
        if not calls:
            calls.append("failed")
            raise RuntimeError("Collection mgrag_g1_l0 not found")
        calls.append("ran")
        return real(*a, **kw)

    monkeypatch.setattr(services.chat, "retrieve", flaky)
    monkeypatch.setattr(app.evidence, "retrieve", flaky)
    return calls


@pytest.mark.parametrize("route", ["search", "chat/completions"])
def test_a_search_that_raced_a_reingestion_is_retried_as_the_chat_s_is(api, monkeypatch, route):
    """/v1 runs the chat's search (AppService.search, AppService.ask): a retrieval that failed while a re-ingestion
    held the index is tried once more, and the answer comes back; a failure with no re-ingestion is not retried."""
    body = ({"query": "How long has the keeper tended the light?"} if route == "search" else
            {"model": "mgrag", "messages": [{"role": "user", "content": "How long has the keeper tended the light?"}]})
    calls = _first_search_fails(monkeypatch)
    with api.service._writing("reingest"):  # a re-ingestion is running: the search may have raced it
        r = httpx.post(f"{api.base}/{route}", headers=auth(api.alice), json=body, timeout=120)
    assert r.status_code == 200, r.text
    assert calls == ["failed", "ran"]
    assert "twenty-two years" in (r.json()["passages"][0]["text"] if route == "search"
                                  else r.json()["choices"][0]["message"]["content"])

    calls = _first_search_fails(monkeypatch)  # no re-ingestion: the failure is the answer's
    r = httpx.post(f"{api.base}/{route}", headers=auth(api.alice), json=body, timeout=120)
    assert r.status_code == 500 and calls == ["failed"], r.text

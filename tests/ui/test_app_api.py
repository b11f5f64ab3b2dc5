"""Direct API calls to the running app (no page): admin enforcement is server side; uploads stay in the data dir."""
from __future__ import annotations

import httpx
import pytest

from tests.ui.conftest import ADMIN_PASSWORD

TOKEN = "api-test-admin-token-0123456789abcdefghij"  # an API client makes its own admin token for its login
ADMIN_CALLS = {  # each called with TOKEN first, not logged in
    "/admin_docs": (),
    "/admin_delete": ([],),  # a name outside the (per-session, post-login) choices is refused earlier still
    "/admin_reingest": ([], "recursive", 20, "all"),
    "/admin_stats": (),
    "/admin_inspect": ("keeper.md", "", 40, 0),
    "/admin_train_router": (["feedback"],),
    "/admin_llm_models": ("http://127.0.0.1:9/v1", ""),
    "/admin_llm_test": ("http://127.0.0.1:9/v1", "m", ""),
    "/admin_llm_save": ("http://127.0.0.1:9/v1", "m", "sk-x", ADMIN_PASSWORD, "extractive"),
    "/admin_user_add": ("mallory", "a-long-password"),
    "/admin_user_remove": ("mallory",),
    "/admin_keys": (),
    "/admin_key_add": ("stolen", "mallory"),
    "/admin_key_revoke": ("stolen",),
}


@pytest.fixture
def client(ui_server):
    from gradio_client import Client

    return Client(ui_server.url, verbose=False)


@pytest.mark.parametrize("api", sorted(ADMIN_CALLS))
def test_admin_endpoints_refuse_without_login(ui_server, client, api):
    from gradio_client.exceptions import AppError

    gen = ui_server.service.ctx.catalog.live_generation().gen
    with pytest.raises(AppError, match="admin login required"):
        client.predict(TOKEN, *ADMIN_CALLS[api], api_name=api)
    assert ui_server.service.ctx.catalog.find_document("keeper.md") == "keeper.md"
    assert ui_server.service.ctx.catalog.live_generation().gen == gen


def test_admin_login_wrong_password_then_right(ui_server, client):
    from gradio_client.exceptions import AppError

    out = client.predict("admin", "wrong", TOKEN, api_name="/admin_login")
    assert "wrong user name or password" in str(out)
    with pytest.raises(AppError, match="admin login required"):
        client.predict(TOKEN, api_name="/admin_docs")
    out = client.predict("admin", ADMIN_PASSWORD, "short", api_name="/admin_login")
    assert "needs a new random token" in str(out)
    out = client.predict("admin", ADMIN_PASSWORD, TOKEN, api_name="/admin_login")
    assert "Logged in" in str(out) and TOKEN not in str(out)  # the token is the client's; never sent back
    table, _, head = client.predict(TOKEN, api_name="/admin_docs")
    assert "keeper.md" in str(table) and "Live index" in head
    ui_server.service.logout(TOKEN)
    with pytest.raises(AppError, match="admin login required"):
        client.predict(TOKEN, api_name="/admin_docs")


BROWSER = "api-test-browser-id-0123456789"


def test_ask_over_the_api(ui_server, client):
    history, *_ = client.predict("How long has the keeper tended the light?", [], 5, 800, "dense", "extractive",
                                      BROWSER, None, [], api_name="/ask")
    text = str(history)
    assert "twenty-two years" in text and "Sources (" in text


def test_empty_question_gets_a_message(ui_server, client):
    history, *_ = client.predict("   ", [], 5, 800, "dense", "extractive", BROWSER, None, [], api_name="/ask")
    assert "the question is empty" in str(history)


def test_http_upload_of_path_like_name_stays_in_the_data_dir(ui_server, tmp_path):
    root = ui_server.root.resolve()
    before = {p for p in root.rglob("*") if p.is_file()}
    r = httpx.post(f"{ui_server.url}/gradio_api/upload",
                   files=[("files", ("../../../etc/passwd", b"root:x:0:0", "text/plain")),
                          ("files", ("..\\..\\evil.txt", b"evil", "text/plain"))])
    assert r.status_code in (200, 400)
    data = ui_server.data_dir.resolve()
    after = {p for p in root.rglob("*") if p.is_file()}
    assert all(data in p.resolve().parents for p in after - before)
    if r.status_code == 200:
        assert all(data in __import__("pathlib").Path(p).resolve().parents for p in r.json())
    # and handed to the app under that name, it is refused with a message
    rows = ui_server.service.ingest_files([tmp_path / "x"], names=["../../etc/passwd"])
    assert rows[0]["status"] == "refused" and "looks like a path" in rows[0]["message"]


def test_http_upload_over_the_size_limit_refused(ui_server):
    r = httpx.post(f"{ui_server.url}/gradio_api/upload",
                   files=[("files", ("big.txt", b"word " * 20_000, "text/plain"))])
    assert r.status_code == 413 and "maximum allowed size" in r.text


def test_an_unchecked_draft_never_reaches_the_page(ui_server, client):
    """Issue 21 (14): on the openai backend the draft was streamed to the page ~0.45 s before "The documents do not
    say" replaced it. Every intermediate state the page receives is looked at: the unsupported draft is in none."""
    from tests.app.stub_openai import StubOpenAI

    svc = ui_server.service
    token = svc.login("admin", ADMIN_PASSWORD)
    try:
        with StubOpenAI(reply="The keeper feeds a purple giraffe named Horace every morning [1].") as stub:
            svc.set_llm(token, stub.base_url, "stub-llm", "", password=ADMIN_PASSWORD)
            job = client.submit("How long has the keeper tended the light?", [], 5, 800, "dense", "openai", BROWSER,
                                None, [], api_name="/ask")
            job.result(timeout=120)
            states = [str(o[0]) for o in job.outputs()]
            assert any(r["path"].endswith("/chat/completions") for r in stub.requests)  # the draft was made
    finally:
        svc.set_llm(token, "", "", password=ADMIN_PASSWORD)  # the other tests run without an endpoint
    assert len(states) >= 3  # retrieving, drafting, the checked reply
    assert not any("giraffe" in s for s in states)
    assert "do not say" in states[-1]  # checked: unsupported, so an abstention


def test_an_upload_draws_one_progress(make_ctx):
    """The upload panel's table is the one progress a person sees: neither the upload event nor the events it chains
    (the scope list refreshed afterwards) draw Gradio's own progress overlay as well (issue 21 item 17: the progress
    was drawn twice, once in the table and once as an overlay on the scope list)."""
    from services.service import AppService
    from ui.app import build_app

    ctx = make_ctx(chunker="recursive", theta=20, synth_backend="extractive")
    demo = build_app(AppService(ctx, admin_password="pw", upload_root=ctx.settings.data_dir.parent))
    deps = demo.config["dependencies"]
    upload = [d for d in deps if d.get("api_name") == "upload"]
    assert len(upload) == 1
    chain, ids = [upload[0]], {upload[0]["id"]}
    for d in deps:  # .then() steps name the step they follow in trigger_after
        if d.get("trigger_after") in ids:
            chain.append(d)
            ids.add(d["id"])
    assert len(chain) >= 2
    assert [d["show_progress"] for d in chain] == ["hidden"] * len(chain)


def test_admin_makes_an_api_key_shown_once_that_the_api_accepts(ui_server, client):
    """The Admin tab's API keys: made for a user, shown once (the table lists only its first characters), accepted
    by /v1, refused once revoked."""
    from gradio_client.exceptions import AppError

    token = "api-keys-admin-token-0123456789abcdefghij"
    client.predict("admin", ADMIN_PASSWORD, token, api_name="/admin_login")
    table, shown = client.predict(token, "tablet", "alice", api_name="/admin_key_add")
    key = shown["value"] if isinstance(shown, dict) else shown
    assert key.startswith("mgrag-") and key not in str(table) and "tablet" in str(table)
    models = httpx.get(f"{ui_server.url}/v1/models", headers={"Authorization": f"Bearer {key}"})
    assert models.status_code == 200 and models.json()["data"][0]["id"] == "mgrag"
    with pytest.raises(AppError, match="exists"):
        client.predict(token, "tablet", "alice", api_name="/admin_key_add")
    table, _ = client.predict(token, "tablet", api_name="/admin_key_revoke")
    assert "revoked" in str(table)
    assert httpx.get(f"{ui_server.url}/v1/models", headers={"Authorization": f"Bearer {key}"}).status_code == 401
    ui_server.service.logout(token)

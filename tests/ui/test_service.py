"""The web app's service layer: upload rules, admin enforcement, re-ingestion, evaluations and their export."""
from __future__ import annotations

import json

import pytest

from services.service import AdminRequired, AppService, check_upload_name

TEXT = ("The keeper, Mrs. Alder, has tended the light for twenty-two years. She logs the weather at dawn. "
        "The lamp burns paraffin and is wound by hand every four hours.\n\nThe orchard has forty apple trees.\n")


@pytest.fixture
def svc(make_ctx):
    ctx = make_ctx(chunker="recursive", theta=20, synth_backend="extractive", max_file_mb=0.01)
    return AppService(ctx, admin_password="pw", upload_root=ctx.settings.data_dir.parent)


def _files(tmp_path):
    return sorted(p for p in tmp_path.rglob("*") if p.is_file())


@pytest.mark.parametrize("name, match", [
    ("../../etc/passwd", "looks like a path"),
    ("a/b.txt", "looks like a path"),
    ("..\\evil.md", "looks like a path"),
    (".bashrc", "looks like a path or a hidden file"),
    ("bad\x00name.txt", "looks like a path"),
    ("tool.exe", "unsupported file type '.exe'"),
    ("noext", "unsupported file type '\\(no extension\\)'"),
    ("", "has no name"),
])
def test_upload_names_refused(name, match):
    with pytest.raises(ValueError, match=match):
        check_upload_name(name)


def test_upload_rules_refuse_with_message_and_the_rest_ingests(svc, write, tmp_path):
    good = write("notes.md", TEXT)
    big = write("big.txt", "word " * 5000)  # 25 KB > 0.01 MB
    exe = write("tool.exe", b"MZ\x00\x00")
    before = set(_files(tmp_path))
    rows = svc.ingest_files([good, big, exe, good], names=["notes.md", "big.txt", "tool.exe", "../../etc/passwd"])
    by = {r["name"]: r for r in rows}
    assert by["notes.md"]["status"] == "ready" and by["notes.md"]["chunks"]
    assert by["big.txt"]["status"] == "refused" and "MGRAG_MAX_FILE_MB" in by["big.txt"]["message"]
    assert by["tool.exe"]["status"] == "refused" and "supported" in by["tool.exe"]["message"]
    assert by["../../etc/passwd"]["status"] == "refused" and "looks like a path" in by["../../etc/passwd"]["message"]
    data = svc.ctx.settings.data_dir.resolve()
    new = [p for p in set(_files(tmp_path)) - before if data not in p.resolve().parents]
    assert new == []  # nothing written outside the data dir
    assert [d["doc_id"] for d in svc.ctx.catalog.documents(None)] == ["notes.md"]


def test_failed_file_reported_rest_ingests(svc, write):
    rows = svc.ingest_files([write("empty.txt", "   "), write("ok.txt", TEXT)])
    assert rows[0]["status"] == "refused" and "empty" in rows[0]["message"]  # refused before it is queued
    assert rows[1]["status"] == "ready"


def test_admin_login_rules(make_ctx):
    svc = AppService(make_ctx(chunker="recursive"), admin_password="pw")
    with pytest.raises(AdminRequired, match="wrong user name or password"):
        svc.login("admin", "nope")
    with pytest.raises(AdminRequired, match="wrong user name or password"):
        svc.login("root", "pw")
    token = svc.login("admin", "pw")
    assert svc.documents(token)
    svc.logout(token)
    with pytest.raises(AdminRequired):
        svc.documents(token)
    off = AppService(make_ctx(chunker="recursive", data_dir=svc.ctx.settings.data_dir.parent / "d2"))
    with pytest.raises(AdminRequired, match="MGRAG_ADMIN_PASSWORD"):
        off.login("admin", "")


@pytest.mark.parametrize("call", [
    lambda s, t: s.documents(t),
    lambda s, t: s.delete(t, ["notes.md"]),
    lambda s, t: s.reingest(t),
    lambda s, t: s.chunk_lengths(t),
    lambda s, t: s.train_router(t),
])
def test_admin_actions_need_a_valid_token(svc, write, call):
    svc.ingest_files([write("notes.md", TEXT)])
    for token in (None, "", "forged-token"):
        with pytest.raises(AdminRequired, match="admin login required"):
            call(svc, token)
    assert [d["doc_id"] for d in svc.ctx.catalog.documents(None)] == ["notes.md"]  # nothing changed


def test_reingest_all_new_theta_switches_generation(svc, write):
    svc.ingest_files([write("notes.md", TEXT)])
    tok = svc.login("admin", "pw")
    gen0 = svc.ctx.catalog.live_generation()
    seen = []
    report = svc.reingest(tok, None, "recursive", 12, progress=lambda d, t, n: seen.append((d, t, n)))
    live = svc.ctx.catalog.live_generation()
    assert not report.failed and live.gen != gen0.gen and live.theta == 12
    assert seen[-1][:2] == (1, 1) and seen[-1][2] == "notes.md"
    live_info, rows = svc.documents(tok)
    assert live_info["theta"] == 12 and rows[0]["parents"] > 0


def test_reingest_selected_with_new_theta_changes_only_those(svc, write):
    svc.ingest_files([write("notes.md", TEXT), write("other.md", "Another text about apples and pears.")])
    tok = svc.login("admin", "pw")
    cat = svc.ctx.catalog
    with pytest.raises(ValueError, match="no such documents: nope.md"):
        svc.reingest(tok, ["nope.md"])
    with pytest.raises(ValueError, match="chunker mg gives 3 levels, the index has 1"):
        svc.reingest(tok, ["notes.md"], "mg", 12)
    assert cat.chunking(cat.live_generation().gen, "notes.md") is None  # the refused call changed nothing
    gen = cat.live_generation().gen
    before = {r["doc_id"]: r["n_l0"] for r in cat.documents(gen)}
    other_ids = cat.chunk_ids(gen, "other.md")
    embedded = []
    real_embed = svc.ctx.embedder.embed_passages
    svc.ctx.embedder.embed_passages = lambda texts: embedded.extend(texts) or real_embed(texts)

    # θ 20 -> 8 for notes.md only: a new generation built beside the live one, other.md copied into it
    report = svc.reingest(tok, ["notes.md"], None, 8)
    assert {r.name: r.status for r in report.results} == {"notes.md": "ingested", "other.md": "copied"}
    gen1 = cat.live_generation().gen
    assert gen1 > gen and svc.ctx.index.generations() == {gen1}  # switched
    assert embedded and not any("apples and pears" in t for t in embedded)  # other.md was not re-embedded
    after = {r["doc_id"]: r["n_l0"] for r in cat.documents(gen1)}
    assert after["notes.md"] > before["notes.md"] and after["other.md"] == before["other.md"]
    assert cat.chunk_ids(gen1, "other.md") == other_ids  # same chunks, same ids
    assert cat.chunking(gen1, "notes.md")["theta"] == 8 and cat.chunking(gen1, "other.md") is None
    _, rows = svc.documents(tok)
    params = {r["document"]: json.loads(r["parameters"]) for r in rows}
    assert params["notes.md"]["theta"] == 8 and params["other.md"]["theta"] == 20
    from retrieval.search import retrieve

    r = retrieve(svc.ctx, "How long has the keeper tended the light?", retriever="bm25")
    assert r.sources and r.sources[0].doc_id == "notes.md" and "tended the light" in r.sources[0].text
    assert len(r.sources[0].text.split()) <= 8  # cut at the new θ
    r = retrieve(svc.ctx, "apples and pears", retriever="dense")  # the copied vectors are searchable
    assert r.sources and r.sources[0].doc_id == "other.md"

    svc.reingest(tok, ["notes.md"])  # without parameters: the document keeps its own
    assert cat.chunking(cat.live_generation().gen, "notes.md")["theta"] == 8
    svc.reingest(tok, None)  # all, without parameters: each document keeps its own
    gen2 = cat.live_generation().gen
    assert cat.chunking(gen2, "notes.md")["theta"] == 8
    assert {r["doc_id"]: r["n_l0"] for r in cat.documents(gen2)} == after
    svc.reingest(tok, ["notes.md"], None, 20)  # back to the index's own θ: nothing recorded
    assert cat.chunking(cat.live_generation().gen, "notes.md") is None
    svc.reingest(tok, ["notes.md"], None, 8)
    svc.reingest(tok, None, None, 12)  # all, with a θ: every document takes it
    gen3 = cat.live_generation()
    assert gen3.theta == 12 and all(r["chunking"] is None for r in cat.documents(gen3.gen))


def test_delete_and_chunk_lengths(svc, write):
    svc.ingest_files([write("notes.md", TEXT), write("other.md", "Another text about apples and pears.")])
    tok = svc.login("admin", "pw")
    lengths = svc.chunk_lengths(tok)
    assert set(lengths) == {0} and all(0 < n <= 20 for n in lengths[0])
    assert svc.delete(tok, ["other.md"]) == ["other.md"]
    assert [d["doc_id"] for d in svc.ctx.catalog.documents(None)] == ["notes.md"]
    with pytest.raises(ValueError, match="select the documents"):
        svc.delete(tok, [])


def _answer(svc, q="How long has the keeper tended the light?"):
    for kind, value in svc.ask(q, backend="extractive"):
        if kind == "done":
            return value.to_dict()


def test_evaluation_saved_and_exported_in_bench_format(svc, write, tmp_path):
    from app.evaluation.bench import load_set

    svc.ingest_files([write("notes.md", TEXT)])
    a = _answer(svc)
    assert a["sources"] and a["citations"]
    eid, f1, n = svc.evaluate(a, reference="twenty-two years", rating="good", comment="right")
    assert eid == 1 and f1 is not None and 0 < f1 <= 1 and n >= 1
    svc.evaluate(a, rating="bad", comment="no evidence marked")  # kept in SQLite, not exported
    path, count = svc.export_feedback(tmp_path / "set" / "questions.jsonl")
    assert count == 1
    rec = json.loads(path.read_text().splitlines()[0])
    assert set(rec) == {"id", "question", "doc_id", "answers", "evidence"}
    assert rec["doc_id"] == "notes.md" and rec["answers"] == ["twenty-two years"]
    text = svc.ctx.store.text(svc.ctx.catalog.documents(None)[0]["hash"])
    for e in rec["evidence"]:
        assert text[e["start"]:e["end"]] == e["text"]
    (tmp_path / "set" / "docs").mkdir()
    (tmp_path / "set" / "docs" / "notes.md.txt").write_text(text, encoding="utf-8")  # stem "notes.md"
    assert load_set(str(tmp_path / "set")).questions[0].question == a["question"]  # loads as a bench set
    rows = svc.feedback.rows()
    assert [r["rating"] for r in rows] == ["good", "bad"] and rows[1]["comment"] == "no evidence marked"


def test_evaluation_rules(svc, write):
    svc.ingest_files([write("notes.md", TEXT)])
    a = _answer(svc)
    with pytest.raises(ValueError, match="no source numbered 99"):
        svc.evaluate(a, relevant=[99])
    with pytest.raises(ValueError, match="rating must be"):
        svc.evaluate(a, rating="meh")
    with pytest.raises(ValueError, match="ask a question on the Chat tab first"):
        svc.evaluate({})


def test_level_hits_every_level(svc, write):
    svc.ingest_files([write("notes.md", TEXT)])
    hits = svc.level_hits("keeper light", k=3, retriever="hybrid")
    assert {h["retriever"] for h in hits} == {"dense", "bm25"}
    assert all(h["document"] == "notes.md" for h in hits)


def test_benchmark_over_the_live_index_from_uploaded_questions(svc, write, tmp_path):
    svc.ingest_files([write("notes.md", TEXT)])
    start = TEXT.index("The keeper")
    ev = TEXT[start:start + 66]
    qs = tmp_path / "questions.jsonl"
    qs.write_text(json.dumps({"id": "q1", "question": "How long has the keeper tended the light?", "doc_id": "notes",
                              "answers": ["twenty-two years"], "evidence": [{"text": ev, "start": start,
                                                                             "end": start + 66}]}) + "\n"
                  + json.dumps({"id": "q2", "question": "Where?", "doc_id": "absent", "answers": [], "evidence": []})
                  + "\n")
    res = svc.run_benchmark(qs, k=5)
    assert res["n_questions"] == 1 and res["skipped_docs"] == ["absent"] and res["recall@20"] == 1.0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q1", "question": "x"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1: missing doc_id"):
        svc.run_benchmark(bad)
    bad.write_text("not json\n")
    with pytest.raises(ValueError, match="bad.jsonl:1: not valid JSON"):
        svc.run_benchmark(bad)


def test_train_router_from_evaluations(make_ctx, write, tmp_path):
    svc = AppService(make_ctx(chunker="mg", theta=24, synth_backend="extractive"), admin_password="pw",
                    upload_root=tmp_path)
    tok = svc.login("admin", "pw")
    with pytest.raises(ValueError, match="no evaluations with evidence yet"):
        svc.train_router(tok, ["feedback"])
    with pytest.raises(ValueError, match="unknown training set 'nope'"):
        svc.train_router(tok, ["nope"])
    svc.ingest_files([write("notes.md", TEXT * 3)])
    for q in ("How long has the keeper tended the light?", "What does the lamp burn?", "When does she log the weather?",
              "How many apple trees are in the orchard?", "How often is the lamp wound?", "Who is the keeper?",
              "What is wound by hand?", "What fuel does the lamp use?", "How many trees?",
              "When is the weather logged?"):
        svc.evaluate(_answer(svc, q), rating="good")
    rep = svc.train_router(tok, ["feedback"])
    assert rep["history"]["train"] and (svc.ctx.settings.data_dir / "router" / "config.json").exists()
    assert "router" not in svc.ctx.__dict__  # reloaded on the next question


def test_chunk_inspector_is_admin_only_and_renders_a_document(svc, write):
    svc.ingest_files([write("notes.md", TEXT * 6)])
    with pytest.raises(AdminRequired):
        svc.inspect("not-a-token", "notes.md")
    tok = svc.login("admin", "pw")
    with pytest.raises(ValueError, match="no document 'nope.md'"):
        svc.inspect(tok, "nope.md")
    png, page, summary = svc.inspect(tok, "notes.md", "Who tends the light?", theta=40)
    assert png[:4] == b"\x89PNG" and "<mark" in page and "Mrs. Alder" in page
    assert summary["document"] == "notes.md" and summary["question"] == "Who tends the light?"
    assert set(summary["top parents"]) == {"lgmgc", "recursive", "mg"}


def write_to(folder, name, text):
    p = folder / name
    p.write_text(text, encoding="utf-8")
    return p


def test_a_shipped_set_and_the_users_own_evaluations_can_be_benchmarked(make_ctx, tmp_path):
    """Issue 21 (15): the Evaluate tab's list read only ../shared/bench, which a user who clones the product does
    not have. It now offers the set shipped for samples/ and the user's own saved evaluations."""
    from pathlib import Path

    from services.service import MY_EVALUATIONS, SAMPLES_SET

    ctx = make_ctx(chunker="recursive", theta=40, synth_backend="extractive")
    svc = AppService(ctx, admin_password="pw", upload_root=tmp_path)
    assert svc.bench_sets()[:2] == [SAMPLES_SET, MY_EVALUATIONS]
    svc.ingest_files([write_to(tmp_path, "other.md", "An unrelated note about tides.\n")])
    with pytest.raises(ValueError) as e:  # the newcomer run saw "e.g. `mgrag ingest ..docs`" (a path cut short)
        svc.run_benchmark(SAMPLES_SET, k=5)
    assert "upload field_notes.md and mgrag_overview.md" in str(e.value) and "mgrag ingest" not in str(e.value)
    import shutil

    samples = Path(__file__).resolve().parents[2] / "samples"
    svc.ingest_files([shutil.copy(p, tmp_path / p.name) for p in sorted(samples.glob("*.md"))])
    res = svc.run_benchmark(SAMPLES_SET, k=5)
    assert res["n_questions"] == 14 and not res["skipped_docs"] and not res["mismatched_docs"]
    assert res["recall@20"] > 0.5
    owner = "browser-one-0123456789abcdef"
    with pytest.raises(ValueError, match="no saved evaluations with evidence yet"):
        svc.run_benchmark(MY_EVALUATIONS, owner=owner)
    a = _answer(svc, "How long has the keeper tended the light?")
    svc.evaluate(a, rating="good", relevant=[], owner=owner)  # nothing ticked: no evidence
    with pytest.raises(ValueError, match="no saved evaluations with evidence yet"):
        svc._bench_last.clear()
        svc.run_benchmark(MY_EVALUATIONS, owner=owner)
    svc.evaluate(a, rating="good", relevant=[a["citations"][0]["number"]], owner=owner)
    svc._bench_last.clear()
    mine = svc.run_benchmark(MY_EVALUATIONS, owner=owner)
    assert mine["n_questions"] == 1


def test_the_benchmark_is_rationed_and_its_errors_name_no_server_folder(svc, write, tmp_path):
    """Issue 21 (6): anonymous /benchmark embedded every chunk per call, any number at once, and its errors showed
    the data path."""
    import threading

    svc.ingest_files([write("notes.md", TEXT)])
    qs = tmp_path / "questions.jsonl"
    qs.write_text(json.dumps({"id": "q1", "question": "How long has the keeper tended the light?", "doc_id": "notes",
                              "answers": [], "evidence": []}) + "\n")
    svc.run_benchmark(qs, k=5, owner="a-browser", client="10.0.0.7")
    with pytest.raises(ValueError, match="one run per 60 s per client"):
        svc.run_benchmark(qs, k=5, owner="another-browser", client="10.0.0.7")  # a fresh browser id is no way out
    svc.run_benchmark(qs, k=5)  # the admin is not rationed
    started, release = threading.Event(), threading.Event()
    real = svc._run_benchmark

    def slow(*a, **kw):
        started.set()
        release.wait(10)
        return real(*a, **kw)

    svc._run_benchmark = slow
    t = threading.Thread(target=svc.run_benchmark, args=(qs,), kwargs={"k": 5})
    t.start()
    try:
        assert started.wait(10)
        with pytest.raises(ValueError, match="already running"):
            svc.run_benchmark(qs, k=5, client="10.0.0.8")
    finally:
        release.set()
        t.join()
    missing = tmp_path / "deep" / "folder" / "nope.jsonl"
    with pytest.raises(ValueError) as e:
        svc.run_benchmark(str(missing.parent) + "/set", k=5, client="10.0.0.9")
    assert str(tmp_path) not in str(e.value) and "deep" not in str(e.value)


def test_the_evidence_list_starts_unticked(svc, write):
    """Issue 21 (15): every cited source started ticked as evidence, so saving without looking recorded wrong
    evidence. The Evaluate tab's pick handler now offers the sources with none ticked."""
    from types import SimpleNamespace

    from ui.app import build_app

    svc.ingest_files([write("notes.md", TEXT)])
    a = _answer(svc)
    assert a["citations"]
    demo = build_app(svc)
    pick = next(f.fn for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "on_pick")
    request = SimpleNamespace(client=SimpleNamespace(host="127.0.0.1"), headers={}, cookies={}, session_hash="s")
    _, relevant, _, _ = pick([a], 0, 5, None, request)
    assert relevant["choices"] and relevant["value"] == []


def test_the_admin_tables_name_a_user_by_name_and_a_browser_by_the_end_of_its_hash():
    """The hostile run's item 9: the admin's documents table showed "user er:bob" for user bob."""
    from services.admin import _owner_label

    assert _owner_label("user:bob") == "user bob" and _owner_label("user:alexandra.k") == "user alexandra.k"
    assert _owner_label("browser:" + "0" * 26 + "3f9a1c") == "browser 3f9a1c" and _owner_label(None) == "library"


def test_guessing_a_user_account_password_is_slowed_down_like_the_admin_s(tmp_path):
    """The hostile run's item 6: 30 wrong guesses at a user account in 5.2 s, then the right one accepted."""
    from services.auth import LoginThrottle, throttled_login
    from services.users import Users

    users = Users(tmp_path / "users.sqlite")
    users.add("bob", "the-right-password")
    now = [0.0]
    login = throttled_login(users.check, LoginThrottle(clock=lambda: now[0]))
    assert [login("bob", f"guess-{i}") for i in range(30)] == [False] * 30
    assert login("bob", "the-right-password") is False  # refused while throttled, unchecked
    now[0] += 900.0  # the window has passed
    assert login("bob", "the-right-password") is True
    assert login("alice", "anything") is False


def test_an_upload_during_a_reingestion_is_searchable_at_once_and_after_the_switch(svc, write):
    """The Admin's re-ingestion holds the write lock only per commit and for the switch: an upload made while it runs
    is ready without waiting for it, and the new generation holds it too."""
    import threading

    svc.ingest_files([write("notes.md", TEXT), write("more.md", "The harbour has nine fishing boats.\n")])
    tok = svc.login("admin", "pw")
    uploaded: dict = {}

    def upload() -> None:
        uploaded["rows"] = svc.ingest_files([write("late.md", "The ferry leaves at seven every morning.\n")])

    def on_progress(done: int, total: int, name: str) -> None:
        if "thread" not in uploaded:
            uploaded["thread"] = t = threading.Thread(target=upload)
            t.start()
            t.join(timeout=60)
            uploaded["before_switch"] = not t.is_alive() and svc.job.running  # done while the re-ingestion runs

    report = svc.reingest(tok, None, "recursive", 12, progress=on_progress)
    assert not report.failed and uploaded["before_switch"]
    assert uploaded["rows"][0]["status"] == "ready"
    live = svc.ctx.catalog.live_generation()
    assert live.theta == 12
    assert {r["doc_id"] for r in svc.ctx.catalog.documents(live.gen) if r["n_l0"]} == {"notes.md", "more.md",
                                                                                         "late.md"}
    assert any("ferry" in s.text for s in svc.search("When does the ferry leave?").sources)


def test_a_server_started_after_a_killed_reingestion_finishes_it_in_the_background(make_ctx, write, tmp_path):
    from ingest.jobs.rebuild import reingest

    class Killed(BaseException):
        pass

    data = tmp_path / "data"
    ctx = make_ctx(chunker="recursive", theta=20, synth_backend="extractive", data_dir=data)
    svc = AppService(ctx, admin_password="pw", upload_root=data.parent)
    svc.ingest_files([write("notes.md", TEXT), write("more.md", "The harbour has nine fishing boats.\n")])

    def die(doc_id: str) -> None:
        if doc_id == "notes.md":
            raise Killed()

    with pytest.raises(Killed):
        reingest(ctx, theta=12, _fail_hook=die)
    svc.close(context=True)
    again = AppService(make_ctx(chunker="recursive", theta=20, synth_backend="extractive", data_dir=data),
                       admin_password="pw", upload_root=data.parent)
    again.ensure_runner()
    thread = again.resume_interrupted()
    assert thread is not None
    thread.join(timeout=120)
    live = again.ctx.catalog.live_generation()
    assert not thread.is_alive() and live.theta == 12
    assert {r["doc_id"] for r in again.ctx.catalog.documents(live.gen) if r["n_l0"]} == {"notes.md", "more.md"}
    assert again.resume_interrupted() is None
    assert any("lamp" in s.text for s in again.search("What does the lamp burn?").sources)

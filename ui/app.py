"""The Gradio app: Chat (upload, streamed answers with sources), Admin (behind a login), Evaluate.

``build_app(service)`` makes the Blocks; ``launch(service)`` serves them (``mgrag serve``). Every admin handler
calls :meth:`UiService` methods that check the session's admin token server side, so hiding the admin panel is
only cosmetic: a direct API call without a login gets "admin login required".
"""

import functools
import html
import logging
import os
import time
from pathlib import Path

from ui import render
from ui.service import ADMIN, AdminRequired, UiService, browser_owner

log = logging.getLogger(__name__)

CSS = """
.mg-source {border-left: 3px solid #f97316; padding: 4px 8px; margin: 6px 0;}
.mg-src-head {font-size: 0.9em;}
.mg-scores {font-size: 0.8em; color: #666;}
.mg-passage {font-size: 0.85em; white-space: pre-wrap;}
.mg-passage mark {background: @CHILD;}
.mg-passage mark.mg-support {background: @SUPPORT; border-bottom: 2px solid @LINE;}
.mg-passage mark.mg-support.mg-match {background: @SUPPORT; box-shadow: inset 0 -0.35em @CHILD;}
.mg-support-key {background: @SUPPORT; border-bottom: 2px solid @LINE; padding: 0 2px;}
.mg-passage table.mg-table {border-collapse: collapse; margin: 4px 0; font-size: 0.95em; white-space: normal;}
.mg-passage .mg-table td, .mg-passage .mg-table th {border: 1px solid #d4d4d8; padding: 1px 5px; text-align: right;}
.mg-passage .mg-table td:first-child, .mg-passage .mg-table th:first-child {text-align: left;}
.mg-passage tr.mg-match {background: @CHILD;} .mg-passage tr.mg-support {background: @SUPPORT;}
.mg-abstain {font-size: 0.9em; margin: 4px 0;}
.mg-weights {font-size: 0.85em; margin-top: 4px;}
.mg-wlab {display: inline-block; width: 3em;}
""".replace("@SUPPORT", render.HIGHLIGHT["support"]).replace("@LINE", render.HIGHLIGHT["support_line"]).replace(
    "@CHILD", render.HIGHLIGHT["child"])
BACKENDS = ("offline", "extractive", "transformers", "openai")
CHUNKERS = ("lgmgc", "mg", "lg", "recursive", "paragraph", "semantic", "ppl", "llamachunk", "lumber")


def _error(e: Exception):
    import gradio as gr

    return gr.Error(html.escape(str(e)), print_exception=False)


def _client_host(request) -> str:
    """The caller's address: the connection's peer, or what a trusted proxy forwarded (uvicorn's proxy headers
    middleware rewrites the peer only for ``trusted_proxies``, see :func:`launch`)."""
    try:
        return request.client.host or ""
    except AttributeError:
        return ""


# Secrets the page makes itself, in the browser (``crypto.getRandomValues``): they reach the server only in request
# bodies, never from it over the session's event stream, which anyone who knows the session hash (it is in URLs,
# so in proxy logs) could read. The browser's id, when its storage has none, and a new admin token at every login.
_RANDOM_JS = ("(n) => { const a = new Uint8Array(n); crypto.getRandomValues(a); return btoa(String.fromCharCode(...a))"
              ".replace(/[+]/g, '-').replace(/[/]/g, '_').replace(/=+$/, ''); }")
BROWSER_ID_JS = (f"(b) => (typeof b === 'string' && /^[A-Za-z0-9_-]{{22,128}}$/.test(b)) ? b : ({_RANDOM_JS})(24)")
ADMIN_TOKEN_JS = f"() => ({_RANDOM_JS})(32)"
LOGGED_OUT = "logged-out"  # what a logout leaves in the admin token's storage (the page does not store an empty value)


def _remove_uploads(paths, root) -> None:
    """Delete the upload cache files Gradio handed over (their text is in the document store now, or they were
    refused), so nothing stays downloadable by its URL."""
    for p in paths or []:
        try:
            real = Path(p).resolve()
            if real.is_relative_to(root) and real.is_file():
                real.unlink()
                if real.parent != root and not any(real.parent.iterdir()):
                    real.parent.rmdir()
        except OSError:
            log.warning("could not remove the upload %s", p)


def _clean_uploads(service: UiService) -> None:
    """Stale files out of the upload cache (:meth:`UiService.clean_uploads`); a failure is logged, not raised."""
    try:
        service.clean_uploads()
    except Exception:  # pragma: no cover - cleaning is best effort
        log.exception("cleaning the upload folder %s failed", service.upload_root)


def build_app(service: UiService):
    import gradio as gr
    import pandas as pd

    from ingest.loaders import SUPPORTED

    s = service.ctx.settings

    # -- chat handlers ---------------------------------------------------------------------------------------
    def browser_id_of(browser_id, request):
        """The browser's id: the one the page made and stored (:data:`BROWSER_ID_JS`, on load). The server hands
        out none: one handed per page session went to whoever presented that session's hash. A missing or
        malformed id is refused (ValueError)."""
        browser_owner(browser_id)  # ValueError if missing or malformed
        return browser_id

    def owner_of(browser_id, request=None):
        """Who owns what this visitor uploads and asks: the logged-in user when the admin has configured users,
        else the browser."""
        user = getattr(request, "username", None)
        if user:
            return "user:" + user
        try:
            return browser_owner(browser_id_of(browser_id, request))
        except ValueError as e:
            raise _error(e) from e

    def reader_of(browser_id, request=None):
        """The owner whose documents a question may search (a malformed id: the shared library only)."""
        try:
            return owner_of(browser_id, request)
        except gr.Error:
            return None

    def mine(browser_id, request: gr.Request):
        owner = reader_of(browser_id, request)
        return gr.update(choices=service.own_documents(owner) if owner else [], value=[])

    def upload_state(r) -> str:
        """One column a person can read in the narrow upload panel: the state, with what is being done, the
        progress and the time left ("refining 34% · about 4 min left"), or the reason a file was refused."""
        status, message = str(r.get("status") or ""), str(r.get("message") or "")
        if not message or message == status:
            return status
        return message if message.startswith(status) else f"{status}: {message}"

    def upload_table(rows):
        return pd.DataFrame([[r.get("name", ""), upload_state(r), r.get("chunks", "")] for r in rows],
                            columns=["name", "state", "chunks per level"])

    def on_upload(paths, browser_id, request: gr.Request):
        """Queue the files and show their rows at once; the rows move (extracting, searchable, refining N% with the
        time left, ready) until every file is searchable, then the timer keeps them moving through the refinement.
        The API's `/upload` returns when every file is searchable or has failed."""
        from ingest.queue import reached

        _clean_uploads(service)
        if not paths:
            yield gr.update(), None, gr.update(), gr.update(), gr.update()
            return
        try:
            owner = owner_of(browser_id, request)
            rows, ids = service.enqueue_files(paths, owner=owner)
        finally:
            _remove_uploads(paths, service.upload_root)
        yield upload_table(rows), None, gr.update(), rows, gr.Timer(active=False)
        while ids and not all(reached(service.ctx.jobs.get(i), "searchable") for i in ids):
            time.sleep(0.5)
            yield upload_table(service.upload_rows(rows)), None, gr.update(), rows, gr.update()
        now = service.upload_rows(rows)
        bad = [r for r in now if r["status"] in ("failed", "refused", "cancelled")]
        if bad:
            gr.Warning(html.escape(f"{len(bad)} file(s) not ingested: "
                                   + "; ".join(f"{r['name']}: {r['message']}" for r in bad)))
        ok = [r for r in now if r["status"] in ("searchable", "refining", "ready")]
        if ok:
            refining = sum(r["status"] != "ready" for r in ok)
            gr.Info(f"{len(ok)} document(s) searchable" + (f"; {refining} being refined in the background (the "
                                                          "table follows it)" if refining else ""))
        active = any(r["status"] in ("queued", "extracting", "searchable", "refining") for r in now)
        yield upload_table(now), None, mine(browser_id, request), rows, gr.Timer(active=active)

    def on_upload_tick(rows):
        """The timer: the last upload's rows as they are now; it stops when every file is done."""
        now = service.upload_rows(rows or [])
        active = any(r["status"] in ("queued", "extracting", "searchable", "refining") for r in now)
        return upload_table(now), gr.Timer(active=active)

    def on_cancel_upload(rows, browser_id, request: gr.Request):
        ids = [r["job_id"] for r in service.upload_rows(rows or [])
               if r.get("job_id") and r["status"] in ("queued", "extracting", "searchable", "refining")]
        if not ids:
            gr.Info("nothing of the last upload is still queued or running")
            return upload_table(service.upload_rows(rows or []))
        gr.Info(html.escape("; ".join(service.cancel_jobs(owner_of(browser_id, request), ids))))
        return upload_table(service.upload_rows(rows))

    def on_delete_mine(browser_id, selected, request: gr.Request):
        try:
            deleted = service.delete_own(owner_of(browser_id, request), list(selected or []))
        except ValueError as e:
            raise _error(e) from e
        gr.Info(html.escape(f"Deleted {', '.join(deleted)}"))
        return mine(browser_id, request)

    allow_links = getattr(s, "answer_links", False)

    def shown(text):  # answer and user text render literally: no HTML, no live link or image from a document
        return render.answer_markdown(text, allow_links)

    def answer_messages(a: dict, draft: str = "") -> list[dict]:
        """The chat messages of a finished answer: the reply (or the backend's failure), then its sources (or the
        closest passages of an abstention) as a collapsible message with viewer links."""
        reply = a["text"]
        if a["error"]:
            reply = (draft + f"\n\n⚠️ the {a['backend']} backend failed: {a['error']} (the sources were still "
                             "retrieved)")
        cited = {c["number"] for c in a["citations"]}
        t = a["timings"]
        links = {x["number"]: u for x in a["sources"]
                 if (u := service.view_link(x, [(y["start"], y["end"]) for y in x.get("support") or ()]))}
        searched = (f'<div class="mg-scores">searched for: {html.escape(a["query"])}</div>'
                    if a.get("rewrite", "none") != "none" else "")
        body = (searched + ("" if render.is_uniform(a["weights"]) else render.weight_bars(a["weights"]))
                + render.sources_html(a["sources"], cited, links, abstained=a.get("abstained", False),
                                      floor=service.ctx.settings.source_floor if a["retriever"] == "dense" else 0.0)
                + f'<div class="mg-scores">{a["backend"]} via {a["retriever"]}: retrieval '
                  f'{t["retrieval_s"] * 1000:.0f} ms, total {t["total_s"]:.2f} s</div>')
        title = (f"Closest passages ({len(a['sources'])})" if a.get("abstained")
                 else f"Sources ({len(a['sources'])})")
        return [{"role": "assistant", "content": shown(reply) if reply else "(no answer)"},
                {"role": "assistant", "content": body, "metadata": {"title": title, "status": "done"}}]

    def memory_of(turns: list[dict]) -> list[dict]:
        """The conversation memory (plain turns) of stored ``{"question", "answer"}`` turns."""
        out = []
        for t in turns:
            out += [{"role": "user", "content": t["question"], "query": t["answer"].get("query", t["question"])},
                    {"role": "assistant", "content": t["answer"].get("text", "")}]
        return out

    def conversation_list(owner, current=None):
        items = service.conversations.list(owner) if owner else []
        return gr.update(choices=[(c["title"], c["id"]) for c in items],
                         value=current if any(c["id"] == current for c in items) else None)

    def remember(owner, conv_id, question, a, scope):
        """Store the turn in the conversation (a new one for the first question); its id and the updated list."""
        if not owner:
            return conv_id, gr.update()
        from ui.conversations import ConversationNotFound

        try:
            if not conv_id:
                raise ConversationNotFound(conv_id)
            service.conversations.add_turn(owner, conv_id, question, a)
        except ConversationNotFound:
            conv_id = service.conversations.create(owner, title=question, scope=list(scope or []))
            service.conversations.add_turn(owner, conv_id, question, a)
        return conv_id, conversation_list(owner, conv_id)

    def on_ask(question, history, answers, conversation, k, budget, retriever, backend, browser_id, conv_id, scope,
               request: gr.Request):
        """Stream one turn: what is happening while the user waits (retrieving, N sources, generating; the model's
        draft as it grows only when grounding is off), then the reply checked against the sources (an abstention says
        so plainly and shows the closest passages, uncited) with the supporting sentences highlighted. The turns
        of the conversation (a plain list, ``conversation``) let a follow-up be understood."""
        history = list(history or [])
        answers = list(answers or [])
        conversation = list(conversation or [])
        question = (question or "").strip()
        history.append({"role": "user", "content": render.plain_text_markdown(question)})
        history.append({"role": "assistant", "content": "⏳ *retrieving…*"})
        same = gr.update()
        yield history, answers, conversation, same, same, "", conv_id, same
        text = ""
        grounded = service.ctx.settings.grounding
        try:
            owner = reader_of(browser_id, request)
            for kind, value in service.ask(question, k=int(k), budget_words=int(budget), retriever=retriever,
                                           backend=backend, owner=owner, history=conversation,
                                           scope=list(scope or []) or None):
                if kind == "status" and not text:
                    history[-1] = {"role": "assistant", "content": f"⏳ *{render.plain_text_markdown(value)}…*"}
                    yield history, answers, conversation, same, same, "", conv_id, same
                elif kind == "token":
                    text += value
                    # a grounded answer is shown only once checked: nothing unchecked reaches the page
                    content = (f"⏳ *drafting an answer ({len(text.split())} words); it is checked against the "
                               "sources before it is shown…*" if grounded else shown(text))
                    history[-1] = {"role": "assistant", "content": content}
                    yield history, answers, conversation, same, same, "", conv_id, same
                elif kind == "done":
                    from ui.conversations import bounded_answer

                    a = bounded_answer(value.to_dict())  # what the page gets and the conversation keeps
                    answers.append(a)
                    history[-1:] = answer_messages(a, draft=text)
                    conversation += memory_of([{"question": question, "answer": a}])
                    conv_id, listing = remember(owner, conv_id, question, a, scope)
                    choices = [(render.answer_label(i, x), i) for i, x in enumerate(answers)]
                    yield (history, answers, conversation, render.weight_bars(a["weights"]),
                           gr.update(choices=choices, value=len(answers) - 1), "", conv_id, listing)
        except Exception as e:  # question refused, empty index, …: say so in the chat
            from retrieval.search import EmptyIndexError

            if not isinstance(e, (ValueError, EmptyIndexError)):
                log.exception("answering failed")
            history[-1] = {"role": "assistant", "content": "⚠️ " + render.plain_text_markdown(str(e))}
            yield history, answers, conversation, gr.update(), gr.update(), "", conv_id, gr.update()

    # -- conversations, scope and session settings, kept across reloads ------------------------------------------
    def open_conversation(owner, conv_id):
        """(chatbot, answers, memory, scope, conversation id) of a stored conversation, or of a new one."""
        from ui.conversations import ConversationNotFound

        try:
            conv = service.conversations.get(owner, conv_id) if owner and conv_id else None
        except ConversationNotFound:
            conv = None
        if conv is None:
            return [], [], [], [], None
        history, answers = [], []
        for t in conv["turns"]:
            history.append({"role": "user", "content": render.plain_text_markdown(t["question"])})
            history += answer_messages(t["answer"])
            answers.append(t["answer"])
        return history, answers, memory_of(conv["turns"]), conv["scope"], conv["id"]

    def scope_choices(owner, value=()):
        docs = service.searchable_documents(owner) if owner else []
        return gr.update(choices=docs, value=[d for d in value or () if d in docs])

    def on_restore(browser_id, conv_id, saved, shown_now, request: gr.Request):
        """A (re)loaded page: this browser's conversations, the one it had open, and its session settings. A
        question asked while the page was still loading is not overwritten."""
        owner = reader_of(browser_id, request)
        keep = gr.update
        if shown_now:
            return (keep(), keep(), keep(), keep(), conversation_list(owner, conv_id), scope_choices(owner),
                    keep(), keep(), keep(), None)
        history, answers, memory, scope, conv_id = open_conversation(owner, conv_id)
        saved = saved if isinstance(saved, dict) else {}
        return (history, answers, memory, conv_id, conversation_list(owner, conv_id), scope_choices(owner, scope),
                keep(value=saved["k"]) if "k" in saved else keep(),
                keep(value=saved["budget"]) if "budget" in saved else keep(),
                keep(value=saved["retriever"]) if "retriever" in saved else keep(),
                saved.get("backend"))

    def on_pick_conversation(conv_id, browser_id, request: gr.Request):
        owner = reader_of(browser_id, request)
        history, answers, memory, scope, conv_id = open_conversation(owner, conv_id)
        return history, answers, memory, conv_id, scope_choices(owner, scope), gr.update(value=None)

    def on_new_conversation(browser_id, request: gr.Request):
        owner = reader_of(browser_id, request)
        return [], [], [], None, conversation_list(owner), scope_choices(owner)

    def on_rename_conversation(conv_id, title, browser_id, request: gr.Request):
        owner = owner_of(browser_id, request)
        if not conv_id:
            raise gr.Error("open a conversation first")
        try:
            service.conversations.rename(owner, conv_id, title)
        except (KeyError, ValueError) as e:
            raise _error(e) from e
        return conversation_list(owner, conv_id), ""

    def on_delete_conversation(conv_id, browser_id, request: gr.Request):
        owner = owner_of(browser_id, request)
        if conv_id:
            try:
                service.conversations.delete(owner, conv_id)
            except KeyError as e:
                raise _error(e) from e
        return [], [], [], None, conversation_list(owner), scope_choices(owner)

    def on_scope(scope, conv_id, browser_id, request: gr.Request):
        """A conversation's scope is kept with it (a new conversation takes it on its first question)."""
        owner = reader_of(browser_id, request)
        if owner and conv_id:
            try:
                service.conversations.set_scope(owner, conv_id, list(scope or []))
            except KeyError:
                pass

    def pick_choices(answers):
        answers = answers or []
        return gr.update(choices=[(render.answer_label(i, x), i) for i, x in enumerate(answers)],
                         value=len(answers) - 1 if answers else None)

    def refresh_scope(browser_id, scope, request: gr.Request):
        return scope_choices(reader_of(browser_id, request), scope)

    def on_settings(k, budget, retriever, backend):
        return {"k": int(k), "budget": int(budget), "retriever": retriever, "backend": backend}

    # -- evaluate handlers -----------------------------------------------------------------------------------
    def pick(answers, idx):
        if not answers:
            return None
        if idx is None or not (0 <= int(idx) < len(answers)):
            idx = len(answers) - 1
        return answers[int(idx)]

    def on_pick(answers, idx, k, browser_id, request: gr.Request):
        a = pick(answers, idx)
        if a is None:
            return "*Ask a question on the Chat tab first.*", gr.update(choices=[], value=[]), None, ""
        hits = service.level_hits(a["question"], k=int(k),
                                  retriever=a["retriever"] if a["retriever"] != "none" else "dense",
                                  owner=reader_of(browser_id, request))
        df = pd.DataFrame(hits, columns=["retriever", "level", "rank", "score", "document", "chars", "text"])
        from ingest.layout import place_label

        choices = [(" · ".join(filter(None, (f"[{x['number']}] {x['doc_id']}",
                                             place_label(x.get("pages"), [], x.get("unit"))))), x["number"])
                   for x in a["sources"]]  # with the page: six sources of one file are told apart
        cited = [c["number"] for c in a["citations"]]
        md = (f"**Q:** {render.plain_text_markdown(a['question'])}\n\n"
              f"**A:** {shown(a['text']) if a['text'] else '(no answer)'}")
        # nothing ticked to start with: the evidence is what the user looked at and chose, not the citations
        return md, gr.update(choices=choices, value=[]), df, render.sources_html(a["sources"], set(cited))

    def on_f1(answers, idx, reference):
        from app.evaluation.metrics import qa_f1_score

        a = pick(answers, idx)
        if a is None or not (reference or "").strip():
            return "F1: enter a reference answer"
        return f"F1: {qa_f1_score(a['text'], reference):.3f}"

    def on_save(answers, idx, reference, rating, comment, relevant, browser_id, request: gr.Request):
        a = pick(answers, idx)
        try:
            eid, f1, n_ev = service.evaluate(a, reference=reference, rating=rating or None, comment=comment,
                                             relevant=[int(x) for x in (relevant or [])],
                                             owner=owner_of(browser_id, request))
        except ValueError as e:
            raise _error(e) from e
        f1s = f"; F1 {f1:.3f}" if f1 is not None else ""
        return f"Saved evaluation #{eid}{f1s}; {n_ev} evidence span(s)."

    def on_export(browser_id, request: gr.Request):
        path, n = service.export_feedback(owner=owner_of(browser_id, request))
        gr.Info(f"{n} of your evaluation(s) exported")
        return str(path), f"{n} record(s) in {path.name} (bench format: id, question, doc_id, answers, evidence)"

    def on_bench(set_name, upload, k, browser_id, request: gr.Request, progress=gr.Progress()):
        ref = upload or set_name
        if not ref:
            raise gr.Error("choose a bench set or upload a questions.jsonl")
        progress(None, desc="running the benchmark")
        try:
            res = service.run_benchmark(ref, k=int(k), owner=reader_of(browser_id, request),
                                        client=_client_host(request))
        except (ValueError, FileNotFoundError) as e:
            raise _error(e) from e
        note = f"{res['n_questions']} question(s) over the live index"
        if res.get("skipped_docs"):
            note += f"; skipped (not in the index): {', '.join(res['skipped_docs'][:8])}"
        if res.get("mismatched_docs"):
            note += f"; skipped (text differs from the set's): {', '.join(res['mismatched_docs'][:8])}"
        note = render.plain_text_markdown(note)
        return pd.DataFrame(render.bench_table(res), columns=["metric", "value"]), render.bench_figure(res), note

    # -- admin handlers (each checks the token server side) ----------------------------------------------------
    def admin(fn):
        """Admin and refusal errors as a message on the page (the wrapper keeps the signature and annotations, so
        Gradio still injects ``gr.Request`` and ``gr.Progress``)."""
        @functools.wraps(fn)
        def wrapped(*args, **kw):
            try:
                return fn(*args, **kw)
            except (AdminRequired, ValueError) as e:
                raise _error(e) from e
        return wrapped

    def docs_outputs(token):
        live, rows = service.documents(token)
        cols = ["document", "state", "owner", "size (KB)", "version", "parents", "θ/2", "θ/4", "ingest s", "indexed",
                "parameters"]
        head = (f"Live index: generation {live['gen']}, chunker **{live['chunker']}**, θ = {live['theta']}"
                if live else "No index yet.")
        return pd.DataFrame(rows, columns=cols), gr.update(choices=[r["document"] for r in rows], value=[]), head

    @admin
    def on_login(user, password, token, request: gr.Request):
        """``token``: the one the page just made (API clients: a random string of 32 to 128 letters, digits, - or
        _, passed to every admin call after). It is never sent back: only the browser that made it holds it."""
        try:
            token = service.login(user, password, _client_host(request), token=token or "")
        except AdminRequired as e:
            return (LOGGED_OUT, gr.update(visible=False), f"⚠️ {e}", gr.update(), gr.update(), gr.update(),
                    gr.update(), gr.update(), gr.update(), gr.update(), gr.update(), gr.update())
        df, sel, head = docs_outputs(token)
        return (gr.update(), gr.update(visible=True), f"Logged in as {render.plain_text_markdown(user)}.", df, sel,
                head, *llm_fields(token), users_text(token), gr.update(visible=False), gr.update(value=""))

    def on_logout(token):
        service.logout(token)
        return (LOGGED_OUT, gr.update(visible=False), "Logged out. Log in to manage documents.",
                gr.update(visible=True))

    @admin
    def on_docs(token):
        return docs_outputs(token)

    queue_cols = ["job", "document", "owner", "state", "detail", "attempts", "queued"]

    def on_queue(token):
        """The queue table, refreshed by its timer while an admin is logged in on this page."""
        if not token:
            return gr.update(), gr.Timer(active=False)
        try:
            rows = service.queue_rows(token)
        except AdminRequired:
            return gr.update(), gr.Timer(active=False)
        return pd.DataFrame(rows, columns=queue_cols), gr.Timer(active=True)

    @admin
    def on_cancel_jobs(token, ids):
        service.auth.check(token)
        wanted = [x.strip() for x in (ids or "").replace(";", ",").split(",") if x.strip()]
        if not wanted or not all(x.isdigit() for x in wanted):
            raise ValueError("give the job numbers to cancel, e.g. 12, 15 (the queue table's first column)")
        done = service.cancel_jobs(ADMIN, [int(x) for x in wanted])
        return pd.DataFrame(service.queue_rows(token), columns=queue_cols), render.plain_text_markdown("; ".join(done))

    @admin
    def on_delete(token, selected):
        deleted = service.delete(token, list(selected or []))
        df, sel, head = docs_outputs(token)
        return df, sel, head, render.plain_text_markdown(f"Deleted {', '.join(deleted)}.")

    @admin
    def on_reingest(token, selected, chunker, theta, which, progress=gr.Progress()):
        service.auth.check(token)
        progress(0.0, desc="re-ingesting")

        def cb(st):
            progress(st.fraction, desc="re-ingesting " + st.message())

        docs = list(selected or []) if which == "selected" else None
        if which == "selected" and not docs:
            raise ValueError("select the documents to re-ingest (or choose all)")
        report = service.reingest(token, docs, chunker or None, int(theta) if theta else None, on_step=cb)
        failed = report.failed
        msg = (f"Re-ingested {len(report.ok)} document(s) into generation {report.generation}."
               if not failed else
               f"{len(failed)} document(s) failed ({'; '.join(f'{r.name}: {r.message}' for r in failed)})"
               + ("; the live index is unchanged" if docs is None else ""))
        msg = render.plain_text_markdown(msg)
        df, sel, head = docs_outputs(token)
        return df, sel, head, msg

    @admin
    def on_stats(token):
        return render.histogram_figure(service.chunk_lengths(token))

    @admin
    def on_train(token, sets, progress=gr.Progress()):
        service.auth.check(token)
        progress(None, desc="training the router")
        try:
            rep = service.train_router(token, list(sets or []))
        except ValueError as e:
            raise _error(e) from e
        except Exception as e:  # the router's own errors (no labels, wrong encoder, …) carry their message
            raise gr.Error(f"router training failed: {e}") from e
        h = rep["history"]
        return (render.loss_figure(h["train"], h.get("val")),
                f"Trained on {rep['n_questions']} question(s): validation loss {h['best_val']:.4f} at epoch "
                f"{h['best_epoch']} of {len(h['train'])}; saved to the data dir's router folder. "
                + ("The chat now uses it." if service.ctx.settings.router == "default" else
                   "The chat uses it with MGRAG_ROUTER=default (the default is none, uniform weights: no router "
                   "beat them on held-out questions, see the README)."))

    # -- chunk inspector (Admin): why a boundary was chosen, which chunks a question matched ---------------------------
    @admin
    def on_inspect_docs(token):
        _, rows = service.documents(token)
        return gr.update(choices=[r["document"] for r in rows])

    @admin
    def on_inspect(token, doc, question, theta, words_from, progress=gr.Progress()):
        import io

        from PIL import Image

        progress(None, desc="inspecting (runs the chunker LM over the document)")
        start = int(words_from or 0)
        png, page, summary = service.inspect(token, doc, question, int(theta) if theta else None,
                                             (start, start + 3000))
        frame = (f'<iframe sandbox="" style="width:100%;height:640px;border:1px solid #ccc" '
                 f'srcdoc="{html.escape(page, quote=True)}"></iframe>')
        return Image.open(io.BytesIO(png)), frame, summary

    # -- answer backends and the LLM endpoint ------------------------------------------------------------------------
    def backend_menu(current=None):
        """The chat's backend menu: the backends that can run here; a note says why each other one cannot."""
        status = service.backends()
        ok = [b for b, why in status.items() if why is None]
        default = service.ctx.settings.synth_backend
        value = current if current in ok else default if default in ok else ok[0]
        note = "\n".join(f"- **{b}** cannot run: {render.plain_text_markdown(why)}" for b, why in status.items() if why)
        return gr.update(choices=ok, value=value), note

    def llm_fields(token):
        e = service.llm_endpoint(token)
        hint = "a key is stored (type a new one to replace it)" if e["key_set"] else "API key (if the server needs one)"
        return (gr.update(value=e["base_url"]), gr.update(value="", placeholder=hint),
                gr.update(value=e["model"] or None, choices=[e["model"]] if e["model"] else []))

    @admin
    def on_llm_list(token, url, key):
        try:
            models = service.llm_models(token, url, key or None)
        except ValueError as e:
            return gr.update(), "⚠️ " + render.plain_text_markdown(str(e))
        return (gr.update(choices=models, value=models[0] if models else None),
                render.plain_text_markdown(f"{len(models)} model(s): {', '.join(models[:12])}"))

    @admin
    def on_llm_test(token, url, model, key):
        try:
            return "✅ " + render.plain_text_markdown(service.llm_test(token, url, model or "", key or None))
        except ValueError as e:
            return "⚠️ " + render.plain_text_markdown(str(e))

    @admin
    def on_llm_save(token, url, model, key, password, current_backend, request: gr.Request):
        """Saving asks for the admin password again: the stored key goes to whatever endpoint is saved."""
        service.auth.check(token)
        try:
            e = service.set_llm(token, url, model or "", key or None, password=password,
                                client=_client_host(request))
        except AdminRequired as e:
            return "⚠️ " + render.plain_text_markdown(str(e)), gr.update(), gr.update(), gr.update(), gr.update(value="")
        menu, note = backend_menu(current_backend)
        if e["base_url"]:
            msg = (render.plain_text_markdown(f"Saved: {e['base_url']} · model {e['model'] or 'default'}"
                                              f"{' · key stored' if e['key_set'] else ''}.")
                   + " The chat's **openai** backend uses it from the next question.")
        else:
            msg = "Endpoint removed."
        hint = "a key is stored (type a new one to replace it)" if e["key_set"] else "API key (if the server needs one)"
        return msg, gr.update(value="", placeholder=hint), menu, note, gr.update(value="")

    def users_text(token):
        names = service.user_names(token)
        if not names:
            return "No users: the web app needs no login; uploads and chats belong to each browser."
        note = "" if getattr(service, "logins_required", False) else (
            " **Restart `mgrag serve`** to require logins: it started without users.")
        return render.plain_text_markdown("Users: " + ", ".join(names) + ".") + note

    @admin
    def on_user_add(token, name, password):
        service.add_user(token, name, password)
        return users_text(token), gr.update(value="")

    @admin
    def on_user_remove(token, name):
        service.remove_user(token, (name or "").strip())
        return users_text(token), gr.update(value="")

    # -- layout ---------------------------------------------------------------------------------------------
    with gr.Blocks(title="MGRAG") as demo:
        answers_state = gr.State([])
        conversation_state = gr.State([])  # the turns of the current conversation (plain dicts, storable as is)
        # a random id kept in this browser's local storage (encrypted with a secret from the data dir): documents
        # uploaded from it belong to it, and only it (and the admin) can search, replace or delete them
        browser = gr.BrowserState(None, storage_key="mgrag_browser", secret=service.state_secret())
        current = gr.BrowserState(None, storage_key="mgrag_conversation", secret=service.state_secret())
        saved_settings = gr.BrowserState({}, storage_key="mgrag_settings", secret=service.state_secret())
        saved_backend = gr.State(None)
        # the admin's session token: made by the page at login (ADMIN_TOKEN_JS), kept in this browser only and sent
        # in request bodies; a client that knows just the session hash has none (a gr.State would give it this one)
        token_state = gr.BrowserState("", storage_key="mgrag_admin", secret=service.state_secret())
        gr.Markdown("## MGRAG: chat with your documents")
        with gr.Tabs():
            with gr.Tab("Chat", id="chat"):
                with gr.Row():
                    with gr.Column(scale=1, min_width=200, elem_id="conversations-panel"):
                        new_btn = gr.Button("+ New conversation", size="sm", elem_id="new-conversation")
                        conv_list = gr.Radio([], label="Conversations", elem_id="conversations")
                        with gr.Accordion("Rename or delete", open=False, elem_id="conversation-edit"):
                            rename_in = gr.Textbox(show_label=False, placeholder="new title", elem_id="rename-title")
                            with gr.Row():
                                rename_btn = gr.Button("Rename", size="sm", elem_id="rename-conversation")
                                delete_conv_btn = gr.Button("Delete", size="sm", variant="stop",
                                                            elem_id="delete-conversation")
                    with gr.Column(scale=3):
                        chatbot = gr.Chatbot(label="Answers", height=520, elem_id="chatbot", buttons=["copy"],
                                             sanitize_html=True, allow_tags=False, latex_delimiters=[])
                        with gr.Row():
                            question = gr.Textbox(placeholder="Ask a question about your documents…", show_label=False,
                                                  scale=5, elem_id="question", max_lines=4)
                            ask_btn = gr.Button("Ask", variant="primary", scale=1, elem_id="ask")
                        weights_plot = gr.HTML("",
                                               elem_id="weights-plot")
                    with gr.Column(scale=2):
                        files = gr.File(label=f"Upload documents (drag and drop; {', '.join(sorted(SUPPORTED))}; "
                                              f"at most {s.max_file_mb:g} MB each)",
                                        file_count="multiple", type="filepath", elem_id="upload")
                        upload_report = gr.Dataframe(headers=["name", "state", "chunks per level"],
                                                     label="Last upload (searchable in seconds; refined after)",
                                                     interactive=False, elem_id="upload-report", wrap=True,
                                                     column_widths=["38%", "44%", "18%"])
                        with gr.Row():
                            cancel_upload_btn = gr.Button("Cancel unfinished", size="sm", scale=0,
                                                          elem_id="cancel-upload")
                        upload_rows_state = gr.State([])
                        upload_timer = gr.Timer(1.0, active=False)
                        scope_in = gr.CheckboxGroup([], label="Search in (this conversation; none ticked: all your "
                                                              "documents)", elem_id="scope")
                        with gr.Accordion("Your uploads", open=False, elem_id="my-docs"):
                            my_docs = gr.CheckboxGroup([], label="only this browser (and the admin) can search them",
                                                       elem_id="my-docs-select")
                            delete_mine_btn = gr.Button("Delete selected", variant="stop", size="sm",
                                                        elem_id="delete-mine")
                        with gr.Accordion("Session settings", open=False, elem_id="session-settings"):
                            k_in = gr.Slider(1, 50, value=s.top_k, step=1, label="k: hits per level")
                            budget_in = gr.Slider(50, 5000, value=s.context_words, step=50,
                                                  label="context budget (words)")
                            retriever_in = gr.Radio(["dense", "bm25", "hybrid"], value=s.retriever, label="retriever")
                            backend_in = gr.Dropdown(list(BACKENDS), value=s.synth_backend, label="backend",
                                                     elem_id="backend")
                            backend_note = gr.Markdown(elem_id="backend-note")
            with gr.Tab("Admin", id="admin"):
                with gr.Row(elem_id="admin-login") as login_row:
                    user_in = gr.Textbox(label="user", value="", scale=1, elem_id="admin-user")
                    pw_in = gr.Textbox(label="password", type="password", scale=1, elem_id="admin-password")
                    login_btn = gr.Button("Log in", scale=0, elem_id="admin-login-btn")
                login_msg = gr.Markdown("Log in to manage documents.", elem_id="admin-login-msg")
                with gr.Column(visible=False, elem_id="admin-panel") as admin_panel:
                    logout_btn = gr.Button("Log out", size="sm", scale=0, elem_id="admin-logout-btn")
                    live_md = gr.Markdown()
                    docs_df = gr.Dataframe(label="Documents", interactive=False, elem_id="docs-table")
                    with gr.Row():
                        selected = gr.CheckboxGroup([], label="Select documents", elem_id="doc-select", scale=3)
                        refresh_btn = gr.Button("Refresh", scale=0)
                        delete_btn = gr.Button("Delete selected", variant="stop", scale=0, elem_id="delete")
                    with gr.Row():
                        which_in = gr.Radio(["all", "selected"], value="all", label="re-ingest", scale=1)
                        chunker_in = gr.Dropdown(list(CHUNKERS), value=None, label="chunker (empty: keep)", scale=1,
                                                 elem_id="reingest-chunker")
                        theta_in = gr.Number(value=None, label="θ (words; 0 or empty: keep)", precision=0, scale=1,
                                             elem_id="reingest-theta")
                        reingest_btn = gr.Button("Re-ingest", variant="primary", scale=0, elem_id="reingest")
                    admin_msg = gr.Markdown(elem_id="admin-msg")
                    with gr.Accordion("Ingestion queue (uploads and `mgrag ingest`: searchable in seconds, refined in "
                                      "the background)", open=True, elem_id="queue-admin"):
                        queue_df = gr.Dataframe(interactive=False, elem_id="queue-table")
                        with gr.Row():
                            cancel_ids_in = gr.Textbox(label="job numbers to cancel (comma-separated)", scale=2,
                                                       elem_id="cancel-ids")
                            cancel_jobs_btn = gr.Button("Cancel jobs", variant="stop", scale=0, elem_id="cancel-jobs")
                        queue_msg = gr.Markdown(elem_id="queue-msg")
                        queue_timer = gr.Timer(2.0, active=False)
                    with gr.Accordion("LLM endpoint (OpenAI-compatible: Ollama, llama.cpp server, vLLM, …)", open=True,
                                      elem_id="llm-admin"):
                        with gr.Row():
                            llm_url = gr.Textbox(label="base URL", placeholder="http://127.0.0.1:11434/v1", scale=3,
                                                 elem_id="llm-url")
                            llm_key = gr.Textbox(label="API key (kept on the server; empty keeps the stored one)",
                                                 type="password", scale=2, elem_id="llm-key")
                        with gr.Row():
                            llm_list_btn = gr.Button("List models", scale=0, elem_id="llm-list")
                            llm_model = gr.Dropdown([], label="model", allow_custom_value=True, scale=2,
                                                    elem_id="llm-model")
                            llm_test_btn = gr.Button("Test connection", scale=0, elem_id="llm-test")
                            llm_pw = gr.Textbox(label="admin password (asked again to save)", type="password",
                                                scale=1, elem_id="llm-password")
                            llm_save_btn = gr.Button("Save", variant="primary", scale=0, elem_id="llm-save")
                        llm_msg = gr.Markdown(elem_id="llm-msg")
                    with gr.Accordion("Users (with any, every visitor logs in; uploads and chats belong to the user)",
                                      open=False, elem_id="users-admin"):
                        users_md = gr.Markdown(elem_id="users-list")
                        with gr.Row():
                            user_name_in = gr.Textbox(label="user name", scale=2, elem_id="user-name")
                            user_pw_in = gr.Textbox(label="password (8 characters or more)", type="password", scale=2,
                                                    elem_id="user-password")
                            user_add_btn = gr.Button("Add / set password", scale=0, elem_id="user-add")
                            user_remove_btn = gr.Button("Remove", variant="stop", scale=0, elem_id="user-remove")
                    with gr.Row():
                        stats_btn = gr.Button("Index statistics", scale=0, elem_id="stats")
                        train_sets = gr.CheckboxGroup(["feedback"] + service.bench_sets(), value=["feedback"],
                                                      label="router training questions", scale=2)
                        train_btn = gr.Button("Train the router", scale=0, elem_id="train-router")
                    stats_plot = gr.Plot(label="Chunk lengths per level (words)", elem_id="stats-plot")
                    with gr.Accordion("Chunk inspector: boundary probabilities, cuts of LG / recursive / MG, a "
                                      "question's matches", open=False, elem_id="inspector"):
                        with gr.Row():
                            inspect_doc = gr.Dropdown([], label="document", allow_custom_value=True, scale=2,
                                                      elem_id="inspect-doc")
                            inspect_docs_btn = gr.Button("↻", scale=0, elem_id="inspect-docs")
                            inspect_q = gr.Textbox(label="question (optional)", scale=3, elem_id="inspect-question")
                            inspect_theta = gr.Number(value=None, label="θ (empty: the setting)", precision=0,
                                                      scale=1, elem_id="inspect-theta")
                            inspect_from = gr.Number(value=0, label="plot from word", precision=0, scale=1)
                            inspect_btn = gr.Button("Inspect", variant="primary", scale=0, elem_id="inspect")
                        inspect_img = gr.Image(label="p(boundary) after each sentence, cuts and matched chunks",
                                               type="pil", elem_id="inspect-png")
                        inspect_summary = gr.JSON(label="summary", elem_id="inspect-summary")
                        inspect_html = gr.HTML(elem_id="inspect-html")
                    train_msg = gr.Markdown(elem_id="train-msg")
                    loss_plot = gr.Plot(label="Router training loss", elem_id="loss-plot")
            with gr.Tab("Evaluate", id="evaluate"):
                with gr.Row():
                    answer_pick = gr.Dropdown([], label="Answer (this conversation)", elem_id="answer-pick", scale=3)
                    eval_k = gr.Slider(1, 20, value=5, step=1, label="chunks per level", scale=1)
                answer_md = gr.Markdown("*Ask a question on the Chat tab first.*", elem_id="answer-md")
                with gr.Row():
                    reference_in = gr.Textbox(label="reference answer", scale=3, elem_id="reference")
                    f1_md = gr.Markdown("F1: -", elem_id="f1")
                with gr.Row():
                    rating_in = gr.Radio(["good", "bad"], label="rating", elem_id="rating")
                    comment_in = gr.Textbox(label="comment", scale=2, elem_id="comment")
                    relevant_in = gr.CheckboxGroup([], label="relevant sources (the evidence)", elem_id="relevant")
                with gr.Row():
                    save_btn = gr.Button("Save evaluation", variant="primary", elem_id="save-eval")
                    export_btn = gr.Button("Export JSONL", elem_id="export")
                eval_msg = gr.Markdown(elem_id="eval-msg")
                export_file = gr.File(label="feedback.jsonl (router training format)", elem_id="export-file",
                                      interactive=False)
                with gr.Accordion("Retrieved chunks at every level", open=True):
                    hits_df = gr.Dataframe(interactive=False, elem_id="level-hits", wrap=True)
                with gr.Accordion("Sources of this answer", open=False):
                    eval_sources = gr.HTML()
                gr.Markdown("### Benchmark over the live index")
                with gr.Row():
                    bench_set = gr.Dropdown(service.bench_sets(), value=None, elem_id="bench-set",
                                            label="evaluation set (the samples', your own evaluations, or a bench set)")
                    bench_file = gr.File(label="or upload questions.jsonl", file_types=[".jsonl"], type="filepath")
                    bench_k = gr.Slider(1, 50, value=20, step=1, label="top k per level")
                    bench_btn = gr.Button("Run benchmark", elem_id="run-bench")
                bench_note = gr.Markdown(elem_id="bench-note")
                with gr.Row():
                    bench_df = gr.Dataframe(headers=["metric", "value"], interactive=False, elem_id="bench-table")
                    bench_plot = gr.Plot(label="metrics")

        # -- events ---------------------------------------------------------------------------------------------
        restored = [chatbot, answers_state, conversation_state, current, conv_list, scope_in, k_in, budget_in,
                    retriever_in, saved_backend]
        demo.load(None, [browser], [browser], js=BROWSER_ID_JS, api_visibility="private").then(
            mine, [browser], [my_docs], api_visibility="private").then(
            on_restore, [browser, current, saved_settings, chatbot], restored, api_visibility="private").then(
            backend_menu, [saved_backend], [backend_in, backend_note], api_visibility="private").then(
            lambda answers: pick_choices(answers), [answers_state], [answer_pick], api_visibility="private")
        fresh = [chatbot, answers_state, conversation_state, current, conv_list, scope_in]
        new_btn.click(on_new_conversation, [browser], fresh, api_visibility="private")
        conv_list.input(on_pick_conversation, [conv_list, browser],
                        [chatbot, answers_state, conversation_state, current, scope_in, rename_in],
                        api_visibility="private").then(
            lambda answers: pick_choices(answers), [answers_state], [answer_pick], api_visibility="private")
        rename_btn.click(on_rename_conversation, [current, rename_in, browser], [conv_list, rename_in],
                         api_name="rename_conversation")
        delete_conv_btn.click(on_delete_conversation, [current, browser], fresh, api_name="delete_conversation")
        scope_in.input(on_scope, [scope_in, current, browser], [], api_visibility="private")
        for control in (k_in, budget_in):
            control.release(on_settings, [k_in, budget_in, retriever_in, backend_in], [saved_settings],
                            api_visibility="private")
        for control in (retriever_in, backend_in):
            control.input(on_settings, [k_in, budget_in, retriever_in, backend_in], [saved_settings],
                          api_visibility="private")
        llm_list_btn.click(on_llm_list, [token_state, llm_url, llm_key], [llm_model, llm_msg],
                           api_name="admin_llm_models")
        llm_test_btn.click(on_llm_test, [token_state, llm_url, llm_model, llm_key], [llm_msg],
                           api_name="admin_llm_test")
        llm_save_btn.click(on_llm_save, [token_state, llm_url, llm_model, llm_key, llm_pw, backend_in],
                           [llm_msg, llm_key, backend_in, backend_note, llm_pw], api_name="admin_llm_save")
        files.upload(on_upload, [files, browser], [upload_report, files, my_docs, upload_rows_state, upload_timer],
                     api_name="upload", concurrency_limit=16, show_progress="hidden").then(
            refresh_scope, [browser, scope_in], [scope_in], api_visibility="private", show_progress="hidden")
        upload_timer.tick(on_upload_tick, [upload_rows_state], [upload_report, upload_timer], api_visibility="private",
                          show_progress="hidden")
        cancel_upload_btn.click(on_cancel_upload, [upload_rows_state, browser], [upload_report],
                                api_name="cancel_upload")
        delete_mine_btn.click(on_delete_mine, [browser, my_docs], [my_docs], api_name="delete_upload").then(
            refresh_scope, [browser, scope_in], [scope_in], api_visibility="private", show_progress="hidden")
        ask_args = dict(fn=on_ask, inputs=[question, chatbot, answers_state, conversation_state, k_in, budget_in,
                                           retriever_in, backend_in, browser, current, scope_in],
                        outputs=[chatbot, answers_state, conversation_state, weights_plot, answer_pick, question,
                                 current, conv_list],
                        concurrency_limit=None)
        ask_btn.click(api_name="ask", **ask_args)
        question.submit(api_visibility="private", **ask_args)
        pick_out = [answer_md, relevant_in, hits_df, eval_sources]
        answer_pick.change(on_pick, [answers_state, answer_pick, eval_k, browser], pick_out, api_visibility="private")
        eval_k.release(on_pick, [answers_state, answer_pick, eval_k, browser], pick_out, api_visibility="private")
        reference_in.change(on_f1, [answers_state, answer_pick, reference_in], [f1_md], api_visibility="private")
        save_btn.click(on_save, [answers_state, answer_pick, reference_in, rating_in, comment_in, relevant_in, browser],
                       [eval_msg], api_name="save_evaluation")
        export_btn.click(on_export, [browser], [export_file, eval_msg], api_name="export_feedback")
        bench_btn.click(on_bench, [bench_set, bench_file, bench_k, browser], [bench_df, bench_plot, bench_note],
                        api_name="benchmark")

        login_out = [token_state, admin_panel, login_msg, docs_df, selected, live_md, llm_url, llm_key, llm_model,
                     users_md, login_row, pw_in]
        logout_btn.click(on_logout, [token_state], [token_state, admin_panel, login_msg, login_row],
                         api_visibility="private")
        user_add_btn.click(on_user_add, [token_state, user_name_in, user_pw_in], [users_md, user_pw_in],
                           api_name="admin_user_add")
        user_remove_btn.click(on_user_remove, [token_state, user_name_in], [users_md, user_pw_in],
                              api_name="admin_user_remove")
        # a login first makes a new token in the page (no server call), then presents it with the credentials
        login_btn.click(None, None, [token_state], js=ADMIN_TOKEN_JS, api_visibility="private").then(
            on_login, [user_in, pw_in, token_state], login_out, api_name="admin_login").then(
            on_queue, [token_state], [queue_df, queue_timer], api_visibility="private")
        pw_in.submit(None, None, [token_state], js=ADMIN_TOKEN_JS, api_visibility="private").then(
            on_login, [user_in, pw_in, token_state], login_out, api_visibility="private").then(
            on_queue, [token_state], [queue_df, queue_timer], api_visibility="private")
        queue_timer.tick(on_queue, [token_state], [queue_df, queue_timer], api_visibility="private",
                         show_progress="hidden")
        cancel_jobs_btn.click(on_cancel_jobs, [token_state, cancel_ids_in], [queue_df, queue_msg],
                              api_name="admin_cancel_jobs")
        refresh_btn.click(on_docs, [token_state], [docs_df, selected, live_md], api_name="admin_docs")
        delete_btn.click(on_delete, [token_state, selected], [docs_df, selected, live_md, admin_msg],
                         api_name="admin_delete")
        reingest_btn.click(on_reingest, [token_state, selected, chunker_in, theta_in, which_in],
                           [docs_df, selected, live_md, admin_msg], api_name="admin_reingest", concurrency_limit=1)
        stats_btn.click(on_stats, [token_state], [stats_plot], api_name="admin_stats")
        inspect_docs_btn.click(on_inspect_docs, [token_state], [inspect_doc], api_visibility="private")
        inspect_btn.click(on_inspect, [token_state, inspect_doc, inspect_q, inspect_theta, inspect_from],
                          [inspect_img, inspect_html, inspect_summary], api_name="admin_inspect", concurrency_limit=1)
        train_btn.click(on_train, [token_state, train_sets], [loss_plot, train_msg], api_name="admin_train_router",
                        concurrency_limit=1)
    return demo


def launch(service: UiService, *, host: str | None = None, port: int | None = None, block: bool = True):
    """Serve the app. Gradio's upload cache goes under the data dir (``data_dir/tmp/gradio``) unless
    ``GRADIO_TEMP_DIR`` is set, so uploads write nothing outside it; uploads over ``max_file_mb`` are cut off by
    Gradio itself and refused again by the service."""
    s = service.ctx.settings
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    tmp = (s.data_dir / "tmp" / "gradio").resolve()
    tmp.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("GRADIO_TEMP_DIR", str(tmp))
    service.upload_root = Path(os.environ["GRADIO_TEMP_DIR"]).resolve()  # the only folder uploads are read from
    # uvicorn (which Gradio runs) takes the client's address from X-Forwarded-For when the peer is in
    # FORWARDED_ALLOW_IPS, by default loopback: any local caller could then name itself anew with every request and
    # escape the login slow-down. Only the configured proxies are trusted; none by default.
    os.environ["FORWARDED_ALLOW_IPS"] = s.trusted_proxies
    _clean_uploads(service)  # what the last run left: uploads never submitted or cut off by a stop
    demo = build_app(service)
    demo.queue(default_concurrency_limit=8, max_size=256)
    auth = service.users.check if service.users else None  # accounts made by the admin: everyone logs in
    service.logins_required = auth is not None
    app, url, _ = demo.launch(server_name=host or s.ui_host, server_port=port or s.ui_port, prevent_thread_lock=True,
                              max_file_size=int(s.max_file_mb * 2**20), quiet=True, show_error=True,
                              footer_links=["api"], css=render_css(), max_threads=64, auth=auth,
                              auth_message="MGRAG: log in with the account your admin gave you.")
    add_viewer_routes(app, service)
    from ui.api import mount_api

    mount_api(app, service)  # the HTTP API (/v1): OpenAI-compatible chat, documents, search; API keys
    if block:
        try:
            demo.block_thread()
        finally:
            demo.close()
    return demo, url


def add_viewer_routes(app, service: UiService) -> None:
    """``/mgrag/view/TOKEN`` (the viewer page), ``/mgrag/page/TOKEN`` (a PDF page as PNG, highlights drawn) and
    ``/mgrag/original/TOKEN`` (the original file). Tokens are minted per answer (:meth:`UiService.view_link`).
    Page images come from :attr:`UiService.page_renderer` (pixel cap, capped child process, a few at once, cached);
    when every render slot stays taken the answer is 503 with ``Retry-After``."""
    from fastapi.responses import HTMLResponse, Response

    from ingest.layout import Layout, page_span, place_label
    from ingest.sandbox import SandboxError
    from ui.viewer import InvalidViewToken, RenderBusy, content_disposition, view_page

    def opened(token: str):
        try:
            return service.open_view(token)
        except InvalidViewToken as e:  # forged, malformed or expired
            return Response(html.escape(str(e)), status_code=403, media_type="text/plain")
        except ValueError as e:  # a valid link whose document is gone
            return Response(html.escape(str(e)), status_code=404, media_type="text/plain")

    def highlights(view, text):
        spans = [(view.start, view.end, "passage")] + ([(*view.matched, "child")] if view.matched else [])
        return [(text[s:e], k) for s, e, k in spans + [(s, e, "support") for s, e in view.support]]

    def page_view(token: str, page: int | None = None):
        got = opened(token)
        if isinstance(got, Response):
            return got
        view, row = got
        text = service.ctx.store.text(view.hash)
        lay = Layout.from_json(service.ctx.store.layout(view.hash))
        label = place_label(page_span(lay, view.start, view.end), [], lay.unit)
        n_pages, page_url = None, None
        if row["kind"] == "pdf" and lay.pages:
            from dataclasses import replace

            view = replace(view, page=page or view.page or 1)
            n_pages = len(lay.pages)
            page_url = f"../page/{token}?page={view.page}"
        return HTMLResponse(view_page(view, text, row["kind"], n_pages, page_url, f"../original/{token}", label))

    def page_png(token: str, page: int = 1):
        got = opened(token)
        if isinstance(got, Response):
            return got
        view, row = got
        if row["kind"] != "pdf":
            return Response("not a PDF", status_code=404, media_type="text/plain")
        store = service.ctx.store
        try:
            png, _ = service.page_renderer.render(view.hash, lambda: store.original(view.hash), page,
                                                  highlights(view, store.text(view.hash)))
        except RenderBusy as e:
            return Response(str(e), status_code=503, media_type="text/plain", headers={"Retry-After": "5"})
        except SandboxError as e:
            log.warning("rendering page %s of %s failed: %s", page, view.doc_id, e.problem)
            return Response("this page could not be rendered within the viewer's memory and time limits; download "
                            "the original to see it", status_code=422, media_type="text/plain")
        return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})

    def original(token: str):
        got = opened(token)
        if isinstance(got, Response):
            return got
        view, row = got
        data = service.ctx.store.original(view.hash)
        types = {"pdf": "application/pdf", "html": "text/plain; charset=utf-8", "text": "text/plain; charset=utf-8",
                 "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}
        return Response(data, media_type=types.get(row["kind"], "application/octet-stream"),
                        headers={"Content-Disposition": content_disposition(Path(row["name"]).name),
                                 "X-Content-Type-Options": "nosniff"})

    app.add_api_route("/mgrag/view/{token}", page_view, methods=["GET"])
    app.add_api_route("/mgrag/page/{token}", page_png, methods=["GET"])
    app.add_api_route("/mgrag/original/{token}", original, methods=["GET"])


def render_css() -> str:
    return CSS


def start_service(settings=None) -> UiService:
    """The web app's service on a context of its own. The admin password is the ``admin_password`` setting, else
    the one kept in the data dir (:func:`ui.service.stored_admin_password`), logged only when it is made."""
    from app.context import AppContext
    from ui.service import stored_admin_password

    ctx = AppContext(settings)
    s = ctx.settings
    password = s.admin_password.get_secret_value() if s.admin_password else None
    if not password:
        password, made = stored_admin_password(s.data_dir)
        where = s.data_dir / ".secrets" / "admin_password"
        if made:
            log.warning("MGRAG_ADMIN_PASSWORD is not set; the Admin tab's password (user %s) is: %s (kept in %s; "
                        "`mgrag admin password` shows it, `--reset` changes it)", s.admin_user, password, where)
        else:
            log.info("the Admin tab's password (user %s) is the one kept in %s (`mgrag admin password` shows it)",
                     s.admin_user, where)
    return UiService(ctx, admin_password=password)


def serve(settings=None, *, host: str | None = None, port: int | None = None) -> int:
    """``mgrag serve``: one context and one service for the process (:func:`start_service`)."""
    service = start_service(settings)
    ctx = service.ctx
    service.ensure_runner()  # jobs a stopped server (or `mgrag ingest --no-wait`) left queued resume now
    _, url = launch(service, host=host, port=port, block=False)
    log.info("MGRAG is serving on %s", url)
    print(f"MGRAG web app: {url}", flush=True)
    try:
        import time

        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        service.close()  # a refinement in flight goes back to the queue; the next start resumes it
        ctx.close()

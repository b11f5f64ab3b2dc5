"""The Admin tab, behind a login: the documents table, deletion and re-ingestion, the ingestion queue, the LLM
endpoint (:mod:`ui.rooms.llm`), user accounts, index statistics, router training and the chunk inspector. Every
handler calls a :class:`~services.service.AppService` method that checks the session's token server side, so hiding the
panel is only cosmetic."""
import html
import io
import time

import gradio as gr
import pandas as pd

from core import components
from services import render
from services.service import ADMIN, AdminRequired
from ui.rooms.context import ADMIN_TOKEN_JS, LOGGED_OUT, RoomContext, admin, client_host, error
from ui.rooms.llm import LlmPanel

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): PIL

DOC_COLUMNS = ["document", "state", "owner", "size (KB)", "version", "parents", "θ/2", "θ/4", "ingest s", "indexed",
               "parameters"]
QUEUE_COLUMNS = ["job", "document", "owner", "state", "detail", "attempts", "queued"]


class AdminRoom:
    def __init__(self, c: RoomContext):
        self.c, self.service = c, c.service
        self.llm = LlmPanel(c)

    # -- layout ------------------------------------------------------------------------------------------------
    def layout(self) -> None:
        with gr.Tab("Admin", id="admin"):
            with gr.Row(elem_id="admin-login") as self.login_row:
                self.user_in = gr.Textbox(label="user", value="", scale=1, elem_id="admin-user")
                self.pw_in = gr.Textbox(label="password", type="password", scale=1, elem_id="admin-password")
                self.login_btn = gr.Button("Log in", scale=0, elem_id="admin-login-btn")
            self.login_msg = gr.Markdown("Log in to manage documents.", elem_id="admin-login-msg")
            with gr.Column(visible=False, elem_id="admin-panel") as self.admin_panel:
                self.logout_btn = gr.Button("Log out", size="sm", scale=0, elem_id="admin-logout-btn")
                self.layout_documents()
                self.layout_queue()
                self.llm.layout()
                self.layout_users()
                self.layout_keys()
                self.layout_tools()

    def layout_documents(self) -> None:
        self.live_md = gr.Markdown()
        self.docs_df = gr.Dataframe(label="Documents", interactive=False, elem_id="docs-table")
        with gr.Row():
            self.selected = gr.CheckboxGroup([], label="Select documents", elem_id="doc-select", scale=3)
            self.refresh_btn = gr.Button("Refresh", scale=0)
            self.delete_btn = gr.Button("Delete selected", variant="stop", scale=0, elem_id="delete")
        with gr.Row():
            self.which_in = gr.Radio(["all", "selected"], value="all", label="re-ingest", scale=1)
            self.chunker_in = gr.Dropdown(list(components.CHUNKERS), value=None, label="chunker (empty: keep)", scale=1,
                                          elem_id="reingest-chunker")
            self.theta_in = gr.Number(value=None, label="θ (words; 0 or empty: keep)", precision=0, scale=1,
                                      elem_id="reingest-theta")
            self.reingest_btn = gr.Button("Re-ingest", variant="primary", scale=0, elem_id="reingest")
        self.admin_msg = gr.Markdown(elem_id="admin-msg")

    def layout_queue(self) -> None:
        with gr.Accordion("Ingestion queue (uploads and `mgrag ingest`: searchable in seconds, refined in "
                          "the background)", open=True, elem_id="queue-admin"):
            self.queue_df = gr.Dataframe(interactive=False, elem_id="queue-table")
            with gr.Row():
                self.cancel_ids_in = gr.Textbox(label="job numbers to cancel (comma-separated)", scale=2,
                                                elem_id="cancel-ids")
                self.cancel_jobs_btn = gr.Button("Cancel jobs", variant="stop", scale=0, elem_id="cancel-jobs")
            self.queue_msg = gr.Markdown(elem_id="queue-msg")
            self.queue_timer = gr.Timer(2.0, active=False)

    def layout_users(self) -> None:
        with gr.Accordion("Users (with any, every visitor logs in; uploads and chats belong to the user)",
                          open=False, elem_id="users-admin"):
            self.users_md = gr.Markdown(elem_id="users-list")
            with gr.Row():
                self.user_name_in = gr.Textbox(label="user name", scale=2, elem_id="user-name")
                self.user_pw_in = gr.Textbox(label="password (8 characters or more)", type="password", scale=2,
                                             elem_id="user-password")
                self.user_add_btn = gr.Button("Add / set password", scale=0, elem_id="user-add")
                self.user_remove_btn = gr.Button("Remove", variant="stop", scale=0, elem_id="user-remove")
            self.user_docs_in = gr.Textbox(label="removing a user who owns documents or conversations: delete them, "
                                           "keep them (nobody but the admin sees them) or hand them to:OTHER",
                                           placeholder="delete, keep or to:OTHER", elem_id="user-documents")

    def layout_keys(self) -> None:
        """The HTTP API's keys (/v1; docs/api.md): made for a user, shown once, revoked."""
        with gr.Accordion("API keys (the OpenAI-compatible API and REST under /v1: a key sees what its user sees)",
                          open=False, elem_id="keys-admin"):
            self.keys_df = gr.Dataframe(interactive=False, elem_id="keys-table")
            with gr.Row():
                self.key_name_in = gr.Textbox(label="key name (e.g. laptop)", scale=2, elem_id="key-name")
                self.key_user_in = gr.Textbox(label="user", scale=2, elem_id="key-user")
                self.key_list_btn = gr.Button("List", scale=0, elem_id="key-list")
                self.key_add_btn = gr.Button("Make key", variant="primary", scale=0, elem_id="key-add")
                self.key_revoke_btn = gr.Button("Revoke", variant="stop", scale=0, elem_id="key-revoke")
            self.key_out = gr.Textbox(label="the new key: copy it now, it is not shown again", interactive=False,
                                      visible=False, elem_id="key-new")

    def layout_tools(self) -> None:
        """Index statistics, router training and the chunk inspector."""
        with gr.Row():
            self.stats_btn = gr.Button("Index statistics", scale=0, elem_id="stats")
            self.train_sets = gr.CheckboxGroup(["feedback"] + self.service.bench_sets(), value=["feedback"],
                                               label="router training questions", scale=2)
            self.train_btn = gr.Button("Train the router", scale=0, elem_id="train-router")
        self.stats_plot = gr.Plot(label="Chunk lengths per level (words)", elem_id="stats-plot")
        with gr.Accordion("Chunk inspector: boundary probabilities, cuts of LG / recursive / MG, a "
                          "question's matches", open=False, elem_id="inspector"):
            with gr.Row():
                self.inspect_doc = gr.Dropdown([], label="document", allow_custom_value=True, scale=2,
                                               elem_id="inspect-doc")
                self.inspect_docs_btn = gr.Button("↻", scale=0, elem_id="inspect-docs")
                self.inspect_q = gr.Textbox(label="question (optional)", scale=3, elem_id="inspect-question")
                self.inspect_theta = gr.Number(value=None, label="θ (empty: the setting)", precision=0,
                                               scale=1, elem_id="inspect-theta")
                self.inspect_from = gr.Number(value=0, label="plot from word", precision=0, scale=1)
                self.inspect_btn = gr.Button("Inspect", variant="primary", scale=0, elem_id="inspect")
            self.inspect_img = gr.Image(label="p(boundary) after each sentence, cuts and matched chunks",
                                        type="pil", elem_id="inspect-png")
            self.inspect_summary = gr.JSON(label="summary", elem_id="inspect-summary")
            self.inspect_html = gr.HTML(elem_id="inspect-html")
        self.train_msg = gr.Markdown(elem_id="train-msg")
        self.loss_plot = gr.Plot(label="Router training loss", elem_id="loss-plot")

    # -- login, documents, queue, users (each handler checks the token server side) -------------------------------
    def docs_outputs(self, token):
        live, rows = self.service.documents(token)
        head = (f"Live index: generation {live['gen']}, chunker **{live['chunker']}**, θ = {live['theta']}"
                if live else "No index yet.")
        return pd.DataFrame(rows, columns=DOC_COLUMNS), gr.update(choices=[r["document"] for r in rows], value=[]), head

    @admin
    def on_login(self, user, password, token, request: gr.Request):
        """``token``: the one the page just made (API clients: a random string of 32 to 128 letters, digits, - or
        _, passed to every admin call after). It is never sent back: only the browser that made it holds it."""
        try:
            token = self.service.login(user, password, client_host(request), token=token or "")
        except AdminRequired as e:
            return (LOGGED_OUT, gr.update(visible=False), f"⚠️ {e}", gr.update(), gr.update(), gr.update(),
                    gr.update(), gr.update(), gr.update(), gr.update(), gr.update(), gr.update())
        df, sel, head = self.docs_outputs(token)
        return (gr.update(), gr.update(visible=True), f"Logged in as {render.plain_text_markdown(user)}.", df, sel,
                head, *self.llm.llm_fields(token), self.users_text(token), gr.update(visible=False),
                gr.update(value=""))

    def on_logout(self, token):
        self.service.logout(token)
        return (LOGGED_OUT, gr.update(visible=False), "Logged out. Log in to manage documents.",
                gr.update(visible=True))

    @admin
    def on_docs(self, token):
        return self.docs_outputs(token)

    def on_queue(self, token):
        """The queue table, refreshed by its timer while an admin is logged in on this page."""
        if not token:
            return gr.update(), gr.Timer(active=False)
        try:
            rows = self.service.queue_rows(token)
        except AdminRequired:
            return gr.update(), gr.Timer(active=False)
        return pd.DataFrame(rows, columns=QUEUE_COLUMNS), gr.Timer(active=True)

    @admin
    def on_cancel_jobs(self, token, ids):
        service = self.service
        service.auth.check(token)
        wanted = [x.strip() for x in (ids or "").replace(";", ",").split(",") if x.strip()]
        if not wanted or not all(x.isdigit() for x in wanted):
            raise ValueError("give the job numbers to cancel, e.g. 12, 15 (the queue table's first column)")
        done = service.cancel_jobs(ADMIN, [int(x) for x in wanted])
        return (pd.DataFrame(service.queue_rows(token), columns=QUEUE_COLUMNS),
                render.plain_text_markdown("; ".join(done)))

    @admin
    def on_delete(self, token, selected):
        deleted = self.service.delete(token, list(selected or []))
        df, sel, head = self.docs_outputs(token)
        return df, sel, head, render.plain_text_markdown(f"Deleted {', '.join(deleted)}.")

    @admin
    def on_reingest(self, token, selected, chunker, theta, which, progress=gr.Progress()):
        service = self.service
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
        df, sel, head = self.docs_outputs(token)
        return df, sel, head, msg

    def users_text(self, token):
        service = self.service
        names = service.user_names(token)
        if not names:
            return "No users: the web app needs no login; uploads and chats belong to each browser."
        note = "" if getattr(service, "logins_required", False) else (
            " **Restart `mgrag serve`** to require logins: it started without users.")
        return render.plain_text_markdown("Users: " + ", ".join(names) + ".") + note

    @admin
    def on_user_add(self, token, name, password):
        self.service.add_user(token, name, password)
        return self.users_text(token), gr.update(value="")

    @admin
    def on_user_remove(self, token, name, documents=None):
        self.service.remove_user(token, (name or "").strip(), documents)
        return self.users_text(token), gr.update(value="")

    def keys_table(self, token):
        def when(t):
            return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else ""

        rows = [[r["name"], r["user"], r["starts"], when(r["created"]), when(r["last used"]) or "never",
                 "revoked " + when(r["revoked"]) if r["revoked"] else "active"] for r in self.service.key_rows(token)]
        return pd.DataFrame(rows, columns=["name", "user", "starts with", "made", "last used", "state"])

    @admin
    def on_key_list(self, token):
        return self.keys_table(token), gr.update(value="", visible=False)

    @admin
    def on_key_add(self, token, name, user):
        key = self.service.add_key(token, name, user)
        gr.Info(f"API key {name.strip()!r} made for {user.strip()}; copy it now, it is shown once")
        return self.keys_table(token), gr.update(value=key, visible=True)

    @admin
    def on_key_revoke(self, token, name):
        self.service.revoke_key(token, (name or "").strip())
        return self.keys_table(token), gr.update(value="", visible=False)

    # -- statistics, router training, the chunk inspector ------------------------------------------------------------
    @admin
    def on_stats(self, token):
        fig, missing = render.plot_or_note(render.histogram_figure, self.service.chunk_lengths(token))
        if missing:
            gr.Warning(missing)
        return fig

    @admin
    def on_train(self, token, sets, progress=gr.Progress()):
        service = self.service
        service.auth.check(token)
        progress(None, desc="training the router")
        try:
            rep = service.train_router(token, list(sets or []))
        except ValueError as e:
            raise error(e) from e
        except Exception as e:  # the router's own errors (no labels, wrong encoder, …) carry their message
            raise gr.Error(f"router training failed: {e}") from e
        h = rep["history"]
        fig, missing = render.plot_or_note(render.loss_figure, h["train"], h.get("val"))
        lead = f"{missing} " if missing else ""
        return (fig,
                lead + f"Trained on {rep['n_questions']} question(s): validation loss {h['best_val']:.4f} at epoch "
                f"{h['best_epoch']} of {len(h['train'])}; saved to the data dir's router folder. "
                + ("The chat now uses it." if service.settings.router == "default" else
                   "The chat uses it with MGRAG_ROUTER=default (the default is none, uniform weights: no router "
                   "beat them on held-out questions, see the README)."))

    @admin
    def on_inspect_docs(self, token):
        _, rows = self.service.documents(token)
        return gr.update(choices=[r["document"] for r in rows])

    @admin
    def on_inspect(self, token, doc, question, theta, words_from, progress=gr.Progress()):
        from PIL import Image

        progress(None, desc="inspecting (runs the chunker LM over the document)")
        start = int(words_from or 0)
        png, page, summary = self.service.inspect(token, doc, question, int(theta) if theta else None,
                                                  (start, start + 3000))
        frame = (f'<iframe sandbox="" style="width:100%;height:640px;border:1px solid #ccc" '
                 f'srcdoc="{html.escape(page, quote=True)}"></iframe>')
        return Image.open(io.BytesIO(png)), frame, summary

    # -- events --------------------------------------------------------------------------------------------------
    def wire(self) -> None:
        c = self.c
        login_out = [c.token_state, self.admin_panel, self.login_msg, self.docs_df, self.selected, self.live_md,
                     *self.llm.fields(), self.users_md, self.login_row, self.pw_in]
        self.logout_btn.click(self.on_logout, [c.token_state], [c.token_state, self.admin_panel, self.login_msg,
                                                                 self.login_row], api_visibility="private")
        self.user_add_btn.click(self.on_user_add, [c.token_state, self.user_name_in, self.user_pw_in],
                                [self.users_md, self.user_pw_in], api_name="admin_user_add")
        self.user_remove_btn.click(self.on_user_remove, [c.token_state, self.user_name_in, self.user_docs_in],
                                   [self.users_md, self.user_pw_in], api_name="admin_user_remove")
        self.key_list_btn.click(self.on_key_list, [c.token_state], [self.keys_df, self.key_out],
                                api_name="admin_keys")
        self.key_add_btn.click(self.on_key_add, [c.token_state, self.key_name_in, self.key_user_in],
                               [self.keys_df, self.key_out], api_name="admin_key_add")
        self.key_revoke_btn.click(self.on_key_revoke, [c.token_state, self.key_name_in], [self.keys_df, self.key_out],
                                  api_name="admin_key_revoke")
        on_login, on_queue = self.on_login, self.on_queue  # one function each for all their events, as before
        # a login first makes a new token in the page (no server call), then presents it with the credentials
        self.login_btn.click(None, None, [c.token_state], js=ADMIN_TOKEN_JS, api_visibility="private").then(
            on_login, [self.user_in, self.pw_in, c.token_state], login_out, api_name="admin_login").then(
            on_queue, [c.token_state], [self.queue_df, self.queue_timer], api_visibility="private")
        self.pw_in.submit(None, None, [c.token_state], js=ADMIN_TOKEN_JS, api_visibility="private").then(
            on_login, [self.user_in, self.pw_in, c.token_state], login_out, api_visibility="private").then(
            on_queue, [c.token_state], [self.queue_df, self.queue_timer], api_visibility="private")
        self.queue_timer.tick(on_queue, [c.token_state], [self.queue_df, self.queue_timer], api_visibility="private",
                              show_progress="hidden")
        self.wire_documents()

    def wire_documents(self) -> None:
        c, doc_out = self.c, [self.docs_df, self.selected, self.live_md]
        self.cancel_jobs_btn.click(self.on_cancel_jobs, [c.token_state, self.cancel_ids_in],
                                   [self.queue_df, self.queue_msg], api_name="admin_cancel_jobs")
        self.refresh_btn.click(self.on_docs, [c.token_state], doc_out, api_name="admin_docs")
        self.delete_btn.click(self.on_delete, [c.token_state, self.selected], doc_out + [self.admin_msg],
                              api_name="admin_delete")
        self.reingest_btn.click(self.on_reingest, [c.token_state, self.selected, self.chunker_in, self.theta_in,
                                                   self.which_in], doc_out + [self.admin_msg],
                                api_name="admin_reingest", concurrency_limit=1)
        self.stats_btn.click(self.on_stats, [c.token_state], [self.stats_plot], api_name="admin_stats")
        self.inspect_docs_btn.click(self.on_inspect_docs, [c.token_state], [self.inspect_doc],
                                    api_visibility="private")
        self.inspect_btn.click(self.on_inspect, [c.token_state, self.inspect_doc, self.inspect_q, self.inspect_theta,
                                                 self.inspect_from], [self.inspect_img, self.inspect_html,
                                                                      self.inspect_summary],
                               api_name="admin_inspect", concurrency_limit=1)
        self.train_btn.click(self.on_train, [c.token_state, self.train_sets], [self.loss_plot, self.train_msg],
                             api_name="admin_train_router", concurrency_limit=1)

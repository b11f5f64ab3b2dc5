"""The Chat tab: conversations on the left (:mod:`ui.rooms.conversations`), the streamed answers with their sources
in the middle, the upload panel (:mod:`ui.rooms.uploads`), the conversation's scope and the session settings on the
right. It makes the shared ``scope_in``, ``backend_in`` and ``backend_note`` and fills the Evaluate tab's
``answer_pick``."""
import html
import logging

import gradio as gr

from core import components
from services import render
from services.chat import RETRIEVERS, EmptyIndexError
from ui.rooms.context import RoomContext, pick_choices
from ui.rooms.conversations import ConversationsPanel, memory_of
from ui.rooms.uploads import UploadPanel

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): services.conversations

log = logging.getLogger("ui.app")  # the name it always had (log filters, tests)


class ChatRoom:
    def __init__(self, c: RoomContext):
        self.c, self.service = c, c.service
        self.conversations = ConversationsPanel(c, self.answer_messages)
        self.uploads = UploadPanel(c)

    # -- layout ------------------------------------------------------------------------------------------------
    def layout(self) -> None:
        c = self.c
        with gr.Tab("Chat", id="chat"):
            with gr.Row():
                self.conversations.layout()
                with gr.Column(scale=3):
                    self.chatbot = gr.Chatbot(label="Answers", height=680, elem_id="chatbot", buttons=["copy"],
                                              sanitize_html=True, allow_tags=False, latex_delimiters=[])
                    with gr.Row():
                        self.question = gr.Textbox(placeholder="Ask a question about your documents…",
                                                   show_label=False, scale=5, elem_id="question", max_lines=4)
                        self.ask_btn = gr.Button("Ask", variant="primary", scale=1, elem_id="ask")
                    self.weights_plot = gr.HTML("", elem_id="weights-plot")
                with gr.Column(scale=2):
                    self.uploads.layout_upload()
                    c.scope_in = gr.CheckboxGroup([], label="Search in (this conversation; none ticked: all your "
                                                            "documents)", elem_id="scope")
                    self.uploads.layout_own()
                    self.layout_settings()

    def layout_settings(self) -> None:
        c, s = self.c, self.c.settings
        with gr.Accordion("Session settings", open=False, elem_id="session-settings"):
            self.k_in = gr.Slider(1, 50, value=s.top_k, step=1, label="k: hits per level")
            self.budget_in = gr.Slider(50, 5000, value=s.context_words, step=50, label="context budget (words)")
            self.retriever_in = gr.Radio(list(RETRIEVERS), value=s.retriever, label="retriever")
            c.backend_in = gr.Dropdown(list(components.BACKENDS), value=s.synth_backend, label="backend",
                                       elem_id="backend")
            c.backend_note = gr.Markdown(elem_id="backend-note")

    # -- answers -------------------------------------------------------------------------------------------------
    def answer_messages(self, a: dict, draft: str = "") -> list[dict]:
        """The chat messages of a finished answer: the reply (or the backend's failure), then its sources (or the
        closest passages of an abstention) as a collapsible message with viewer links."""
        service = self.service
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
                                      floor=service.settings.source_floor if a["retriever"] == "dense" else 0.0)
                + f'<div class="mg-scores">{a["backend"]} via {a["retriever"]}: {render.timing_line(t)}</div>')
        title = (f"Closest passages ({len(a['sources'])})" if a.get("abstained")
                 else f"Sources ({len(a['sources'])})")
        routed = (a.get("grounding") or {}).get("routed")
        shown = self.c.shown(reply) if reply else "(no answer)"
        if routed and routed.get("documents"):  # which documents the question was sent to, and why (app/routing.py)
            labels = {x["doc_id"]: x.get("name") or x["doc_id"] for x in a["sources"]}
            names = ", ".join(labels.get(d, d) for d in routed["documents"][:4])
            more = f" and {len(routed['documents']) - 4} more" if len(routed["documents"]) > 4 else ""
            shown += "\n\n" + self.c.shown(f"(Searched only {names}{more}: {routed.get('why') or ''}. To search "
                                            "others, tick them under Search in.)")
        return [{"role": "assistant", "content": shown},
                {"role": "assistant", "content": body, "metadata": {"title": title, "status": "done"}}]

    def on_ask(self, question, history, answers, conversation, k, budget, retriever, backend, browser_id, conv_id,
               scope, request: gr.Request):
        """Stream one turn: what is happening while the user waits (retrieving, N sources, generating; the model's
        draft as it grows only when grounding is off), then the reply checked against the sources (an abstention says
        so plainly and shows the closest passages, uncited) with the supporting sentences highlighted. The turns
        of the conversation (a plain list, ``conversation``) let a follow-up be understood."""
        service = self.service
        history = list(history or [])
        answers = list(answers or [])
        conversation = list(conversation or [])
        question = (question or "").strip()
        history.append({"role": "user", "content": render.plain_text_markdown(question)})
        history.append({"role": "assistant", "content": "⏳ *retrieving…*"})
        same = gr.update()
        yield history, answers, conversation, same, same, "", conv_id, same
        text = ""
        grounded = service.settings.grounding
        try:
            owner = self.c.reader_of(browser_id, request)
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
                               "sources before it is shown…*" if grounded else self.c.shown(text))
                    history[-1] = {"role": "assistant", "content": content}
                    yield history, answers, conversation, same, same, "", conv_id, same
                elif kind == "done":
                    from services.conversations import bounded_answer

                    a = bounded_answer(value.to_dict())  # what the page gets and the conversation keeps
                    answers.append(a)
                    history[-1:] = self.answer_messages(a, draft=text)
                    conversation += memory_of([{"question": question, "answer": a}])
                    conv_id, listing = self.conversations.remember(owner, conv_id, question, a, scope)
                    choices = [(render.answer_label(i, x), i) for i, x in enumerate(answers)]
                    yield (history, answers, conversation, render.weight_bars(a["weights"]),
                           gr.update(choices=choices, value=len(answers) - 1), "", conv_id, listing)
        except Exception as e:  # question refused, empty index, …: say so in the chat
            if not isinstance(e, (ValueError, EmptyIndexError)):
                log.exception("answering failed")
            history[-1] = {"role": "assistant", "content": "⚠️ " + render.plain_text_markdown(str(e))}
            yield history, answers, conversation, gr.update(), gr.update(), "", conv_id, gr.update()

    def on_settings(self, k, budget, retriever, backend):
        return {"k": int(k), "budget": int(budget), "retriever": retriever, "backend": backend}

    # -- events --------------------------------------------------------------------------------------------------
    def restored(self) -> list:
        """What a (re)loaded page restores (:meth:`ConversationsPanel.on_restore`)."""
        c, v = self.c, self.conversations
        return [self.chatbot, c.answers_state, c.conversation_state, c.current, v.conv_list, c.scope_in, self.k_in,
                self.budget_in, self.retriever_in, c.saved_backend]

    def wire_conversations(self) -> None:
        c, v = self.c, self.conversations
        fresh = [self.chatbot, c.answers_state, c.conversation_state, c.current, v.conv_list, c.scope_in]
        v.new_btn.click(v.on_new_conversation, [c.browser], fresh, api_visibility="private")
        # an opened conversation's answers are the Evaluate tab's choices
        v.conv_list.input(v.on_pick_conversation, [v.conv_list, c.browser],
                          [self.chatbot, c.answers_state, c.conversation_state, c.current, c.scope_in, v.rename_in],
                          api_visibility="private").then(
            lambda answers: pick_choices(answers), [c.answers_state], [c.answer_pick], api_visibility="private")
        v.rename_btn.click(v.on_rename_conversation, [c.current, v.rename_in, c.browser], [v.conv_list, v.rename_in],
                           api_name="rename_conversation")
        v.delete_conv_btn.click(v.on_delete_conversation, [c.current, c.browser], fresh,
                                api_name="delete_conversation")
        c.scope_in.input(v.on_scope, [c.scope_in, c.current, c.browser], [], api_visibility="private")

    def wire_settings(self) -> None:
        c = self.c
        on_settings = self.on_settings  # one function for the four events (they share its concurrency group)
        settings = [self.k_in, self.budget_in, self.retriever_in, c.backend_in]
        for control in (self.k_in, self.budget_in):
            control.release(on_settings, settings, [c.saved_settings], api_visibility="private")
        for control in (self.retriever_in, c.backend_in):
            control.input(on_settings, settings, [c.saved_settings], api_visibility="private")

    def wire_uploads(self) -> None:
        c, u = self.c, self.uploads
        refresh_scope = self.conversations.refresh_scope  # one function for both events, as before
        u.files.upload(u.on_upload, [u.files, c.browser],
                       [u.upload_report, u.files, u.my_docs, u.upload_rows_state, u.upload_timer, c.scope_in],
                       api_name="upload", concurrency_limit=16, show_progress="hidden").then(
            refresh_scope, [c.browser, c.scope_in], [c.scope_in], api_visibility="private", show_progress="hidden")
        u.upload_timer.tick(u.on_upload_tick, [u.upload_rows_state], [u.upload_report, u.upload_timer],
                            api_visibility="private", show_progress="hidden")
        u.cancel_upload_btn.click(u.on_cancel_upload, [u.upload_rows_state, c.browser], [u.upload_report],
                                  api_name="cancel_upload")
        u.delete_mine_btn.click(u.on_delete_mine, [c.browser, u.my_docs], [u.my_docs], api_name="delete_upload").then(
            refresh_scope, [c.browser, c.scope_in], [c.scope_in], api_visibility="private", show_progress="hidden")

    def wire_ask(self) -> None:
        c = self.c
        ask_args = dict(fn=self.on_ask, inputs=[self.question, self.chatbot, c.answers_state, c.conversation_state,
                                                self.k_in, self.budget_in, self.retriever_in, c.backend_in, c.browser,
                                                c.current, c.scope_in],
                        outputs=[self.chatbot, c.answers_state, c.conversation_state, self.weights_plot,
                                 c.answer_pick, self.question, c.current, self.conversations.conv_list],
                        concurrency_limit=None)
        self.ask_btn.click(api_name="ask", **ask_args)
        self.question.submit(api_visibility="private", **ask_args)

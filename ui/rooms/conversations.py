"""The Chat tab's conversations: the list kept server side per owner, opening one (its answers, its memory, its
scope), new, rename, delete, the scope ("Search in") kept with the conversation, and a reloaded page's restore."""
import gradio as gr

from services import render
from services.conversations import ConversationNotFound
from ui.rooms.context import RoomContext, error


def memory_of(turns: list[dict]) -> list[dict]:
    """The conversation memory (plain turns) of stored ``{"question", "answer"}`` turns."""
    out = []
    for t in turns:
        out += [{"role": "user", "content": t["question"], "query": t["answer"].get("query", t["question"])},
                {"role": "assistant", "content": t["answer"].get("text", "")}]
    return out


class ConversationsPanel:
    def __init__(self, c: RoomContext, answer_messages):
        """``answer_messages(answer)``: the chat messages of a stored answer (the Chat room's)."""
        self.c, self.service, self.answer_messages = c, c.service, answer_messages

    def layout(self) -> None:
        with gr.Column(scale=1, min_width=200, elem_id="conversations-panel"):
            self.new_btn = gr.Button("+ New conversation", size="sm", elem_id="new-conversation")
            self.conv_list = gr.Radio([], label="Conversations", elem_id="conversations")
            with gr.Accordion("Rename or delete", open=False, elem_id="conversation-edit"):
                self.rename_in = gr.Textbox(show_label=False, placeholder="new title", elem_id="rename-title")
                with gr.Row():
                    self.rename_btn = gr.Button("Rename", size="sm", elem_id="rename-conversation")
                    self.delete_conv_btn = gr.Button("Delete", size="sm", variant="stop",
                                                     elem_id="delete-conversation")

    # -- helpers -------------------------------------------------------------------------------------------------
    def conversation_list(self, owner, current=None):
        items = self.service.conversations.list(owner) if owner else []
        return gr.update(choices=[(c["title"], c["id"]) for c in items],
                         value=current if any(c["id"] == current for c in items) else None)

    def remember(self, owner, conv_id, question, a, scope):
        """Store the turn in the conversation (a new one for the first question); its id and the updated list."""
        if not owner:
            return conv_id, gr.update()

        conversations = self.service.conversations
        try:
            if not conv_id:
                raise ConversationNotFound(conv_id)
            conversations.add_turn(owner, conv_id, question, a)
        except ConversationNotFound:
            conv_id = conversations.create(owner, title=question, scope=list(scope or []))
            conversations.add_turn(owner, conv_id, question, a)
        return conv_id, self.conversation_list(owner, conv_id)

    def open_conversation(self, owner, conv_id):
        """(chatbot, answers, memory, scope, conversation id) of a stored conversation, or of a new one."""
        try:
            conv = self.service.conversations.get(owner, conv_id) if owner and conv_id else None
        except ConversationNotFound:
            conv = None
        if conv is None:
            return [], [], [], [], None
        history, answers = [], []
        for t in conv["turns"]:
            history.append({"role": "user", "content": render.plain_text_markdown(t["question"])})
            history += self.answer_messages(t["answer"])
            answers.append(t["answer"])
        return history, answers, memory_of(conv["turns"]), conv["scope"], conv["id"]

    def scope_choices(self, owner, value=()):
        docs = self.service.searchable_choices(owner) if owner else []
        ids = {d for _, d in docs}
        return gr.update(choices=docs, value=[d for d in value or () if d in ids])

    # -- handlers ----------------------------------------------------------------------------------------------
    def on_restore(self, browser_id, conv_id, saved, shown_now, request: gr.Request):
        """A (re)loaded page: this browser's conversations, the one it had open, and its session settings. A
        question asked while the page was still loading is not overwritten."""
        owner = self.c.reader_of(browser_id, request)
        keep = gr.update
        if shown_now:
            return (keep(), keep(), keep(), keep(), self.conversation_list(owner, conv_id), self.scope_choices(owner),
                    keep(), keep(), keep(), None)
        history, answers, memory, scope, conv_id = self.open_conversation(owner, conv_id)
        saved = saved if isinstance(saved, dict) else {}
        return (history, answers, memory, conv_id, self.conversation_list(owner, conv_id),
                self.scope_choices(owner, scope),
                keep(value=saved["k"]) if "k" in saved else keep(),
                keep(value=saved["budget"]) if "budget" in saved else keep(),
                keep(value=saved["retriever"]) if "retriever" in saved else keep(),
                saved.get("backend"))

    def on_pick_conversation(self, conv_id, browser_id, request: gr.Request):
        owner = self.c.reader_of(browser_id, request)
        history, answers, memory, scope, conv_id = self.open_conversation(owner, conv_id)
        return history, answers, memory, conv_id, self.scope_choices(owner, scope), gr.update(value=None)

    def on_new_conversation(self, browser_id, request: gr.Request):
        owner = self.c.reader_of(browser_id, request)
        return [], [], [], None, self.conversation_list(owner), self.scope_choices(owner)

    def on_rename_conversation(self, conv_id, title, browser_id, request: gr.Request):
        owner = self.c.owner_of(browser_id, request)
        if not conv_id:
            raise gr.Error("open a conversation first")
        try:
            self.service.conversations.rename(owner, conv_id, title)
        except (KeyError, ValueError) as e:
            raise error(e) from e
        return self.conversation_list(owner, conv_id), ""

    def on_delete_conversation(self, conv_id, browser_id, request: gr.Request):
        owner = self.c.owner_of(browser_id, request)
        if conv_id:
            try:
                self.service.conversations.delete(owner, conv_id)
            except KeyError as e:
                raise error(e) from e
        return [], [], [], None, self.conversation_list(owner), self.scope_choices(owner)

    def on_scope(self, scope, conv_id, browser_id, request: gr.Request):
        """A conversation's scope is kept with it (a new conversation takes it on its first question)."""
        owner = self.c.reader_of(browser_id, request)
        if owner and conv_id:
            try:
                self.service.conversations.set_scope(owner, conv_id, list(scope or []))
            except KeyError:
                pass

    def refresh_scope(self, browser_id, scope, request: gr.Request):
        return self.scope_choices(self.c.reader_of(browser_id, request), scope)

"""The Admin tab's LLM endpoint (OpenAI-compatible: Ollama, llama.cpp server, vLLM, …): list the models, test the
connection, save it (the admin password asked again); a save refreshes the Chat tab's backend menu."""
import gradio as gr

from services import render
from services.service import AdminRequired
from ui.rooms.context import RoomContext, admin, client_host

KEY_SET = "a key is stored (type a new one to replace it)"
KEY_HINT = "API key (if the server needs one)"


class LlmPanel:
    def __init__(self, c: RoomContext):
        self.c, self.service = c, c.service

    def layout(self) -> None:
        with gr.Accordion("LLM endpoint (OpenAI-compatible: Ollama, llama.cpp server, vLLM, …)", open=True,
                          elem_id="llm-admin"):
            with gr.Row():
                self.llm_url = gr.Textbox(label="base URL", placeholder="http://127.0.0.1:11434/v1", scale=3,
                                          elem_id="llm-url")
                self.llm_key = gr.Textbox(label="API key (kept on the server; empty keeps the stored one)",
                                          type="password", scale=2, elem_id="llm-key")
            with gr.Row():
                self.llm_list_btn = gr.Button("List models", scale=0, elem_id="llm-list")
                self.llm_model = gr.Dropdown([], label="model", allow_custom_value=True, scale=2, elem_id="llm-model")
                self.llm_test_btn = gr.Button("Test connection", scale=0, elem_id="llm-test")
                self.llm_pw = gr.Textbox(label="admin password (asked again to save)", type="password", scale=1,
                                         elem_id="llm-password")
                self.llm_save_btn = gr.Button("Save", variant="primary", scale=0, elem_id="llm-save")
            self.llm_msg = gr.Markdown(elem_id="llm-msg")

    def fields(self) -> list:
        """What a login fills (:meth:`llm_fields`)."""
        return [self.llm_url, self.llm_key, self.llm_model]

    def llm_fields(self, token):
        e = self.service.llm_endpoint(token)
        hint = KEY_SET if e["key_set"] else KEY_HINT
        return (gr.update(value=e["base_url"]), gr.update(value="", placeholder=hint),
                gr.update(value=e["model"] or None, choices=[e["model"]] if e["model"] else []))

    # -- handlers ----------------------------------------------------------------------------------------------
    @admin
    def on_llm_list(self, token, url, key):
        try:
            models = self.service.llm_models(token, url, key or None)
        except ValueError as e:
            return gr.update(), "⚠️ " + render.plain_text_markdown(str(e))
        return (gr.update(choices=models, value=models[0] if models else None),
                render.plain_text_markdown(f"{len(models)} model(s): {', '.join(models[:12])}"))

    @admin
    def on_llm_test(self, token, url, model, key):
        try:
            return "✅ " + render.plain_text_markdown(self.service.llm_test(token, url, model or "", key or None))
        except ValueError as e:
            return "⚠️ " + render.plain_text_markdown(str(e))

    @admin
    def on_llm_save(self, token, url, model, key, password, current_backend, request: gr.Request):
        """Saving asks for the admin password again: the stored key goes to whatever endpoint is saved."""
        service = self.service
        service.auth.check(token)
        try:
            e = service.set_llm(token, url, model or "", key or None, password=password,
                                client=client_host(request))
        except AdminRequired as e:
            return "⚠️ " + render.plain_text_markdown(str(e)), gr.update(), gr.update(), gr.update(), gr.update(value="")
        menu, note = self.c.backend_menu(current_backend)
        if e["base_url"]:
            msg = (render.plain_text_markdown(f"Saved: {e['base_url']} · model {e['model'] or 'default'}"
                                              f"{' · key stored' if e['key_set'] else ''}.")
                   + " The chat's **openai** backend uses it from the next question.")
        else:
            msg = "Endpoint removed."
        hint = KEY_SET if e["key_set"] else KEY_HINT
        return msg, gr.update(value="", placeholder=hint), menu, note, gr.update(value="")

    # -- events --------------------------------------------------------------------------------------------------
    def wire(self) -> None:
        """A save also refreshes the Chat tab's backend menu and its note."""
        c = self.c
        self.llm_list_btn.click(self.on_llm_list, [c.token_state, self.llm_url, self.llm_key],
                                [self.llm_model, self.llm_msg], api_name="admin_llm_models")
        self.llm_test_btn.click(self.on_llm_test, [c.token_state, self.llm_url, self.llm_model, self.llm_key],
                                [self.llm_msg], api_name="admin_llm_test")
        self.llm_save_btn.click(self.on_llm_save, [c.token_state, self.llm_url, self.llm_model, self.llm_key,
                                                   self.llm_pw, c.backend_in],
                                [self.llm_msg, self.llm_key, c.backend_in, c.backend_note, self.llm_pw],
                                api_name="admin_llm_save")

"""The Evaluate tab: pick an answer of the conversation, see the chunks retrieved at every level, rate it, tick the
sources that hold the answer (the evidence), save and export; and benchmark a question set over the live index.
It makes the shared ``answer_pick`` (the Chat tab fills it)."""
import gradio as gr
import pandas as pd

from services import render
from services.evaluation import qa_f1_score
from ui.rooms.context import RoomContext, client_host, error


def pick(answers, idx):
    if not answers:
        return None
    if idx is None or not (0 <= int(idx) < len(answers)):
        idx = len(answers) - 1
    return answers[int(idx)]


class EvaluateRoom:
    def __init__(self, c: RoomContext):
        self.c, self.service = c, c.service

    # -- layout ------------------------------------------------------------------------------------------------
    def layout(self) -> None:
        c = self.c
        with gr.Tab("Evaluate", id="evaluate"):
            with gr.Row():
                c.answer_pick = gr.Dropdown([], label="Answer (this conversation)", elem_id="answer-pick", scale=3)
                self.eval_k = gr.Slider(1, 20, value=5, step=1, label="chunks per level", scale=1)
            self.answer_md = gr.Markdown("*Ask a question on the Chat tab first.*", elem_id="answer-md")
            with gr.Row():
                self.reference_in = gr.Textbox(label="reference answer", scale=3, elem_id="reference")
                self.f1_md = gr.Markdown("F1: -", elem_id="f1")
            with gr.Row():
                self.rating_in = gr.Radio(["good", "bad"], label="rating", elem_id="rating")
                self.comment_in = gr.Textbox(label="comment", scale=2, elem_id="comment")
                self.relevant_in = gr.CheckboxGroup([], label="relevant sources (the evidence)", elem_id="relevant")
            with gr.Row():
                self.save_btn = gr.Button("Save evaluation", variant="primary", elem_id="save-eval")
                self.export_btn = gr.Button("Export JSONL", elem_id="export")
            self.eval_msg = gr.Markdown(elem_id="eval-msg")
            self.export_file = gr.File(label="feedback.jsonl (router training format)", elem_id="export-file",
                                       interactive=False)
            with gr.Accordion("Retrieved chunks at every level", open=True):
                self.hits_df = gr.Dataframe(interactive=False, elem_id="level-hits", wrap=True)
            with gr.Accordion("Sources of this answer", open=False):
                self.eval_sources = gr.HTML()
            self.layout_bench()

    def layout_bench(self) -> None:
        gr.Markdown("### Benchmark over the live index")
        with gr.Row():
            self.bench_set = gr.Dropdown(self.service.bench_sets(), value=None, elem_id="bench-set",
                                         label="evaluation set (the samples', your own evaluations, or a bench set)")
            self.bench_file = gr.File(label="or upload questions.jsonl", file_types=[".jsonl"], type="filepath")
            self.bench_k = gr.Slider(1, 50, value=20, step=1, label="top k per level")
            self.bench_btn = gr.Button("Run benchmark", elem_id="run-bench")
        self.bench_note = gr.Markdown(elem_id="bench-note")
        with gr.Row():
            self.bench_df = gr.Dataframe(headers=["metric", "value"], interactive=False, elem_id="bench-table")
            self.bench_plot = gr.Plot(label="metrics")

    # -- handlers ----------------------------------------------------------------------------------------------
    def on_pick(self, answers, idx, k, browser_id, request: gr.Request):
        a = pick(answers, idx)
        if a is None:
            return "*Ask a question on the Chat tab first.*", gr.update(choices=[], value=[]), None, ""
        hits = self.service.level_hits(a["question"], k=int(k),
                                       retriever=a["retriever"] if a["retriever"] != "none" else "dense",
                                       owner=self.c.reader_of(browser_id, request))
        df = pd.DataFrame(hits, columns=["retriever", "level", "rank", "score", "document", "chars", "text"])

        choices = [(" · ".join(filter(None, (f"[{x['number']}] {x.get('name') or x['doc_id']}",
                                             render.place_label(x.get("pages"), [], x.get("unit"))))), x["number"])
                   for x in a["sources"]]  # with the page: six sources of one file are told apart
        cited = [c["number"] for c in a["citations"]]
        md = (f"**Q:** {render.plain_text_markdown(a['question'])}\n\n"
              f"**A:** {self.c.shown(a['text']) if a['text'] else '(no answer)'}")
        # nothing ticked to start with: the evidence is what the user looked at and chose, not the citations
        return md, gr.update(choices=choices, value=[]), df, render.sources_html(a["sources"], set(cited))

    def on_f1(self, answers, idx, reference):
        a = pick(answers, idx)
        if a is None or not (reference or "").strip():
            return "F1: enter a reference answer"
        return f"F1: {qa_f1_score(a['text'], reference):.3f}"

    def on_save(self, answers, idx, reference, rating, comment, relevant, browser_id, request: gr.Request):
        a = pick(answers, idx)
        try:
            eid, f1, n_ev = self.service.evaluate(a, reference=reference, rating=rating or None, comment=comment,
                                                  relevant=[int(x) for x in (relevant or [])],
                                                  owner=self.c.owner_of(browser_id, request))
        except ValueError as e:
            raise error(e) from e
        f1s = f"; F1 {f1:.3f}" if f1 is not None else ""
        return f"Saved evaluation #{eid}{f1s}; {n_ev} evidence span(s)."

    def on_export(self, browser_id, request: gr.Request):
        path, n = self.service.export_feedback(owner=self.c.owner_of(browser_id, request))
        gr.Info(f"{n} of your evaluation(s) exported")
        return str(path), f"{n} record(s) in {path.name} (bench format: id, question, doc_id, answers, evidence)"

    def on_bench(self, set_name, upload, k, browser_id, request: gr.Request, progress=gr.Progress()):
        ref = upload or set_name
        if not ref:
            raise gr.Error("choose a bench set or upload a questions.jsonl")
        progress(None, desc="running the benchmark")
        try:
            res = self.service.run_benchmark(ref, k=int(k), owner=self.c.reader_of(browser_id, request),
                                             client=client_host(request))
        except (ValueError, FileNotFoundError) as e:
            raise error(e) from e
        note = f"{res['n_questions']} question(s) over the live index"
        if res.get("skipped_docs"):
            note += f"; skipped (not in the index): {', '.join(res['skipped_docs'][:8])}"
        if res.get("mismatched_docs"):
            note += f"; skipped (text differs from the set's): {', '.join(res['mismatched_docs'][:8])}"
        fig, missing = render.plot_or_note(render.bench_figure, res)
        note = render.plain_text_markdown(note + (f". {missing}" if missing else ""))
        return pd.DataFrame(render.bench_table(res), columns=["metric", "value"]), fig, note

    # -- events --------------------------------------------------------------------------------------------------
    def wire(self) -> None:
        c = self.c
        on_pick = self.on_pick  # one function for both events (they share its concurrency group)
        pick_out = [self.answer_md, self.relevant_in, self.hits_df, self.eval_sources]
        c.answer_pick.change(on_pick, [c.answers_state, c.answer_pick, self.eval_k, c.browser], pick_out,
                             api_visibility="private")
        self.eval_k.release(on_pick, [c.answers_state, c.answer_pick, self.eval_k, c.browser], pick_out,
                            api_visibility="private")
        self.reference_in.change(self.on_f1, [c.answers_state, c.answer_pick, self.reference_in], [self.f1_md],
                                 api_visibility="private")
        self.save_btn.click(self.on_save, [c.answers_state, c.answer_pick, self.reference_in, self.rating_in,
                                           self.comment_in, self.relevant_in, c.browser],
                            [self.eval_msg], api_name="save_evaluation")
        self.export_btn.click(self.on_export, [c.browser], [self.export_file, self.eval_msg],
                              api_name="export_feedback")
        self.bench_btn.click(self.on_bench, [self.bench_set, self.bench_file, self.bench_k, c.browser],
                             [self.bench_df, self.bench_plot, self.bench_note], api_name="benchmark")

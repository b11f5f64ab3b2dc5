"""The CLI's exit codes: `mgrag ingest` fails (1) when any file fails, with a summary line."""
from __future__ import annotations

from cli.main import main


def test_ingest_exits_1_when_any_file_fails(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MGRAG_EMBEDDER", "hashing")
    monkeypatch.setenv("MGRAG_CHUNKER", "recursive")
    (tmp_path / "good.md").write_text("The ferry leaves at noon. It returns at six.", encoding="utf-8")
    (tmp_path / "empty.md").write_text("   ", encoding="utf-8")
    data = str(tmp_path / "data")
    rc = main(["--data-dir", data, "ingest", "--quiet", str(tmp_path / "good.md"), str(tmp_path / "empty.md")])
    out = capsys.readouterr().out
    assert rc == 1 and "FAILED     empty.md: is empty; nothing to ingest" in out
    assert "1 ready, 0 searchable (refinement pending), 0 queued, 0 unchanged/duplicate, 1 failed" in out
    assert main(["--data-dir", data, "ingest", "--quiet", str(tmp_path / "good.md")]) == 0  # a duplicate is fine


def test_ask_with_doc_searches_only_that_document(tmp_path, capsys, monkeypatch):
    import json

    monkeypatch.setenv("MGRAG_EMBEDDER", "hashing")
    monkeypatch.setenv("MGRAG_CHUNKER", "recursive")
    (tmp_path / "ferry.md").write_text("The ferry leaves at noon from the east pier. It returns at six.",
                                       encoding="utf-8")
    (tmp_path / "bakery.md").write_text("The bakery opens at five. The ferry crew buys rye bread there.",
                                        encoding="utf-8")
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "ingest", "--quiet", str(tmp_path / "ferry.md"), str(tmp_path / "bakery.md")]) == 0
    capsys.readouterr()
    rc = main(["--data-dir", data, "ask", "--backend", "extractive", "--doc", "bakery.md", "--json",
               "When does the ferry leave?"])
    answer = json.loads(capsys.readouterr().out)
    assert rc == 0 and {s["doc_id"] for s in answer["sources"]} == {"bakery.md"}
    assert main(["--data-dir", data, "ask", "--doc", "nope.md", "When?"]) == 2
    assert "no document matches 'nope.md'" in capsys.readouterr().err


def test_two_files_with_the_same_name_are_both_kept(tmp_path, capsys, monkeypatch):
    """`mgrag ingest a/notes.md b/notes.md`: the first keeps its name, the second is named by its folder
    (b/notes.md); neither replaces the other. The same file given twice is one document."""
    import json

    from app.context import AppContext
    from core.settings import Settings

    monkeypatch.setenv("MGRAG_EMBEDDER", "hashing")
    monkeypatch.setenv("MGRAG_CHUNKER", "recursive")
    for d, text in (("a", "The ferry leaves at noon from the east pier."), ("b", "The bakery opens at five.")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "notes.md").write_text(text, encoding="utf-8")
    a, b = str(tmp_path / "a" / "notes.md"), str(tmp_path / "b" / "notes.md")
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "ingest", "--quiet", a, b, str(tmp_path / "a" / ".." / "a" / "notes.md")]) == 0
    out = capsys.readouterr().out
    assert "2 ready" in out and "b/notes.md" in out
    assert main(["--data-dir", data, "docs", "--json"]) == 0
    docs = {r["doc_id"] for r in json.loads(capsys.readouterr().out)["documents"]}
    assert docs == {"notes.md", "b/notes.md"}
    ctx = AppContext(Settings(data_dir=data))
    texts = {r["doc_id"]: ctx.store.text(r["hash"]) for r in ctx.catalog.documents(None)}
    assert texts == {"notes.md": "The ferry leaves at noon from the east pier.",
                     "b/notes.md": "The bakery opens at five."}
    ctx.close()


def test_a_missing_extra_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    """`mgrag inspect` where matplotlib (the plots extra) is not installed: one line saying what to install, exit 3,
    no traceback."""
    from services import render
    from services.commands import CommandsPart

    def no_plots(self, *a, **kw):
        return render.figure()

    monkeypatch.setenv("MGRAG_EMBEDDER", "hashing")
    monkeypatch.setattr(render, "figure", lambda **kw: (_ for _ in ()).throw(render.PlotsMissing(render.PLOTS_MISSING)))
    monkeypatch.setattr(CommandsPart, "inspect_to", no_plots)
    rc = main(["--data-dir", str(tmp_path / "data"), "inspect", "any.md", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 3 and err.strip() == f"error: {render.PLOTS_MISSING}"
    assert render.plot_or_note(render.loss_figure, [1.0]) == (None, render.PLOTS_MISSING)

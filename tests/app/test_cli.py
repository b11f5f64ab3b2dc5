"""The CLI's exit codes: `mgrag ingest` fails (1) when any file fails, with a summary line."""
from __future__ import annotations

from app.cli import main


def test_ingest_exits_1_when_any_file_fails(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MGRAG_EMBEDDER", "hashing")
    monkeypatch.setenv("MGRAG_CHUNKER", "recursive")
    (tmp_path / "good.md").write_text("The ferry leaves at noon. It returns at six.", encoding="utf-8")
    (tmp_path / "empty.md").write_text("   ", encoding="utf-8")
    data = str(tmp_path / "data")
    rc = main(["--data-dir", data, "ingest", "--quiet", str(tmp_path / "good.md"), str(tmp_path / "empty.md")])
    out = capsys.readouterr().out
    assert rc == 1 and "FAILED     empty.md: is empty; nothing to ingest" in out
    assert "1 ingested, 0 unchanged/duplicate, 1 failed" in out
    assert main(["--data-dir", data, "ingest", "--quiet", str(tmp_path / "good.md")]) == 0  # a duplicate is fine

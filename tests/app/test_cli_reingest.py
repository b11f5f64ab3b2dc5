"""`mgrag reingest DOC ... --theta N`: some documents rebuilt in place with their own θ; unknown names refused."""
from __future__ import annotations

import json

from app.cli import main

A = "The keeper has tended the light for twenty-two years. She logs the weather at dawn and at dusk every day.\n"
B = "The orchard has forty apple trees and six pear trees. The pears ripen late in the autumn every year.\n"


def test_cli_reingest_named_documents_with_their_own_theta(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MGRAG_EMBEDDER", "hashing")
    monkeypatch.setenv("MGRAG_CHUNKER", "recursive")
    monkeypatch.setenv("MGRAG_THETA", "40")
    (tmp_path / "a.md").write_text(A, encoding="utf-8")
    (tmp_path / "b.md").write_text(B, encoding="utf-8")
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "ingest", "--quiet", str(tmp_path / "a.md"), str(tmp_path / "b.md")]) == 0

    def parents():
        capsys.readouterr()
        assert main(["--data-dir", data, "docs", "--json"]) == 0
        return {d["doc_id"]: d["n_l0"] for d in json.loads(capsys.readouterr().out)["documents"]}

    before = parents()
    assert main(["--data-dir", data, "reingest", "--quiet", "a.md", "--theta", "6"]) == 0
    after = parents()
    assert after["a.md"] > before["a.md"] and after["b.md"] == before["b.md"]

    assert main(["--data-dir", data, "reingest", "--quiet", "nope.md", "--theta", "6"]) == 2
    assert "no document matches 'nope.md'" in capsys.readouterr().err
    assert parents() == after  # the refused call changed nothing

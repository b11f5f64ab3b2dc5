"""`mgrag chat`: an interactive loop over the same code as `mgrag ask`, driven here by piping stdin."""
from __future__ import annotations

import io
import json
import subprocess
import sys

from cli.main import main
from tests.app.conftest import KEEPER as A
from tests.app.conftest import ORCHARD as B


def test_chat_json_turns_follow_up_and_reset(cli_library, monkeypatch, capsys):
    data = cli_library
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO(
        "How many apple trees does the orchard have?\n\nHow many pear trees does it have?\n/reset\n"
        "Which submarine sank the cruiser Vesuvius in the Baltic?\n"))
    assert main(["--data-dir", data, "chat", "--backend", "extractive", "--json"]) == 0
    turns = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert len(turns) == 3  # the empty line is skipped, /reset prints nothing with --json
    first, follow, off = turns
    assert "forty apple trees" in first["text"] and first["rewrite"] == "none"
    assert follow["rewrite"] == "rules" and "orchard" in follow["query"].lower()
    assert follow["citations"] and follow["citations"][0]["doc_id"] == "b.md"
    sup = follow["citations"][0]["support"][0]
    assert B[sup["start"]:sup["end"]] == sup["text"]
    assert off["abstained"] and off["citations"] == [] and off["rewrite"] == "none"  # history was reset


def test_chat_plain_text_in_a_subprocess(tmp_path, cli_env):
    (tmp_path / "a.md").write_text(A, encoding="utf-8")
    data = str(tmp_path / "data")
    # ingest in its own process too: an embedded store is opened by one process at a time
    subprocess.run([sys.executable, "-m", "cli.main", "--data-dir", data, "ingest", "--quiet", str(tmp_path / "a.md")],
                   check=True, capture_output=True, timeout=120)
    out = subprocess.run([sys.executable, "-m", "cli.main", "--data-dir", data, "chat", "--backend", "extractive"],
                         input="How long has the keeper tended the light?\nWhat does she log?\n", text=True,
                         capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "twenty-two years" in out.stdout and "(searched for: What does she log? (" in out.stdout
    assert "supporting sentence, chars" in out.stdout


def test_ask_prints_only_the_checked_reply(cli_library, monkeypatch, capsys):
    """Issue 21 (14, 17): the unchecked draft was printed before the checked reply; nothing unchecked is printed
    now (an unsupported draft leaves only the abstention on stdout)."""
    from tests.app.stub_openai import StubOpenAI

    with StubOpenAI(reply="The keeper feeds a purple giraffe named Horace every morning [1].") as stub:
        monkeypatch.setenv("MGRAG_OPENAI_BASE_URL", stub.base_url)
        monkeypatch.setenv("MGRAG_OPENAI_MODEL", "stub-llm")
        capsys.readouterr()
        assert main(["--data-dir", cli_library, "ask", "--backend", "openai",
                     "How long has the keeper tended the light?"]) == 0
        out = capsys.readouterr().out
        assert any(r["path"].endswith("/chat/completions") for r in stub.requests)
    assert "giraffe" not in out and "do not say" in out

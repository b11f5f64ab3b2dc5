"""`mgrag reingest DOC ... --theta N`: some documents rebuilt in place with their own θ; unknown names refused."""
from __future__ import annotations

import json

from cli.main import main


def test_cli_reingest_named_documents_with_their_own_theta(cli_library, capsys):
    data = cli_library

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


def test_cli_reingest_reads_again_only_when_asked_or_when_the_reader_changed(cli_library, capsys):
    data = cli_library
    capsys.readouterr()
    assert main(["--data-dir", data, "reingest", "--quiet"]) == 0  # auto: today's reader read both
    assert "read again" not in capsys.readouterr().out
    assert main(["--data-dir", data, "reingest", "--quiet", "--reread", "all", "a.md"]) == 0
    out = capsys.readouterr().out
    assert "a.md" in out and "read again by today's reader" in out and out.count("read again") == 1


def test_cli_reingest_resume_says_when_there_is_nothing_to_resume_and_refuses_other_options(cli_library, capsys):
    data = cli_library
    capsys.readouterr()
    assert main(["--data-dir", data, "reingest", "--resume"]) == 0
    assert "no interrupted re-ingestion to resume" in capsys.readouterr().out
    assert main(["--data-dir", data, "reingest", "--resume", "--theta", "6"]) == 2
    err = capsys.readouterr().err
    assert "--resume finishes the re-ingestion that was interrupted" in err and "Traceback" not in err

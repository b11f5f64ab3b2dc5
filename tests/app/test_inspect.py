"""The chunk inspector: probabilities and cuts of LG, recursive and MG, a question's matches, PNG and HTML."""
import numpy as np
import pytest

from app.inspect import inspect_text, render_html, render_png
from ingest.jobs.queue import ingest_files

DOC = "\n\n".join(
    f"# Part {t}\n\nTopic {t} opens here. " + " ".join(f"The {w} of topic {t} is notable." for w in
                                                      ("owl", "fox", "elk", "cod", "yak", "emu"))
    for t in ("alpha", "bravo", "charlie", "delta", "echo")
) + "\n\nA <script>alert(1)</script> line & more."


@pytest.mark.parametrize("mode", ["exact", "streaming"])
def test_inspection_records_what_the_lg_chunker_read(make_ctx, mode):
    ctx = make_ctx(router="none", lg_mode=mode)
    ins = inspect_text(ctx, DOC, "doc.md", theta=40)
    assert set(ins.chunks) == {"lgmgc", "recursive", "mg"}
    # every sentence end was scored (in exact mode, all but those of the last chunk: the rest that fits in θ is
    # never read), and the probabilities are probabilities
    last = ins.parents("lgmgc")[-1]
    unread = [k for k, (s, e) in enumerate(ins.sentences) if np.isnan(ins.probs[k])]
    assert all(ins.sentences[k][0] >= last.start for k in unread) and (mode == "exact" or not unread)
    seen = ins.probs[~np.isnan(ins.probs)]
    assert len(seen) and np.all((seen > 0) & (seen <= 1))
    assert len(ins.probs) == len(ins.sentences) == len(ins.strength)
    # the cuts are where the parents end; the LG parents are the LGMGC chunker's
    for name in ins.chunks:
        parents = ins.parents(name)
        assert ins.cuts(name) == [p.end for p in parents][:-1]
        assert all(DOC[c.start:c.end] == c.text for c in ins.chunks[name])
    if mode == "exact":  # each window's chosen break is the last sentence of an LG parent (or the window's end)
        ends = {p.end for p in ins.parents("lgmgc")}
        assert ins.windows and all(ins.sentences[b][1] in ends or b == j - 1 for i, j, b in ins.windows)
    # the heading lines are strong breaks
    assert ins.strength.max() == 1.5


def test_question_matches_each_level_with_weighted_scores(make_ctx):
    ctx = make_ctx(router="none")
    ins = inspect_text(ctx, DOC, "doc.md", theta=40, question="Where is the elk of topic charlie?", k=3)
    assert ins.weights == [1.0, 1.0, 1.0] and "uniform" in ins.router
    for name in ("lgmgc", "mg"):
        ms = ins.matches[name]
        assert {m.level for m in ms} == {0, 1, 2} and all(sum(m.level == j for m in ms) <= 3 for j in range(3))
        assert all(m.weighted == pytest.approx(m.weight * m.score) for m in ms)
        top = min((m for m in ms if m.rank), key=lambda m: m.rank)
        assert "charlie" in DOC[top.parent[0]:top.parent[1]]  # the hashing embedder finds the right topic
    assert ins.summary()["question"].startswith("Where is the elk")


def test_png_and_html_render_and_escape(make_ctx, tmp_path):
    ctx = make_ctx(router="none")
    ins = inspect_text(ctx, DOC, "doc.md", theta=40, question="Which fox?")
    data = render_png(ins, tmp_path / "i.png", words=(0, 150))
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and (tmp_path / "i.png").read_bytes() == data
    page = render_html(ins)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert page.count('class="cut lgmgc"') == len(ins.cuts("lgmgc"))
    assert "<mark class=" in page and "score" in page


def test_bad_input_is_refused_with_the_reason(make_ctx):
    ctx = make_ctx(router="none")
    with pytest.raises(ValueError, match="notes.md: is empty; nothing to inspect"):
        inspect_text(ctx, "  \n ", "notes.md")
    with pytest.raises(ValueError, match="theta must be at least 8"):
        inspect_text(ctx, DOC, "doc.md", theta=5)


def test_cli_writes_png_and_html_for_an_ingested_document_or_a_file(make_ctx, write, tmp_path, monkeypatch, capsys):
    from cli import main as cli

    ctx = make_ctx(router="none", theta=40)
    path = write("topics.md", DOC)
    ingest_files(ctx, [path])
    monkeypatch.setattr(cli, "_ctx", lambda args: ctx)
    assert cli.main(["inspect", "topics.md", "--theta", "40", "--out", str(tmp_path / "o"), "--question", "elk?"]) == 0
    assert (tmp_path / "o" / "inspect-topics.png").exists() and (tmp_path / "o" / "inspect-topics.html").exists()
    other = write("other.txt", "One sentence here. Another one there.\n\nA last paragraph.")
    assert cli.main(["inspect", str(other), "--theta", "40", "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "inspect-other.html").exists()
    assert cli.main(["inspect", "nothing-like-this", "--out", str(tmp_path / "o")]) == 2
    assert "not a readable file" in capsys.readouterr().err
    assert cli.main(["inspect", "topics.md", "--words", "9:3", "--out", str(tmp_path / "o")]) == 2

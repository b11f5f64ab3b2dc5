from ui import render


def test_highlight_marks_the_child_and_escapes():
    parent = "a <b> & c. The child. End"
    start = 100
    out = render.highlight(parent, start, start + len(parent), start + 11, start + 21)
    assert out == "a &lt;b&gt; &amp; c. <mark>The child.</mark> End"


def test_highlight_keeps_the_mark_across_blank_lines():
    assert render.highlight("# T\n\nBody.", 0, 10, 0, 10) == "<mark># T<br><br>Body.</mark>"


def test_highlight_outside_or_empty_child_leaves_text():
    assert render.highlight("abc", 0, 3, 5, 9) == "abc"
    assert render.highlight("abc", 0, 3, 1, 1) == "abc"


def test_weight_bars_notes_uniform_weights():
    assert "uniform" in render.weight_bars([1.0, 1.0, 1.0])
    html = render.weight_bars([0.2, 0.5, 0.3])
    assert "uniform" not in html and html.count("mg-wrow") == 3 and "θ/4" in html


def test_sources_html_lists_documents_scores_and_cited():
    src = {"number": 1, "doc_id": "<x>.md", "start": 0, "end": 5, "parent_text": "hello", "matched_level": 0,
           "matched_start": 0, "matched_end": 5, "score": 0.5, "level_scores": {0: 0.5, 2: 0.25},
           "bm25_level_scores": {}}
    html = render.sources_html([src], {1})
    assert "&lt;x&gt;.md" in html and "cited" in html and "θ/4 0.250" in html and "<mark>hello</mark>" in html


def test_figures_build():
    assert render.histogram_figure({0: [10, 12, 30], 1: [5, 6]}).axes
    assert render.loss_figure([1.0, 0.5], [1.1, 0.7]).axes
    res = {f"{m}@{k}": 0.5 for m in ("dcg", "recall") for k in (1, 2, 5, 10, 20)}
    assert render.bench_figure(res).axes and render.bench_table(res)[0] == ["dcg@1", 0.5]

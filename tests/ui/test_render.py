from services import render


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


def test_highlight_marks_supporting_sentences_apart_from_the_matched_child():
    parent = "One. Two is here. Three."
    # child = "Two is here." (5-17), support = "Three." (18-24) and part of the child (10-17)
    out = render.highlight(parent, 0, len(parent), 5, 17, [(18, 24)])
    assert out == 'One. <mark>Two is here.</mark> <mark class="mg-support">Three.</mark>'
    both = render.highlight(parent, 0, len(parent), 5, 17, [(10, 24)])
    assert both == ('One. <mark>Two i</mark><mark class="mg-support mg-match">s here.</mark>'
                    '<mark class="mg-support"> Three.</mark>')
    assert render.highlight(parent, 100, 124, 105, 117, [(90, 95)]) == "One. <mark>Two is here.</mark> Three."


def test_sources_html_shows_support_and_abstention_without_citation():
    src = {"number": 1, "doc_id": "d.md", "start": 0, "end": 10, "parent_text": "Aa. Bb <i>.", "matched_level": 1,
           "matched_start": 0, "matched_end": 3, "score": 0.5, "level_scores": {}, "bm25_level_scores": {},
           "support": [{"start": 4, "end": 11, "text": "Bb <i>.", "score": 0.8}]}
    html = render.sources_html([src], {1})
    assert '<mark class="mg-support">Bb &lt;i&gt;.</mark>' in html and "supporting sentence" in html
    closest = render.sources_html([src], {1}, abstained=True)
    assert "None of these passages supports an answer" in closest and "cited" not in closest
    assert "mg-support" not in closest.replace("mg-support-key", "")


def test_highlight_support_ending_inside_the_child():
    out = render.highlight("abcdef", 0, 6, 1, 5, [(0, 3)])
    assert out == '<mark class="mg-support">a</mark><mark class="mg-support mg-match">bc</mark><mark>de</mark>f'


def test_sources_under_the_relevance_floor_are_folded_unless_cited():
    from services.render import sources_html

    def src(n, score):
        return {"number": n, "doc_id": f"d{n}.md", "start": 0, "end": 10, "score": score, "matched_level": 0,
                "matched_start": 0, "matched_end": 10, "parent_text": f"passage {n}", "level_scores": {}}

    out = sources_html([src(1, 0.9), src(2, 0.8), src(3, 0.5), src(4, 0.4)], cited={4}, floor=0.8)
    shown, folded = out.split('<details class="mg-folded">')
    assert "[1] d1.md" in shown and "[2] d2.md" in shown and "[4] d4.md" in shown  # cited: always shown
    assert "1 more passage(s) below the relevance floor" in folded and "[3] d3.md" in folded
    assert "<details" not in sources_html([src(1, 0.9), src(3, 0.5)], floor=0.0)


def test_a_source_from_a_first_pass_says_so_in_its_line():
    src = {"number": 1, "doc_id": "10q.pdf", "start": 0, "end": 5, "parent_text": "Hello", "matched_start": 0,
           "matched_end": 5, "score": 0.9, "matched_level": 2, "level_scores": {}, "pages": [4, 5],
           "headings": ["Risk factors"], "first_pass": True}
    assert "p. 4–5 · Risk factors · first pass (refining)" in render.sources_html([src], {1})
    assert "first pass" not in render.sources_html([{**src, "first_pass": False}], {1})

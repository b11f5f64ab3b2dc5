"""Pure rendering for the web app: sources as HTML with the matched child highlighted, weight bars, tables, plots.
No Gradio here, so each piece is tested alone."""
from __future__ import annotations

import html
import re

from ingest.readers.layout import place_label as place_label  # a source's place, for the doors
from ingest.readers.layout import source_place
from ingest.text.tables import split_cells, table_groups, table_lines

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): matplotlib (the plots
# extra: the product serves without it, and a plot asked for without it says what to install)

LEVEL_NAMES = {0: "θ", 1: "θ/2", 2: "θ/4"}
# one palette for the chat's sources, the viewer's text and its page images: the sentence that supports the answer
# green and underlined, the chunk that matched the question yellow, the rest of the cited passage pale
HIGHLIGHT = {"support": "#bbf7d0", "support_line": "#16a34a", "child": "#fde68a", "passage": "#fef9c3"}


def rgb(hex_colour: str) -> tuple[int, int, int]:
    """``"#bbf7d0"`` → ``(187, 247, 208)``."""
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return r, g, b


def level_name(level: int) -> str:
    return LEVEL_NAMES.get(level, f"L{level}")


def table_html(text: str, start: int, end: int, spans, order: tuple[str, ...], first: tuple[str, int] | None = None
               ) -> str:
    """The Markdown table ``text[start:end]`` as an HTML table (cells escaped, the separator line dropped); each
    row gets the class ``mg-<kind>`` of the first kind in ``order`` among the ``(start, end, kind)`` spans that
    cover it; ``first``: (kind, offset) whose row gets ``id=mg-first`` (the viewer scrolls to it)."""
    rows = []
    for s, e, kind in table_lines(text, start, end):
        if kind == 2:
            continue
        kinds = [k for a, b, k in spans if a <= s and e <= b]
        cls = next((k for k in order if k in kinds), "")
        mark = " id=mg-first" if first and cls == first[0] and s <= first[1] <= e else ""
        tag = "th" if kind == 1 else "td"
        cells = "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in split_cells(text[s:e]))
        rows.append(f'<tr{f" class=mg-{cls}" if cls else ""}{mark}>{cells}</tr>')
    return f'<table class="mg-table">{"".join(rows)}</table>'


def highlight(parent_text: str, start: int, end: int, matched_start: int, matched_end: int,
              support: list[tuple[int, int]] | None = None) -> str:
    """The parent passage as HTML with the matched child (document offsets) inside ``<mark>`` and the sentences
    that support the answer inside ``<mark class="mg-support">`` (both: ``class="mg-support mg-match"``). A
    span outside the parent (or empty) is not marked."""
    n = len(parent_text)
    spans: list[tuple[int, int, str]] = []
    a, b = matched_start - start, matched_end - start
    if 0 <= a < b <= n:
        spans.append((a, b, "match"))
    for s_, e_ in support or ():
        a, b = s_ - start, e_ - start
        if 0 <= a < b <= n:
            spans.append((a, b, "support"))

    out, pos = [], 0
    for ts, te in table_groups(table_lines(parent_text)):  # a table passage shows as a table
        out.append(_marks(parent_text, pos, ts, spans))
        out.append(table_html(parent_text, ts, te, spans, ("support", "match")))
        pos = te
    out.append(_marks(parent_text, pos, n, spans))
    return "".join(out)


def _marks(parent_text: str, lo: int, hi: int, spans) -> str:
    if not spans:
        return _esc(parent_text[lo:hi])
    cuts = sorted({lo, hi, *(max(lo, min(hi, x)) for a, b, _ in spans for x in (a, b))})
    out = []
    for a, b in zip(cuts, cuts[1:]):
        if a == b:
            continue
        kinds = {k for s_, e_, k in spans if s_ <= a and b <= e_}
        piece = _esc(parent_text[a:b])
        if not kinds:
            out.append(piece)
        elif kinds == {"match"}:
            out.append(f"<mark>{piece}</mark>")
        else:
            cls = "mg-support mg-match" if "match" in kinds else "mg-support"
            out.append(f'<mark class="{cls}">{piece}</mark>')
    return "".join(out)


def _esc(text: str) -> str:
    """Escaped, with line breaks as <br> (a blank line would otherwise end the chat's markdown paragraph, and
    the <mark> with it)."""
    return html.escape(text).replace("\n", "<br>")


_MD_PUNCT = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:$])")
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|file|mailto|javascript|data)(\\?:)|\b(www)(\\?\.)")


def plain_text_markdown(text: str) -> str:
    r"""``text`` (an answer, a question, an error message: anything a document or a user wrote) as Markdown that
    renders literally: HTML escaped, Markdown punctuation backslash-escaped (no link, image, heading or emphasis
    can form), and URL schemes broken with a word joiner (U+2060) so no autolink becomes live. Line breaks are kept.

    >>> print(plain_text_markdown('<img src=x> ![t](http://e.vil/p.png) [1]').replace("\u2060", "^"))
    &lt;img src=x&gt; \!\[t\]\(http^\://e\.vil/p\.png\) \[1\]
    """
    escaped = _MD_PUNCT.sub(r"\\\1", html.escape(text or "", quote=False))
    return _AUTOLINK.sub(lambda m: (f"{m.group(1)}\u2060{m.group(2)}" if m.group(1)
                                    else f"{m.group(3)}\u2060{m.group(4)}"), escaped)


def answer_markdown(text: str, allow_links: bool = False) -> str:
    """An answer as chat Markdown. By default everything is literal (:func:`plain_text_markdown`); with
    ``allow_links`` (setting ``answer_links``) Markdown links stay live, but raw HTML is still escaped and images
    are shown as text, so a document cannot make a reader's browser fetch anything."""
    if not allow_links:
        return plain_text_markdown(text)
    return html.escape(text or "", quote=False).replace("![", "!\\[")


def timing_line(t: dict) -> str:
    """An answer's seconds as a person reads them: the search, the reading of what it found (the reader and, where it
    runs, the LM check), the first word of a generated reply, the whole.

    >>> timing_line({"retrieval_s": 0.084, "reading_s": 1.2, "total_s": 1.5})
    'search 84 ms, reading 1.20 s, total 1.50 s'
    """
    parts = [f"search {t['retrieval_s'] * 1000:.0f} ms"]
    if t.get("reading_s"):
        parts.append(f"reading {t['reading_s']:.2f} s")
    if t.get("time_to_first_token_s") is not None and t.get("generation_s"):
        parts.append(f"first token {t['time_to_first_token_s']:.2f} s")
    return ", ".join([*parts, f"total {t['total_s']:.2f} s"])


def is_uniform(weights) -> bool:
    w = list(weights or [])
    return not w or max(w) - min(w) < 1e-9


def weight_bars(weights) -> str:
    """A small horizontal bar chart of the level weights, in HTML."""
    w = [float(x) for x in (weights or [])]
    if not w:
        return ""
    if is_uniform(w):  # no router (the default): one line, no bars to read
        return '<div class="mg-weights mg-scores">level weights: uniform</div>'
    top = max(max(w), 1e-9)
    rows = "".join(
        f'<div class="mg-wrow"><span class="mg-wlab">{level_name(i)}</span>'
        f'<span class="mg-wbar" style="display:inline-block;height:0.8em;background:#f97316;'
        f'width:{max(2, int(120 * x / top))}px"></span> <span class="mg-wval">{x:.2f}</span></div>'
        for i, x in enumerate(w))
    return f'<div class="mg-weights"><strong>Router weights</strong>{rows}</div>'


SHORTENED = ' <em class="mg-shortened">(shortened: open ↗ shows the whole passage)</em>'


def sources_html(sources: list[dict], cited: set[int] | None = None, links: dict[int, str] | None = None,
                 abstained: bool = False, floor: float = 0.0) -> str:
    """Every source of an answer: document, the parent passage with its matched child highlighted and the
    sentences that support the answer highlighted apart, per-level scores (dense and BM25), and a link that opens
    it in the viewer (``links``: source number → URL). For an abstention the passages are the closest ones, and
    nothing is marked as cited. Uncited sources scoring under ``floor`` × the top score are folded away under
    "N more below the relevance floor" (setting ``source_floor``, measured in BENCHMARKS.md)."""
    cited = set() if abstained else (cited or set())
    links = links or {}
    parts: list[str] = []
    folded: list[str] = []
    top = max((float(s["score"]) for s in sources), default=0.0)
    if abstained:
        parts.append('<div class="mg-abstain"><em>None of these passages supports an answer; they are the closest '
                     'ones found.</em></div>')
    for s in sources:
        dense = ", ".join(f"{level_name(int(lv))} {v:.3f}" for lv, v in sorted(s.get("level_scores", {}).items(),
                                                                           key=lambda x: int(x[0])))
        bm25 = ", ".join(f"{level_name(int(lv))} {v:.2f}" for lv, v in sorted(s.get("bm25_level_scores", {}).items(),
                                                                          key=lambda x: int(x[0])))
        scores = " · ".join(x for x in (f"dense: {dense}" if dense else "", f"BM25: {bm25}" if bm25 else "") if x)
        star = " ★ cited" if s["number"] in cited else ""
        support = [] if abstained else [(x["start"], x["end"]) for x in s.get("support") or ()]
        place = source_place(s.get("pages"), s.get("headings"), bool(s.get("first_pass")), s.get("unit"))
        quoted = source_place(None, None, False, s.get("unit"), s.get("support")) if support else ""
        note = (" · <span class=\"mg-support-key\">supporting sentence</span>"
                + (f" ({html.escape(quoted)})" if quoted and quoted != place else "")) if support else ""
        where = html.escape(place) if place else f'chars {s["start"]}–{s["end"]}'
        if s["number"] in links:
            where += (f' · <a class="mg-open" href="{html.escape(links[s["number"]])}" target="_blank" '
                      f'rel="noopener">open ↗</a>')
        below = floor > 0 and top > 0 and s["number"] not in cited and float(s["score"]) < floor * top
        (folded if below else parts).append(
            f'<div class="mg-source"><div class="mg-src-head">'
            f'<strong>[{s["number"]}] {html.escape(s.get("name") or s["doc_id"])}</strong>'
            f' · {where} · score {s["score"]:.3f} · matched {level_name(s["matched_level"])}'
            f'{star}{note}</div><div class="mg-scores">{scores}</div>'
            f'<div class="mg-passage">'
            f'{highlight(s["parent_text"], s["start"], s["end"], s["matched_start"], s["matched_end"], support)}'
            f'{SHORTENED if s.get("shortened") else ""}</div></div>')
    if folded:
        parts.append(f'<details class="mg-folded"><summary>{len(folded)} more passage(s) below the relevance floor'
                     f'</summary>{"".join(folded)}</details>')
    return "".join(parts) or "<em>no sources</em>"


def answer_label(i: int, answer: dict) -> str:
    q = answer.get("question", "")
    return f"#{i + 1}: {q[:70]}{'…' if len(q) > 70 else ''}"


PLOTS_MISSING = "The plots need matplotlib, which comes with the plots extra: pip install 'mgrag[plots]'."


class PlotsMissing(ImportError):
    """A plot asked for where matplotlib is not installed (``mgrag`` without its ``plots`` extra)."""


def figure(**kw):
    """A matplotlib ``Figure`` (no pyplot, no backend state), or :class:`PlotsMissing` saying what to install."""
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise PlotsMissing(PLOTS_MISSING) from e
    return Figure(**kw)


def plot_or_note(make, *args) -> tuple[object | None, str]:
    """(the figure ``make(*args)`` draws, "") or, without matplotlib, (None, the sentence saying what to install): the
    numbers a plot stands beside are shown either way."""
    try:
        return make(*args), ""
    except PlotsMissing as e:
        return None, str(e)


def histogram_figure(lengths: dict[int, list[int]]):
    """Chunk length histograms (words), one panel per level."""
    levels = sorted(lengths) or [0]
    fig = figure(figsize=(3.2 * len(levels), 2.6), layout="constrained")
    for i, lv in enumerate(levels):
        ax = fig.add_subplot(1, len(levels), i + 1)
        data = lengths.get(lv, [])
        if data:
            ax.hist(data, bins=min(30, max(5, len(set(data)))), color="#f97316")
        ax.set_title(f"level {lv} ({level_name(lv)}): {len(data)} chunks", fontsize=9)
        ax.set_xlabel("words", fontsize=8)
        ax.tick_params(labelsize=7)
    return fig


def loss_figure(loss: list[float], val_loss: list[float] | None = None):
    fig = figure(figsize=(5, 2.6), layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(range(1, len(loss) + 1), loss, label="train")
    if val_loss:
        ax.plot(range(1, len(val_loss) + 1), val_loss, label="validation")
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    ax.legend(fontsize=8)
    return fig


METRIC_ROWS = ("dcg@1", "dcg@2", "dcg@5", "dcg@10", "dcg@20", "recall@1", "recall@2", "recall@5", "recall@10",
               "recall@20")


def bench_table(res: dict) -> list[list]:
    rows = [[k, round(float(res[k]), 4)] for k in METRIC_ROWS if k in res]
    rows += [[k, round(float(v), 4)] for k, v in res.items()
             if k.startswith(("evidence_recall@", "iou@", "precision@"))]
    rows += [[k, res[k]] for k in ("n_questions", "n_chunks", "n_parents") if k in res]
    return rows


def bench_figure(res: dict):
    ks = [k for k in (1, 2, 5, 10, 20) if f"dcg@{k}" in res]
    fig = figure(figsize=(5, 2.6), layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(ks, [res[f"dcg@{k}"] for k in ks], marker="o", label="DCG@k")
    ax.plot(ks, [res[f"recall@{k}"] for k in ks], marker="o", label="Recall@k")
    ax.set_xscale("log")
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("k (parents)")
    ax.legend(fontsize=8)
    return fig

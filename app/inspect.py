"""The chunk inspector: why a boundary was chosen, and which chunks a question matched.

For one document it records the boundary probability the LG chunker read after every sentence (in exact mode,
the probability from the window that decided the cut there; in streaming mode, the one pass), the layout's breaks,
the cuts of LG, recursive and MG, each parent with its children, and, for a question, the chunks of each level
that matched with their score, the level weight and the weighted score that ranks their parent. It renders a PNG
(probabilities and cuts along the text, the chunk levels as bands, the matches coloured by weighted score) and a
self-contained HTML page (the text with its sentence ends, cuts and matched chunks; everything escaped).

``mgrag inspect DOC`` writes both; the Admin tab shows them. :func:`inspect_text` is the entry point, and it
takes the models from an :class:`app.context.AppContext` (LM scorer, embedder, router).
"""
from __future__ import annotations

import bisect
import dataclasses
import html
import io
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ingest.chunkers import build_chunker
from ingest.chunkers.logits import SENTENCE_CAP, LGConfig
from ingest.text.boundary import break_strength
from ingest.text.chunk_context import chunk_contexts, indexed_text
from ingest.text.sentences import count_words, is_hard_wrapped, sentences_cached, word_spans
from ingest.types import Chunk
from retrieval.scoring import level_hits, rank_parents

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): matplotlib and
# retrieval.search

log = logging.getLogger(__name__)

# the registered chunkers (core/components.py) it compares, built by the registry with the settings' LG rule
CHUNKERS = ("lgmgc", "recursive", "mg")
LEVEL_NAMES = ("parent", "θ/2", "θ/4")
PLOTS_MISSING = "The plots need matplotlib, which comes with the plots extra: pip install 'mgrag[plots]'."
COLORS = {"lgmgc": "#c0392b", "recursive": "#2471a3", "mg": "#7d3c98"}


@dataclass
class Match:
    """A chunk that one level's search returned for the question."""

    level: int
    start: int
    end: int
    parent: tuple[int, int]
    score: float  # cosine similarity
    weight: float  # the level's weight (router or uniform)
    rank: int = 0  # rank of its parent in the final ranking (1 = first), 0 when the parent was not ranked

    @property
    def weighted(self) -> float:
        return self.weight * self.score


@dataclass
class Inspection:
    name: str
    text: str
    theta: int
    sentences: list[tuple[int, int]]
    probs: np.ndarray  # p(boundary) the LG chunker read after each sentence (nan: never scored)
    strength: np.ndarray  # layout break after each sentence (ingest.text.boundary.break_strength)
    windows: list[tuple[int, int, int]]  # LG windows: (first sentence, end, chosen break), exact mode
    chunks: dict[str, list[Chunk]]  # chunker -> its chunks (all levels)
    lg_describe: dict = field(default_factory=dict)
    question: str | None = None
    weights: list[float] = field(default_factory=list)
    router: str = ""
    matches: dict[str, list[Match]] = field(default_factory=dict)
    contexts: dict[tuple[int, int], str] = field(default_factory=dict)  # (start, end) -> the embedded context line

    def embedded(self, c: Chunk) -> str:
        """What is embedded and keyword-indexed for chunk ``c``: its context line (``chunk_context``), then its text."""
        return indexed_text(self.contexts.get((c.start, c.end), ""), c.text)

    def parents(self, chunker: str) -> list[Chunk]:
        return [c for c in self.chunks[chunker] if c.level == 0]

    def cuts(self, chunker: str) -> list[int]:
        """Character offsets where the chunker's parents end (the last one excluded)."""
        return [c.end for c in self.parents(chunker)][:-1]

    def top_parents(self, chunker: str, n: int = 3) -> list[dict]:
        """The first ``n`` parents of the chunker's ranking, each with the match that ranked it."""
        best: dict[int, Match] = {}
        for m in self.matches.get(chunker, []):
            if m.rank and m.rank <= n and (m.rank not in best or m.weighted > best[m.rank].weighted):
                best[m.rank] = m
        return [{"rank": r, "parent": list(m.parent), "matched": LEVEL_NAMES[m.level], "score": round(m.score, 3),
                 "weighted": round(m.weighted, 3)} for r, m in sorted(best.items())]

    def summary(self) -> dict:
        out = {"document": self.name, "theta": self.theta, "sentences": len(self.sentences),
               "words": count_words(self.text), "lg": self.lg_describe}
        for c in self.chunks:
            ps = self.parents(c)
            out[c] = {"parents": len(ps), "mean parent words": round(float(np.mean([p.n_words for p in ps])), 1)
                      if ps else 0, "chunks per level": [sum(x.level == j for x in self.chunks[c]) for j in range(3)]}
        if self.question:
            out["question"] = self.question
            out["weights"] = [round(w, 3) for w in self.weights]
            out["router"] = self.router
            out["top parents"] = {c: self.top_parents(c) for c in self.matches}
        return out


class _Recorder:
    """Wraps a LogitsScorer; remembers the probabilities and windows the LG chunker asked for."""

    def __init__(self, scorer):
        self.inner = scorer
        self.prompt = getattr(scorer, "prompt", None)
        self.boundary_tokens = getattr(scorer, "boundary_tokens", ())
        self.windows: list[tuple[int, int, np.ndarray]] = []
        self.stream: np.ndarray | None = None

    def tokenize(self, text, sentences):
        return self.inner.tokenize(text, sentences)

    def window_probs(self, doc, i, j):
        p = np.asarray(self.inner.window_probs(doc, i, j), dtype=np.float64)
        self.windows.append((i, j, p))
        return p

    def stream_probs(self, doc, **kw):
        self.stream = np.asarray(self.inner.stream_probs(doc, **kw), dtype=np.float64)
        return self.stream


def inspect_text(ctx, text: str, name: str = "document", *, theta: int | None = None, question: str | None = None,
                 k: int | None = None, lg_config=None) -> Inspection:
    """Chunk ``text`` with LGMGC (the settings' LM and rule), recursive and MG at ``theta``; match ``question``."""

    if not text or not text.strip():
        raise ValueError(f"{name}: is empty; nothing to inspect")
    s = ctx.settings
    theta = int(theta or s.theta)
    if theta < 8:
        raise ValueError(f"theta must be at least 8 words to inspect, got {theta}")
    cfg = lg_config or LGConfig.from_settings(s, theta)
    rec = _Recorder(ctx.scorer)
    chunks = {n: build_chunker(n, theta, scorer=rec, lg_config=cfg).chunk(text) for n in CHUNKERS}
    sentences = list(sentences_cached(text, min(theta, SENTENCE_CAP)))
    probs = np.full(len(sentences), np.nan)
    windows: list[tuple[int, int, int]] = []
    if rec.stream is not None:
        probs[:] = rec.stream
    sent_end_index = {e: i for i, (_, e) in enumerate(sentences)}
    cut_at = sorted(sent_end_index[c.end] for c in chunks["lgmgc"] if c.level == 0 and c.end in sent_end_index)
    for i, j, p in rec.windows:
        probs[i:j] = p  # later windows overwrite: each sentence keeps the window that decided its cut
        b = bisect.bisect_left(cut_at, i)
        windows.append((i, j, cut_at[b] if b < len(cut_at) and cut_at[b] < j else j - 1))
    ins = Inspection(name, text, theta, sentences, probs, break_strength(text, sentences, is_hard_wrapped(text)),
                     windows, chunks, dataclasses.asdict(cfg))
    if s.chunk_context:  # the context line each chunk is embedded with, as ingestion gives it

        spans = sorted({(c.start, c.end) for cs in chunks.values() for c in cs})
        ins.contexts = {sp: x for sp, x in zip(spans, chunk_contexts(text, name, None, [a for a, _ in spans])) if x}
    if question:
        match_question(ctx, ins, question, k or s.top_k)
    return ins


def match_question(ctx, ins: Inspection, question: str, k: int) -> None:
    """Embed the question and every chunk; keep each level's top ``k`` chunks per chunker, weighted by the router."""
    from retrieval.search import check_question

    question = check_question(question, ctx.settings.max_question_chars)
    qv = np.asarray(ctx.embedder.embed_queries([question])[0], dtype=np.float32)
    ins.question = question
    for name, chunks in ins.chunks.items():
        vecs = np.asarray(ctx.embedder.embed_passages([ins.embedded(c) for c in chunks]), dtype=np.float32)
        hits = level_hits(chunks, vecs @ qv, k)
        by_id = {f"{c.level}:{c.start}:{c.end}": c for c in chunks}
        found = [by_id[h.id] for h in hits]
        n_levels = 1 + max(c.level for c in chunks)
        w, why, _ = ctx.route(embedder_name=ctx.settings.embedder, n_levels=n_levels, question=question,
                              query_vector=qv, hits=hits)
        if name == "lgmgc" or not ins.weights:
            ins.weights, ins.router = list(w), why
        rank = {pid: r for r, (pid, _, _) in enumerate(rank_parents(hits, w), 1)}
        ins.matches[name] = [Match(h.level, c.start, c.end, c.parent_span, h.score, float(w[h.level]),
                                   rank.get(h.parent_id, 0)) for h, c in zip(hits, found)]


# -- rendering -------------------------------------------------------------------------------------------------------
def _word_index(text: str) -> np.ndarray:
    """For each character offset, the number of words that start before it (x axis of the plot)."""
    starts = np.array([s for s, _ in word_spans(text)], dtype=np.int64)
    return starts


def render_png(ins: Inspection, path: str | Path | None = None, *, words: tuple[int, int] | None = None) -> bytes:
    """The inspector's figure: p(boundary) after each sentence (log scale, coloured by the layout break), the
    cuts of each chunker, their parents and children as bands, and the question's matches. ``words`` limits the
    x axis to a word range (default: the first 3,000 words). Returns the PNG bytes (and writes ``path``); without
    matplotlib (the plots extra) an ImportError saying what to install."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError(PLOTS_MISSING) from e

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    starts = _word_index(ins.text)

    def x(off: int) -> float:
        return float(np.searchsorted(starts, off))

    lo, hi = words or (0, min(len(starts), 3000))
    bands = [(name, level) for name, chunks in ins.chunks.items() for level in sorted({c.level for c in chunks})]
    n_bands = len(bands)
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(14, 4.2 + 0.28 * n_bands), sharex=True,
                                 gridspec_kw={"height_ratios": [2.2, 0.35 * n_bands]})
    ends = np.array([x(e) for _, e in ins.sentences])
    keep = (ends >= lo) & (ends <= hi) & ~np.isnan(ins.probs)
    cmap = {0.0: "#999999", 0.5: "#f39c12", 1.0: "#27ae60", 1.5: "#1abc9c"}
    for val, col in cmap.items():
        m = keep & (ins.strength == val)
        if m.any():
            label = {0.0: "sentence end", 0.5: "line break", 1.0: "paragraph break", 1.5: "heading / page"}[val]
            ax.scatter(ends[m], np.clip(ins.probs[m], 1e-12, 1), s=10, color=col, label=label, zorder=3)
    for name in ins.chunks:
        for i, c in enumerate(ins.cuts(name)):
            cx = x(c)
            if lo <= cx <= hi:
                ax.axvline(cx, color=COLORS.get(name, "k"), lw=1.2 if name == "lgmgc" else 0.9,
                           ls="-" if name == "lgmgc" else "--", alpha=0.8, label=f"{name} cut" if i == 0 else None)
    ax.set_yscale("log")
    ax.set_ylabel("p(boundary) after the sentence")
    ax.set_title(f"{ins.name}: boundary probabilities and cuts (θ = {ins.theta}"
                 + (f"; question: {ins.question[:80]}" if ins.question else "") + ")", fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, ncol=4, loc="lower right")
    ax.grid(alpha=0.25)
    # bands: one row per chunker and level; the question's matches coloured by weighted score
    best = max((m.weighted for ms in ins.matches.values() for m in ms), default=1.0) or 1.0
    labels = []
    for row, (name, level) in enumerate(bands):
        chunks = ins.chunks[name]
        match_at = {(m.level, m.start, m.end): m for m in ins.matches.get(name, [])}
        y = n_bands - 1 - row
        for c in chunks:
            if c.level != level:
                continue
            x0, x1 = x(c.start), x(c.end)
            if x1 < lo or x0 > hi:
                continue
            m = match_at.get((c.level, c.start, c.end))
            face = plt.get_cmap("YlOrRd")(0.25 + 0.75 * m.weighted / best) if m else "#f4f6f7"
            bx.add_patch(Rectangle((x0, y + 0.1), max(x1 - x0, 0.5), 0.8, facecolor=face,
                                   edgecolor=COLORS.get(name, "k"), lw=0.6))
            if m and m.rank and m.rank <= 5:
                bx.text((x0 + x1) / 2, y + 0.5, f"#{m.rank} {m.weighted:.2f}", ha="center", va="center",
                        fontsize=6)
        labels.append(f"{name} {LEVEL_NAMES[level]}")
    bx.set_ylim(0, n_bands)
    bx.set_yticks([n_bands - 1 - i + 0.5 for i in range(len(labels))], labels, fontsize=7)
    bx.set_xlim(lo, hi)
    bx.set_xlabel("words into the document" + ("   (a matched chunk: #rank of its parent, weighted score)"
                                                if ins.matches else ""))
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    data = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data


def render_html(ins: Inspection, *, max_chars: int | None = 60_000) -> str:
    """A self-contained HTML page: the text with each sentence end's probability, the cuts of every chunker and
    the matched chunks of the LGMGC chunker (all text escaped). Long documents are shown up to ``max_chars``."""
    text = ins.text if max_chars is None else ins.text[:max_chars]
    marks: dict[int, list[str]] = {}
    for k, (_, e) in enumerate(ins.sentences):
        if e > len(text):
            break
        p = ins.probs[k]
        if not np.isnan(p):
            marks.setdefault(e, []).append(f'<sup class="p" title="p(boundary) after this sentence">{p:.2g}</sup>')
    for name in ins.chunks:
        for c in ins.cuts(name):
            if c <= len(text):
                marks.setdefault(c, []).append(f'<span class="cut {name}" title="{name} cut">‖{name}</span>')
    lg_matches = sorted(ins.matches.get("lgmgc", []), key=lambda m: -m.weighted)
    opens: dict[int, list[str]] = {}
    closes: dict[int, int] = {}
    best = {}
    for m in lg_matches:  # highlight each matched chunk of the finest level that matched, once
        key = (m.start, m.end)
        if key in best:
            continue
        best[key] = m
    for (s, e), m in best.items():
        if e <= len(text):
            opens.setdefault(s, []).append(
                f'<mark class="l{m.level}" title="{LEVEL_NAMES[m.level]} chunk: score {m.score:.3f} × weight '
                f'{m.weight:.2f} = {m.weighted:.3f}; parent rank {m.rank or "–"}">')
            closes[e] = closes.get(e, 0) + 1
    out, prev = [], 0
    points = sorted(set(marks) | set(opens) | set(closes))
    for pt in points:
        out.append(html.escape(text[prev:pt]))
        out.append("</mark>" * closes.get(pt, 0))
        out.extend(marks.get(pt, []))
        out.extend(opens.get(pt, []))
        prev = pt
    out.append(html.escape(text[prev:]))
    body = "".join(out).replace("\n", "<br>\n")
    summary = html.escape(str(ins.summary()))
    rows = []
    for name, ms in ins.matches.items():
        for m in sorted(ms, key=lambda m: -m.weighted)[:15]:
            snippet = html.escape(ins.text[m.start:m.end][:160])
            rows.append(f"<tr><td>{name}</td><td>{LEVEL_NAMES[m.level]}</td><td>{m.score:.3f}</td>"
                        f"<td>{m.weight:.2f}</td><td>{m.weighted:.3f}</td><td>{m.rank or '–'}</td>"
                        f"<td>{snippet}</td></tr>")
    table = ("<table><tr><th>chunker</th><th>level</th><th>score</th><th>weight</th><th>weighted</th>"
             "<th>parent rank</th><th>chunk</th></tr>" + "".join(rows) + "</table>") if rows else ""
    embedded = ""
    if ins.contexts:  # what MG's parents are embedded as: the context line (shown in bold), then the text
        items = [f"<li><b>{html.escape(ins.contexts.get((c.start, c.end), ''))}</b><br>"
                 f"{html.escape(c.text[:160])}…</li>" for c in ins.parents("mg")[:20]]
        embedded = ("<h2>What is embedded and keyword-indexed (chunk_context): MG parents</h2><ol>"
                    + "".join(items) + "</ol>")
    more = "" if max_chars is None or len(ins.text) <= max_chars else \
        f"<p><em>shown: the first {max_chars:,} of {len(ins.text):,} characters</em></p>"
    style = ("body{font-family:sans-serif;max-width:70em;margin:auto;line-height:1.5}"
             "sup.p{color:#888;font-size:70%}.cut{font-weight:bold;font-size:75%;margin:0 2px}"
             ".cut.lgmgc{color:#c0392b}.cut.recursive{color:#2471a3}.cut.mg{color:#7d3c98}"
             "mark.l0{background:#fdebd0}mark.l1{background:#fad7a0}mark.l2{background:#f5b041}"
             "table{border-collapse:collapse;font-size:85%}td,th{border:1px solid #ccc;padding:2px 6px}")
    title = html.escape(f"Chunk inspector: {ins.name}")
    q = f"<p><b>Question:</b> {html.escape(ins.question)}</p>" if ins.question else ""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title><style>{style}</style></head>"
            f"<body><h1>{title}</h1><p><code>{summary}</code></p>{q}{table}{embedded}{more}"
            f"<div class='text'>{body}</div>"
            "</body></html>")

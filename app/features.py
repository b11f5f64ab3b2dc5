"""Named features of a candidate answer (:mod:`app.candidates`) for the fitted scorer (:mod:`app.scorer`).

Each feature is a number about one candidate and the question (:class:`app.question.Question`), most in [0, 1];
their weights are fitted on the train split (``bench/fit_reader.py``), none is set here. :data:`FEATURES` names them:

* ``sim``, ``sim_gap``, ``sim_top``: the embedder's cosine between the question and the candidate (a cell: its
  row with the table's column headers), that less the best candidate's, and whether it is the best; ``sim_window``:
  the cosine with the candidate and the sentences either side of it (the mean of their vectors);
* ``cov``, ``cov_gap``: the share of the question's key terms (idf-weighted over the candidates) that the candidate
  and its context (headings; a cell's title, row and column) hold, by stem; ``cov_soft``: the same with each term
  missing by stem credited with its closest word's cosine (the embedder's synonyms: "employ" and "workforce");
  ``cov_focus``: of the terms of what is asked; ``cov_passage``: of the whole passage around it; ``bigram_cov``: the
  share of the question's pairs of adjacent key terms ("net sales", "operating income") it holds side by side;
* ``ent_cand``, ``ent_doc``: the share of the names the question mentions that the candidate, and its document, say
  (by words or by initials: "AGM", "SG&A"); 1 when it names none;
* ``kind_fit``: the candidate holds an answer of the kind asked (a figure, a percent, a date, a name, a cause);
* ``period_hit``, ``period_other``, ``period_unasked``, ``doc_period``: the period asked is named by the candidate or
  its context; it names only other periods; the question names none; its document's cover is of that period;
* ``boiler``: text printed word for word in several documents, or a safe-harbour / certification phrase;
* ``is_cell``, ``cell_numeric_q``, ``label_prec``, ``row_cov``, ``first_col``: a table cell; a cell for a figure
  question; the share of its row label's words that the question asks about, and of the question's key terms its row
  label holds; whether it is its row's first figure (a statement prints the latest period first);
* ``src_rank``, ``src_score``, ``looked_up``: its passage's rank (1/rank) and score (of the best), and whether the
  table lookup added it;
* ``n_words``, ``has_number``: its length (log) and whether it gives a figure (in digits or words);
* ``novel_share``, ``new_name``, ``new_number``: the share of its content words the question does not hold (a
  sentence that only restates the question answers nothing), whether it names someone or something the question
  does not, and gives a figure the question does not; ``name_q_new_name`` and ``numeric_q_new_number`` the last two
  for a question that asks a name, or a figure;
* ``is_window``: two sentences quoted together (:mod:`app.candidates`).
"""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from app.candidates import Candidate, has_kind, numbers_in, words_number
from app.grounding import SentenceVectors
from app.question import DATE_RE, MONTH_NAMES, WORD, YEAR_RE, Question, content_words, lexicon, read_period

FEATURES = ("sim", "sim_gap", "sim_top", "sim_window", "cov", "cov_gap", "cov_soft", "cov_focus", "cov_passage",
            "bigram_cov", "ent_cand", "ent_doc", "kind_fit", "period_hit", "period_other", "period_unasked",
            "doc_period", "boiler", "is_cell", "cell_numeric_q", "label_prec", "row_cov", "first_col", "src_rank",
            "src_score", "looked_up", "n_words", "has_number", "novel_share", "new_name", "name_q_new_name",
            "new_number", "numeric_q_new_number", "is_window")


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English stem, enough to match "increased" with "increase" and "sales" with "sale".

    >>> [stem(w) for w in ("increased", "revenues", "cloud", "policies", "processing")]
    ['increas', 'revenu', 'cloud', 'policy', 'process']
    """
    w = word.lower().strip("'’.")
    for suf, rep in (("ings", ""), ("ies", "y"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if len(w) > len(suf) + 3 and w.endswith(suf) and not w.endswith("ss"):
            w = w[: -len(suf)] + rep
            break
    if w.endswith("e") and len(w) > 5:
        w = w[:-1]
    return w


def stems(text: str) -> set[str]:
    return {stem(m.group()) for m in WORD.finditer(text)}


class WordVectors(SentenceVectors):
    """The embedder's vectors of single words (the LRU of :class:`app.grounding.SentenceVectors`, shared by the
    server's threads): the soft matches of ``cov_soft``."""

    def __init__(self, embedder, size: int = 50_000):
        super().__init__(embedder, size)

    def of(self, words: Sequence[str]) -> np.ndarray:
        return self.passages(words)


@dataclass
class Signals:
    """What the features read besides the question and the candidates: ``embed(question, texts)`` (the question's
    unit vector and the texts', one row each),
    ``words`` (a :class:`WordVectors`, or None: ``cov_soft`` is then ``cov``), ``doc_text(source)`` (a passage's
    whole document, or None), ``doc_years(source)`` (the years its cover states), ``recurring(text)`` (printed in
    several documents)."""

    embed: Callable[[str, Sequence[str]], tuple[np.ndarray, np.ndarray]]
    words: WordVectors | None = None
    doc_text: Callable[[object], str | None] = lambda src: None
    doc_years: Callable[[object], set[int]] = lambda src: set()
    recurring: Callable[[str], bool] = lambda text: False


# the half added to a term's document frequency: the Robertson–Spärck Jones smoothing BM25 uses (a term in every
# text still weighs a little, one in none does not divide by zero)
IDF_SMOOTHING = 0.5


def idf(terms: Sequence[str], stem_sets: Sequence[set[str]]) -> dict[str, float]:
    """Each term's inverse document frequency over ``stem_sets`` (the candidates, or the rows of a lookup)."""
    n = max(len(stem_sets), 1)
    out: dict[str, float] = {}
    for t in terms:
        st = stem(t)
        df = sum(1 for s in stem_sets if st in s)
        out[t] = math.log(1 + (n + 1) / (df + IDF_SMOOTHING))
    return out


def coverage(terms: Sequence[str], weights: dict[str, float], have: set[str]) -> float:
    total = sum(weights[t] for t in terms)
    return sum(weights[t] for t in terms if stem(t) in have) / total if total else 1.0


def acronym_in(token: str, text: str) -> bool:
    """Is ``token`` ("AGM", "SG&A", "NTSB") in ``text``, as itself or as the initials of consecutive words ("annual
    general meeting"; "selling, general and administrative", "and"/"of"/"the" skipped)?

    >>> acronym_in("SG&A", "Selling, general and administrative expenses rose."), acronym_in("AGM", "the meeting")
    (True, False)
    """
    letters = re.sub(r"[^A-Za-z]", "", token).upper()
    if len(letters) < 2:
        return False
    if re.search(rf"(?<![A-Za-z]){re.escape(token)}(?![A-Za-z])", text, re.I):
        return True
    skip = {"and", "of", "the", "for", "&"}
    words = [w for w in re.findall(r"[A-Za-z]+", text) if w.lower() not in skip]
    firsts = "".join(w[0] for w in words).upper()
    return letters in firsts and any(
        "".join(w[0] for w in words[i:i + len(letters)]).upper() == letters for i in range(len(words)))


def name_in(name: str, text: str, low: str | None = None) -> bool:
    """Does ``text`` say ``name``: all its words (any case), or, for a short capitals token, its initials?"""
    low = text.lower() if low is None else low
    words = [w.lower() for w in re.findall(r"[A-Za-z0-9]+", name)]
    if words and all(re.search(rf"\b{re.escape(w)}\b", low) for w in words):
        return True
    return bool(re.fullmatch(r"[A-Z][A-Z&.]{1,7}", name)) and acronym_in(name, text)


def _period_of(text: str) -> tuple[set[int], set[int], str]:
    p = read_period(text)
    return set(p.years), set(p.quarters), text.lower()


def _same_date(date: str, text: str) -> bool:
    month, day, year = date.split()
    return bool(re.search(rf"\b{month[:3]}[a-z]*\.?\s+{day},?\s+{year}\b", text))


# a quarter asked ("Q3 2023") and a candidate of a quarter's span that does not say which ("Three Months Ended July
# 1, 2023"): half a match, since which calendar months a fiscal quarter covers is the document's, not the question's
QUARTER_SPAN_CREDIT = 0.5


def period_fit(q: Question, text: str, header: bool = False) -> tuple[float, float]:
    """(the share of the asked period's parts that ``text`` names, 1 if it names only other years or quarters). A
    month counts in prose beside a day or a year ("June 2009"), alone in a table's ``header`` ("Jun")."""
    p = q.period
    if not p.asked:
        return 0.0, 0.0
    years, quarters, low = _period_of(text)
    parts, hit, other = 0, 0.0, 0.0
    if p.years:
        parts += 1
        hit += bool(years & set(p.years))
        other = max(other, float(bool(years) and not years & set(p.years)))
    if p.quarters:
        parts += 1
        if quarters & set(p.quarters):
            hit += 1
        elif not quarters and re.search(r"\bthree months\b|\bquarter\b", low):
            hit += QUARTER_SPAN_CREDIT
        other = max(other, float(bool(quarters) and not quarters & set(p.quarters)))
    if p.dates:
        parts += 1
        hit += any(_same_date(d, low) for d in p.dates)
    if p.span:
        parts += 1
        hit += p.span in low or (p.span == "three" and "quarter" in low) or (p.span == "twelve" and "year" in low)
    if p.months:
        parts += 1
        near = "" if header else r"(?=\s*,?\s*\d)"
        named = {i + 1 for i, m in enumerate(MONTH_NAMES) if re.search(rf"\b{m[:3]}(?:{m[3:]}|\.)?\b{near}", low)}
        hit += bool(named & set(p.months))
        other = max(other, float(bool(named) and not named & set(p.months)))
    return hit / parts, other


def _boilerplate(text: str) -> bool:
    low = text.lower()
    return any(ph in low for ph in lexicon()["boilerplate_phrases"])


def featurize(q: Question, cands: Sequence[Candidate], sources: Sequence, sig: Signals) -> np.ndarray:
    """The feature matrix (one row per candidate, columns :data:`FEATURES`); each candidate's ``features`` filled."""
    if not cands:
        return np.zeros((0, len(FEATURES)), np.float32)
    by_rank = {getattr(s, "rank", 0): s for s in sources}
    order = {getattr(s, "rank", 0): i for i, s in enumerate(sources)}
    top_score = max((float(getattr(s, "score", 0.0) or 0.0) for s in sources), default=0.0) or 1.0
    terms = list(q.terms)
    focus = [t for t in q.focus if t in terms]
    cand_stems = [stems(f"{c.text} {c.context}") for c in cands]
    idf_of = idf(terms, cand_stems)
    qv, V = sig.embed(q.query or q.text, [c.about for c in cands])
    sims = (V @ qv).astype(np.float32) if len(V) else np.zeros(len(cands), np.float32)
    windows = _window_sims(cands, V, qv)
    # what the question holds, a follow-up's inherited terms and names included ("And the year before?")
    q_stems = {stem(w) for w in (*content_words(q.text), *q.terms)} | {stem(w) for e in q.entities
                                                                         for w in WORD.findall(e)}
    q_numbers = set(re.findall(r"\d[\d,.]*", q.text))
    soft = _soft_coverage(terms, idf_of, cands, cand_stems, sig.words)
    passage_stems = {r: stems(f"{getattr(s, 'text', '')} {' '.join(getattr(s, 'headings', None) or [])}")
                     for r, s in by_rank.items()}
    doc_low: dict[int, str] = {}
    ent_doc: dict[int, float] = {}
    asked_stems = {stem(w) for w in terms} | {stem(w) for e in q.entities for w in WORD.findall(e)}
    q_pairs = _pairs(q.text)
    first_cols: dict[tuple[int, int], object] = {}
    for c in cands:
        if c.cell is not None and c.cell.number is not None:
            first_cols.setdefault((c.source, c.start), c.cell)
    rows = []
    for c, st, sim, sc, win in zip(cands, cand_stems, sims, soft, windows):
        src = by_rank.get(c.source)
        if c.source not in ent_doc:
            full = (sig.doc_text(src) if src is not None else None) or getattr(src, "text", "") or ""
            doc_low[c.source] = full.lower()
            ent_doc[c.source] = (sum(name_in(e, full, doc_low[c.source]) for e in q.entities) / len(q.entities)
                                 if q.entities else 1.0)
        where = f"{c.text} {c.context}"
        # a cell's period is its column's (and its row's: "Q3" rows), never its row's other columns
        hit, other = (period_fit(q, f"{c.cell.column} {c.cell.row} {c.cell.title}", header=True)
                      if c.cell is not None else period_fit(q, where))
        doc_years = sig.doc_years(src) if src is not None else set()
        novel = _novelty(c, q_stems, q_numbers)
        f = {
            "sim": float(sim),
            "sim_window": float(win),
            "cov": coverage(terms, idf_of, st),
            "cov_soft": sc,
            "cov_focus": coverage(focus, idf_of, st) if focus else coverage(terms, idf_of, st),
            "cov_passage": coverage(terms, idf_of, passage_stems.get(c.source, set()) | st),
            "bigram_cov": _bigram_cov(q_pairs, where),
            "ent_cand": (sum(name_in(e, where) for e in q.entities) / len(q.entities)) if q.entities else 1.0,
            "ent_doc": ent_doc[c.source],
            "kind_fit": float(_kind_fit(q, c)),
            "period_hit": hit,
            "period_other": other,
            "period_unasked": float(not q.period.asked),
            "doc_period": float(bool(q.period.years) and bool(doc_years & set(q.period.years))),
            "boiler": float(_boilerplate(c.text) or sig.recurring(c.text)),
            "is_cell": float(c.cell is not None),
            "cell_numeric_q": float(c.cell is not None and q.numeric),
            "label_prec": _label_precision(c, asked_stems),
            "row_cov": coverage(terms, idf_of, stems(c.cell.row)) if c.cell is not None else 0.0,
            "first_col": float(c.cell is not None and first_cols.get((c.source, c.start)) is c.cell),
            "src_rank": 1.0 / (1 + order.get(c.source, len(sources))),
            "src_score": float(getattr(src, "score", 0.0) or 0.0) / top_score if src is not None else 0.0,
            "looked_up": float(c.looked_up),
            "n_words": math.log1p(len(c.text.split())) / 4,
            "has_number": float(c.cell.number is not None if c.cell is not None
                                else bool(numbers_in(c.text)) or words_number(c.text)),
            "novel_share": novel[0],
            "new_name": novel[1],
            "name_q_new_name": novel[1] * (q.kind == "name"),
            "new_number": novel[2],
            "numeric_q_new_number": novel[2] * q.numeric,
            "is_window": float(c.kind == "window"),
        }
        rows.append(f)
    best_sim = max(r["sim"] for r in rows)
    best_cov = max(r["cov"] for r in rows)
    for c, r in zip(cands, rows):
        r["sim_gap"] = r["sim"] - best_sim
        r["sim_top"] = float(r["sim"] >= best_sim)
        r["cov_gap"] = r["cov"] - best_cov
        c.features = r
    return np.asarray([[r[k] for k in FEATURES] for r in rows], dtype=np.float32)


def _window_sims(cands: Sequence[Candidate], V: np.ndarray, qv: np.ndarray) -> list[float]:
    """Each candidate's cosine with the question over itself and its neighbours in its passage (sentences only; a
    cell's and a window's is its own)."""
    out = []
    for i, c in enumerate(cands):
        if c.cell is not None or c.kind == "window" or not len(V):
            out.append(float(V[i] @ qv) if len(V) else 0.0)
            continue
        idx = [j for j in (i - 1, i, i + 1) if 0 <= j < len(cands) and cands[j].cell is None
               and cands[j].source == c.source]
        v = V[idx].sum(axis=0)
        n = float(np.linalg.norm(v)) or 1.0
        out.append(float(v @ qv) / n)
    return out


def _novelty(c: Candidate, q_stems: set[str], q_numbers: set[str]) -> tuple[float, float, float]:
    """(the share of the candidate's content words not in the question, 1 if it names a capitalised name the
    question does not, 1 if it gives a figure the question does not)."""
    text = c.line if c.cell is not None else c.text
    words = content_words(text)
    share = sum(1 for w in words if stem(w) not in q_stems) / len(words) if words else 0.0
    names = [m.group() for m in re.finditer(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z][A-Za-z'’-]*", text.strip())]
    new_name = any(stem(n.lower()) not in q_stems for n in names)
    figures = set(re.findall(r"\d[\d,.]*", text)) - q_numbers
    new_number = bool(figures) or (c.cell is None and words_number(text))
    return share, float(new_name), float(new_number)


def _pairs(text: str) -> set[tuple[str, str]]:
    """Stems of adjacent content words ("net sales" → (net, sale)), function words between them skipped."""
    words = [stem(w) for w in content_words_in_order(text)]
    return set(zip(words, words[1:]))


def content_words_in_order(text: str) -> list[str]:
    keep = set(content_words(text))
    return [w for w in (m.group().lower().strip("'’.") for m in WORD.finditer(text)) if w in keep]


def _bigram_cov(q_pairs: set[tuple[str, str]], text: str) -> float:
    if not q_pairs:
        return 0.0
    return len(q_pairs & _pairs(text)) / len(q_pairs)


def _kind_fit(q: Question, c: Candidate) -> bool:
    if c.cell is None:
        return has_kind(q.kind, c.text)
    cell = c.cell
    pct = "%" in cell.value or "%" in cell.column or "percent" in f"{cell.row} {cell.title}".lower()
    if q.kind == "percent":
        return pct
    if q.numeric:
        return cell.number is not None and not pct
    if q.kind == "date":
        return bool(DATE_RE.search(cell.value) or YEAR_RE.search(cell.value))
    if q.kind in ("name", "other"):
        return cell.number is None
    return False


def _label_precision(c: Candidate, asked: set[str]) -> float:
    if c.cell is None:
        return 0.0
    words = content_words(c.cell.row.split(": ", 1)[-1])
    return sum(1 for w in words if stem(w) in asked) / len(words) if words else 0.0


def _soft_coverage(terms: Sequence[str], weights: dict[str, float], cands: Sequence[Candidate],
                   cand_stems: Sequence[set[str]], words: WordVectors | None) -> list[float]:
    """``cov_soft`` of each candidate: a term it holds by stem counts 1, one it does not, the cosine of the closest
    of its words (never below 0)."""
    total = sum(weights[t] for t in terms)
    if not terms or not total:
        return [1.0] * len(cands)
    if words is None:
        return [coverage(terms, weights, st) for st in cand_stems]
    cand_words = [content_words(f"{c.text} {c.context}")[:200] for c in cands]
    vocab = sorted({w for ws in cand_words for w in ws})
    if not vocab:
        return [coverage(terms, weights, st) for st in cand_stems]
    index = {w: i for i, w in enumerate(vocab)}
    tv = words.of(terms)
    wv = words.of(vocab)
    sim = np.clip(tv @ wv.T, 0.0, 1.0)  # terms × vocabulary (unit vectors)
    out = []
    for ws, st in zip(cand_words, cand_stems):
        idx = [index[w] for w in ws]
        best = sim[:, idx].max(axis=1) if idx else np.zeros(len(terms))
        got = sum(weights[t] * (1.0 if stem(t) in st else float(b)) for t, b in zip(terms, best))
        out.append(got / total)
    return out

"""The reader: which sentence or table cell of the retrieved passages answers the question, and how sure that is.

:func:`read` takes the question as read once (:class:`app.question.Question`), builds the candidates
(:mod:`app.candidates`: every answerable sentence and every table cell, and the rows the table lookup adds), computes
their named features (:mod:`app.features`), and scores them with the fitted model (:mod:`app.scorer`). The best
candidate is the answer when the model's confidence in it reaches the threshold chosen on the dev split; otherwise
the reply abstains, whatever the question's words. With an LM checker (:mod:`app.checker`) the top candidates are
re-scored with the LM's yes/no judgement first. A change between two periods of one table row is answered with both
figures and the difference computed.

Nothing here is a rule about particular words: a new kind of question or document is a new row of training data for
the scorer, not a new branch in this module.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.candidates import Candidate, candidates, change_line
from app.cells import Cell
from app.features import Signals, featurize
from app.question import YEAR_RE, Question
from app.scorer import ReaderModel, answer_key

log = logging.getLogger(__name__)

MORE_QUOTES = 2  # further quotes shown under the answer, at most
# the candidates the LM check judges when the model has no fitted check stage, chosen on dev for the latency goal:
# with the question-first prompt and llama-server's prompt cache, the LM's pick among the scorer's top 2 answers 59%
# of the answerable rows against the scorer's first 54%, 2.9 s a question on 2 cores (the top 3 with the passage
# first: 62%, 19 s; bench/results/lm_check_dev_variants.json, variants 7 and 0)
LM_TOP_K = 2
# a further quote is shown when the scorer gives it at least this share of the answer's probability: nearly as good,
# so the reader sees the alternatives the scorer hesitated between
MORE_SHARE = 0.5
# Below the threshold the reply abstains; from HEDGE_FLOOR up to it, it also shows the HEDGE_LINES likeliest answer
# lines as "the closest the documents come" (no claim, no citation of support). Chosen on the train split by the rule
# stated in bench/hedge_band.py (bench/results/hedge_band.json): the lowest of the edges 0.05, 0.10, 0.20 above which
# the two likeliest lines hold the answer for at least half of the answerable questions the scorer abstains on; None
# when no edge does (then an abstention quotes nothing).
HEDGE_FLOOR: float | None = 0.10
HEDGE_LINES = 2


@dataclass
class Reading:
    """What the reader found: ``answer`` (the answer line; None when it abstains), ``best`` and its ``support``,
    at most two further quotes (``more``), the ``confidence`` in the answer and the threshold it was held to, and
    ``why`` in a few words."""

    question: Question
    answer: str | None
    best: Candidate | None
    support: list[Candidate]
    more: list[Candidate]
    confidence: float
    threshold: float
    why: str = ""
    ranked: list[Candidate] = field(default_factory=list, repr=False)
    checked: dict = field(default_factory=dict)  # the LM check's margins, when it ran
    hedge: list[Candidate] = field(default_factory=list)  # an abstention's likeliest lines (HEDGE_FLOOR)

    @property
    def abstained(self) -> bool:
        return self.answer is None


def read(q: Question, sources: Sequence, signals: Signals, model: ReaderModel,
         extra_cells: Sequence[tuple[Cell, object]] = (), checker=None) -> Reading:
    """The answer to ``q`` from ``sources`` (numbered passages), or an abstention (see the module doc)."""
    cands = candidates(q, sources, signals.doc_text, extra_cells)
    if not cands:
        return Reading(q, None, None, [], [], 0.0, model.threshold, "nothing to quote")
    looked = {getattr(src, "rank", 0): src for _, src in extra_cells}
    X = featurize(q, cands, list(sources) + list(looked.values()), signals)
    probs = model.probabilities(X)
    for c, p in zip(cands, probs):
        c.score = p
    top, confidence, threshold = model.decide(X, [c.line for c in cands], probs)
    order = [top] + sorted((i for i in range(len(cands)) if i != top), key=lambda i: -probs[i])
    ranked = [cands[i] for i in order]
    checked: dict = {}
    # without a fitted check stage the LM only reorders what the scorer answers: when the scorer abstains the check
    # could change nothing, so it is not asked (the time it would take is saved; the reply is the same)
    if checker is not None and (model.check is not None or confidence >= threshold):
        stage = model.check
        k = stage.top_k if stage is not None else LM_TOP_K
        # the first k that say different things: a sentence and the window holding it are one answer to the LM
        top = [order[j] for j in first_distinct([cands[i].line for i in order], k)]
        margins = checker.margins(q, [cands[i] for i in top])
        if margins is not None:
            if stage is not None:  # a fitted check stage: the scorer's and the LM's judgements combined
                rescored = {i: stage.probability(float(probs[i]), m) for i, m in zip(top, margins)}
                confidence, threshold = max(rescored.values()), stage.threshold
            else:  # none fitted: the LM picks among the top k; whether to answer stays the scorer's decision
                rescored = dict(zip(top, margins))
            top.sort(key=lambda i: -rescored[i])
            ranked = [cands[i] for i in top] + [cands[i] for i in order if i not in rescored]
            checked = {"margins": [round(m, 3) for m in margins], "threshold": threshold}
    best = ranked[0]
    more = _more(ranked, best)
    if confidence < threshold:
        return Reading(q, None, None, [], more[:0], confidence, threshold,
                       f"confidence {confidence:.2f} below {threshold:.2f}", ranked, checked,
                       hedge_of(ranked) if HEDGE_FLOOR is not None and confidence >= HEDGE_FLOOR else [])
    line = best.line
    if q.change and best.cell is not None:
        pair = change_pair(best.cell, [c.cell for c in cands if c.cell is not None], q.period.years)
        if pair is not None:
            line = change_line(*pair)
    return Reading(q, line, best, [best], more, confidence, threshold, best.kind, ranked, checked)


def first_distinct(lines: Sequence[str], k: int = HEDGE_LINES) -> list[int]:
    """The positions of the first ``k`` of ``lines`` (likeliest first) that say different things: not the same
    answer key, nor a piece of one already taken (a sentence and the two-sentence window that holds it).

    >>> first_distinct(["Fees rose.", "fees  rose.", "Fees rose. Costs fell.", "Costs fell.", "Tax fell."])
    [0, 3]
    >>> first_distinct(["Fees rose.", "Costs fell. Fees rose.", "Tax fell."])
    [0, 2]
    """
    out: list[int] = []
    seen: list[str] = []
    for i, line in enumerate(lines):
        if len(out) >= k:
            break
        key = answer_key(line)
        if not said_already(key, seen):
            seen.append(key)
            out.append(i)
    return out


def said_already(key: str, said: Sequence[str]) -> bool:
    """Is ``key`` (an answer key) one of ``said``, or a piece of one, or does it hold one?"""
    return any(key in u or u in key for u in said)


def hedge_of(ranked: Sequence[Candidate]) -> list[Candidate]:
    """The :data:`HEDGE_LINES` likeliest candidates from the numbered passages that say different things and quote
    different words (a looked-up row's source is not one of the passages the reply lists)."""
    out: list[Candidate] = []
    keys: list[str] = []
    for c in (c for c in ranked if not c.looked_up and says_something(c.line)):
        if len(out) == HEDGE_LINES:
            break
        key = answer_key(c.line)
        if said_already(key, keys) or any(overlaps(c, o) for o in out):
            continue
        keys.append(key)
        out.append(c)
    return out


def overlaps(a: Candidate, b: Candidate) -> bool:
    """Do ``a`` and ``b`` quote some of the same words of one passage (a sentence and a window holding it, two windows
    sharing a sentence)?"""
    return a.source == b.source and a.doc_id == b.doc_id and a.start < b.end and b.start < a.end


def _more(ranked: Sequence[Candidate], best: Candidate) -> list[Candidate]:
    """At most :data:`MORE_QUOTES` further quotes nearly as good as the answer (:data:`MORE_SHARE`), from other
    places: not the same row or sentence, nor a piece of one, nor words of the passage already quoted."""
    out: list[Candidate] = []
    said = [" ".join(best.text.lower().split())]
    for c in ranked[1:]:
        if c.score < MORE_SHARE * best.score:
            break
        if not says_something(c.line):
            continue
        t = " ".join(c.text.lower().split())
        if said_already(t, said) or any(overlaps(c, o) for o in [best, *out]):
            continue
        said.append(t)
        out.append(c)
        if len(out) == MORE_QUOTES:
            break
    return out


WORD_LETTERS = 3  # letters together that make a word, as app.cells reads a row's label ("AWS" is one, "32.6" none)
_WORDLIKE = re.compile(r"[^\W\d_]{%d}" % WORD_LETTERS)


def says_something(line: str) -> bool:
    """Does a line hold a word (:data:`WORD_LETTERS` letters together)? A bare row of a table whose labels were not read
    ("32.6 - - - 56.5 39.2") tells a reader nothing as a further quote or an unsure reply's closest line.

    >>> says_something("32.6 - - - 56.5 39.2 - 40.2"), says_something("AWS, 2023: 21,354"), says_something("Umsatz: 5")
    (False, True, True)
    """
    return bool(_WORDLIKE.search(line))


def change_pair(c: Cell, cells: Sequence[Cell], years: Sequence[int] = ()) -> tuple[Cell, Cell] | None:
    """The cell ``c`` and the same row's cell of the comparable other period: of the two years asked when the
    question names two (later first), else of an earlier year in a column of the same kind ("Three Months Ended")."""
    if c.number is None:
        return None
    row = [x for x in cells if (x.source, x.start) == (c.source, c.start) and x.number is not None]
    asked = sorted(set(years))

    def kind(x: Cell) -> str:
        return " ".join(YEAR_RE.sub(" ", x.column.lower()).split())

    if len(asked) >= 2:
        def of_year(y: int) -> Cell | None:
            hits = [x for x in row if str(y) in YEAR_RE.findall(x.column)]
            return next((x for x in hits if kind(x) == kind(c)), hits[0] if hits else None)

        late, early = of_year(asked[-1]), of_year(asked[0])
        return (late, early) if late is not None and early is not None and late is not early else None
    others = [x for x in row if x is not c]
    same = [x for x in others if kind(x) == kind(c)] or others
    ys = YEAR_RE.findall(c.column)
    earlier = [x for x in same if ys and YEAR_RE.findall(x.column) and YEAR_RE.findall(x.column)[-1] < ys[-1]]
    pick = (earlier or same)[:1]
    return (c, pick[0]) if pick else None

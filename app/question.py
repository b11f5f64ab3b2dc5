"""One reading of the question per turn: what kind of answer it wants, the names and the period it mentions, its key
terms, and whether it continues the conversation.

:func:`read_question` is called once in :func:`app.answer.ask`; the :class:`Question` it returns is what routing,
the table lookup, the candidates, their features and the check all read (nothing else parses the question again).

* **kind**: ``amount``, ``percent``, ``count``, ``measure`` (a figure with its unit: "how long"), ``date``,
  ``name``, ``yesno``, ``explain`` (why / how), or ``other`` — from the question's grammar ("how many", "when",
  "who", "why"), not from its topic;
* **entities**: the capitalised names it mentions ("Apple", "Jane Fairfax", "AT&T"), without what only looks like one:
  a period (``FY2023``, ``Q3``), a currency or unit (``USD``), an abbreviation of words joined by "&" (``SG&A``,
  ``R&D``), a capitalised common phrase ("Cash & Cash equivalents": written in capitals in the question, a line item
  in the documents). Whether a name is a document's is decided against the documents (:mod:`app.routing`);
* **period**: years (``FY2023``, "fiscal 2024"), quarters ("Q3", "the third quarter"), dates, a span of months, and
  a shift relative to the previous question ("the year before", "a year earlier", "the same quarter last year", "the
  prior-year period": one year back; "the quarter before": one quarter back), resolved against it;
* **terms**: its content words (no function, question or period words, no names), and **focus**, those of what is
  asked ("how many *flight hours* did the pilot …");
* **followup**: whether it refers back (:func:`app.conversation.refers_back`); then what it leaves out (its subject,
  its names, its period, its kind) comes from the question before, and ``query`` is the standalone search query.

>>> q = read_question("What were Apple's total net sales for the three months ended July 1, 2023?")
>>> q.kind, q.entities, q.period.years, q.period.dates, q.period.span, q.terms
('amount', ('Apple',), (2023,), ('july 1 2023',), 'three', ('total', 'net', 'sales'))
>>> read_question("What was SG&A in FY2023, in USD?").entities
()
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.conversation import entities as capitalised_runs
from app.conversation import rewrite

_DATA = Path(__file__).resolve().parent / "data"


@functools.cache
def lexicon() -> dict:
    """The closed word classes of ``app/data/language.json`` (function words, months, number words, currencies)."""
    raw = json.loads((_DATA / "language.json").read_text(encoding="utf-8"))
    out: dict = {}
    for k, v in raw.items():
        out[k] = frozenset(v.split()) if isinstance(v, str) and not k.startswith("_") else v
    return out


@functools.cache
def function_words() -> frozenset[str]:
    lx = lexicon()
    return lx["question_words"] | lx["auxiliaries"] | lx["function_words"] | lx["request_words"]


WORD = re.compile(r"[A-Za-z][A-Za-z'’&.-]*[A-Za-z]|[A-Za-z]|\d[\d,.]*%?")
MONTH_NAMES = ("january february march april may june july august september october november december").split()
_MONTH_RE = "|".join(m.capitalize() for m in MONTH_NAMES) + "|" + "|".join(m[:3].capitalize() + r"\.?"
                                                                         for m in MONTH_NAMES)
DATE_RE = re.compile(rf"\b({_MONTH_RE})\s+(\d{{1,2}}),?\s+((?:19|20)\d\d)\b")
YEAR_RE = re.compile(r"(?<![\d,.$])((?:19|20)\d\d)(?!\d|,\d)")
_FY_RE = re.compile(r"\b(?:fy|fiscal(?:\s+year)?)\s*'?((?:19|20)?\d\d)\b", re.I)
_QUARTER_RE = re.compile(r"\b(?:q([1-4])|([1-4])q|(first|second|third|fourth)[- ]quarter)\b", re.I)
_SPAN_RE = re.compile(r"\b(three|six|nine|twelve)[- ]months?\b", re.I)
_FULL_YEAR_RE = re.compile(r"\b(?:full|whole|entire)[- ](?:fiscal[- ])?year\b", re.I)
# a half of a year named with its year ("the first half of 2023", "second half of fiscal 2022", "H1 2023", "2023's
# first half"): a period like "January–June 2023", not two content words ("the second half of the sentence" is not)
_YEAR_WORDS = r"(?:(?:fiscal|financial|calendar)\s+)?(?:year\s+)?(?:FY\s?)?(?:19|20)\d\d"
_HALF_RE = re.compile(rf"\b(?:(?P<a>first|second|1st|2nd)\s+half(?:[- ]year)?"
                      rf"(?=\s+(?:of\s+)?(?:the\s+)?{_YEAR_WORDS}\b)"
                      rf"|\b(?:19|20)\d\d(?:['’]s)?\s+(?P<b>first|second|1st|2nd)\s+half\b"
                      rf"|\b[Hh](?P<c>[12])(?=\s+{_YEAR_WORDS}\b)|\b(?P<d>[12])H(?=\s*'?\d{{2,4}}\b))", re.I)
_HALF_MONTHS = {"first": (1, 6), "1st": (1, 6), "1": (1, 6), "second": (7, 12), "2nd": (7, 12), "2": (7, 12)}
_YEAR_BACK = re.compile(r"\b(?:a|one|the)\s+year\s+(?:before|earlier|ago|prior)\b|\byear\s+before\b|"
                        r"\b(?:prior|previous|preceding|last)[- ](?:fiscal[- ])?year(?:'s)?\b|\byear[- ]ago\b|"
                        r"\byear[- ]earlier\b|\bprior[- ]year\b", re.I)
_YEARS_BACK = re.compile(r"\b(two|three|four|five|\d)\s+years\s+(?:before|earlier|ago|prior)\b", re.I)
_QUARTER_BACK = re.compile(r"\b(?:the\s+)?quarter\s+(?:before|earlier|prior)\b|\b(?:prior|previous|preceding|last)"
                           r"[- ]quarter\b|\bsequential(?:ly)?\b", re.I)
_PERIOD_BACK = re.compile(r"\b(?:the\s+)?period\s+(?:before|earlier)\b|\b(?:prior|previous|preceding)[- ]period\b",
                          re.I)
_CHANGE_RE = re.compile(r"\b(change[sd]?|increase[sd]?|decrease[sd]?|grow|grew|growth|decline[sd]?|difference|"
                        r"differ|rise|rose|fall|fell|drop(?:ped)?|compared?|comparison|versus|vs\.?)\b", re.I)
_AMP_ABBREVIATION = re.compile(r"^[A-Za-z]{1,3}(?:&[A-Za-z]{1,3})+$")
_PERIOD_TOKEN = re.compile(r"^(?:q[1-4]|[1-4]q|h[12]|fy\s?'?\d{2,4}|cy\s?\d{2,4}|\d+|(?:19|20)\d\d|ytd|yoy|qoq|ttm)$",
                           re.I)
_FORM = re.compile(r"^(?:10-?[qk]|8-?k|20-?f|form)$", re.I)


@dataclass(frozen=True)
class Period:
    """The period a question asks about: ``years``, ``quarters`` (1–4), ``dates`` ("july 1 2023"), ``span`` (of
    months: "three", "six", "nine", "twelve"), and ``shift_years`` / ``shift_quarters`` (-1: "the year before"),
    which :func:`read_question` applies to the previous question's period."""

    years: tuple[int, ...] = ()
    quarters: tuple[int, ...] = ()
    dates: tuple[str, ...] = ()
    span: str | None = None
    shift_years: int = 0
    shift_quarters: int = 0
    months: tuple[int, ...] = ()  # a month named without its day ("in June 2009", "December's")

    @property
    def asked(self) -> bool:
        return bool(self.years or self.quarters or self.dates or self.span or self.months)

    @property
    def relative(self) -> bool:
        return bool(self.shift_years or self.shift_quarters)


@dataclass(frozen=True)
class Question:
    """What a question asks (:func:`read_question`)."""

    text: str  # as asked
    kind: str
    entities: tuple[str, ...]
    period: Period
    terms: tuple[str, ...]
    focus: tuple[str, ...] = ()
    change: bool = False
    followup: bool = False
    query: str = ""  # the standalone search query (the question itself unless it was rewritten)
    rewrite: str = "none"  # none, rules or llm
    previous: Question | None = field(default=None, repr=False)

    @property
    def numeric(self) -> bool:
        return self.kind in ("amount", "percent", "count", "measure")


def _kind_rules() -> list[tuple[str, Callable, re.Pattern, re.Pattern | None]]:
    """The question-kind rules of ``app/data/language.json`` (``question_kinds``), compiled once."""
    out = []
    for r in lexicon()["question_kinds"]:
        how = re.Pattern.match if "match" in r else re.Pattern.search
        out.append((r["kind"], how, re.compile(r.get("match") or r["search"]),
                    re.compile(r["unless"]) if r.get("unless") else None))
    return out


_KIND_RULES = _kind_rules()
_QUESTION_LEAD = re.compile(lexicon()["question_lead"]["pattern"])


def kind_of(question: str) -> str:
    """The kind of answer ``question`` wants, from its grammar.

    >>> [kind_of(q) for q in ("How many stores opened?", "When was it signed?", "Who is the CFO?",
    ...                       "Why did margins fall?", "Did they raise guidance?", "What was the gross margin?")]
    ['count', 'date', 'name', 'explain', 'yesno', 'amount']
    """
    ql = " ".join(question.lower().split())
    ql = _QUESTION_LEAD.sub("", ql)
    for kind, how, pattern, unless in _KIND_RULES:
        if how(pattern, ql) and not (unless is not None and unless.search(ql)):
            return kind
    return "other"


def _fy_year(token: str) -> int:
    y = int(token)
    return y if y >= 100 else 2000 + y if y < 70 else 1900 + y


def read_period(question: str) -> Period:
    """The period ``question`` names (not yet resolved against a previous question).

    >>> p = read_period("What was revenue in Q3 FY2023 compared with the same quarter a year earlier?")
    >>> p.years, p.quarters, p.shift_years
    ((2023,), (3,), -1)
    """
    dates = []
    for m in DATE_RE.finditer(question):
        month = next(x for x in MONTH_NAMES if x.startswith(m.group(1).lower()[:3]))
        dates.append(f"{month} {int(m.group(2))} {m.group(3)}")
    years = {int(y) for y in YEAR_RE.findall(question)} | {_fy_year(y) for y in _FY_RE.findall(question)}
    quarters = set()
    for m in _QUARTER_RE.finditer(question):
        q = m.group(1) or m.group(2)
        quarters.add(int(q) if q else lexicon()["ordinals"][m.group(3).lower()])
    for m in re.finditer(r"\b[qQ]([1-4])\s*'?(\d{2})\b", question):  # "Q3 23", "Q3'23"
        years.add(_fy_year(m.group(2)))
    span_m = _SPAN_RE.search(question)
    span = span_m.group(1).lower() if span_m else ("twelve" if _FULL_YEAR_RE.search(question) else None)
    shift_y = shift_q = 0
    many = _YEARS_BACK.search(question)
    if many:
        n = many.group(1).lower()
        shift_y = -(int(n) if n.isdigit() else lexicon()["number_words"][n])
    elif _YEAR_BACK.search(question):
        shift_y = -1
    if _QUARTER_BACK.search(question):
        shift_q = -1
    if _PERIOD_BACK.search(question) and not (shift_y or shift_q):
        shift_y = -1
    undated = DATE_RE.sub(" ", question)
    months = {i + 1 for i, m in enumerate(MONTH_NAMES) for _ in re.finditer(rf"\b{m.capitalize()}\b", undated)}
    for m in _HALF_RE.finditer(question):  # "the first half of 2023": as "January–June 2023" reads
        months.update(_HALF_MONTHS[next(g for g in m.groups() if g).lower()])
    return Period(tuple(sorted(years)), tuple(sorted(quarters)), tuple(dates), span, shift_y, shift_q,
                  tuple(sorted(months)))


def acronym_of(words: Sequence[str]) -> str:
    return "".join(w[0] for w in words if w).upper()


def is_name(run: str) -> bool:
    """Whether a capitalised run of the question can be a name: not a period or a form ("Q3 2023", "FY2023",
    "10-Q"), not a currency or a scale ("USD", "Million"), not an abbreviation of words joined by "&" ("SG&A"), and
    not a run that repeats a word ("Cash & Cash").

    >>> [is_name(x) for x in ("Apple", "FY2023", "USD", "SG&A", "Cash & Cash", "AT&T Inc", "Jane Fairfax", "If I")]
    [True, False, False, False, False, True, True, False]
    """
    lx = lexicon()
    words = [w.strip(".,'’") for w in run.split()]
    words = [w for w in words if w and w != "&"]
    if not words:
        return False
    if all(_PERIOD_TOKEN.match(w) or _FORM.match(w) or w.lower() in lx["currency_codes"]
           or w.lower() in lx["scale_words"] or w.lower() in MONTH_NAMES or w.lower() in lx["period_words"]
           for w in words):
        return False
    if len(words) == 1 and _AMP_ABBREVIATION.match(words[0]) and all(len(p) <= 2 for p in words[0].split("&")[:-1]) \
            and len(words[0].split("&")[-1]) == 1:
        return False  # SG&A, R&D, M&A, P&L: words abbreviated around "&"; "AT&T Inc" has a word of its own
    lowered = [w.lower() for w in words]
    if len(set(lowered)) < len(lowered):
        return False  # "Cash & Cash": a line item's words in capitals, one repeated
    closed = function_words()
    if all(re.split(r"['’]", w)[0] in closed for w in lowered):
        return False  # "If I", "I'm": capitals English spelling puts there; function words name nothing
    return True


def _names(question: str) -> list[str]:
    """The names a question mentions (:func:`is_name`), split at a possessive, without period or form words."""
    out: list[str] = []
    text = re.sub(r"(\w)&(\w)", r"\1AMPERSAND\2", question)  # keep "AT&T", "SG&A" whole through the run finder
    text = re.sub(r"\b([A-Z]\w*) & (?=[A-Z])", r"\1 Ampersand ", text)  # … and "Johnson & Johnson", "Cash & Cash"
    for run in capitalised_runs(text):
        run = run.replace("AMPERSAND", "&").replace(" Ampersand ", " & ")
        for part in re.split(r"['’]s\b\s*|(?<=s)['’](?=\s|$)", run):  # "Apple's", and a plural's "Flextronics'"
            words = [w for w in part.split() if not (_PERIOD_TOKEN.match(w.strip(".,")) or _FORM.match(w.strip(".,"))
                                                      or w.strip(".,").lower() in MONTH_NAMES)]
            name = " ".join(words).strip(" ,.")
            if name and is_name(name) and not all(len(w) == 1 for w in name.split()) and name not in out:
                out.append(name)
    return out


_ASKED = re.compile(r"^(?:\w+\s+)?(?:how (?:many|much)|what|which)\s+(?!(?:did|does|do|has|have|had|was|were|is|are|"
                    r"will|would|can|could)\b)(?P<np>[^?]+?)\s+(?:did|does|do|has|have|had|was|were|is|are|will|"
                    r"would|can|could)\s", re.I)
_ASKED_THE = re.compile(r"^(?:what|which|who)\s+(?:is|are|was|were)\s+(?:the\s+)?(?P<np>[^?]+?)(?:\s+(?:of|for|in|"
                        r"on|at|during|from|that|which|where|when|as of|according to|under|by)\b|\s*\?|$)", re.I)


def content_words(text: str) -> list[str]:
    """Lower-case content words: no function, question or period words, numbers, months or single letters."""
    lx = lexicon()
    skip = function_words() | lx["period_words"] | frozenset(MONTH_NAMES) | lx["scale_words"] | set(lx["number_words"])
    out = []
    for w in (m.group().lower().strip("'’.") for m in WORD.finditer(DATE_RE.sub(" ", text))):
        w = re.sub(r"['’]s$", "", w)
        if not w or w in skip or re.fullmatch(r"[\d,.%]+", w) or (len(w) == 1 and w.isalpha()) \
                or _PERIOD_TOKEN.match(w) or w in lx["currency_codes"]:
            continue
        if w not in out:
            out.append(w)
    return out


def read_question(text: str, history: Sequence[dict] = (), rewriter: Callable | None = None) -> Question:
    """Read ``text`` once, with the conversation before it (``history``: ``{"role", "content", "query"?}`` turns).
    ``rewriter``: a chat model's rewrite function for a follow-up's search query (None: the rules)."""
    q = text.strip()
    query, how = rewrite(q, history, rewriter) if history else (q, "none")
    names = _names(q)
    name_words = {w.lower() for n in names for w in WORD.findall(n)}
    # a half of a year is the question's period, not two of its terms (a candidate's words are read as they are)
    terms = [w for w in content_words(_HALF_RE.sub(" ", q)) if w not in name_words]
    focus: list[str] = []
    m = _ASKED.match(q) or _ASKED_THE.match(q)
    if m:
        asked = set(content_words(m.group("np")))
        focus = [t for t in terms if t in asked]
    own = Question(q, kind_of(q), tuple(names), read_period(q), tuple(terms), tuple(focus),
                   bool(_CHANGE_RE.search(q)), how != "none", query, how)
    if how == "none":
        return own
    prev = _previous(history)
    return _continue(own, prev, history) if prev is not None else own


def _previous(history: Sequence[dict]) -> Question | None:
    """The previous user turn read as it was searched (its standalone query holds what it inherited)."""
    users = [t for t in history if t.get("role") == "user"]
    if not users:
        return None
    last = users[-1]
    prev = read_question(str(last.get("content", "")))
    searched = str(last.get("query") or "")
    if searched and searched != prev.text:  # a follow-up itself: what it inherited is in its query
        wide = read_question(searched.replace("(", " ").replace(")", " "))
        prev = replace(prev, entities=prev.entities or wide.entities, terms=prev.terms or wide.terms,
                       period=prev.period if prev.period.asked else wide.period,
                       kind=prev.kind if prev.kind != "other" else wide.kind)
    return prev


def _shifted(p: Period, by_years: int, by_quarters: int, years_said: Sequence[int]) -> Period:
    years = list(p.years) or list(years_said)
    quarters = list(p.quarters)
    if by_quarters and quarters:
        moved = [(y, q + by_quarters) for y in (years or [0]) for q in quarters]
        moved = [(y - 1, q + 4) if q < 1 else (y, q) for y, q in moved]
        years = sorted({y for y, _ in moved if y})
        quarters = sorted({q for _, q in moved})
    years = [y + by_years for y in years]
    return Period(tuple(years), tuple(quarters), (), p.span, 0, 0, p.months)


def _continue(own: Question, prev: Question, history: Sequence[dict]) -> Question:
    """A follow-up completed from the question before: its terms when it has one or none of its own ("And in
    Europe?"), its names when it names none, its kind when its own says nothing, and its period shifted ("the year
    before"), kept (a follow-up that names no period asks about the same one) or given the year of the one before
    when it names only a part of a year ("And for the first nine months?", "What about the second quarter?")."""
    terms = own.terms if len(own.terms) >= 2 else tuple(dict.fromkeys([*own.terms, *prev.terms]))
    kind = own.kind if own.kind != "other" or len(own.terms) >= 2 else prev.kind
    if kind == "summary" and own.kind != "summary":  # "And margins?" after "Summarize the call.": a question of its own
        kind = "other"
    p = own.period
    if p.relative:
        said = [int(y) for y in YEAR_RE.findall(_last_answer(history))][-1:] if not prev.period.years else []
        period = _shifted(prev.period if prev.period.asked else p, p.shift_years, p.shift_quarters, said)
    elif not p.asked:
        period = prev.period
    elif not p.years and not p.dates and prev.period.years:  # "And for the first nine months?": the same year
        period = replace(p, years=prev.period.years)
    else:
        period = p
    return replace(own, kind=kind, entities=own.entities or prev.entities, terms=terms, period=period,
                   focus=own.focus or (prev.focus if terms != own.terms else ()), previous=prev)


def _last_answer(history: Sequence[dict]) -> str:
    last = next((t for t in reversed(history) if t.get("role") == "assistant"), None)
    return str(last.get("content", "")) if last else ""

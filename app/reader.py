"""The reader: what the question asks, and which figure or sentence of the retrieved passages answers it.

The extractive backend used to quote the three sentences closest to the question by embedding, from any source;
on real filings that gave walls of quotes, another company's rows and cited boilerplate for a metric the filing
does not report (issue 33). The reader works from structure and the question instead:

* :func:`frame` reads the question: its answer kind (amount, percent, count, date, yes/no, name, explanation),
  the names it mentions, its period (years, "three months ended …", "the year before") and its key terms;
* :func:`cells_of` turns the passages' tables into **cells** that know their row label (with its group: "Net
  sales: Products"), their column (the period) and the table's title and unit; a statement printed as plain
  lines ("Gross margin 40,215 34,670" under "Three Months Ended September 30, 2023 2022") is read as a table too;
* :func:`read` scores cells and sentences on the question's key terms (weighted by how rare they are among the
  passages), its period and answer kind, with a penalty for boilerplate (text that recurs in several documents,
  certifications, tables of contents) and the embedding similarity as one signal among them, and returns one
  answer, its support and at most two further quotes; a question whose key terms the passages never mention, or
  whose best candidate covers too little of them, gets no answer (the caller abstains);
* a question about a change between two periods of one row gets both figures and the difference computed.

Everything here is pure text processing (no model); the caller gives the passages and, if it has them, their
sentence vectors' similarities to the question.
"""
from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.conversation import entities
from app.grounding import source_sentences
from app.guard import looks_like_instruction
from ingest.text.tables import header_of, is_number, is_separator, is_table_line, row_quote, split_cells, table_lines
from retrieval.bm25 import STOPWORDS

# -- the question ---------------------------------------------------------------------------------------------------
_WORD = re.compile(r"[A-Za-z][A-Za-z'’&.-]*[A-Za-z]|[A-Za-z]|\d[\d,.]*%?")
_GENERIC = frozenset(
    "what which who whom whose when where why how does did do is are was were can could would should will may might "
    "tell me about please give describe explain according mentioned say said many much the a an of in on for to by "
    "as at from with and or its it this that these those there their they his her has have had been be being any "
    "report reported reports document documents filing filings company company's total amount value figure number "
    "latest recent current during period quarter quarterly year years fiscal ended ending end month months three "
    "six nine twelve first second third fourth q1 q2 q3 q4 fy than more less over under per same last prior "
    "previous before after between compared vs versus near off".split()) | STOPWORDS
# how questions are asked, not what they are about ("What did Intel *report* as its *latest* figure?")
_FILLER = frozenset(
    "report reported reports reporting disclose disclosed disclosure reveal revealed state stated statement mention "
    "mentioned provide provided indicate indicated show shown shows detail details information info data figures "
    "significant major key main overall various any some specific approximately roughly about around exactly "
    "undertake undertook magnitude extent scale size level levels breakdown insight insights gleaned glean note "
    "noted notes describe described according regarding related relate relates connect connected impact "
    "affect affected stack against align aligned compare comparison comparing reflect reflected "
    "announce announced make made get got give given take took put see seen find found look listed list "
    "specifically particular particularly respectively also just only even still yet each every all both either "
    "new old recent recently latest most least highest lowest biggest largest smallest main primary percentage "
    "percent proportion contribute contributed contribution segment segments portion attributed attributable "
    "generated generate come came "
    # the unit the answer is wanted in ("…, in millions of dollars?") says nothing about which figure
    "millions million billions billion thousands thousand dollars dollar usd".split())
_MONTHS = ("january february march april may june july august september october november december".split())
_MONTH_RE = "|".join(m.capitalize() for m in _MONTHS) + "|" + "|".join(m[:3].capitalize() + r"\.?" for m in _MONTHS)
_DATE_RE = re.compile(rf"\b({_MONTH_RE})\s+(\d{{1,2}}),?\s+((?:19|20)\d\d)\b")
_YEAR_RE = re.compile(r"(?<![\d,.$])((?:19|20)\d\d)(?!\d|,\d)")
_SPAN_RE = re.compile(r"\b(three|six|nine|twelve)[- ]months?\b", re.I)
_QUARTER_RE = re.compile(r"\b(?:q([1-4])|(first|second|third|fourth) quarter)\b", re.I)
_RELATIVE_RE = re.compile(r"\b(the )?(year|quarter|period) (before|earlier)\b|\b(prior|previous|preceding|last) "
                          r"(year|quarter|period)\b|\ba year (earlier|ago|before)\b", re.I)
_TITLES = frozenset("mr mrs ms dr st sir madam lord lady".split())
_RELATIVE_WORDS = frozenset("earlier ago prior previous preceding later since".split())
_CHANGE_RE = re.compile(r"\b(change[sd]?|exceed(ed|s)?|short|increase[sd]?|decrease[sd]?|grow|grew|growth|"
                        r"decline[sd]?|difference|differ|rise|rose|fall|fell|drop(ped)?|compared?|comparison|up|"
                        r"down)\b", re.I)
# the same thing said in other words on filings and reports (both directions are checked)
SYNONYMS = {"revenue": {"sales", "revenues"}, "revenues": {"sales", "revenue"}, "sales": {"revenue", "revenues"},
            "profit": {"income", "earnings"}, "earnings": {"income", "profit"}, "income": {"earnings", "profit"},
            "expenses": {"expense", "costs", "cost"}, "expense": {"expenses", "costs", "cost"},
            "costs": {"cost", "expenses", "expense"}, "cost": {"costs", "expense", "expenses"},
            "employees": {"employee", "headcount", "staff", "fte"}, "headcount": {"employees"},
            "spending": {"expenses", "spend"}, "r&d": {"research", "development"},
            "margin": {"profit"}, "spend": {"expenses", "expense"}, "spent": {"expenses", "expense"},
            "expenditure": {"expenses", "expense", "spending"}, "expenditures": {"expenses", "expense", "spending"},
            "attrition": {"turnover", "separations"}, "turnover": {"attrition"},
            # "operating cash flow" is printed "net cash provided by operating activities" / "… from operations"
            "operating": {"operations"}, "operations": {"operating"}, "flow": {"activities"}, "flows": {"activities"}}


def stem(word: str) -> str:
    """A light English stem, enough to match "increased" with "increase" and "sales" with "sale".

    >>> [stem(w) for w in ("increased", "revenues", "cloud", "policies", "processing")]
    ['increas', 'revenu', 'cloud', 'policy', 'process']
    >>> stem("landings") == stem("landing")
    True
    """
    w = word.lower().strip("'’.")
    for suf, rep in (("ings", ""), ("ies", "y"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if len(w) > len(suf) + 3 and w.endswith(suf) and not w.endswith("ss"):
            w = w[: -len(suf)] + rep
            break
    if w.endswith("e") and len(w) > 5:
        w = w[:-1]
    return w


def words_of(text: str) -> list[str]:
    return [m.group().lower().strip("'’.") for m in _WORD.finditer(text)]


@dataclass
class Frame:
    """What a question asks (:func:`frame`)."""

    question: str
    kind: str  # amount, percent, count, date, yesno, name, explain, other
    names: list[str]  # names it mentions ("Apple", "NVIDIA", "Project Heron")
    years: list[int]
    dates: list[str]  # "july 1 2023"
    span: str | None  # "three", "six", "nine", "twelve" (months)
    quarter: int | None
    relative: bool  # "the year before", "prior year"
    change: bool  # asks for a change between two periods
    terms: list[str]  # key terms (lower case, not names' words, not period words)
    # the terms of what is asked ("how many *flight hours* did the pilot of the Piper that hit trees have?"): the
    # rest describes whose or which (found elsewhere in the document); None when the question's shape is not read
    focus: list[str] | None = None
    head: str | None = None  # what a count counts ("how many *shares* of common stock …")
    asked: str = ""  # the words of what is asked, names included ("how many *Xbox Game Pass subscribers* did …")
    # the names that own what is asked and are not the documents' own ("the *Social Security Administration*'s
    # improper payment rate" over OPM's report), as their words: the answer itself must say them (or their initials)
    owner: list[tuple[list[str], str]] = field(default_factory=list)  # (words, the name's initials)

    @property
    def numeric(self) -> bool:
        return self.kind in ("amount", "percent", "count", "measure")


def _kind(q: str) -> str:
    ql = q.lower().strip()
    if re.search(r"\b(percent|percentage|%|share of|proportion|rate)\b", ql) and not re.search(r"exchange rate", ql):
        return "percent"
    if re.match(r"((by )?how many|what (is|was|were) the number of|number of)\b", ql):
        return "count"
    if re.match(r"how (old|long|far|tall|high|fast|big|large|deep|wide|heavy)\b", ql):
        return "measure"  # a figure with its unit ("85", "3,078 feet", "8 knots")
    if re.match(r"((on|in|at|by|since|until) )?(when|what (date|day|year|time))\b", ql):
        return "date"
    if re.match(r"(why|how (does|did|do|is|was|has|have|will|can|could)\b|explain|describe|what (led|caused|"
                r"drove|are the reasons|were the reasons|is the purpose|was the purpose))", ql):
        return "explain"
    if re.match(r"(who|which (company|person|firm|agency|organization|aircraft|airport)|what (is|was) the name)\b",
                ql):
        return "name"
    if re.match(r"(is|are|was|were|does|did|do|has|have|had|can|could|will)\b", ql):
        return "yesno"
    if re.search(r"\b(how much|amount|total|revenue|revenues|sales|income|cost|costs|expenses?|cash|margin|"
                 r"earnings|profit|loss|assets|liabilities|debt|price|spend|spending|budget|dividends?|eps|value|"
                 r"worth|paid|fees?|balance|inventory|backlog|score|visits|users|enrollees|enrollment)\b", ql):
        return "amount"
    return "other"


def frame(question: str) -> Frame:
    """Read ``question``.

    >>> f = frame("What were Apple's total net sales for the three months ended July 1, 2023?")
    >>> f.kind, f.names, f.years, f.dates, f.span, f.terms
    ('amount', ['Apple'], [2023], ['july 1 2023'], 'three', ['net', 'sales'])
    >>> frame("And the year before?").relative
    True
    """
    names = [n for n in entities(question) if not _DATE_RE.fullmatch(n) and n.split()[0].lower().rstrip(".")
             not in _MONTHS and not re.fullmatch(r"(Q[1-4]|FY\s?\d+|\d+)", n)]
    names = [p for n in names for p in _name_parts(n)]
    dates = [f"{m.group(1).lower()[:3]} {int(m.group(2))} {m.group(3)}" for m in _DATE_RE.finditer(question)]
    dates = [d.replace(d[:3], _full_month(d[:3]), 1) for d in dates]
    years = sorted({int(y) for y in _YEAR_RE.findall(question)})
    span = (_SPAN_RE.search(question).group(1).lower() if _SPAN_RE.search(question) else None)
    qm = _QUARTER_RE.search(question)
    quarter = (int(qm.group(1)) if qm.group(1) else ["first", "second", "third", "fourth"].index(qm.group(2).lower())
               + 1) if qm else None
    name_words = {w.lower() for n in names for w in words_of(n)}
    name_words |= {m.group(1).lower() for m in re.finditer(r"\bhow (long|often|far|old|big|large|soon|tall|high|"
                                                            r"wide|deep|fast|early|late)\b", question, re.I)}
    terms = ["age"] if re.search(r"\bhow old\b", question, re.I) else []
    for w in words_of(_DATE_RE.sub(" ", question)):
        w = re.sub(r"['’]s$", "", w)
        if not w or w in _GENERIC or w in name_words or w in _MONTHS or re.fullmatch(r"[\d,.%]+", w) \
                or (len(w) == 1 and w.isalpha()):  # "10-Q" is no "q"
            continue
        if _CHANGE_RE.fullmatch(w) or w in _RELATIVE_WORDS or w in _FILLER:  # how it asks, not what about
            continue
        if w not in terms:
            terms.append(w)
    f = Frame(question, _kind(question), names, years, dates, span, quarter, bool(_RELATIVE_RE.search(question)),
              bool(_CHANGE_RE.search(question)), terms, *_focus(question, terms))
    if f.kind == "other" and _VALUE_NOUNS.intersection(_asked_nouns(question, f.asked)):
        f.kind = "measure"  # "what BMI range is required?", "what are the sensitivity and specificity?": a figure
    return f


# what a question asks for when it asks one of these: a figure ("the sensitivity of the test": 95%)
_VALUE_NOUNS = frozenset("range ranges sensitivity specificity rate rates ratio percentage dose doses dosage volume "
                         "duration weight height temperature speed size age score threshold limit interval "
                         "visibility crosswind altitude elevation distance".split())
_WHAT_THE = re.compile(r"^\s*what\s+(?:is|are|was|were)\s+(?:the\s+)?(?P<np>[a-z][\w\s,()-]*?)\s+(?:of|for|in|on|at|"
                       r"from|required|used|allowed|needed|set|given|reported)\b", re.I)


def _asked_nouns(question: str, asked: str) -> set[str]:
    """The words of what the question asks for: its asked noun phrase, or "the X" of "what is the X of …"."""
    m = _WHAT_THE.match(question)
    np_ = asked or (m.group("np") if m else "")
    return {w for w in words_of(np_)}


_AUX = r"(?:did|does|do|has|have|had|was|were|is|are|will|would|can|could)"
# "How many X did/were …", "What type of X did …", "From which X did …": X is what is asked
_ASKED_NP = re.compile(rf"^(?:\w+\s+)?(?:how (?:many|much)|what|which)\s+(?!{_AUX}\b)(?P<np>[^?]+?)\s+{_AUX}\s+"
                       rf"(?P<rest>[^?]+)", re.I)
# "How long was X where/that …", "What was the X of the Y that …": X up to the clause that says which
_ASKED_COPULA = re.compile(r"^(?:how \w+|what|which|who)\s+(?:was|is|were|are)\s+(?P<np>[^?]+?)\s*,?\s+"
                           r"(?:that|which|where|who|whose|when|after|while)\s", re.I)


# "What was OPM's employee attrition rate in FY 2017?": what is asked, up to the phrase that says when or where
_ASKED_PLAIN = re.compile(r"^(?:what|which)\s+(?:was|is|were|are)\s+(?P<np>[^?]+?)\s+(?:(?:in|for|during|at|as of|on|"
                          r"(?:by|at) the end of)\s+(?:the\s+)?(?:fy\b|fiscal|q[1-4]\b|first|second|third|fourth|"
                          r"(?:19|20)\d\d|quarter|year|months?|three|six|nine|twelve|latest|most|its|their)|"
                          r"as (?:reported|stated|disclosed)|according to)[^?]*\?\s*$", re.I)


def _focus(question: str, terms: Sequence[str]) -> tuple[list[str] | None, str | None]:
    """The key terms of what the question asks, when its shape says so (:attr:`Frame.focus`).

    >>> _focus("How many total flight hours did the pilot of the Piper that hit trees have?",
    ...        ["flight", "hours", "pilot", "hit", "trees"])
    (['flight', 'hours'], 'hours', 'total flight hours')
    >>> _focus("What was the revenue?", ["revenue"])
    (None, None, '')
    """
    q = question.strip()
    m = _ASKED_NP.match(q) or _ASKED_COPULA.match(q) or _ASKED_PLAIN.match(q)
    if not m:
        return None, None, ""
    np = m.group("np")
    np_words = set(words_of(np))
    head = next((w for w in reversed(words_of(re.split(r"\s+of\s+", np)[0])) if w in terms), None)
    if m.re is _ASKED_NP and re.match(r"(was|were|is|are)\b", m.group(0)[m.end("np"):].strip(), re.I):
        first = words_of(m.group("rest"))[:1]  # "how many people were *killed* in …": the predicate is asked too
        np_words |= {w for w in first if w.endswith(("ed", "en"))}
    focus = [t for t in terms if t in np_words]
    return ((focus or None), (head if focus and re.match(r"\s*(\w+\s+)?how many\b", question, re.I) else None),
            np if focus else "")


_FORM_OR_PERIOD = re.compile(r"^(q[1-4]|fy|h[12]|10|k|q|form|\d+|(19|20)\d\d)$", re.I)


def _name_parts(name: str) -> list[str]:
    """A capitalised run as the names in it: split at a possessive ("Intel's R D" → "Intel", "R D"), without the
    period or form words a run picks up ("Q3 2022 10 Q")."""
    out = []
    for part in re.split(r"['’]s\b\s*", name):
        words = [w for w in part.split() if not _FORM_OR_PERIOD.match(w.strip(".,-"))]
        if words and not all(len(w) == 1 for w in words):
            out.append(" ".join(words))
    return out


def _full_month(abbr: str) -> str:
    return next(m for m in _MONTHS if m.startswith(abbr.lower()))


# -- cells --------------------------------------------------------------------------------------------------------
@dataclass
class Cell:
    """One figure of a table: ``row`` (its label, with its group's: "Cost of sales: Products"), ``column`` (the
    period or column name), ``value`` as printed, where it is (``source`` number and document offsets of its row),
    and the table's ``title`` and ``unit`` when the text above the table gives them."""

    source: int
    start: int
    end: int
    row: str
    column: str
    value: str
    title: str = ""
    unit: str = ""
    quote: str = ""  # the whole row with its column headers, as quoted

    @property
    def number(self) -> float | None:
        return parse_number(self.value)


_NUM_TOKEN = re.compile(r"\(?-?\$?\s?\d[\d,]*(?:\.\d+)?\s?%?\)?|—|-")


def parse_number(value: str) -> float | None:
    """``"$ 1,234"`` → 1234.0, ``"(265)"`` → -265.0, ``"12.5%"`` → 12.5; None for text.

    >>> parse_number("$ 81,797"), parse_number("(265)"), parse_number("12.5 %"), parse_number("n/a")
    (81797.0, -265.0, 12.5, None)
    """
    v = value.replace("$", "").replace(" ", "").strip()
    neg = v.startswith("(") and v.endswith(")")
    v = v.strip("()").rstrip("%")
    if not re.fullmatch(r"-?\d[\d,]*(\.\d+)?", v):
        return None
    n = float(v.replace(",", ""))
    return -n if neg else n


def _unit_of(text: str) -> str:
    m = re.search(r"\(\s*(?:dollars |amounts |\$ )?in (millions|billions|thousands)", text, re.I)
    return m.group(1).lower() if m else ""


def _title_above(text: str, start: int, max_back: int = 1500) -> tuple[str, str]:
    """The table's title and unit: the non-table lines just above the table block that starts at ``start``
    (tables split into groups are one block), at most three, nearest first."""
    pos, lines = start, []
    lo = max(0, start - max_back)
    while pos > lo and len(lines) < 3:
        prev_end = text.rfind("\n", lo, pos)
        if prev_end < 0:
            break
        prev_start = text.rfind("\n", lo, prev_end) + 1
        line = text[prev_start:prev_end].strip()
        pos = prev_start
        if not line or is_table_line(line):
            continue
        lines.append(line)
    title = " ".join(reversed(lines))
    return title[:200], _unit_of(title)


# a form's field holding several figures, each with what it counts: "2319 hours (Total, all aircraft), 2313 hours
# (Total, this make and model)"
_FIELD_PART = re.compile(r"(\d[\d,.]*\s*[A-Za-z]*)\s*\(([^()]+)\)")
_FIELD_PARTS = re.compile(r"\s*\d[\d,.]*\s*[A-Za-z]*\s*\([^()]+\)(?:\s*,\s*\d[\d,.]*\s*[A-Za-z]*\s*\([^()]+\))+\s*")


def _table_cells(text: str, base: int, source: int, doc_text: str | None = None) -> list[Cell]:
    """The cells of every Markdown table in ``text`` (a passage starting at document offset ``base``)."""
    out: list[Cell] = []
    group, group_at = "", 0
    titles: dict[int, tuple[str, str]] = {}  # a table block's title and unit, read once per block
    heads_above: dict[int, list[str]] = {}  # … and the columns its period lines give, when its header is empty
    block: int | None = None
    block_end = 0
    for s, e, _ in table_lines(text):
        line = text[s:e]
        if is_separator(line):
            continue
        head = header_of(text, s)
        if head is None or split_cells(line) == head:
            continue
        cells = split_cells(line)
        fields = _form_fields(cells)
        if fields:  # a form: "| Flight Time: | 475 hours (Total, all aircraft) | Runway Used: | 090 |"
            quote = row_quote(text, s, e)
            for name, value in fields:
                parts = _FIELD_PART.findall(value) if _FIELD_PARTS.fullmatch(value) else []
                for v, qualifier in parts or [(value, "")]:  # "2313 hours (Total, this make and model), …"
                    out.append(Cell(source, base + s, base + e, _row_name(group, name), qualifier, v, "", "", quote))
            continue
        # the row's label: its first cell of words, past a measure's code ("| 7.02A | Average unit cost … |")
        label = next((c for c in cells if c and not is_number(c) and re.search(r"[A-Za-z]{3}", c)),
                     next((c for c in cells if c and not is_number(c)), ""))
        values = [(j, c) for j, c in enumerate(cells) if c and is_number(c) and j > 0]
        full = doc_text if doc_text is not None else text
        at = base + s if doc_text is not None else s
        if label and not values:  # a group label ("Net sales:", "AWS")
            group, group_at = label.rstrip(":"), at
            continue
        if not values:
            continue
        if block is None or not _only_tables(full[block_end:at]):  # a new table block: walk back to its start once
            block = _block_start(full, at)
            titles[block] = _title_above(full, block)
            if group_at < block:
                group = ""  # a group of another table ("Rest of Asia Pacific:" above a reconciliation)
        block_end = at + (e - s)
        title, unit = titles[block]
        if block not in heads_above:
            heads_above[block] = _head_above(full, block)
        row = _row_name(group, label)
        if _SUBTOTAL.match(label):
            group = ""  # a total closes its group
        quote = row_quote(text, s, e)
        above = heads_above[block] if len(heads_above[block]) == len(cells) - 1 else []
        for j, v in values:
            col = head[j] if j < len(head) else ""
            if not col.strip() and above:  # an empty header row under the period lines of a statement
                col = above[j - 1]
            out.append(Cell(source, base + s, base + e, row, col, v, title, unit, quote))
    return out


def _form_fields(cells: Sequence[str]) -> list[tuple[str, str]]:
    """A form's (label, value) pairs: "Label:" and the cell after it; in a row that has those, also a label printed
    without its colon whose value stands past empty cells ("| Lowest Cloud Condition: | Scattered | Visibility | |
    0.7 Miles |"). No pairs: the row is no form."""
    fields = [(j, cells[j].rstrip(": "), cells[j + 1]) for j in range(len(cells) - 1)
              if cells[j].endswith(":") and cells[j + 1] and not cells[j + 1].endswith(":")]
    if not fields:
        return []
    used = {j for j, _, _ in fields} | {j + 1 for j, _, _ in fields}
    for j in range(len(cells) - 2):
        if j in used or not cells[j] or cells[j].endswith(":") or cells[j + 1] or re.search(r"\d", cells[j]):
            continue
        k = next((i for i in range(j + 1, len(cells)) if cells[i]), None)
        if k is not None and k not in used and not cells[k].endswith(":"):
            fields.append((j, cells[j], cells[k]))
            used |= {j, k}
    return [(label, value) for _, label, value in sorted(fields)]


# a statement's subtotal line, its own row and the end of the group above it ("Cash generated by operating activities"
# after the lines of "Changes in operating assets and liabilities:")
_SUBTOTAL = re.compile(r"^(total|net cash|cash (generated|provided|used)|net (increase|decrease))\b", re.I)


def _row_name(group: str, label: str) -> str:
    """A row's label with its group's ("Net sales: Products"); a total, a cash-flow subtotal or a label that repeats
    the group is its own ("Total net sales")."""
    if not group or not label or _SUBTOTAL.match(label) or group.lower() in label.lower():
        return label
    return f"{group}: {label}"


def _only_tables(between: str) -> bool:
    """Whether text between two rows holds only table lines and blank lines (the rows are of one table block)."""
    return all(not ln.strip() or is_table_line(ln) for ln in between.split("\n"))


def _block_start(text: str, pos: int) -> int:
    """The start of the run of table lines (and blank lines between them) that holds ``pos``."""
    start = text.rfind("\n", 0, pos) + 1
    while start > 0:
        prev_start = text.rfind("\n", 0, start - 1) + 1
        line = text[prev_start:start - 1]
        if line.strip() and not is_table_line(line):
            break
        start = prev_start
    return start


_LINE_ROW = re.compile(r"^(?P<label>[A-Za-z][^\n\d$()]*?[A-Za-z:)])\s+(?P<nums>(?:[($-]*\s?\$?\s?\(?\d[\d,]*(?:\.\d+)?"
                       r"\)?%?\s*){2,8})$")
_PERIOD_LINE = re.compile(rf"((?:three|six|nine|twelve) months ended|year ended|as of|quarter ended|{_MONTH_RE})",
                          re.I)


def _years_head(line: str, prev: str) -> list[str]:
    """The column names a line of two or more years gives ("Three Months Ended September 30, 2023 2022"), with the
    dates of the line above it when it holds only the years ("July 1, June 25," over "2023 2022")."""
    years = _YEAR_RE.findall(line)
    prefix = re.sub(r"\([^)]*\)", " ", _YEAR_RE.split(line)[0]).strip(" ,")  # not "(In Millions) Sep 30,"
    if re.fullmatch(r"[\d\s,]+", line) and _PERIOD_LINE.search(prev):  # "September 30, June 30," / "2023 2023"
        prev = re.sub(r"\([^)]*\)|\b(?:%\s*)?change\b|%", " ", prev, flags=re.I)  # "(In millions) …, Change"
        parts = [p.strip() for p in re.split(r",\s*", prev) if p.strip()]
        if len(parts) == 1:  # "September 30," over "2023 2022": both columns are that date's
            parts = parts * len(years)
        return [(f"{parts[k]}, {y}" if parts[k][-1:].isdigit() else f"{parts[k]} {y}") if k < len(parts) else y
                for k, y in enumerate(years)]
    sep = ", " if re.search(r"\d$", prefix) else " "
    return [f"{prefix}{sep}{y}".strip(" ,") for y in years]


_SPAN_HEAD = re.compile(r"\b(?:three|six|nine|twelve) months ended\b|\b(?:quarter|year) ended\b", re.I)


def _head_above(text: str, start: int) -> list[str]:
    """The columns of a table whose header row is empty, from the period lines printed above it ("Nine Months
    Ended" / "July 1, June 25," / "2023 2022" gives "Nine Months Ended July 1, 2023", "Nine Months Ended June 25,
    2022"); [] when the lines just above name no years."""
    above = [ln.strip() for ln in text[max(0, start - 600):start].split("\n") if ln.strip()][-4:]
    for i in range(len(above) - 1, -1, -1):
        ln = above[i]
        if len(_YEAR_RE.findall(ln)) >= 2 and (_PERIOD_LINE.search(ln) or re.fullmatch(r"[\d\s,]+", ln)):
            prev = above[i - 1] if i else ""
            head = _years_head(ln, prev)
            spans_at = i - 2 if re.fullmatch(r"[\d\s,]+", ln) and _PERIOD_LINE.search(prev) else i - 1
            spans = _SPAN_HEAD.findall(above[spans_at]) if spans_at >= 0 else []
            if spans and len(head) % len(spans) == 0 and not _SPAN_HEAD.search(" ".join(head)):
                per = len(head) // len(spans)
                head = [f"{spans[k // per]} {h}" for k, h in enumerate(head)]
            return head
        if "|" in ln:
            break
    return []


_MERGED_ROWS = re.compile(r"(?<=[\d)])\s+(?=[A-Z][a-z])")


def _line_cells(text: str, base: int, source: int) -> list[Cell]:
    """Statements printed as lines ("Gross margin 40,215 34,670" under "Three Months Ended September 30, 2023
    2022"): each line of a label and two or more figures is a row; its columns are the years of the nearest line
    above (within the block) that holds as many years."""
    out: list[Cell] = []
    lines = [(m.start(), m.end(), m.group()) for m in re.finditer(r"[^\n]+", text)]
    head: list[str] = []
    head_at = -10
    group, title, unit = "", "", ""
    for i, (s, e, line) in enumerate(lines):
        ln = line.strip()
        years = _YEAR_RE.findall(ln)
        if len(years) >= 2 and (_PERIOD_LINE.search(ln) or re.fullmatch(r"[\d\s,]+", ln)):
            head = _years_head(ln, lines[i - 1][2].strip() if i else "")
            head_at, group = i, ""
            t, u = _title_above(text, s, 600)
            title, unit = t, u or unit
            continue
        rows = [_LINE_ROW.match(ln)]
        if not rows[0]:  # an OCR'd page may print two rows on one line ("Cash … $ 5,783 $ 3,389 Marketable …")
            pieces = _MERGED_ROWS.split(ln)
            rows = [_LINE_ROW.match(x) for x in pieces] if len(pieces) > 1 else [None]
        if not all(rows):
            if (ln.endswith(":") and len(ln) < 60) or (head and len(ln) < 40 and re.fullmatch(r"[A-Z][A-Za-z ,&'’()-]+",
                                                                                              ln)):
                group = ln.rstrip(":")  # "Revenue" above "More Personal Computing 13,666 13,332"
            continue
        if i - head_at > 60 or not head:
            continue
        for m in rows:
            nums = [n.strip() for n in re.findall(r"\(?\$?\s?-?\d[\d,]*(?:\.\d+)?\)?%?", m.group("nums"))]
            nums = [n.replace("$", "").strip() for n in nums if n.replace("$", "").strip()]
            if len(nums) == len(head) + 1 and nums[-1].endswith("%"):
                nums = nums[:-1]  # a change column after the periods ("13,666 13,332 3%")
            if len(nums) != len(head):
                continue
            label = m.group("label").strip()
            row = _row_name(group, label)
            if _SUBTOTAL.match(label):
                group = ""
            quote = m.group().strip()  # the row as printed (its periods are in the answer line): word for word
            for h, v in zip(head, nums):
                out.append(Cell(source, base + s, base + e, row, h, v, title, unit, quote))
    return out


def cells_of(sources: Sequence, doc_text: Callable[[object], str | None] | None = None) -> list[Cell]:
    """Every cell of the passages' tables, Markdown tables and statements printed as lines (never a row that
    holds an order to an AI: :func:`app.guard.looks_like_instruction`)."""
    out: list[Cell] = []
    for src in sources:
        base = getattr(src, "start", 0)
        full = doc_text(src) if doc_text is not None else None
        out += _table_cells(src.text, base, src.rank, full)
        lead = ""
        if full and base > 0 and full[base: base + 200] == src.text[:200]:
            # a statement's period line may be above the passage: read from up to 2,500 characters before it
            cut = full.find("\n", max(0, base - 2500), base)
            lead = full[cut + 1: base] if 0 <= cut < base else ""
        out += [c for c in _line_cells(lead + src.text, base - len(lead), src.rank) if c.start >= base]
    return [c for c in out if not looks_like_instruction(c.quote)]


# -- scoring --------------------------------------------------------------------------------------------------------
@dataclass
class Candidate:
    kind: str  # "cell" or "sentence"
    source: int
    start: int
    end: int
    text: str  # what is shown: the row quote or the sentence
    score: float
    coverage: float
    cell: Cell | None = None
    why: dict = field(default_factory=dict)


@dataclass
class Reading:
    """What the reader found: the answer line (None: nothing answers; ``missing`` says which key terms the passages
    never mention), its support and at most two further quotes."""

    frame: Frame
    answer: str | None
    support: list[Candidate]
    more: list[Candidate]
    missing: list[str]
    best: Candidate | None = None
    why: str = ""


def _stems(text: str) -> set[str]:
    return {stem(w) for w in words_of(text)}


def _weights(frame_terms: Sequence[str], sets: Sequence[set[str]]) -> dict[str, float]:
    """Each key term's weight: rarer among the passages' sentences and rows (``sets``: the stems of each), heavier
    (an idf)."""
    n = max(len(sets), 1)
    out, absent = {}, []
    for t in frame_terms:
        df = sum(1 for s in sets if _has(t, s))
        if df == 0:
            absent.append(t)
            continue
        out[t] = math.log(1 + (n + 1) / (df + 0.5))
    top = max(out.values(), default=1.0)
    for t in absent:  # a term no passage holds weighs as the rarest one that some passage holds, not more
        out[t] = top
    return out


@functools.lru_cache(maxsize=4096)
def _alts(term: str) -> frozenset[str]:
    """The stems that say ``term``: its own and its synonyms'."""
    return frozenset({stem(term)} | {stem(x) for x in SYNONYMS.get(term, ())})


def _has(term: str, stems: set[str]) -> bool:
    return not _alts(term).isdisjoint(stems)


def _coverage(frame_terms: Sequence[str], weights: dict[str, float], stems: set[str],
              around: set[str] = frozenset(), asked: Sequence[str] = ()) -> float:
    """The share of the key terms (by weight) that ``stems`` hold; a term only the candidate's document holds
    (``around``: its other retrieved passages) counts :data:`AROUND_CREDIT` ("the pilot reported 2,319 hours" answers
    "how many hours did the pilot of the Piper that hit trees near Tallahassee have?": the trees are a page above),
    unless it is one of the ``asked`` terms (:attr:`Frame.focus`), which the candidate itself must hold."""
    total = sum(weights.get(t, 0.0) for t in frame_terms)
    if not total:
        return 1.0
    got = 0.0
    for t in frame_terms:
        got += weights[t] * (1.0 if _has(t, stems) else AROUND_CREDIT if t not in asked and _has(t, around) else 0.0)
    return got / total


_DOCUMENT_PERIOD = re.compile(r"\b(?:19|20)\d\d\s+(?:10-?[QK]|form|(?:annual |quarterly |performance )?report|"
                              r"filing)\b", re.I)


def label_precision(row: str, asked: set[str], own_only: bool = False) -> float:
    """The share of a row label's content words (with its group's, or past it with ``own_only``) that the question
    asks about, by stem or synonym (``asked``: the stems of the question's words and their synonyms): "Total
    revenue" 1, "Cost of revenue" 0.5 for "what was the revenue?"."""
    label = row.split(": ", 1)[-1] if own_only else row
    words = [w for w in words_of(label) if len(w) > 1 and not w[0].isdigit() and w not in _GENERIC
             and w not in _FILLER]
    return sum(1 for w in words if _has(w, asked)) / len(words) if words else 0.0


def _period_score(f: Frame, column: str, prev_years: Sequence[int] = (), row: str = "") -> float:
    """How well a column's header (or, for a quarter, the row's label: a sheet of "Q1", "Q2" rows) fits the
    question's period: its date, year, quarter, span of months; 0 when the question names none."""
    col = column.lower()
    want_years = list(f.years)
    if f.relative and prev_years:
        want_years = [y - 1 for y in prev_years]
    score, asked = 0.0, 0
    if f.dates and not f.relative:
        asked += 1
        score += any(_same_date(d, col) for d in f.dates)
    if want_years:
        asked += 1
        col_years = [int(y) for y in _YEAR_RE.findall(col)]
        score += bool(col_years) and any(y in col_years for y in want_years)
    if f.span:
        asked += 1
        score += f.span in col or (f.span == "three" and "quarter" in col)
    if f.quarter:
        asked += 1
        ordinal = ("first", "second", "third", "fourth")[f.quarter - 1]
        score += bool(re.search(rf"\bq{f.quarter}\b|\b{ordinal} quarter\b", f"{col} {row.lower()}"))
    return score / asked if asked else 0.0


def _period_ends(question: str, f: Frame) -> list[str]:
    """The question's dates that end or mark a reporting period ("the quarter ended April 30, 2023", "as of …"): a
    figure must be given for them; an event's date ("the accident on December 23, 2007") only says which one."""
    out = []
    for m, d in zip(_DATE_RE.finditer(question), f.dates):
        if re.search(r"\b(ended|ending|as of|as at|through|end of|at)\s*$", question[max(0, m.start() - 14): m.start()],
                     re.I):
            out.append(d)
    return out


# a period of months, not a day
_FLOW_HEAD = re.compile(r"\b(?:quarter|(?:three|six|nine|twelve) months|(?:fiscal )?year|period)s? end(?:ed|ing)\b|"
                        r"\bquarter\b|\bmonths\b|\bfiscal\b|\bfy\b|\bq[1-4]\b", re.I)


def _dated(c: "Candidate", date: str, cover: dict[int, set[str]], flow: bool = False) -> bool:
    """Does candidate ``c`` give a figure for ``date``: its column or text names it, or its document's cover period is
    that date and the sentence names no other date. For a period's figure (``flow``: "the quarter ended June 30"), a
    column that names the date alone is that period's only on a filing whose cover states it: elsewhere it is a
    balance "as of" that date (a 10-Q for September holds the fiscal year's June 30 balance sheet)."""
    text = (c.cell.column if c.cell is not None else c.text).lower()
    if _same_date(date, text):
        return (not flow or c.cell is None or date in cover.get(c.source, ())
                or bool(_FLOW_HEAD.search(f"{c.cell.column} {c.cell.title}")))
    return date in cover.get(c.source, ()) and not _DATE_RE.search(c.cell.column if c.cell is not None else c.text)


def _other_years(years: Sequence[int], text: str) -> bool:
    """Does ``text`` name years, all two or more away from every one of ``years`` (a fiscal year may be the calendar
    year after its quarters: one away is the same period)?"""
    named = {int(y) for y in _YEAR_RE.findall(text)}
    return bool(named) and all(abs(y - w) >= 2 for y in named for w in years)


def _other_quarters(quarter: int, text: str) -> bool:
    """Does ``text`` name quarters ("the third quarter", "Q3"), none of them ``quarter``?"""
    named = {int(m.group(1)) if m.group(1) else ("first", "second", "third", "fourth").index(m.group(2).lower()) + 1
             for m in _QUARTER_RE.finditer(text)}
    return bool(named) and quarter not in named


def _same_date(date: str, col: str) -> bool:
    month, day, year = date.split()
    return bool(re.search(rf"\b{month[:3]}[a-z]*\.?\s+{day},?\s+{year}\b", col))


_NUMBER_WORDS = re.compile(r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
                           r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|"
                           r"eighty|ninety|hundred|thousand|million|billion|dozen|half|pounds?|dollars?|euros?)\b",
                           re.I)
_MONEY_WORDS = re.compile(r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|"
                          r"fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion)[- ](pounds?|dollars?|"
                          r"euros?|cents?|million|billion|thousand|percent)\b", re.I)
_BOILER = re.compile(r"\b(forward-looking statements?|pursuant to (section|rule)|certif(y|ies|ication)|"
                     r"sarbanes|exhibit \d|table of contents|incorporated (herein )?by reference|signatures?|"
                     r"safe harbor|this (quarterly|annual) report on form)\b", re.I)


def _boilerplate(text: str, headings: Sequence[str] = ()) -> bool:
    return bool(_BOILER.search(text)) or any(_BOILER.search(h) for h in headings)


_MEASURE_UNITS = {"long": r"feet|foot|ft|miles?|meters?|metres?|km|inches|yards|hours?|minutes?|days?|months?|years?",
                  "far": r"feet|foot|ft|miles?|nautical miles|meters?|metres?|km|yards",
                  "old": r"years?|age|male|female", "fast": r"knots|mph|kts|km/h|miles per hour",
                  "high": r"feet|foot|ft|meters?|metres?", "tall": r"feet|foot|ft|meters?|metres?|inches",
                  "wide": r"feet|foot|ft|meters?|metres?|inches", "deep": r"feet|foot|ft|meters?|metres?|inches",
                  "heavy": r"pounds?|lbs?|kg|tons?"}


def _unit_fits(f: Frame, text: str) -> bool:
    """A measure question's figure with the unit it asks for ("how long was the runway": "3078 feet long")."""
    m = re.match(r"\s*how (\w+)", f.question, re.I)
    units = _MEASURE_UNITS.get(m.group(1).lower()) if m and f.kind == "measure" else None
    return bool(units and re.search(rf"\d[\d,.]*\s*-?\s*(?:{units})\b|\b(?:{units})\W{{0,3}}\d", text, re.I))


_CAUSE = re.compile(r"\b(because|due (primarily |mainly |largely |in part )?to|driven (primarily |mainly |largely )?by|"
                    r"primarily (by|from|as)|as a result|result(ed|ing)? (from|in)|caused by|owing to|"
                    r"reflect(s|ed|ing)?|attributable to|led to|offset|thanks to|since|so that|in order to|reason|"
                    r"contribut\w+ to|"
                    r"growth (in|of|across)|increase in|decrease in|decline in|higher|lower)\b", re.I)


_MONEY_NOUNS = frozenset("budget budgets cost costs price prices fee fees salary salaries spending spend spent revenue "
                         "revenues sales income expenses expense cash earnings profit proceeds".split())
_MONEY_FIGURE = re.compile(r"[$€£¥]\s?\(?\d|\d[\d,.]*\s*(?:million|billion|thousand|trillion|dollars|usd|eur|euros|"
                           r"pesos|cop|pounds)\b|\b(?:usd|eur|cop|gbp)\s?\d", re.I)


# "the context budget in words", "the time budget in hours": the question names a unit that is no currency
_OTHER_UNIT = re.compile(r"\bin (?!(?:u\.?s\.? )?(?:dollars|millions|billions|thousands|usd|euros?|pounds|pesos|"
                         r"cents)\b)[a-z]+s\W*$", re.I)


def _kind_fits(f: Frame, text: str) -> bool:
    """A sentence can answer a question of this kind: a figure for an amount, a percent for a percent, a date for a
    date, a cause for "why … ?"; any sentence for the rest."""
    if f.kind == "explain" and re.match(r"\s*(why|what (led|caused|drove))\b", f.question, re.I):
        return bool(_CAUSE.search(text))
    if f.kind == "percent":
        return bool(re.search(r"\d\s?%|\bpercent\b", text))
    if f.kind == "measure":  # "3,078 feet", "twenty-two years"
        plain = _YEAR_RE.sub("", _DATE_RE.sub("", text))
        return bool(re.search(r"\d", plain) or _NUMBER_WORDS.search(plain))
    if f.kind in ("amount", "count"):
        plain = _YEAR_RE.sub("", _DATE_RE.sub("", text))
        plain = re.sub(r"\b(three|six|nine|twelve)[- ]months?\b|\b\d+[- ]month\b", "", plain, flags=re.I)
        if f.kind == "count":
            return bool(re.search(r"\d", plain) or _NUMBER_WORDS.search(plain))
        # a figure: any number left once years, dates, spans and references ("Item 2", "Note 7") are taken out
        plain = re.sub(r"\b(item|note|part|section|page|exhibit|rule|schedule|article)\s+\d[\w.()-]*", "", plain,
                       flags=re.I)
        if _MONEY_NOUNS.intersection(f.terms) and not _OTHER_UNIT.search(f.question) \
                and not (_MONEY_FIGURE.search(text) or _MONEY_WORDS.search(text)):
            return False  # "the total budget": a sum of money, not "file 340"
        return bool(re.search(r"\d", plain) or _MONEY_WORDS.search(plain))
    return True  # "when" is also answered by "at dawn" or "every spring": a date is preferred, not required


# -- reading ---------------------------------------------------------------------------------------------------------
MIN_COVERAGE = 0.5  # the best candidate must hold this share of the question's key terms (by weight)
# ... and this share when a content word of the question is in no passage at all: off, since measured on the filings
# dev set (bench/archive/reader_tune.py) it cost right answers and saved no abstention
MISSING_COVERAGE = 0.0
AROUND_CREDIT = 0.8  # a key term held only by another passage of the candidate's document


def _fmt_value(c: Cell) -> str:
    v = c.value.strip()
    n = c.number
    money = c.unit and not v.endswith("%") and n is not None and "per share" not in c.row.lower()
    unit = c.unit.rstrip("s")
    if money:
        return f"${v.lstrip('$ ')} {unit}" if not v.startswith("(") else f"{v} ({unit})"
    return v


def _cell_line(c: Cell) -> str:
    col = f", {c.column}" if c.column else ""
    return f"{c.row}{col}: {_fmt_value(c)}"


def _number_text(x: float) -> str:
    return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 else f"{x:,.2f}"


def _change_line(a: Cell, b: Cell) -> str:
    """Both figures of one row and the difference between them ("… 81,797 vs 82,959: 1,162 lower (−1.4%)")."""
    x, y = a.number, b.number
    diff = x - y
    pct = f" ({diff / abs(y):+.1%})" if y else ""
    word = "higher" if diff > 0 else "lower" if diff < 0 else "unchanged"
    unit = f" {a.unit}" if a.unit else ""
    return (f"{a.row}: {a.value.strip()} ({a.column}) vs {b.value.strip()} ({b.column}): "
            f"{_number_text(abs(diff))}{unit} {word}{pct}")


def read(question: str, sources: Sequence, *, sentences: Sequence | None = None,
         similarity: Callable[[Sequence[str]], Sequence[float]] | None = None,
         doc_text: Callable[[object], str | None] | None = None, history: Sequence[dict] = (),
         foreign: Callable[[str], bool] | None = None, known_names: set[str] = frozenset(),
         known_years: set[str] = frozenset(), cover_dates: dict[int, set[str]] | None = None) -> Reading:
    """The answer to ``question`` from ``sources`` (numbered passages with ``rank``, ``text``, ``start``): the best
    cell or sentence on the question's key terms, period and answer kind, or none. ``sentences``: the passages'
    sentences (:func:`app.grounding.source_sentences`; made here if not given); ``similarity(texts)``: their
    cosine to the question (optional); ``history``: the conversation (a follow-up "the year before" takes the
    previous question's row and years); ``foreign(text)``: text that recurs in other documents (boilerplate);
    ``known_names``: name words of the passages' documents (their profiles: a filing's registrant is on its cover,
    not on every page); ``cover_dates``: by passage number, the periods its document's cover states (a 10-Q "for the
    quarterly period ended April 30, 2023" speaks of that quarter as "the first quarter of fiscal year 2024")."""
    if history and question.rstrip().endswith(")") and " (" in question:  # a follow-up carrying the earlier question
        question = question[: question.rindex(" (")]
    f = frame(question)
    prev = _previous(history) if history else None
    terms, asked = _key_terms(question, f, prev, known_names)
    sents = list(sentences) if sentences is not None else source_sentences(sources)
    cells = cells_of(sources, doc_text)
    as_cells = {(c.source, c.start) for c in cells}
    # table rows are read as cells; a row that gives none (text in its cells) is read as a sentence
    # a sentence that ends with ":" introduces the next one ("… determines the probable cause(s) of this accident
    # to be: The pilot's improper flare during landing."), even when it is not quotable itself (a heading's line)
    intro = {(b.source, b.start): a.shown for a, b in zip(sents, sents[1:])
             if a.source == b.source and a.shown.rstrip().endswith(":") and 0 <= b.start - a.end <= 4}
    sents = [s for s in sents if s.answerable and (not s.quote or (s.source, s.start) not in as_cells)]
    texts = [s.shown for s in sents] + [f"{c.row} {c.title}" for c in cells]
    stem_sets = [_stems(t) for t in texts]
    weights = _weights(terms, stem_sets)
    context = set().union(*stem_sets)
    missing = [t for t in terms if not _has(t, context) and len(t) >= 5 and not t.endswith(("ed", "ing", "ly"))]
    by_doc: dict[str, set[str]] = {}  # the stems of each document's passages (read once)
    for s in sources:
        by_doc.setdefault(getattr(s, "doc_id", ""), set()).update(_stems(getattr(s, "text", "")))
    all_text = set().union(*by_doc.values()) if by_doc else set()
    absent_names = _absent_names(f.names, sources, all_text | {stem(w) for w in known_names}, known_names)
    named = {w for n in f.names for w in words_of(n)}  # a name is looked for whole (above)
    unsaid = [t for t in f.focus or () if t in terms and t not in named and not _has(t, all_text) and len(t) >= 5
              and not t.endswith(("ed", "ing", "ly"))]  # what is asked, in no passage: "employee *attrition* rate"
    heads = {getattr(s, "rank", 0): list(getattr(s, "headings", []) or []) for s in sources}
    sims = list(similarity([s.shown for s in sents])) if (similarity and sents) else [0.0] * len(sents)
    around = {getattr(s, "rank", 0): by_doc[getattr(s, "doc_id", "")] for s in sources} if f.focus else {}
    if f.focus:  # a word that says which, in no passage ("the Cessna that *crashed*": the report says "impacted")
        terms = [t for t in terms if t in f.focus or _has(t, all_text)]
    cands = _score_sentences(f, terms, weights, sents, sims, heads, foreign, around, intro)
    prev_years = prev.years if prev else []
    if f.relative and prev is not None and not prev_years:
        prev_years = _years_of_previous_answer(history)
    cands += _score_cells(f, terms, weights, cells, prev_years, foreign, asked, around)
    cands.sort(key=lambda c: -c.score)
    if absent_names:
        return Reading(f, None, [], cands[:2], absent_names, None,
                       f"the passages never mention {', '.join(absent_names)}")
    if unsaid:
        return Reading(f, None, [], cands[:2], unsaid, None, f"the passages never mention {', '.join(unsaid)}")
    if missing and (not cands or cands[0].coverage < MISSING_COVERAGE):
        return Reading(f, None, [], cands[:2], missing, None, f"the passages never mention {', '.join(missing)}")
    in_passages = {y for s in sources for y in _YEAR_RE.findall(getattr(s, "text", ""))} | set(known_years)
    in_passages |= {d.split()[-1] for ds in (cover_dates or {}).values() for d in ds}
    if f.years and f.numeric and not f.relative and not ({str(y) for y in f.years} & in_passages):
        years = ", ".join(str(y) for y in f.years)
        return Reading(f, None, [], cands[:2], [years], None, f"the passages do not cover {years}")
    ends = _period_ends(question, f)
    if ends and f.numeric and not f.relative:  # "the quarter ended June 30, 2023": a figure of that quarter only
        flow = bool(_FLOW_HEAD.search(question))
        dated = [c for c in cands if any(_dated(c, d, cover_dates or {}, flow) for d in ends)]
        if not any(c.coverage >= MIN_COVERAGE for c in dated):
            return Reading(f, None, [], cands[:2], ends, None, f"no figure is given for {', '.join(ends)}")
        cands = dated
    if not cands or cands[0].coverage < MIN_COVERAGE:
        why = "no passage holds the question's key terms" if cands else "nothing to quote"
        return Reading(f, None, [], cands[:2], [], cands[0] if cands else None, why)
    best = cands[0]
    if f.relative and prev is not None:
        implied = _implied_earlier(cands)
        if implied is not None:
            line, c = implied
            return Reading(f, line, [c], [], [], c, "the earlier figure, computed")
    if f.change and (f.kind in ("amount", "count") or best.kind == "cell"):
        # "by how much did X grow": a row with both periods gives the figures and the difference; a sentence that
        # says it "increased" (or by what percent) only comes first when no such row comes close
        for c in cands:
            if c.score < 0.8 * best.score or c.coverage < MIN_COVERAGE:
                break
            pair = _change_pair(c, cells, f.years) if c.kind == "cell" else None
            if pair is not None:
                return Reading(f, _change_line(*pair), [c], _more(cands, c, f.numeric), [], c,
                               "change between periods")
    line = _cell_line(best.cell) if best.kind == "cell" else best.text
    return Reading(f, line, [best], _more(cands, best, f.numeric), [], best, best.kind)


_NAME_FILLER = frozenset("inc corp corporation co company companies ltd llc plc group holdings the of and for".split())


def _absent_names(names: Sequence[str], sources: Sequence, seen: set[str], known_names: set[str]) -> list[str]:
    """The ``names`` of the question that no passage says and no document's profile holds (``seen``: the stems of
    both): a one-word name by its stem ("Tesla"); a longer one as its phrase, its initials ("SSA"), all its words in
    one line of a passage ("Registration: N5921D Aircraft: Piper PA-22-150") or in the profiles, since its first word
    alone is often a common one ("Social Security Administration": "social" is in many a report)."""
    text, out, lines = "", [], []
    known = {stem(k) for k in known_names}
    for n in names:
        tokens = words_of(re.sub(r"['’]s\b", "", n))
        words = [w for w in tokens if len(w) > 1 and w not in _TITLES]
        if not words:
            continue
        core = [w for w in words if w not in _NAME_FILLER]
        if len(core) < 2:
            if stem(words[0]) not in seen:
                out.append(n)
            continue
        if not text:
            lines = [{stem(w) for w in words_of(line)} for s in sources for line in
                     re.split(r"\n|(?<=[a-z])[.;] ", getattr(s, "text", ""))]
            text = " " + " ".join(" ".join(words_of(re.sub(r"['’]s\b", "", getattr(s, "text", ""))))
                                  for s in sources) + " "
        initials = "".join(w[0] for w in core).upper()
        said = (any(f" {' '.join(p)} " in text for p in (tokens, words, core))
                or any(re.search(rf"\b{initials}\b", getattr(s, "text", "")) for s in sources)
                or all(stem(w) in known for w in core)
                or (any(w[0].isdigit() for w in core) and all(stem(w) in seen for w in core))  # a model, a tail
                or any(all(stem(w) in line for w in core) for line in lines))
        if not said:
            out.append(n)
    return out


def _key_terms(question: str, f: Frame, prev: Frame | None, known_names: set[str]) -> tuple[list[str], str]:
    """The key terms to read ``question`` for, and the question as asked (with the one before, for a follow-up);
    fills ``f`` from the question before when it asks "and for the nine months?"."""
    terms = list(_primary_terms(question, f)) or (list(prev.terms) if prev else [])
    asked = f.question
    if prev and (f.relative or len(f.terms) <= 1):
        terms = list(dict.fromkeys([*f.terms, *prev.terms]))
        asked = f"{f.question} {prev.question}"
        if f.kind == "other" and not f.terms:  # "And for the first nine months?" asks what the one before asked
            f.kind = prev.kind
        if f.terms and not f.relative and f.focus is None:  # "What was the visibility?" after "Who owned the …?":
            f.focus = list(f.terms)  # its own word is what is asked, the earlier question's say which report
        if not f.names:
            f.names = list(prev.names)
        if not f.span:
            f.span = prev.span
    # names that are not what the passages' documents are about ("Widgets", "Services", "AWS": a row, a segment)
    # are key terms too; a company's own name is its documents' (routing), seldom a row's
    doc_words = {stem(w) for w in known_names}
    for n in f.names:
        owned = []
        for w in words_of(n):
            if len(w) > 1 and w not in _TITLES and stem(w) not in doc_words and w not in terms:
                terms.append(w)
                if f.focus is not None and w in words_of(f.asked):  # "Xbox Game Pass subscribers": asked too
                    f.focus.append(w)
                    owned.append(w)
        if owned and re.search(rf"\b{re.escape(n)}['’]s\b", question):
            core = [w for w in words_of(n) if w not in _NAME_FILLER]
            f.owner.append((owned, "".join(w[0] for w in core).upper() if len(core) > 1 else ""))
    return terms, asked


_CHANGE_PHRASE = re.compile(
    r"(?P<cur>\$?\s?\d[\d,]*(?:\.\d+)?)\s*(?P<scale>million|billion|thousand)?[^.;]{0,80}?"
    r"\b(?P<dir>up|down|an? (?:increase|decrease|rise|decline|drop) of|increased by|decreased by|rose|fell)\s+"
    r"(?P<delta>\$?\s?\d[\d,]*(?:\.\d+)?)\s*(?P<dscale>million|billion|thousand)?,?\s*(?:from|compared (?:with|to)|"
    r"over|versus|since)\s+(?P<year>(?:19|20)\d\d)", re.I)


def _implied_earlier(cands: Sequence[Candidate]) -> tuple[str, Candidate] | None:
    """A figure and its change from an earlier year in one sentence ("$20.8 million in 2010, up $2.5 million from
    2009") give that earlier year's figure: the answer to "and the year before?", with the arithmetic shown."""
    for c in cands:
        if c.kind != "sentence" or c.coverage < MIN_COVERAGE:
            continue
        m = _CHANGE_PHRASE.search(c.text)
        if not m:
            continue
        cur, delta = parse_number(m.group("cur")), parse_number(m.group("delta"))
        if cur is None or delta is None or (m.group("dscale") or m.group("scale")) != (m.group("scale") or
                                                                                         m.group("dscale")):
            continue
        up = m.group("dir").lower() in ("up", "rose", "increased by") or "increase" in m.group("dir").lower() \
            or "rise" in m.group("dir").lower()
        earlier = cur - delta if up else cur + delta
        places = max(len((x.split(".") + [""])[1]) for x in (m.group("cur"), m.group("delta")))
        unit = f" {m.group('scale')}" if m.group("scale") else ""
        dollar = "$" if "$" in m.group("cur") else ""
        sign = "−" if up else "+"
        line = (f"{dollar}{earlier:,.{places}f}{unit} in {m.group('year')} ({dollar}{cur:,.{places}f}{unit} "
                f"{sign} {dollar}{delta:,.{places}f}{unit})")
        return line, c
    return None


_SECOND_PART = re.compile(r",? and (?:what|how|which|why|when|where|who|is|are|was|were|did|does|do|has|have|if so)\b|"
                          r"; |, (?:and )?(?:if so|how|what|which)\b", re.I)


def _primary_terms(question: str, f: Frame) -> list[str]:
    """The key terms of the question's first part: "What was X, and how does it compare with Y?" is read for X (a
    second part the documents answer elsewhere, or not at all, does not hide the answer to the first)."""
    m = _SECOND_PART.search(question)
    if not m or m.start() < 15:
        return list(f.terms)
    first = frame(question[: m.start()] + "?").terms
    return first if len(first) >= 2 else list(f.terms)


def _label_stems(row: str) -> set[str]:
    """The stems of a row label's own words, without generic ones ("Total net revenue" → net, revenu)."""
    return {stem(w) for w in words_of(row.split(": ", 1)[-1]) if len(w) > 2 and w not in _GENERIC
            and w not in _FILLER and not w[0].isdigit()}


def _figures(text: str) -> set[str]:
    """The figures a text gives, years and dates aside ("5,079", "3,769", "21%")."""
    return {n.rstrip(".,") for n in re.findall(r"\d[\d,.]*%?", _DATE_RE.sub(" ", text))
            if not _YEAR_RE.fullmatch(n.rstrip(".,"))}


def _more(cands: list[Candidate], best: Candidate, numeric: bool = False) -> list[Candidate]:
    """At most two further quotes that are nearly as good: other places, not the same row or sentence."""
    out: list[Candidate] = []
    said = [" ".join(best.text.lower().split())]
    for c in cands[1:]:
        if c.score < 0.8 * best.score or c.coverage < MIN_COVERAGE:
            break
        if best.kind == "cell" and c.kind == "cell":  # another table's figure beside the answer reads as a rival
            continue
        if best.kind == "cell" and not (_label_stems(best.cell.row) & _stems(c.text)):
            continue  # a sentence beside a figure says something of its row ("net revenue"), or it is a stray
        if numeric and best.kind == "sentence" and _figures(c.text) and not (_figures(c.text) & _figures(best.text)):
            continue  # another figure beside the one answered reads as a rival ("3,769 of 5,388 employees enrolled")
        t = " ".join(c.text.lower().split())
        if any(t in u or u in t for u in said):  # the same row or sentence, or a piece of one: said once
            continue
        said.append(t)
        out.append(c)
        if len(out) == 2:
            break
    return out


def _owner_said(f: Frame, stems: set[str], text: str) -> tuple[bool, set[str]]:
    """Does a candidate (its ``stems`` and ``text``) name each :attr:`Frame.owner`, by its words or its initials
    ("SSA")? With its stems and the words of the owners it names by their initials."""
    out, ok = set(stems), True
    for ws, initials in f.owner:
        if all(_has(w, stems) for w in ws):
            continue
        if initials and re.search(rf"\b{initials}\b", text):
            out |= {stem(w) for w in ws}
        else:
            ok = False
    return ok, out


_FULL_YEAR = re.compile(r"\b(?:full|entire|whole)[- ](?:fiscal[- ])?year\b", re.I)


def _score_sentences(f: Frame, terms, weights, sents, sims, heads, foreign, around=None,
                     intro=None) -> list[Candidate]:
    intro = intro or {}  # (source, start) → the sentence that introduces it
    out = []
    for s, sim in zip(sents, sims):
        stems = _stems(s.shown) | _stems(" ".join(heads.get(s.source, []))) | _stems(intro.get((s.source, s.start), ""))
        owned, stems = _owner_said(f, stems, s.shown)
        cov = _coverage(terms, weights, stems, (around or {}).get(s.source, frozenset()), f.focus or ())
        if f.focus:  # what is asked must be in the sentence itself
            cov = min(cov, _coverage(f.focus, weights, stems))
        if f.head and not _has(f.head, stems):  # "how many iPhone *units*": a count of something else is none
            cov = min(cov, 0.45)
        if not owned:
            cov = min(cov, 0.45)
        fits = _kind_fits(f, s.shown) and not s.shown.rstrip().endswith(":")  # "… were as follows:" introduces
        boiler = _boilerplate(s.shown, heads.get(s.source, ())) or bool(foreign and foreign(s.shown))
        score = cov * (0.75 + 0.25 * max(sim, 0.0)) * (1.0 if fits else 0.5) * (0.3 if boiler else 1.0)
        if f.numeric:
            score *= 0.75  # a figure question prefers a table's cell when one fits as well
        if f.years and not any(str(y) in s.shown for y in f.years):
            score *= 0.9
        if f.kind == "date" and (_DATE_RE.search(s.shown) or _YEAR_RE.search(s.shown)):
            score *= 1.1
        if _unit_fits(f, s.shown):
            score *= 1.25
        # a sentence of the wrong kind (no figure for "how many") or boilerplate is never the answer
        gate = cov * (1.0 if fits else 0.45 if f.numeric or f.kind == "explain" else 0.5) * (0.45 if boiler else 1.0)
        if f.numeric and f.years and not f.relative and _other_years(f.years, s.shown):
            gate = min(gate, 0.45)  # "the inventory at the end of FY 2021": a figure of 2012 is no answer
        if f.numeric and f.quarter and not f.relative and _other_quarters(f.quarter, s.shown):
            gate = min(gate, 0.45)  # "the fourth quarter of fiscal 2024": the third quarter's revenue is no answer
        if f.numeric and f.quarter and not f.relative and _FULL_YEAR.search(s.shown) \
                and not _QUARTER_RE.search(s.shown):
            gate, score = min(gate, 0.45), score * 0.8  # "in Q3 2023": the full year's figure (a guidance) is none
        out.append(Candidate("sentence", s.source, s.start, s.end, s.shown, score, gate,
                             why={"coverage": round(cov, 3), "similarity": round(float(sim), 3), "fits": fits,
                                  "boilerplate": boiler}))
    return out


def _score_cells(f: Frame, terms, weights, cells, prev_years, foreign, asked: str = "",
                 around=None) -> list[Candidate]:
    out = []
    asked_stems = {a for w in words_of(asked or f.question) for a in _alts(w)}
    by_document = bool(_DOCUMENT_PERIOD.search(f.question))  # "in the Q3 2022 10-Q": the filing's own period
    latest: dict = {}  # row → its column with the latest year
    for c in cells:
        ys = [int(y) for y in _YEAR_RE.findall(c.column)]
        key = (c.source, c.start)
        if ys and (key not in latest or max(ys) > latest[key][1]):
            latest[key] = (c.column, max(ys))
    latest = {k: v[0] for k, v in latest.items()}
    row_years: dict = {}  # row → the years its figures' columns name
    for c in cells:
        if c.number is not None:
            row_years.setdefault((c.source, c.start), set()).update(int(y) for y in _YEAR_RE.findall(c.column))
    for c in cells:
        own = c.row.split(": ", 1)[-1]  # the row's own label, without its group's
        text_value = c.value if c.number is None else ""  # a form's field holds words ("3 hours (this model)")
        cov_row = _coverage(terms, weights, _stems(own) | _stems(text_value))
        row_stems = _stems(c.row)
        owned, own_stems = _owner_said(f, row_stems | _stems(c.title) | _stems(c.column) | _stems(text_value),
                                       f"{c.row} {c.title}")
        cov = _coverage(terms, weights, own_stems, (around or {}).get(c.source, frozenset()), f.focus or ())
        if f.focus:
            cov = min(cov, _coverage(f.focus, weights, own_stems))
        if f.head and not _has(f.head, own_stems):
            cov = min(cov, 0.45)
        if not owned:
            cov = min(cov, 0.45)
        period = _period_score(f, c.column, prev_years, c.row)
        asked_period = bool(f.dates or f.years or f.span or f.quarter or (f.relative and prev_years))
        pct = "%" in c.value or "%" in c.column or "percent" in c.row.lower()
        fits = pct if f.kind == "percent" else not (pct and f.kind in ("amount", "count"))
        score = (0.6 * cov_row + 0.4 * cov) * ((0.7 + 0.3 * period) if asked_period else 1.0) * (1.0 if fits else 0.6)
        if f.numeric and (f.years or f.dates) and not f.relative and period == 0 and _YEAR_RE.search(c.column):
            cov = min(cov, 0.45)  # a column of another period ("the fourth quarter of fiscal 2024": not October 2023)
        if f.numeric and asked_period and not f.relative and not c.column.strip() and not by_document \
                and not c.row.strip().lower().startswith(("q1", "q2", "q3", "q4")):
            cov = min(cov, 0.45)  # a figure whose column says no period at all, for a question that asks one
        if f.change and len(set(f.years)) >= 2:  # "2023 compared with 2022": a row that has both columns first
            have = row_years.get((c.source, c.start), set())
            score *= 0.85 + 0.15 * len(have & set(f.years)) / len(set(f.years))
        if not asked_period and c.column and latest.get((c.source, c.start)) == c.column:
            score *= 1.02  # no period asked: the latest column (filings print some years oldest first)
        if f.kind in ("explain", "yesno", "name", "date"):
            score *= 0.6  # a figure is seldom the answer to these
        if re.search(r"\btotal\b", (asked or f.question).lower()):
            if c.row.lower().startswith("total"):
                score *= 1.05
            elif c.column.lower().startswith("total") and not c.row.lower().startswith("total"):
                score *= 1.15  # a form's "2319 hours (Total, all aircraft)" over "(Pilot In Command, …)"
        if foreign and foreign(c.quote):
            score *= 0.5
        score *= 0.95 + 0.05 * label_precision(c.row, asked_stems)  # "Services" over "Gross margin: Services"
        out.append(Candidate("cell", c.source, c.start, c.end, c.quote, score, cov, c,
                             why={"row_coverage": round(cov_row, 3), "coverage": round(cov, 3),
                                  "period": round(period, 3)}))
    # of one row, the column that fits the period best first (ties: the first column, the latest period)
    return out


def _change_pair(best: Candidate, cells: Sequence[Cell], years: Sequence[int] = ()) -> tuple[Cell, Cell] | None:
    """The best cell and the same row's cell of the comparable earlier period: a column of the same span of months
    (else any other), of an earlier year when the headers give years. When the question names two years ("from FY
    2013 to FY 2014"), the row's columns of exactly those years, of the best cell's kind of column ("FY 2014
    Results", not "FY 2014 Target"), later year first."""
    c = best.cell
    if c.number is None:
        return None
    row = [x for x in cells if (x.source, x.start) == (c.source, c.start) and x.number is not None]
    asked = sorted(set(years))
    if len(asked) >= 2:
        def kind(x: Cell) -> str:
            return " ".join(_YEAR_RE.sub(" ", x.column.lower()).split())

        def of_year(y: int) -> Cell | None:
            hits = [x for x in row if str(y) in _YEAR_RE.findall(x.column)]
            return next((x for x in hits if kind(x) == kind(c)), hits[0] if hits else None)

        late, early = of_year(asked[-1]), of_year(asked[0])
        return (late, early) if late is not None and early is not None and late is not early else None
    others = [x for x in row if x is not c]
    if not others:
        return None

    def span(x: Cell) -> str | None:
        m = _SPAN_RE.search(x.column.lower())
        return m.group(1) if m else None

    same = [x for x in others if span(x) == span(c)] or others
    ys = _YEAR_RE.findall(c.column)
    earlier = [x for x in same if ys and _YEAR_RE.findall(x.column) and _YEAR_RE.findall(x.column)[-1] < ys[-1]]
    return c, (earlier or same)[0]


def _previous(history: Sequence[dict]) -> Frame | None:
    users = [t for t in history if t.get("role") == "user"]
    return frame(str(users[-1].get("content", ""))) if users else None


def _years_of_previous_answer(history: Sequence[dict]) -> list[int]:
    last = next((t for t in reversed(history) if t.get("role") == "assistant"), None)
    return sorted({int(y) for y in _YEAR_RE.findall(str(last.get("content", "")))})[-1:] if last else []

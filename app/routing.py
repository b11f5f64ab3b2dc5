"""Which documents a question is about, before anything is searched (issue 33: answers mixed companies).

Each document gets a **profile** from its own text: the names it repeats most near its start (a filing's registrant,
"Apple Inc.", "NVIDIA CORPORATION"; a report's agency), the words of its file name and title, and the periods its
cover states ("For the quarterly period ended July 1, 2023", "Fiscal Year 2016"); never a period, a currency or a
scale ("FY2023", "USD", "Millions"), which a sheet's headers repeat. A question that names something
(:attr:`app.question.Question.entities`) is sent to the documents whose profile holds that name, and among several,
to those whose cover period is the question's date or year; a name that no document (or every document) holds says
nothing and is passed over. Without a name that routes, a year asked routes away from the documents of other years
(not from one with no year of its own). A follow-up keeps the names of the question it continues; a question that
stands alone does not inherit the last one's. The caller searches only the chosen documents and says which and why;
without a name, the question goes to every document it may search.

The one refusal made here is a fact: the question names something only documents outside the search's scope are
about, and no document inside it says ("What did Apple earn?" with only Microsoft's filings ticked). An abbreviation
a document inside spells out is said ("CEO": "our Chief Executive Officer").
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.conversation import entities
from app.question import DATE_RE as _DATE_RE
from app.question import YEAR_RE as _YEAR
from app.question import Question, is_name, lexicon, read_question

_NAME_NOISE = frozenset(
    "inc inc. corp corp. corporation company co co. ltd ltd. llc plc group holdings the and of form united states "
    "securities exchange commission washington report annual quarterly performance fiscal year page table contents "
    "part item financial statements information unaudited consolidated condensed subsidiaries notes management "
    "national office department agency federal".split())
_COVER_PERIOD = re.compile(r"\b(?:period|quarter|year)\s+ended\s+([A-Z][a-z]+\.?\s+\d{1,2},?\s+(?:19|20)\d\d)", re.I)
_WORD = re.compile(r"[a-z0-9][a-z0-9&'’.-]*[a-z0-9]|[a-z0-9]")
_COVER_NAME = re.compile(r"\b(?:[A-Z][a-z]+|[A-Z0-9]*\d[A-Z0-9]*(?:-[A-Z0-9]+)*|[A-Z]{2,}(?:-\w+)*)\b")


@dataclass
class Profile:
    doc_id: str
    name: str
    tokens: set[str]
    periods: list[str] = field(default_factory=list)  # "july 1 2023"
    years: set[int] = field(default_factory=set)  # of its file name, title and cover period


def _tok(text: str) -> list[str]:
    lx = lexicon()
    return [t for t in _WORD.findall(text.lower())
            if t not in _NAME_NOISE and t not in lx["currency_codes"] and t not in lx["scale_words"]]


def _full_month(abbr: str) -> str:
    return next(m for m in lexicon()["months"] if m.startswith(abbr.lower()[:3]))


def profile(doc_id: str, name: str, text: str, head_chars: int = 6000) -> Profile:
    """The profile of a document from its display ``name`` and ``text``."""
    head = text[:head_chars]
    runs = Counter()
    for e in entities(head) + re.findall(r"\b[A-Z][A-Z&.]{2,}(?:\s+[A-Z][A-Z&.]+)*\b", head):
        key = e.strip()
        if 2 <= len(key) <= 60 and is_name(key):
            runs[key] += 1
    tokens = set(_tok(re.sub(r"\.[A-Za-z0-9]+$", "", name)))
    cover = head[:1500]  # the cover names the registrant (or the report's subject) once; later, names repeat
    for r, n in runs.items():
        if n >= 2 or r in cover:
            tokens.update(_tok(r))
    # the cover's proper names and identifiers, laid out as fields ("Location: Tallahassee, FL  Registration:
    # N5921D"), which run together as one long name above; not a table's ("| Widgets | 4,210 |" is a row the
    # reader looks for, not a name the document is about)
    prose = "\n".join(ln for ln in cover.splitlines() if not ln.lstrip().startswith("|"))
    tokens.update(_tok(" ".join(_COVER_NAME.findall(prose))))
    tokens |= {part for t in tokens for part in re.split(r"[.'’-]", t) if len(part) > 1}
    periods = []
    for m in _COVER_PERIOD.finditer(head):
        d = _DATE_RE.search(m.group(1))
        if d:
            periods.append(f"{_full_month(d.group(1)[:3])} {int(d.group(2))} {d.group(3)}")
    title = head[:400]
    years = {int(y) for y in _YEAR.findall(name)} | {int(p.split()[-1]) for p in periods}
    years |= {int(y) for y in re.findall(r"\bFiscal Year\s+((?:19|20)\d\d)\b", title, re.I)}
    return Profile(doc_id, name, tokens, periods[:3], years)


@dataclass
class Route:
    """The documents chosen for a question (``None``: all it may search) and why, in a few words."""

    doc_ids: list[str] | None
    why: str = ""


def route(question: str | Question, profiles: Sequence[Profile]) -> Route:
    """The documents ``question`` is about, among ``profiles`` (those the reader may search, within the
    conversation's scope).

    >>> ps = [Profile("a.pdf", "a.pdf", {"apple"}, ["july 1 2023"], {2023}),
    ...       Profile("b.pdf", "b.pdf", {"apple"}, ["april 1 2023"], {2023}),
    ...       Profile("n.pdf", "n.pdf", {"nvidia"}, [], {2023})]
    >>> route("What were NVIDIA's sales?", ps).doc_ids
    ['n.pdf']
    >>> route("What were Apple's sales for the three months ended July 1, 2023?", ps).doc_ids
    ['a.pdf']
    >>> route("What were the sales?", ps).doc_ids is None
    True
    """
    q = read_question(question) if isinstance(question, str) else question
    years, dates, quarters = q.period.years, q.period.dates, q.period.quarters
    if len(profiles) < 2:
        return Route(None)
    chosen: set[str] | None = None
    said = []
    for n in q.entities:
        toks = [t for t in _tok(n) if len(t) > 1]
        if not toks:
            continue
        hit = {p.doc_id for p in profiles if all(t in p.tokens for t in toks)}
        if not hit or len(hit) == len(profiles):
            continue  # a name no document is about, or every one: it routes nowhere
        chosen = hit if chosen is None else (chosen & hit or chosen | hit)
        said.append(n)
    if chosen is None:
        # no name routes (every report is the same agency's): a year asked routes away from the reports of other
        # years; it says nothing against a document with no year of its own (a workbook of many years' receipts)
        if years and not dates:
            dated = sorted(p.doc_id for p in profiles if not p.years or p.years <= set(years))
            if any(p.years and p.years <= set(years) for p in profiles) and len(dated) < len(profiles):
                said_here = all(str(y) in q.text for y in years)
                return Route(dated, ("the question asks about " if said_here else "the question before asked about ")
                             + ", ".join(str(y) for y in years))
        return Route(None)
    pool = [p for p in profiles if p.doc_id in chosen]
    if len(pool) > 1 and (dates or years):
        dated = [p for p in pool if set(dates) & set(p.periods)]
        if not dated and years:
            dated = [p for p in pool if p.years and p.years <= set(years) | {y + 1 for y in years}
                     and set(years) & p.years]
        if dated and len(dated) < len(pool):
            pool = dated
            said.append("the period asked")
    if len(pool) > 1 and len(quarters) == 1:  # "the third quarter": a file named "2023 Q3 INTC.pdf"
        named = [p for p in pool if f"q{quarters[0]}" in p.tokens]
        if named and len(named) < len(pool):
            pool = named
            said.append("its quarter")
    ids = sorted(p.doc_id for p in pool)
    inherited = q.previous is not None and not any(n in q.text for n in said if n not in ("the period asked",
                                                                                         "its quarter"))
    return Route(ids, ("the question before named " if inherited else "the question names ") + " and ".join(said))


def _sentence_keys(text: str, limit: int = 300_000) -> set[int]:
    """Hashes of a text's sentences of 40 characters or more, lower-cased with spaces collapsed."""
    out = set()
    for piece in re.split(r"(?<=[.!?])\s+|\n\s*\n", text[:limit]):  # a PDF's line ends are no sentence ends
        key = " ".join(piece.lower().split())
        if len(key) >= 40:
            out.add(hash(key))
    return out


class Profiles:
    """Document profiles, made once per document version (by content hash) and kept; and the sentences that recur
    in several documents (boilerplate: a standard paragraph every report of an agency prints)."""

    RECUR_DOCS = 3  # a sentence printed word for word in this many documents is boilerplate

    def __init__(self, text_of: Callable[[str], str]):
        self.text_of = text_of
        self._by_hash: dict[str, Profile] = {}
        self._keys: dict[str, set[int]] = {}
        self._shared: tuple[frozenset, set[int]] = (frozenset(), set())

    def recurring(self, rows: Sequence[dict]) -> Callable[[str], bool]:
        """A test of a sentence: does it recur word for word in :data:`RECUR_DOCS` or more of ``rows``' documents
        (catalog rows with ``hash``)? Each document's sentences are read once."""
        hashes = frozenset(r["hash"] for r in rows)
        if hashes != self._shared[0]:
            counts: Counter = Counter()
            for h in hashes:
                if h not in self._keys:
                    try:
                        self._keys[h] = _sentence_keys(self.text_of(h) or "")
                    except Exception:  # a document whose text is gone
                        self._keys[h] = set()
                counts.update(self._keys[h])
            self._shared = (hashes, {k for k, n in counts.items() if n >= self.RECUR_DOCS})
        shared = self._shared[1]
        return lambda text: hash(" ".join(text.lower().split())) in shared

    def one(self, doc_hash: str, doc_id: str = "", name: str = "") -> Profile | None:
        """The profile of one document version (None when its text is gone)."""
        got = self.of([{"hash": doc_hash, "doc_id": doc_id or doc_hash, "name": name or doc_id}])
        return got[0] if got else None

    def of(self, rows: Sequence[dict], labels: dict[str, str] | None = None) -> list[Profile]:
        """Profiles of catalog ``rows`` (``doc_id``, ``name``, ``hash``)."""
        out = []
        for r in rows:
            p = self._by_hash.get(r["hash"])
            if p is None or p.doc_id != r["doc_id"]:
                try:
                    text = self.text_of(r["hash"]) or ""
                except Exception:  # a document whose text is gone: no profile, never routed to
                    continue
                p = profile(r["doc_id"], (labels or {}).get(r["doc_id"]) or r.get("name") or r["doc_id"], text)
                self._by_hash[r["hash"]] = p
            out.append(p)
        return out


MAX_SCOPE_READ = 50  # documents of a scope read to check that none says a name (a larger scope is not refused)


def route_for(ctx, q: Question, doc_ids: Sequence[str] | None = None, visible_to: str | None = None) -> Route:
    """:func:`route` over the documents ``visible_to`` may search (within ``doc_ids`` when given); a follow-up's
    names are those it inherited (:func:`app.question.read_question`). When the question names something that only
    documents outside ``doc_ids`` are about and no document inside says, the route is empty with the reason."""
    if not q.entities and not q.period.years:
        return Route(None)
    cat = ctx.catalog
    live = cat.live_gen()
    if live is None:
        return Route(None)
    visible = [r for r in cat.documents(live) if r["n_l0"] is not None
               and (visible_to is None or r["owner"] is None or r["owner"] == visible_to)]
    allowed = set(doc_ids) if doc_ids else None
    rows = [r for r in visible if allowed is None or r["doc_id"] in allowed]
    labels = cat.labels(visible_to, [r["doc_id"] for r in visible]) if visible else {}
    if allowed is not None and q.entities:
        named = route(q, ctx.profiles.of(visible, labels)).doc_ids
        if named and not set(named) & allowed:  # only documents outside the scope are about what it names
            texts = [ctx.store.text(r["hash"]) or "" for r in rows[:MAX_SCOPE_READ]]
            unsaid = [n for n in q.entities if not any(_says(n, t) for t in texts)]
            if unsaid and len(rows) <= MAX_SCOPE_READ:
                return Route([], f"the question names {unsaid[0]}, which only documents outside this search are "
                                 f"about ({', '.join(named[:3])})")
    return route(q, ctx.profiles.of(rows, labels))


def _says(name: str, text: str) -> bool:
    """Does ``text`` say ``name``: each of its words, an abbreviation in capitals also when spelled out
    (:func:`_spelled_out`: "EPA" in "the U.S. Environmental Protection Agency", "CEO" in "our Chief Executive Officer")?

    >>> _says("EPA Administrator", "the Administrator of the U.S. Environmental Protection Agency")
    True
    >>> _says("NVIDIA", "Apple's sales"), _says("IBM", "in both markets")
    (False, False)
    """
    low = text.lower()
    words = re.findall(r"[A-Za-z0-9]+", name)
    return bool(words) and all(re.search(rf"\b{re.escape(w.lower())}\b", low) or _spelled_out(w, text)
                               for w in words)


_LINK = r"[\s-]+(?:(?:of|and|for|the|on|per|in|to|&)\s+)*"  # between the words of a spelled-out abbreviation
SPELLED_REPEATS = 2  # a spelling-out in small letters is one only when the text repeats it (not "in both markets")
ABBREVIATION_LETTERS = (3, 6)  # an abbreviation read as spelled out: "CEO" to "NASDAQ" (two letters spell anything)
SPELLED_WORD_LETTERS = 3  # each word of a spelling-out in small letters ("per" in "earnings per share"; not "in")


def _spelled_out(word: str, text: str) -> bool:
    """Is ``word``, an abbreviation in capitals (:data:`ABBREVIATION_LETTERS`), spelled out in ``text``: words that
    begin with its letters in order, small words between them allowed, either capitalised or the same words repeated
    (:data:`SPELLED_REPEATS`: "earnings per share" said again and again in an earnings call). Stricter than
    :func:`app.features.acronym_in`, which a scorer feature reads softly: here a match lifts a hard refusal.

    >>> _spelled_out("CEO", "our Chief Executive Officer"), _spelled_out("IBM", "in both markets; in both markets")
    (True, False)
    >>> _spelled_out("EPS", "earnings per share rose; diluted earnings per share were $1.61")
    True
    """
    low, high = ABBREVIATION_LETTERS
    if not (low <= len(word) <= high and word.isalpha() and word.isupper()):
        return False
    if re.search(r"\b" + _LINK.join(f"{c}[a-z]+" for c in word) + r"\b", text):
        return True
    rest = SPELLED_WORD_LETTERS - 1
    said = Counter(m.group(0).lower() for m in re.finditer(
        r"\b" + _LINK.join(f"{c}[a-z]{{{rest},}}" for c in word.lower()) + r"\b", text, re.I))
    return bool(said) and max(said.values()) >= SPELLED_REPEATS

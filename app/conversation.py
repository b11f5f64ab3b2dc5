"""Conversation memory: a conversation is a plain list of turns (``{"role": "user"|"assistant", "content": str}``,
a user turn may carry ``"query"``, the standalone search query it was rewritten to), so it can be stored as is.

Before retrieval a follow-up ("Who founded it?") is turned into a standalone search query:

* **rules** (offline, no model): when the question refers back (a pronoun or demonstrative, an elliptical
  "and …"/"what about …", or two content words or fewer), the previous question as it was searched is carried
  into the query, in parentheses (the classic conversational-search baseline: it holds the entity a pronoun
  stands for, and its context); a short previous answer ("Ukraine [1].") adds its names. Measured against
  carrying extracted entities and key terms, and other rules, by ``bench/followup_rewrite.py`` (BENCHMARKS.md);
* **llm** (a chat backend): the model rewrites it under a strict prompt; an output that is not one plausible
  question (empty, several lines, far longer than the conversation warrants) falls back to the rules.

>>> rewrite_rules("Who founded it?", [{"role": "user", "content": "Tell me about the bakery on Elm Street."},
...                                   {"role": "assistant", "content": "It bakes rye bread [1]."}])
'Who founded it? (Tell me about the bakery on Elm Street.)'
"""
from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.grounding import is_abstention, strip_citations
from app.logistic import LogisticStage
from retrieval.bm25 import STOPWORDS

log = logging.getLogger(__name__)

Turn = dict  # {"role": "user" | "assistant", "content": str, optional "query": str}

REFERRING = frozenset("it its itself he him his himself she her hers herself they them their theirs themselves "
                      "this that these those there then former latter".split())
_ELLIPSIS_RE = re.compile(r"^\s*(and|also|what about|how about|and what about|what else|same for)\b", re.I)
_WHY_RE = re.compile(r"^\s*(why|how so|how come)\b", re.I)  # a follow-up unless the question names its own subject
_WORD_RE = re.compile(r"[A-Za-z][\w'’-]*|\d[\d.,]*")
_GENERIC = frozenset(("what which who whom whose when where why how does did do is are was were can could would "
                      "should will may might tell me about please give describe explain according mentioned "
                      "say said many much").split()) | STOPWORDS
_CONNECT = frozenset("of the de von van la le du and".split())


def user_turns(history: Sequence[Turn]) -> list[Turn]:
    return [t for t in history if t.get("role") == "user"]


_BE = frozenset("is are was were be been being has have had will would may might could can should must "
                "seem seems seemed appear appears appeared".split())


def _referring(words: Sequence[str]) -> bool:
    """A pronoun or demonstrative that points back; "there" only as a place ("What happened there?"), not the
    existential "there" of "Was there any drop …?" or "there were three …".

    >>> _referring(["was", "there", "any", "drop"]), _referring(["what", "happened", "there"])
    (False, True)
    """
    return any(w in REFERRING and not _existential(words, i) for i, w in enumerate(words))


def _existential(words: Sequence[str], i: int) -> bool:
    """Is ``words[i]`` the existential "there" ("Was *there* any drop", "*there* were three")?"""
    return words[i] == "there" and ((i > 0 and words[i - 1] in _BE) or (i + 1 < len(words) and words[i + 1] in _BE))


def names_its_subject(question: str, words: Sequence[str] | None = None) -> bool:
    """Whether the question names what it is about without pointing back: a name of its own (a capitalised run
    that is not just its first word), at least four content words and no pronoun. Such a question stands alone even
    when it starts with "why". A pronoun keeps it a follow-up even beside a name: of the 38 follow-ups of
    ``bench/data/followups.jsonl``, seven name someone and still point back ("Why does Mr. Knightley consider *him*
    beneath Harriet Smith's deserts?").

    >>> names_its_subject("Why was Zebrion chosen as the handheld vendor for Project Heron?")
    True
    >>> names_its_subject("Why does Mr. Knightley consider him beneath Harriet Smith's deserts?")
    False
    """
    words = words if words is not None else [w.lower() for w in _WORD_RE.findall(question)]
    content = [w for w in words if w not in _GENERIC and w not in REFERRING]
    return bool(entities(question)) and len(content) >= 4 and (not _referring(words)
                                                                or _antecedent_inside(question, words))


def refers_back(question: str, history: Sequence[Turn] | None = None) -> bool:
    """True when the question needs the conversation to be understood. Without ``history``: the rules
    (:func:`refers_back_rules`). With it: the fitted follow-up model (``app/data/followup_model.json``,
    ``bench/fit_followup.py``) over :func:`followup_features`, the rules' verdict one of them.

    >>> refers_back("Who founded it?"), refers_back("Who founded the Elm Street bakery?"), refers_back("And Paris?")
    (True, False, True)
    """
    if not history:
        return refers_back_rules(question, history)
    try:
        model = followup_model()
    except ValueError as e:  # a model file of other features: the rules decide, and the log says why once
        _warn_once(str(e))
        model = None
    if model is None:
        return refers_back_rules(question, history)
    return model.probability(followup_features(question, history)) >= model.threshold


@functools.cache
def _warn_once(message: str) -> None:
    log.warning("%s; the follow-up rules decide meanwhile", message)


def refers_back_rules(question: str, history: Sequence[Turn] | None = None) -> bool:
    """The rules: a pronoun, an ellipsis ("and …", "what about …"), two content words or fewer, or a "why …" that
    does not name its own subject (:func:`names_its_subject`). With ``history``, a pronoun alone does not make a
    follow-up of a question that says what it is about on its own (:func:`_own_topic`: "If our users choose *their*
    own passwords, what is the shortest length allowed?" after a question about a company's revenue).

    >>> refers_back_rules("Was there any drop in cash and cash equivalents in the quarter?")
    False
    >>> refers_back_rules("Why?"), refers_back_rules("Why was Zebrion chosen as the handheld vendor for Project Heron?")
    (True, False)
    """
    words = [w.lower() for w in _WORD_RE.findall(question)]
    if _ELLIPSIS_RE.search(question):
        return True
    if len([w for w in words if w not in _GENERIC]) <= 2:
        return True
    if _referring(words) and not _antecedent_inside(question, words):
        return not (history and _own_topic(words, history))
    return bool(_WHY_RE.search(question)) and not names_its_subject(question, words)


# what the fitted follow-up model reads of a question and the one before it (bench/fit_followup.py)
FOLLOWUP_FEATURES = ("rules", "ellipsis", "pronoun", "early_pronoun", "personal", "antecedent", "why", "content_words",
                     "few_words", "names", "new_names", "shared_share", "demonstrative", "previous_names_kept",
                     "before_names", "object_pronoun", "previous_names_absent", "subject_pronoun")
_OBJECT = frozenset("him them".split())
_SUBJECT = frozenset("it they he she".split())  # a pronoun that is a sentence's subject or object, not a possessive
EARLY_WORDS = 4  # a pointing word among a question's first four words has no room for an antecedent before it
_DEMONSTRATIVES = frozenset("this these those".split())  # "that" is as often a relative: "farms that lie"


def followup_features(question: str, history: Sequence[Turn]) -> list[float]:
    """The named signals of :data:`FOLLOWUP_FEATURES` for ``question`` after ``history``: the rules' verdict and
    their parts (an ellipsis, a pointing word and whether it is among the first :data:`EARLY_WORDS`, a person's
    pronoun, a name before the pronoun, a bare "why"), how much the question says of its own (content words, names,
    names the question before did not have), how much of it the question before already said (the share of its
    content words, by their first five letters), a demonstrative ("this plan"), whether it keeps a name of the
    question before; whether its first pointing word comes before any name of its own ("How large is *it* compared
    with the farms near Highbury?"), an object pronoun ("consider *him*"), whether the question before named
    something this one does not, and a pronoun standing for a whole subject ("does *it* run"), not a possessive."""
    words = [w.lower() for w in _WORD_RE.findall(question)]
    content = [w for w in words if w not in _GENERIC and w not in REFERRING and not w[0].isdigit()]
    prev = previous_query(history)
    before = _prefixes(prev)
    names, prev_names = entities(question), entities(prev)
    at = [i for i in (_word_index(words, n) for n in names) if i is not None]
    kept = any(_word_index(words, n) is not None for n in prev_names)
    pointing = [i for i, w in enumerate(words) if w in REFERRING and not _existential(words, i)]
    new = [n for n in names if not _prefixes(n) <= before]
    return [float(refers_back_rules(question, history)), float(bool(_ELLIPSIS_RE.search(question))),
            float(bool(pointing)), float(bool(pointing) and pointing[0] < EARLY_WORDS),
            float(any(w in _PERSONAL for w in words)), float(bool(pointing) and _antecedent_inside(question, words)),
            float(bool(_WHY_RE.search(question))), float(len(content)), float(len(content) <= 2), float(len(names)),
            float(len(new)), (sum(1 for w in content if _prefix(w) in before) / len(content)) if content else 0.0,
            float(any(w in _DEMONSTRATIVES and i + 1 < len(words) for i, w in enumerate(words))), float(kept),
            float(bool(pointing) and min(at, default=len(words)) > pointing[0]),
            float(any(w in _OBJECT for w in words)), float(bool(prev_names) and not kept),
            float(any(w in _SUBJECT for w in words))]


PREFIX_LETTERS = 5  # two words are one word when their first five letters are ("password", "passwords")


def _prefix(word: str) -> str:
    return word.lower()[:PREFIX_LETTERS]


def _prefixes(text: str) -> set[str]:
    """The :func:`_prefix` of every word of ``text``."""
    return {_prefix(w) for w in _WORD_RE.findall(text)}


def _word_index(words: Sequence[str], name: str) -> int | None:
    """Where in ``words`` (a question's lower-case words) ``name`` begins as whole words ("US" is not in
    "business"), or None."""
    n = [w.lower() for w in _WORD_RE.findall(name)]
    return next((i for i in range(len(words) - len(n) + 1) if n and list(words[i:i + len(n)]) == n), None)


@dataclass
class FollowupModel(LogisticStage):
    """A logistic regression over :data:`FOLLOWUP_FEATURES`, fitted on the train split's question pairs, its
    ``threshold`` from the measured costs of the two errors (``bench/fit_followup.py``; its ``card`` says on what,
    when and how)."""

    card: dict = field(default_factory=dict)


FOLLOWUP_MODEL = Path(__file__).resolve().parent / "data" / "followup_model.json"


@functools.cache
def followup_model(path: str | None = None) -> FollowupModel | None:
    """The shipped follow-up model, or None when there is none (then the rules decide); one fitted on other
    features than :data:`FOLLOWUP_FEATURES` is refused."""
    p = Path(path) if path else FOLLOWUP_MODEL
    if not p.is_file():
        return None
    d = json.loads(p.read_text(encoding="utf-8"))
    if tuple(d["features"]) != FOLLOWUP_FEATURES:
        raise ValueError(f"the follow-up model ({p.name}) was fitted on other features than the code computes: "
                         "refit it with `python bench/fit_followup.py`")
    return FollowupModel(tuple(d["features"]), d["mean"], d["scale"], d["coef"], float(d["intercept"]),
                         float(d["threshold"]), d.get("card", {}))


_PERSONAL = frozenset("he him his himself she her hers herself".split())
OWN_TOPIC_WORDS = 4  # content words a question needs to stand on its own topic (tests/app/test_conversation.py)


def _own_topic(words: Sequence[str], history: Sequence[Turn]) -> bool:
    """Whether the question is about something of its own: at least :data:`OWN_TOPIC_WORDS` content words, two of
    them before its first pronoun (which then stands for one of them: "our *users* choose *their* own"), and none of
    them (by its first five letters: "password" and "passwords") in the previous question or what it carried. A
    follow-up with a pronoun starts with it ("What was *its* net income?"), keeps a word of the turn before ("Who
    runs its operations in *Latin America*?") or says little else ("How old was he then?")."""
    own = {_prefix(w) for w in words if w not in _GENERIC and w not in REFERRING and not w[0].isdigit()}
    if any(w in _PERSONAL for w in words):  # a person's pronoun may be another person: "Why does Mr. Knightley
        return False  # consider *him* beneath Harriet's deserts?" (as in _antecedent_inside)
    first = next(i for i, w in enumerate(words) if w in REFERRING)
    said_before = sum(1 for w in words[:first] if w not in _GENERIC and not w[0].isdigit())
    if len(own) < OWN_TOPIC_WORDS or said_before < 2:  # "What was *its* …": the pronoun comes before any topic
        return False
    before = _prefixes(previous_query(history))
    return not (own & before)


def _antecedent_inside(question: str, words: Sequence[str]) -> bool:
    """Does the question name someone or something before its first pronoun, which the pronoun then stands for
    ("Who was Best Buy's CFO at the time of *its* Q3 call?", "In Otto of the Silver Hand, whom did *he* …")? A
    demonstrative ("this board", "that year") still points back.

    >>> _antecedent_inside("Who was Best Buy's CFO at the time of its Q3 call?",
    ...                    ["who", "was", "best", "buy's", "cfo", "at", "the", "time", "of", "its", "q3", "call"])
    True
    """
    names = entities(question)
    if not names:
        return False
    first_name = min(question.find(n) for n in names if n in question) if any(n in question for n in names) else -1
    for m in _WORD_RE.finditer(question):
        w = m.group().lower()
        if w in REFERRING and _referring([w] if w != "there" else words):
            # only a possessive of a thing or a group ("its", "their") is read as the question's own name: a person's
            # pronoun may be another person ("How does Emma feel about *his* approach?"), "it" and "there" the topic
            # of the turn before
            return w in _OWN_POSSESSIVES and 0 <= first_name < m.start()
    return False


_OWN_POSSESSIVES = frozenset({"its", "their"})


def entities(text: str, lone_first: bool = False) -> list[str]:
    """Capitalised word runs ("Jane Fairfax", "Little Rock Arsenal", "Valkyria Chronicles III"); a lone
    capitalised first word of a sentence is not one, unless ``lone_first`` (a short answer: "Ukraine [1].").

    >>> entities("How did Colonel Campbell come to know Jane Fairfax?")
    ['Colonel Campbell', 'Jane Fairfax']
    """
    out: list[str] = []
    for sent in re.split(r"(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<=[.!?])\s+", text):
        words = [(m.group(), m.start()) for m in _WORD_RE.finditer(sent)]
        run: list[str] = []
        run_start = [0]

        def flush(run=run, run_start=run_start):
            while run and run[-1].lower() in _CONNECT:
                run.pop()
            if run:
                e = " ".join(run)
                lone = len(run) == 1 and run_start[0] == 0 and not lone_first  # "Through her father": not a name
                if e not in out and not lone and not (len(run) == 1 and run[0].lower() in _GENERIC | REFERRING):
                    out.append(e)
            run.clear()

        for i, (w, _) in enumerate(words):
            # the pronoun "I" ("I'm", "I've") is capitalised by spelling, not because it names something
            cap = (w[0].isupper() and re.split(r"['’]", w)[0] != "I") or (w[0].isdigit() and run)
            if cap and not (i == 0 and w.lower() in _GENERIC):
                if not run:
                    run_start[0] = i
                run.append(w)
            elif run and w.lower() in _CONNECT and i + 1 < len(words) and words[i + 1][0][0].isupper():
                run.append(w)
            else:
                flush()
        flush()
    return out


def previous_query(history: Sequence[Turn], max_words: int = 40) -> str:
    """The previous user turn as it was searched: its question, then what its own rewrite carried (unwrapped from
    the parentheses), cut after the last whole sentence within ``max_words``, so that in a chain of follow-ups the
    oldest questions drop out first.

    >>> previous_query([{"role": "user", "content": "Did she accept it?",
    ...                  "query": "Did she accept it? (What offer did Colonel Campbell make to Jane Fairfax?)"}])
    'Did she accept it? What offer did Colonel Campbell make to Jane Fairfax?'
    """
    users = user_turns(history)
    if not users:
        return ""
    content = str(users[-1].get("content", "")).strip()
    query = str(users[-1].get("query") or content).strip()
    rest = query[len(content):].strip() if query.startswith(content) else ""
    if content and rest.startswith("(") and rest.endswith(")"):
        query = f"{content} {rest[1:-1].strip()}"
    kept: list[str] = []
    for sent in re.split(r"(?<=[.?!])\s+", query):
        words = sent.split()
        if kept and len(" ".join(kept).split()) + len(words) > max_words:
            break
        kept.append(" ".join(words[:max_words]))
    return " ".join(kept)


def short_answer_names(history: Sequence[Turn], max_words: int = 12) -> list[str]:
    """Names in the previous answer when it is short ("Ukraine [1]."): the referent of "they" or "him" may be
    there only. A longer answer (passages, as the extractive backend's) is left out: its names are mostly other
    people and places (bench/followup_rewrite.py measured carrying them)."""
    last = history[-1] if history else None
    if last is None or last.get("role") != "assistant" or is_abstention(str(last.get("content", ""))):
        return []
    answer = strip_citations(str(last["content"])).strip()
    n = len(answer.split())
    return entities(answer, lone_first=n <= 6)[:2] if 0 < n <= max_words else []


def rewrite_rules(question: str, history: Sequence[Turn]) -> str:
    """The standalone search query for ``question``: itself when it stands alone, else itself followed by the
    previous question as searched (and the names of a short previous answer) in parentheses."""
    q = question.strip()
    if not user_turns(history) or not refers_back(q, history):
        return q
    prev = previous_query(history)
    seen = {w.lower() for w in _WORD_RE.findall(f"{q} {prev}")}
    names = [e for e in short_answer_names(history) if not all(w.lower() in seen for w in _WORD_RE.findall(e))]
    carried = " ".join(x for x in [prev, *names] if x)
    return f"{q} ({carried})" if carried else q


REWRITE_SYSTEM = (
    "You rewrite the user's last question so that it can be understood without the conversation. Replace every "
    "pronoun and every omitted subject with what it refers to in the conversation. Keep the question's meaning "
    "and wording otherwise. Do not answer it. Output only the rewritten question, on one line.")


def rewrite_messages(question: str, history: Sequence[Turn], max_turns: int = 4) -> list[dict]:
    """The strict rewrite prompt for a chat LLM: the conversation's subject (its first question, when the last
    turns no longer hold it), the last turns as a transcript, then the question."""
    lines = []
    recent = list(history)[-max_turns:]
    first = next((t for t in history if t.get("role") == "user"), None)
    if first is not None and first not in recent:
        subject = strip_citations(str(first.get("content", "")))[:600]
        lines.append(f"User (the conversation's first question): {subject}")
        lines.append("…")
    for t in recent:
        who = "User" if t.get("role") == "user" else "Assistant"
        lines.append(f"{who}: {strip_citations(str(t.get('content', '')))[:600]}")
    user = ("Conversation:\n" + "\n".join(lines) + f"\n\nLast question: {question.strip()}\n\nRewritten question:")
    return [{"role": "system", "content": REWRITE_SYSTEM}, {"role": "user", "content": user}]


_QUESTION_START = re.compile(r"^(what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|"
                             r"could|would|should|will|has|have|had|may|might|must|shall|list|name|describe|"
                             r"explain|tell|give|show|summari[sz]e|compare)\b", re.I)


def own_terms(question: str) -> set[str]:
    """The question's own content words: what a rewrite must keep (not pronouns, question words or stopwords)."""
    return {w.lower() for w in _WORD_RE.findall(question)} - _GENERIC - REFERRING


def clean_rewrite(output: str, question: str, history: Sequence[Turn]) -> str | None:
    """The LLM's rewrite if it is one plausible question, else None (the caller then uses the rules): one line,
    not far longer than the conversation warrants, still a question when the user asked one, and keeping at least
    two thirds of the question's own content words (a rewrite that swaps the question for an earlier one is not
    a rewrite).

    >>> clean_rewrite("Who founded the Elm Street bakery?", "Who founded it?", [])
    'Who founded the Elm Street bakery?'
    >>> clean_rewrite("The bakery was founded in 1901.", "Who founded it?", []) is None
    True
    >>> clean_rewrite("Who are Boeing's main suppliers?", "Who are the primary customers of Boeing?", []) is None
    True
    """
    text = re.sub(r"^(rewritten question|question)\s*:\s*", "", output.strip(), flags=re.I).strip().strip('"“”').strip()
    if not text or "\n" in text or len(text) < 4:
        return None
    budget = len(question) + sum(len(str(t.get("content", ""))) for t in user_turns(history)[-1:]) + 40
    if len(text) > max(budget, 2 * len(question) + 40):
        return None
    asked = question.rstrip().endswith("?") or _QUESTION_START.match(question.strip())
    if asked and not (text.endswith("?") or _QUESTION_START.match(text)):
        return None
    own = own_terms(question)
    if own:
        kept = {w.lower() for w in _WORD_RE.findall(text)}
        stems = {_prefix(w) for w in kept}  # "customer" kept as "customers"
        if sum(1 for w in own if w in kept or _prefix(w) in stems) < (2 * len(own)) / 3:
            return None
    return text


def rewrite(question: str, history: Sequence[Turn], llm: Callable[[list[dict]], str] | None = None
            ) -> tuple[str, str]:
    """``(query, how)``: the standalone query, and "none" (no history or it stands alone), "rules" or "llm"."""
    q = question.strip()
    # decided offline first: a standalone question is not rewritten
    if not user_turns(history) or not refers_back(q, history):
        return q, "none"
    if llm is not None:
        try:
            out = clean_rewrite(llm(rewrite_messages(q, history)), q, history)
        except Exception:  # a failing rewrite model must not fail the question: the rules take over
            out = None
        if out:
            return out, "llm"
    return rewrite_rules(q, history), "rules"

"""Conversation memory: a conversation is a plain list of turns (``{"role": "user"|"assistant", "content": str}``,
a user turn may carry ``"query"``, the standalone search query it was rewritten to), so it can be stored as is.

Before retrieval a follow-up ("Who founded it?") is turned into a standalone search query:

* **rules** (offline, no model): when the question refers back (a pronoun or demonstrative, an elliptical
  "and …"/"what about …", or two content words or fewer), the previous question's named entities and key
  terms (and the names in the previous answer, unless it abstained) are carried into the query;
* **llm** (a chat backend): the model rewrites it under a strict prompt; an output that is not one plausible
  question (empty, several lines, far longer than the conversation warrants) falls back to the rules.

>>> rewrite_rules("Who founded it?", [{"role": "user", "content": "Tell me about the bakery on Elm Street."},
...                                   {"role": "assistant", "content": "It bakes rye bread [1]."}])
'Who founded it? (Elm Street, bakery)'
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from app.grounding import is_abstention, strip_citations
from retrieval.bm25 import STOPWORDS

Turn = dict  # {"role": "user" | "assistant", "content": str, optional "query": str}

REFERRING = frozenset("it its itself he him his himself she her hers herself they them their theirs themselves "
                      "this that these those there then former latter".split())
_ELLIPSIS_RE = re.compile(r"^\s*(and|also|what about|how about|and what about|what else|same for|why|how so)\b", re.I)
_WORD_RE = re.compile(r"[A-Za-z][\w'’-]*|\d[\d.,]*")
_GENERIC = frozenset(("what which who whom whose when where why how does did do is are was were can could would "
                      "should will may might tell me about please give describe explain according mentioned "
                      "say said many much").split()) | STOPWORDS
_CONNECT = frozenset("of the de von van la le du and".split())


def user_turns(history: Sequence[Turn]) -> list[Turn]:
    return [t for t in history if t.get("role") == "user"]


def refers_back(question: str) -> bool:
    """True when the question needs the conversation to be understood (pronoun, ellipsis, or too short).

    >>> refers_back("Who founded it?"), refers_back("Who founded the Elm Street bakery?"), refers_back("And Paris?")
    (True, False, True)
    """
    words = [w.lower() for w in _WORD_RE.findall(question)]
    if any(w in REFERRING for w in words) or _ELLIPSIS_RE.search(question):
        return True
    return len([w for w in words if w not in _GENERIC]) <= 2


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
            cap = w[0].isupper() or (w[0].isdigit() and run)
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


def key_terms(text: str, exclude: set[str] | None = None) -> list[str]:
    """Content words of ``text`` in order (stopwords and question words removed)."""
    exclude = exclude or set()
    seen: list[str] = []
    for w in _WORD_RE.findall(text):
        lw = w.lower()
        if lw in _GENERIC or lw in REFERRING or lw in exclude or len(lw) < 3 and not lw.isdigit():
            continue
        if lw not in seen:
            seen.append(lw)
    return seen


def carried_terms(history: Sequence[Turn], max_terms: int = 8) -> list[str]:
    """What a follow-up inherits: the previous question's entities and key terms, then names from the previous
    answer (unless it abstained)."""
    users = user_turns(history)
    if not users:
        return []
    prev = users[-1]
    prev_q = prev.get("query") or prev.get("content", "")
    prev_q = re.sub(r"\s*\(([^()]*)\)\s*$", r" \1", prev_q)  # a rewritten query's carried terms count as its own
    ents = entities(prev_q)
    covered = {w.lower() for e in ents for w in e.split()}
    terms = ents + key_terms(prev_q, covered)
    last = history[-1] if history else None
    if last is not None and last.get("role") == "assistant" and not is_abstention(last.get("content", "")):
        have = {t.lower() for t in terms}
        answer = strip_citations(last["content"])
        for e in entities(answer, lone_first=len(answer.split()) <= 6)[:2]:
            if e.lower() not in have:
                terms.append(e)
    return terms[:max_terms]


def rewrite_rules(question: str, history: Sequence[Turn]) -> str:
    """The standalone search query for ``question``: itself when it stands alone, else itself with the carried
    terms in parentheses."""
    q = question.strip()
    if not user_turns(history) or not refers_back(q):
        return q
    own = {w.lower() for w in _WORD_RE.findall(q)}
    carried = [t for t in carried_terms(history) if t.lower() not in own]
    return f"{q} ({', '.join(carried)})" if carried else q


REWRITE_SYSTEM = (
    "You rewrite the user's last question so that it can be understood without the conversation. Replace every "
    "pronoun and every omitted subject with what it refers to in the conversation. Keep the question's meaning "
    "and wording otherwise. Do not answer it. Output only the rewritten question, on one line.")


def rewrite_messages(question: str, history: Sequence[Turn], max_turns: int = 4) -> list[dict]:
    """The strict rewrite prompt for a chat LLM: the last turns as a transcript, then the question."""
    lines = []
    for t in list(history)[-max_turns:]:
        who = "User" if t.get("role") == "user" else "Assistant"
        lines.append(f"{who}: {strip_citations(str(t.get('content', '')))[:600]}")
    user = ("Conversation:\n" + "\n".join(lines) + f"\n\nLast question: {question.strip()}\n\nRewritten question:")
    return [{"role": "system", "content": REWRITE_SYSTEM}, {"role": "user", "content": user}]


def clean_rewrite(output: str, question: str, history: Sequence[Turn]) -> str | None:
    """The LLM's rewrite if it is one plausible question, else None (the caller then uses the rules)."""
    text = re.sub(r"^(rewritten question|question)\s*:\s*", "", output.strip(), flags=re.I).strip().strip('"“”').strip()
    if not text or "\n" in text or len(text) < 4:
        return None
    budget = len(question) + sum(len(str(t.get("content", ""))) for t in user_turns(history)[-1:]) + 40
    if len(text) > max(budget, 2 * len(question) + 40):
        return None
    return text


def rewrite(question: str, history: Sequence[Turn], llm: Callable[[list[dict]], str] | None = None
            ) -> tuple[str, str]:
    """``(query, how)``: the standalone query, and "none" (no history or it stands alone), "rules" or "llm"."""
    q = question.strip()
    if not user_turns(history):
        return q, "none"
    if llm is not None:
        try:
            out = clean_rewrite(llm(rewrite_messages(q, history)), q, history)
        except Exception:  # a failing rewrite model must not fail the question: the rules take over
            out = None
        if out:
            return out, "llm"
    if not refers_back(q):
        return q, "none"
    return rewrite_rules(q, history), "rules"

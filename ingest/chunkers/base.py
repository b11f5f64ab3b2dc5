"""One interface for every chunker: ``chunk(text) -> list[Chunk]`` with exact character offsets, and one way to
make one: ``build(theta, ...)`` (the settings' path) or ``from_description(describe(), ...)`` (an index's recorded
parameters), with what its registry entry (:data:`core.components.CHUNKERS`) needs checked for all alike."""
from __future__ import annotations

import dataclasses
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from core.components import CHUNKERS, NEED_HINTS, Component, lookup
from ingest.text.sentences import count_words, is_hard_wrapped, is_heading_line, sentences_between, split_long
from ingest.types import Chunk

# the argument (and dataclass field) that carries each need's model: the boundary LM is a chunker's ``scorer``
MODEL_ARGS = {"lm": "scorer", "embedder": "embedder", "llm": "llm"}


class Chunker(ABC):
    """Base class. Subclasses implement :meth:`_spans` (level-0 spans) or override :meth:`chunk`.

    A product chunker is a frozen dataclass marked :func:`core.components.registered` (which gives it ``name`` and
    ``component``, its registry entry); its models are its fields named by :data:`MODEL_ARGS`, its parameters its
    other fields, recorded by :meth:`describe` under their field names."""

    name: str = "base"
    component: ClassVar[Component | None] = None  # its entry of core.components.CHUNKERS (set by @registered)
    #: how many granularity levels the output has (1: parents only; 3: parents, θ/2, θ/4 children)
    n_levels: int = 1
    #: the field that θ sets in :meth:`build`
    size_field: ClassVar[str] = "theta"

    @classmethod
    def build(cls, theta: int = 300, *, scorer=None, embedder=None, lg_config=None, llm=None) -> Chunker:
        """This chunker at ``theta`` words, its other parameters at their defaults (``lg_config``: the LG rule, for
        the chunkers that take one). The models it needs (``scorer``: the boundary LM, ``embedder``, ``llm``: an
        object with ``complete(messages)``) must be given; the others are ignored."""
        return cls.from_description({cls.size_field: theta}, scorer=scorer, embedder=embedder, llm=llm)

    @classmethod
    def from_description(cls, desc: dict, *, scorer=None, embedder=None, llm=None) -> Chunker:
        """The chunker whose :meth:`describe` gave ``desc``: with the same models it cuts every text as that one did.
        Called on :class:`Chunker` itself, the registered chunker that ``desc["chunker"]`` names. Parameters not
        recorded keep their defaults; what ``desc`` records of the models (LG prompt, embedder, LLM) is for checks,
        the models themselves are given."""
        if cls is Chunker:
            chunker = lookup(CHUNKERS, desc.get("chunker"), "chunker").resolve()
            return chunker.from_description(desc, scorer=scorer, embedder=embedder, llm=llm)
        if desc.get("chunker", cls.name) != cls.name:
            raise ValueError(f"a description of the {desc['chunker']} chunker given to the {cls.name} chunker")
        given = {"lm": scorer, "embedder": embedder, "llm": llm}
        needs = cls.component.needs if cls.component is not None else frozenset()
        for need in sorted(needs):
            if given[need] is None:
                raise ValueError(f"the {cls.name} chunker needs {NEED_HINTS[need]}")
        models = {MODEL_ARGS[n]: given[n] for n in needs}
        return cls._from_params({k: v for k, v in desc.items() if k != "chunker"}, models)

    @classmethod
    def _from_params(cls, params: dict, models: dict) -> Chunker:
        """The chunker with ``models`` and the recorded ``params`` of its own fields (the models' names excepted:
        a description records a model's name, not the model)."""
        own = {f.name for f in dataclasses.fields(cls) if f.init} - set(MODEL_ARGS.values())
        return cls(**models, **{k: v for k, v in params.items() if k in own})

    def chunk(self, text: str) -> list[Chunk]:
        """Chunks of ``text`` ordered by (level, start); ``chunk.text == text[chunk.start:chunk.end]``."""
        return [Chunk(text[s:e], s, e, 0) for s, e in self._spans(text)]

    @abstractmethod
    def _spans(self, text: str) -> list[tuple[int, int]]:
        ...

    def chunk_document(self, text: str, doc_id: str, doc_hash: str) -> list[Chunk]:
        """Chunks carrying document id and hash, so that their point ids are defined."""
        return [c.with_doc(doc_id, doc_hash) for c in self.chunk(text)]

    def describe(self) -> dict:
        """Parameters recorded in the catalog with every index built by this chunker."""
        return {"chunker": self.name}


def paragraph_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Paragraphs of ``text[start:end]``: blank-line separated, or line separated unless hard-wrapped."""
    end = len(text) if end is None else end
    return _separated(text, start, end, _BLOCK_SEP if is_hard_wrapped(text) else _LINE_SEP)


def sentence_spans_in(text: str, start: int, end: int, max_words: int | None = None) -> list[tuple[int, int]]:
    """Sentence spans of the whole ``text`` clipped to [start, end] (the segmentation is memoised per text)."""
    return sentences_between(text, start, end, max_words)


def merge_units(text: str, units: Sequence[tuple[int, int]], max_words: int) -> list[tuple[int, int]]:
    """Greedily merge consecutive units into spans of at most ``max_words`` words (a unit is never cut)."""
    out: list[tuple[int, int]] = []
    cur_s = cur_e = None
    cur_w = 0
    for s, e in units:
        w = count_words(text[s:e])
        if cur_s is not None and cur_w + w <= max_words:
            cur_e, cur_w = e, cur_w + w
            continue
        if cur_s is not None:
            out.append((cur_s, cur_e))
        cur_s, cur_e, cur_w = s, e, w
    if cur_s is not None:
        out.append((cur_s, cur_e))
    return out


def recursive_spans(text: str, start: int, end: int, max_words: int, blocks: bool = True) -> list[tuple[int, int]]:
    r"""Recursive chunking of ``text[start:end]`` into spans of at most ``max_words`` words.

    Separators are tried from coarse to fine: blocks (blank-line separated), then lines (unless the text is
    hard-wrapped), then sentences, then words, as in the recursive splitters of LangChain/llama-index but with words
    as the length unit; the units are merged greedily. A block that fits stays whole: a table or a "Passage 2:" with
    its lines starts a span rather than being cut where the span before it happens to fill up. A sentence is only
    cut when it alone is longer than ``max_words``. The spans cover [start, end) up to whitespace. ``blocks=False``:
    the cut before blocks counted (lines first; kept for the benchmark that compares the two).

    >>> t = "Notes\nCash rose.\nDebt fell.\n\nPassage 2:\nOlav was born in 1950."
    >>> [t[s:e] for s, e in recursive_spans(t, 0, len(t), 8)]
    ['Notes\nCash rose.\nDebt fell.', 'Passage 2:\nOlav was born in 1950.']
    >>> [t[s:e] for s, e in recursive_spans(t, 0, len(t), 8, blocks=False)]
    ['Notes\nCash rose.\nDebt fell.\n\nPassage 2:', 'Olav was born in 1950.']
    """
    if max_words < 1:
        raise ValueError(f"max_words must be >= 1, got {max_words}")
    levels = []
    if blocks:
        levels.append(lambda s, e: _separated(text, s, e, _BLOCK_SEP))
    levels += [
        lambda s, e: paragraph_spans(text, s, e),
        lambda s, e: sentence_spans_in(text, s, e),
        lambda s, e: split_long(text, s, e, max_words),
    ]

    def rec(s: int, e: int, depth: int) -> list[tuple[int, int]]:
        if count_words(text[s:e]) <= max_words:
            return [(s, e)] if text[s:e].strip() else []
        if depth == len(levels):  # unreachable: words always fit
            return split_long(text, s, e, max_words)
        units = _headings_lead(text, levels[depth](s, e)) if depth < len(levels) - 1 else levels[depth](s, e)
        if len(units) <= 1 and units and units[0] == _strip(text, s, e):
            return rec(s, e, depth + 1)
        small: list[tuple[int, int]] = []
        for us, ue in units:
            if count_words(text[us:ue]) > max_words:
                small.extend(rec(us, ue, depth + 1))
            else:
                small.append((us, ue))
        return merge_units(text, small, max_words)

    return rec(*_strip(text, start, end), 0) if text[start:end].strip() else []


def _headings_lead(text: str, units: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``units`` with each heading line (:func:`is_heading_line`) joined to the unit after it, so that a heading
    never ends a span: it begins the one it heads (a question naming the next section finds that section's passage,
    its heading included, not the end of the one before). A joined unit too long for a span is split at the next
    level, where the heading line again leads its first piece."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(units):
        s, e = units[i]
        while i + 1 < len(units) and is_heading_line(text[s:e]):
            e = units[i + 1][1]
            i += 1
        out.append((s, e))
        i += 1
    return out


_BLOCK_SEP = re.compile(r"\n[ \t\r\f\v]*\n")
_LINE_SEP = re.compile(r"\n")


def _separated(text: str, start: int, end: int, sep: re.Pattern) -> list[tuple[int, int]]:
    """The non-blank pieces of ``text[start:end]`` between matches of ``sep``, stripped."""
    spans, prev = [], start
    for m in sep.finditer(text, start, end):
        spans.append((prev, m.start()))
        prev = m.end()
    spans.append((prev, end))
    return [_strip(text, s, e) for s, e in spans if text[s:e].strip()]


def _strip(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def check_theta(theta: int, minimum: int = 4) -> None:
    if not isinstance(theta, int) or theta < minimum:
        raise ValueError(f"theta must be an integer >= {minimum} words, got {theta!r}")

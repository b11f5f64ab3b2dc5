"""LumberChunker (GutenQA's authors): an instruction-following LLM names where the content changes.

Paragraphs are labelled "ID n:"; starting at the current paragraph, paragraphs are added until the window
holds about ``window_tokens`` tokens; the LLM is asked for the first paragraph (after the first) where the
content clearly changes; the chunk ends before it and the next window starts there. The LLM is any object
with ``complete(messages) -> str`` — the ``openai`` backend (:class:`app.synth.openai_compat.OpenAICompatSynthesizer`)
in the product. Bounded retries: an answer that names no valid ID is asked again ``retries`` times, then the
window is cut at its middle paragraph (logged). Chunks longer than ``max_words`` are split recursively.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from core.components import registered
from ingest.chunkers.base import Chunker, check_theta, paragraph_spans, recursive_spans
from ingest.text.sentences import count_words

log = logging.getLogger(__name__)

PROMPT = (
    "You will receive as input an English document with paragraphs identified by 'ID XXXX: <text>'.\n\n"
    "Task: Find the first paragraph (not the first one) where the content clearly changes compared to the "
    "previous paragraphs.\n\nOutput: Return the ID of the paragraph with the content shift as in the exemplified "
    "format: 'Answer: ID XXXX'.\n\nAdditional Considerations: Avoid very long groups of paragraphs. Aim for a good "
    "balance between identifying content shifts and keeping groups manageable."
)
_ANSWER_RE = re.compile(r"ID\s*:?\s*(\d+)")


def parse_answer(reply: str) -> int | None:
    """The paragraph ID named in the reply (the one after 'Answer:' if present)."""
    tail = reply.split("Answer:", 1)[1] if "Answer:" in reply else reply
    m = _ANSWER_RE.search(tail)
    return int(m.group(1)) if m else None


@registered
@dataclass(frozen=True)
class LumberChunker(Chunker):
    llm: object = field(compare=False)
    max_words: int = 400
    window_tokens: int = 550
    retries: int = 2
    size_field = "max_words"  # θ sets it (build)

    def __post_init__(self) -> None:
        check_theta(self.max_words)
        if self.llm is None:
            raise ValueError("the lumber chunker needs an instruction-following model through the openai backend: "
                             "set MGRAG_OPENAI_BASE_URL (and MGRAG_OPENAI_MODEL)")

    def _ask(self, paras: list[tuple[int, int]], text: str, i: int, j: int) -> int:
        doc = "\n".join(f"ID {k}: {text[s:e]}" for k, (s, e) in enumerate(paras[i:j], start=i))
        messages = [{"role": "system", "content": PROMPT}, {"role": "user", "content": doc}]
        for _ in range(self.retries + 1):
            got = parse_answer(self.llm.complete(messages, max_tokens=20))
            if got is not None and i < got < j:
                return got
        mid = i + max(1, (j - i) // 2)
        log.warning("lumber: no valid paragraph ID for window %d..%d after %d tries; cutting at %d", i, j - 1,
                    self.retries + 1, mid)
        return mid

    def _spans(self, text: str) -> list[tuple[int, int]]:
        paras = paragraph_spans(text)
        if not paras:
            return []
        tokens = [int(count_words(text[s:e]) * 1.3) + 1 for s, e in paras]  # ~1.3 tokens per English word
        groups, i = [], 0
        while i < len(paras):
            j, total = i, 0
            while j < len(paras) and (total < self.window_tokens or j - i < 2):
                total += tokens[j]
                j += 1
            if j >= len(paras) and total < self.window_tokens:
                groups.append((i, len(paras)))
                break
            cut = self._ask(paras, text, i, j) if j - i >= 2 else j
            groups.append((i, cut))
            i = cut
        out = []
        for a, b in groups:
            out.extend(recursive_spans(text, paras[a][0], paras[b - 1][1], self.max_words))
        return out

    def describe(self) -> dict:
        return {"chunker": self.name, "max_words": self.max_words, "window_tokens": self.window_tokens,
                "llm": getattr(self.llm, "model", "?")}

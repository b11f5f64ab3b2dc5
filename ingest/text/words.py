"""Words as the chunkers count them: whitespace-separated, each CJK character one word, and a run of more than
:data:`MAX_WORD_CHARS` characters without a space one word per that many."""
from __future__ import annotations

import re

_CJK = (
    r"\u2e80-\u2fff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    r"\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
MAX_WORD_CHARS = 200  # a longer run without a space (a 10 MB "word") counts as words of this many characters
_WORD_RE = re.compile(rf"[{_CJK}]|[^\s{_CJK}]{{1,{MAX_WORD_CHARS}}}")


def count_words(text: str) -> int:
    """Whitespace-separated words, with each CJK character counted as one word and a run of more than
    :data:`MAX_WORD_CHARS` characters as one word per that many."""
    return len(_WORD_RE.findall(text))


def word_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Offsets of the words of ``text[start:end]`` (CJK characters are one word each; a run longer than
    :data:`MAX_WORD_CHARS` is pieces of that length)."""
    return [(m.start(), m.end()) for m in _WORD_RE.finditer(text, start, len(text) if end is None else end)]

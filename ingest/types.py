"""Plain data types shared by every stage: chunks with exact character offsets and deterministic ids."""
from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field, replace

from ingest.text.sentences import count_words

# Fixed namespace: point ids are uuid5(namespace, "<doc id>\x1f<doc hash>:<level>:<start>:<end>"), so re-ingesting the
# same document yields the same ids and overwrites instead of duplicating, and two documents with the same content
# (two owners' private uploads of one file) never share a point.
MGRAG_NAMESPACE = uuid.UUID("6f1c4b3e-5d1a-4c7e-9a53-2b9f0f1d7a11")

LEVEL_NAMES = ("parent", "half", "quarter")  # level 0 = θ words, 1 = θ/2, 2 = θ/4


def content_hash(data: bytes | str) -> str:
    """sha256 hex of the document's bytes (str is encoded as UTF-8)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def point_id(doc_hash: str, level: int, start: int, end: int, doc_id: str = "") -> str:
    """Deterministic id of a chunk: uuid5 of document id, document hash, level and offsets."""
    key = f"{doc_hash}:{level}:{start}:{end}"
    return str(uuid.uuid5(MGRAG_NAMESPACE, f"{doc_id}\x1f{key}" if doc_id else key))


@dataclass(frozen=True)
class Chunk:
    """A span ``text == source[start:end]`` at granularity ``level``.

    ``parent_start``/``parent_end`` locate the level-0 chunk this one belongs to (for a level-0 chunk, itself).
    Ids are derived from the document hash, so a chunk gets its ids once :meth:`with_doc` has been called.
    """

    text: str
    start: int
    end: int
    level: int = 0
    parent_start: int | None = None
    parent_end: int | None = None
    doc_id: str = ""
    doc_hash: str = ""
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"chunk offsets must satisfy 0 <= start <= end, got {self.start}..{self.end}")
        if len(self.text) != self.end - self.start:
            raise ValueError(f"chunk text has {len(self.text)} chars but offsets span {self.end - self.start}")
        if self.level < 0:
            raise ValueError(f"chunk level must be >= 0, got {self.level}")

    @property
    def parent_span(self) -> tuple[int, int]:
        if self.parent_start is None or self.parent_end is None:
            return (self.start, self.end)
        return (self.parent_start, self.parent_end)

    @property
    def id(self) -> str:
        if not self.doc_hash:
            raise ValueError("chunk has no doc_hash yet; call with_doc() first")
        return point_id(self.doc_hash, self.level, self.start, self.end, self.doc_id)

    @property
    def parent_id(self) -> str:
        if not self.doc_hash:
            raise ValueError("chunk has no doc_hash yet; call with_doc() first")
        ps, pe = self.parent_span
        return point_id(self.doc_hash, 0, ps, pe, self.doc_id)

    @property
    def n_words(self) -> int:
        return count_words(self.text)

    def with_doc(self, doc_id: str, doc_hash: str) -> "Chunk":
        return replace(self, doc_id=doc_id, doc_hash=doc_hash)

"""Evaluations of answers, stored in SQLite (``data_dir/feedback.sqlite``) and exported as router training data.

One row per evaluation: the question, the answer, a rating (good/bad/none), a comment, an optional reference
answer with its F1, and the evidence the evaluator marked relevant (spans of documents in the index). The JSONL
export uses the bench-set format (``../shared/bench``: ``id, question, doc_id, answers, evidence[{text,start,end}]``)
so evaluations feed router training like any bench set.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.db import inserted_id, open_db

SCHEMA = """
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, question TEXT NOT NULL, answer TEXT NOT NULL,
    backend TEXT, retriever TEXT, rating TEXT, comment TEXT, reference TEXT, f1 REAL, doc_id TEXT,
    evidence TEXT NOT NULL, weights TEXT);
"""
RATINGS = ("good", "bad", None)
EVERYONE = object()  # owner argument of rows/export: every owner's evaluations (the admin's router training)


@dataclass
class Evaluation:
    question: str
    answer: str
    rating: str | None = None
    comment: str = ""
    reference: str = ""
    f1: float | None = None
    doc_id: str = ""
    evidence: list[dict] = field(default_factory=list)  # [{"text", "start", "end"}] in doc_id's text
    backend: str = ""
    retriever: str = ""
    weights: list[float] = field(default_factory=list)
    owner: str | None = None  # the browser or user that made it; exports show a caller only their own

    def __post_init__(self) -> None:
        if self.rating not in RATINGS:
            raise ValueError(f"rating must be 'good', 'bad' or empty, got {self.rating!r}")
        if not self.question.strip():
            raise ValueError("an evaluation needs the question it evaluates")
        for e in self.evidence:
            if not {"text", "start", "end"} <= set(e) or e["end"] - e["start"] != len(e["text"]):
                raise ValueError(f"evidence must be {{text, start, end}} with end - start == len(text), got {e!r}")


class FeedbackStore:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self.db = open_db(self.path, SCHEMA)
        if "owner" not in {r[1] for r in self.db.execute("PRAGMA table_info(evaluations)")}:
            self.db.execute("ALTER TABLE evaluations ADD COLUMN owner TEXT")

    def add(self, ev: Evaluation) -> int:
        with self._lock:
            cur = self.db.execute(
                "INSERT INTO evaluations (created, question, answer, backend, retriever, rating, comment, reference, "
                "f1, doc_id, evidence, weights, owner) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (time.time(), ev.question, ev.answer, ev.backend, ev.retriever, ev.rating, ev.comment, ev.reference,
                 ev.f1, ev.doc_id, json.dumps(ev.evidence, ensure_ascii=False), json.dumps(ev.weights), ev.owner))
            return inserted_id(cur)

    def rows(self, owner=EVERYONE) -> list[dict]:
        """Every evaluation, or only ``owner``'s."""
        keys = ("id", "created", "question", "answer", "backend", "retriever", "rating", "comment", "reference",
                "f1", "doc_id", "evidence", "weights", "owner")
        q = f"SELECT {', '.join(keys)} FROM evaluations"
        with self._lock:
            if owner is EVERYONE:
                rows = self.db.execute(q + " ORDER BY id").fetchall()
            else:
                rows = self.db.execute(q + " WHERE owner IS ? ORDER BY id", (owner,)).fetchall()
        out = []
        for r in rows:
            d = dict(zip(keys, r))
            d["evidence"] = json.loads(d["evidence"] or "[]")
            d["weights"] = json.loads(d["weights"] or "[]")
            out.append(d)
        return out

    def training_records(self, owner=EVERYONE) -> list[dict]:
        """Evaluations usable as router training data, in the bench-set format: those with a document and at least
        one evidence span. A reference answer, when given, is the record's answer."""
        out = []
        for r in self.rows(owner):
            if not r["doc_id"] or not r["evidence"]:
                continue
            out.append({"id": f"feedback-{r['id']}", "question": r["question"], "doc_id": r["doc_id"],
                        "answers": [r["reference"]] if r["reference"] else [],
                        "evidence": [{"text": e["text"], "start": e["start"], "end": e["end"]} for e in r["evidence"]]})
        return out

    def forget_document(self, doc_id: str) -> int:
        """Drop the evidence (quotes of the document) of evaluations of a deleted document; ratings stay."""
        with self._lock:
            return self.db.execute("UPDATE evaluations SET evidence='[]', doc_id='' WHERE doc_id=?",
                                   (doc_id,)).rowcount

    def export_jsonl(self, path: Path, owner=EVERYONE) -> int:
        recs = self.training_records(owner)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
        tmp.replace(path)
        return len(recs)

    def close(self) -> None:
        self.db.close()

"""The bench format's questions (``../shared/bench/*/questions.jsonl``): one parser for the benchmarks, router
training and the Evaluate tab's uploads.

One JSON object a line: ``id``, ``question``, ``doc_id`` (the document's stem), ``answers`` (strings) and
``evidence`` (``{text, start, end}``, offsets into the document read with ``newline=""``; ``start``/``end`` may be
absent when the span was not located). Every error names the file and the line.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


class QuestionsFileError(ValueError):
    pass


@dataclass(frozen=True)
class Evidence:
    text: str
    start: int | None
    end: int | None

    @property
    def located(self) -> bool:
        return self.start is not None and self.end is not None


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    doc_id: str | None
    answers: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    dataset: str | None = None


def _offset(v, where: str, key: str) -> int | None:
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise QuestionsFileError(f"{where}: evidence '{key}' must be a non-negative integer")
    return v


def parse_question(line: str, where: str, *, require_doc_id: bool = False, default_id: str = "") -> Question:
    """One line of the format; ``where`` ("file:line") prefixes every error.

    >>> parse_question('{"id": 1, "question": "Who?", "doc_id": "d"}', "q.jsonl:1")
    Question(id='1', question='Who?', doc_id='d', answers=(), evidence=(), dataset=None)
    """
    try:
        q = json.loads(line)
    except json.JSONDecodeError as e:
        raise QuestionsFileError(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from e
    if not isinstance(q, dict):
        raise QuestionsFileError(f"{where}: expected a JSON object, got {type(q).__name__}")
    question = q.get("question")
    if not isinstance(question, str) or not question.strip():
        raise QuestionsFileError(f"{where}: 'question' must be a non-empty string")
    doc_id = q.get("doc_id")
    if require_doc_id and not isinstance(doc_id, str):
        raise QuestionsFileError(f"{where}: missing doc_id (format: id, question, doc_id, answers, "
                                 "evidence[{text, start, end}])")
    answers = q.get("answers") or []
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise QuestionsFileError(f"{where}: 'answers' must be a list of strings")
    evidence = q.get("evidence") or []
    if not isinstance(evidence, list) or not all(isinstance(e, dict) and isinstance(e.get("text"), str)
                                                 for e in evidence):
        raise QuestionsFileError(f"{where}: 'evidence' must be a list of objects with a 'text' string")
    ev = tuple(Evidence(e["text"], _offset(e.get("start"), where, "start"), _offset(e.get("end"), where, "end"))
               for e in evidence)
    dataset = q.get("dataset")
    return Question(str(q.get("id", default_id)), question, doc_id, tuple(answers), ev,
                    dataset if isinstance(dataset, str) else None)


def read_questions(path: str | Path, *, require_doc_id: bool = False) -> list[Question]:
    """Every question of a questions file; ids must be unique (a missing id becomes ``line<N>``)."""
    path = Path(path)
    if not path.is_file():
        raise QuestionsFileError(f"questions file {path} not found")
    out: list[Question] = []
    seen: set[str] = set()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise QuestionsFileError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        q = parse_question(line, where, require_doc_id=require_doc_id, default_id=f"line{n}")
        if q.id in seen:
            raise QuestionsFileError(f"{where}: duplicate id {q.id!r}")
        seen.add(q.id)
        out.append(q)
    if not out:
        raise QuestionsFileError(f"{path} has no questions")
    return out

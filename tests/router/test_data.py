import json

import pytest

from core.questions import QuestionsFileError
from router.data import load_questions, set_name_of, split_of


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_loads_the_bench_format(tmp_path):
    p = write_lines(tmp_path / "questions.jsonl", [
        json.dumps({"id": "1", "question": "Who?", "doc_id": "d", "answers": ["Emma"],
                    "evidence": [{"text": "Emma said", "start": 0, "end": 9}]}),
        "",
        json.dumps({"id": "2", "question": " Where? ", "doc_id": "d", "answers": [], "evidence": []}),
    ])
    qs = load_questions(p)
    assert [(q.id, q.question, q.evidence, q.answers, q.source) for q in qs] == [
        ("1", "Who?", ("Emma said",), ("Emma",), tmp_path.name), ("2", "Where?", (), (), tmp_path.name)]
    assert set_name_of("x/chroma/questions.jsonl") == "chroma" and set_name_of("x/dev.jsonl") == "dev"


@pytest.mark.parametrize("line, match", [
    ('{"id": "1", "question": "Who?"', r"q\.jsonl:2: not valid JSON"),
    ('["a list"]', r"q\.jsonl:2: expected a JSON object"),
    ('{"id": "1b", "question": ""}', r"q\.jsonl:2: 'question' must be a non-empty string"),
    ('{"id": "1b", "question": "x", "answers": "Emma"}', r"q\.jsonl:2: 'answers' must be a list of strings"),
    ('{"id": "1b", "question": "x", "evidence": ["text"]}', r"q\.jsonl:2: 'evidence' must be a list of objects"),
    ('{"id": "1", "question": "again?"}', r"q\.jsonl:2: duplicate id '1'"),
])
def test_malformed_lines_name_file_and_line(tmp_path, line, match):
    p = write_lines(tmp_path / "q.jsonl", ['{"id": "1", "question": "Who?"}', line])
    with pytest.raises(QuestionsFileError, match=match):
        load_questions(p)


def test_missing_or_empty_file(tmp_path):
    with pytest.raises(QuestionsFileError, match="not found"):
        load_questions(tmp_path / "nope.jsonl")
    with pytest.raises(QuestionsFileError, match="has no questions"):
        load_questions(write_lines(tmp_path / "empty.jsonl", [""]))


def test_split_is_fixed_and_roughly_proportional():
    splits = [split_of(str(i), "chroma") for i in range(2000)]
    assert splits == [split_of(str(i), "chroma") for i in range(2000)]
    share = {s: splits.count(s) / len(splits) for s in ("train", "val", "test")}
    assert share["train"] == pytest.approx(0.6, abs=0.04)
    assert share["val"] == pytest.approx(0.2, abs=0.04) and share["test"] == pytest.approx(0.2, abs=0.04)

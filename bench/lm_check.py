"""The LM check's margins for the reader's top candidates of collected rows (``bench/fit_reader.py collect``), for
fitting and measuring the check stage (``bench/fit_reader.py fit --lm``).

The product asks a ``llama-server`` (or any OpenAI-compatible endpoint) through :class:`app.checker.LMChecker`; the
bundled server needs AVX-512. On a CPU without it this script runs the same GGUF (Qwen2.5-Coder-1.5B-Instruct
Q4_K_M, sha256 cc324af0…b046) through llama.cpp's Python binding (``llama-cpp-python``, built from source in a
separate virtual environment, not a dependency of the product) with the same messages in Qwen's chat template, and
reads the first token's log-probabilities the same way (:func:`app.checker.yes_no_margin`); with ``--url`` it asks
an endpoint instead, through the product's own client.

    /work/lmenv/bin/python bench/lm_check.py --rows /work/devdata/fit/dev.json --model app/data/reader_model.json \\
        --gguf /work/lm/qwen1.5b.gguf --out /work/devdata/fit/dev_lm.json

Each row's margins, seconds and prompt tokens are keyed by candidate index; a second run with another model or
``--top-k`` computes only the candidates not checked yet.

The passage-first prompt (:data:`PASSAGE_FIRST_USER`, the product's until the variants were measured) is the
default here so that the results files stay reproducible; ``--question-first`` is the product's prompt now.

Cheaper variants: ``--context-words N`` keeps the
candidate's sentence (a passage's last line) and at most N words of the lines before it (its heading, a table's
title), the words nearest the sentence; ``--question-first`` asks with the question before the passage
(:data:`QUESTION_FIRST_USER`, the product's :data:`app.checker.CHECK_USER`), so that a question's candidates share a
longer prompt prefix; ``--prefix-cache``
keeps the evaluated tokens the next prompt starts with (llama.cpp's own prompt reuse, as ``llama-server`` does with
``cache_prompt``) and records per check the tokens evaluated (``evaluated``); ``--answerable-only`` skips the rows
with no right answer (``lm-summary`` reads only the answerable); ``--same-rows FILE`` checks only the rows whose top
``--top-k`` all have margins in another run's FILE (to compare with it on the same rows); ``--limit N`` stops after N
rows (timing).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("checker", ROOT / "app" / "checker.py")
checker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checker)


QUESTION_FIRST_USER = checker.CHECK_USER  # the product's prompt since the variants below were measured
PASSAGE_FIRST_USER = ("Passage: {passage}\n\nQuestion: {question}\n\n"
                      "Does the passage answer the question? Reply yes or no.")  # the product's prompt before


NAMED = "From {name}:\n{passage}"  # the probe's passage with its document's name (not the product's prompt)


def clip_context(passage: str, words: int | None) -> str:
    r"""The passage's last line (the candidate) with at most ``words`` words of the lines before it, the nearest kept.

    >>> clip_context("Title one two\nthe sentence", 2)
    'one two\nthe sentence'
    >>> clip_context("Title\nthe sentence", 0)
    'the sentence'
    """
    if words is None or "\n" not in passage:
        return passage
    head, _, last = passage.rpartition("\n")
    kept = head.split()[-words:] if words > 0 else []
    return f"{' '.join(kept)}\n{last}" if kept else last


def messages_for(question: str, passage: str, question_first: bool = False) -> list[dict]:
    if question_first:
        return checker.check_messages(question, passage)
    return [{"role": "system", "content": checker.CHECK_SYSTEM},
            {"role": "user", "content": PASSAGE_FIRST_USER.format(question=question, passage=passage)}]


def qwen_prompt(messages: list[dict]) -> str:
    """Qwen2.5's chat template for a system and a user message, ready for the assistant's first token."""
    out = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return out + "<|im_start|>assistant\n"


class LocalLlama:
    def __init__(self, gguf: str, threads: int, prefix_cache: bool = False, question_first: bool = False):
        from llama_cpp import Llama

        self.llm = Llama(model_path=gguf, n_ctx=2048, n_threads=threads, logits_all=False, verbose=False)
        self.prefix_cache = prefix_cache
        self.question_first = question_first
        self.evaluated = 0  # the tokens the last check evaluated (fewer than its prompt's with the prefix cache)

    def margin(self, question: str, passage: str) -> tuple[float, int]:
        toks = self.llm.tokenize(qwen_prompt(messages_for(question, passage, self.question_first)).encode(),
                                 add_bos=False, special=True)[:2000]
        keep = 0
        if self.prefix_cache:
            done = self.llm.input_ids[: self.llm.n_tokens]
            while keep < min(len(done), len(toks) - 1) and done[keep] == toks[keep]:
                keep += 1
        self.llm.reset()
        self.llm.n_tokens = keep  # eval drops the cache past n_tokens
        self.llm.eval(toks[keep:])
        self.evaluated = len(toks) - keep
        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.llm._n_vocab,)).astype(np.float64)
        lp = logits - np.logaddexp.reduce(logits)
        top = np.argsort(-lp)[:20]
        pieces = {}
        for t in top:
            piece = self.llm.detokenize([int(t)]).decode("utf-8", "replace")
            pieces[piece] = max(pieces.get(piece, -1e9), float(lp[t]))
        return checker.yes_no_margin(pieces), len(toks)


def _by_index(v: dict) -> dict:
    """A row's margins keyed by candidate index (files of the first format listed them in ``top`` order)."""
    if "top" not in v:
        return v
    return {k: {str(j): x for j, x in zip(v["top"], v[k])} for k in ("margins", "seconds", "tokens")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", required=True, help="collected rows (JSON from fit_reader.py collect)")
    ap.add_argument("--model", required=True, help="the stage-1 model (reader_model.json) that ranks candidates")
    ap.add_argument("--top-k", type=int, default=3)
    ap.add_argument("--gguf", default="/work/lm/qwen1.5b.gguf")
    ap.add_argument("--url", default="", help="an OpenAI-compatible endpoint instead of the local binding")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--context-words", type=int, default=None,
                    help="the candidate's sentence and at most this many words before it (default: the passage)")
    ap.add_argument("--question-first", action="store_true", help="the question before the passage in the prompt")
    ap.add_argument("--prefix-cache", action="store_true", help="reuse the evaluated prefix the next prompt shares")
    ap.add_argument("--answerable-only", action="store_true", help="skip the rows with no right answer")
    ap.add_argument("--same-rows", default="", help="only the rows whose top-k all have margins in this LM file")
    ap.add_argument("--named", action="store_true", help="the document's name before each passage (NAMED)")
    ap.add_argument("--limit", type=int, default=0, help="stop after this many rows (0: all)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.url and (a.question_first or a.prefix_cache):
        ap.error("--question-first and --prefix-cache apply to the local binding only")
    import sys

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    # the candidates the reader has the LM check: the first that say different things
    from fit_reader import checked_top

    from app.scorer import ReaderModel

    model = ReaderModel.from_dict(json.loads(Path(a.model).read_text()))
    rows = json.loads(Path(a.rows).read_text())["rows"]
    done = {k: _by_index(v) for k, v in json.loads(Path(a.out).read_text()).items()} if Path(a.out).is_file() else {}
    same = {k: _by_index(v)["margins"] for k, v in json.loads(Path(a.same_rows).read_text()).items()} \
        if a.same_rows else None
    llm = None if a.url else LocalLlama(a.gguf, a.threads, a.prefix_cache, a.question_first)
    client = checker.LMChecker(a.url) if a.url else None
    t0 = time.time()
    n_rows = 0
    for i, r in enumerate(rows):
        if not r["X"] or (a.answerable_only and not r.get("answerable")):
            continue
        top = checked_top(r, np.asarray(model.probabilities(np.asarray(r["X"]))), a.top_k)
        if same is not None and not all(str(j) in same.get(r["id"], {}) for j in top):
            continue
        if a.limit and n_rows >= a.limit:
            break
        n_rows += 1
        got = done.setdefault(r["id"], {"margins": {}, "seconds": {}, "tokens": {}})
        for j in top:
            if str(j) in got["margins"]:
                continue
            passage = clip_context(r["passages"][j], a.context_words)
            if a.named:  # the document's name before the passage (a "we" passage then says whose it is)
                passage = NAMED.format(name=r["doc"], passage=passage)
            t = time.perf_counter()
            if client is not None:
                mg, n = client.margin(r["question"], passage), 0
            else:
                mg, n = llm.margin(r["question"], passage)
            got["seconds"][str(j)] = round(time.perf_counter() - t, 3)
            got["margins"][str(j)] = round(mg, 4)
            got["tokens"][str(j)] = n
            if a.prefix_cache:
                got.setdefault("evaluated", {})[str(j)] = llm.evaluated
        if i % 10 == 0:
            Path(a.out).write_text(json.dumps(done))
            print(f"{i}/{len(rows)} {time.time() - t0:.0f}s", flush=True)
    Path(a.out).write_text(json.dumps(done))
    print(f"{len(done)} rows -> {a.out}")


if __name__ == "__main__":
    main()

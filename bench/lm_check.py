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


def qwen_prompt(messages: list[dict]) -> str:
    """Qwen2.5's chat template for a system and a user message, ready for the assistant's first token."""
    out = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return out + "<|im_start|>assistant\n"


class LocalLlama:
    def __init__(self, gguf: str, threads: int):
        from llama_cpp import Llama

        self.llm = Llama(model_path=gguf, n_ctx=2048, n_threads=threads, logits_all=False, verbose=False)

    def margin(self, question: str, passage: str) -> tuple[float, int]:
        toks = self.llm.tokenize(qwen_prompt(checker.check_messages(question, passage)).encode(), add_bos=False,
                                 special=True)[:2000]
        self.llm.reset()
        self.llm.eval(toks)
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
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    m = json.loads(Path(a.model).read_text())
    mean, scale, coef = (np.asarray(m[k]) for k in ("mean", "scale", "coef"))
    rows = json.loads(Path(a.rows).read_text())["rows"]
    done = {k: _by_index(v) for k, v in json.loads(Path(a.out).read_text()).items()} if Path(a.out).is_file() else {}
    llm = None if a.url else LocalLlama(a.gguf, a.threads)
    client = checker.LMChecker(a.url) if a.url else None
    t0 = time.time()
    for i, r in enumerate(rows):
        if not r["X"]:
            continue
        s = ((np.asarray(r["X"]) - mean) / scale) @ coef
        top = [int(j) for j in np.argsort(-s)[: a.top_k]]
        got = done.setdefault(r["id"], {"margins": {}, "seconds": {}, "tokens": {}})
        for j in top:
            if str(j) in got["margins"]:
                continue
            t = time.perf_counter()
            if client is not None:
                mg, n = client.margin(r["question"], r["passages"][j]), 0
            else:
                mg, n = llm.margin(r["question"], r["passages"][j])
            got["seconds"][str(j)] = round(time.perf_counter() - t, 3)
            got["margins"][str(j)] = round(mg, 4)
            got["tokens"][str(j)] = n
        if i % 10 == 0:
            Path(a.out).write_text(json.dumps(done))
            print(f"{i}/{len(rows)} {time.time() - t0:.0f}s", flush=True)
    Path(a.out).write_text(json.dumps(done))
    print(f"{len(done)} rows -> {a.out}")


if __name__ == "__main__":
    main()

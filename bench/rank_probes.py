"""What else could rank the reader's candidates? Probes on the fit rows (issue 46), none shipped.

The fitted scorer's first candidate answers about half of the dev split's answerable questions, while a candidate
that answers is among its candidates for four in five (BENCHMARKS "Answers on documents nobody tuned on"). Each
probe below adds one signal the scorer does not have, fits on the train rows only (train, issue 33's filings set and
their 300-word variants, as ``bench/fit_reader.py fit`` does) and reports the share of dev's answerable rows whose
first candidate answers (``top1``; the shipped model's own figure beside it):

* ``features``: a pointwise logistic regression (scikit-learn, C from a grid, the pick reported on dev *and* train)
  over the shipped features alone; plus MiniLM's question × candidate products (384 numbers each, a learned
  bilinear similarity: of the answer line, of its passage); plus typed-answer signals written for this probe (the
  candidate is itself a question; "how many X" with a number followed by X; a full date for a date question; the
  share of numbers in the candidate);
* ``ql``: the top five candidates re-ranked by the log-likelihood of the question given the candidate's passage
  under the shipped Gemma-3-270M (query likelihood, as UPR), alone and added to the scorer's log-odds;
* ``mc``: the top four shown at once to Qwen2.5-Coder-1.5B-Instruct (llama-cpp-python, 2 threads), numbered, its
  pick the most probable digit ("0": none) — one prompt instead of one check per candidate.

    python bench/rank_probes.py features --fit /work/devdata/fit
    python bench/rank_probes.py ql --fit /work/devdata/fit --limit 60
    /work/lmenv/bin/python bench/rank_probes.py mc --fit /work/devdata/fit --limit 40 --gguf /work/lm/qwen1.5b.gguf

Each writes its part of ``bench/results/rank_probes.json``.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "bench" / "results" / "rank_probes.json"
TRAIN = ("train", "filings", "train_short", "filings_short")


def shipped():
    from app.scorer import ReaderModel

    return ReaderModel.from_dict(json.loads((ROOT / "app" / "data" / "reader_model.json").read_text()))


def rows_of(fit: Path, name: str) -> list[dict]:
    return [r for r in json.loads((fit / f"{name}.json").read_text())["rows"]]


def top1(rows: list[dict], scores) -> float:
    """Share of the answerable rows whose best-scored candidate answers (no candidate: wrong)."""
    a = [r for r in rows if r["answerable"]]
    return sum(r["y"][int(np.argmax(scores(r)))] for r in a if r["X"]) / len(a)


def save(part: str, result: dict) -> None:
    got = json.loads(OUT.read_text()) if OUT.exists() else {}
    got[part] = result
    OUT.write_text(json.dumps(got, indent=1))
    print(json.dumps(result, indent=1))


def typed(question: str, line: str) -> list[float]:
    from app.features import stem
    from app.question import DATE_RE, kind_of, lexicon

    numw, num = set(lexicon()["number_words"]), re.compile(r"^\d[\d,.]*%?$")
    k, toks = kind_of(question), re.findall(r"[A-Za-z]+|\d[\d,.]*%?", line)
    m = re.search(r"\b(?:how many|number of)\s+(.*)", question.lower()) if k == "count" else None
    heads = [stem(x) for x in m.group(1).split()[:2] if x not in ("of", "the")] if m else []
    counted = any((num.match(w) or w.lower() in numw) and any(stem(x.lower()) in heads for x in toks[i + 1:i + 4])
                  for i, w in enumerate(toks)) if heads else False
    return [float(line.strip().endswith("?")), float(counted), float(k == "date" and bool(DATE_RE.search(line))),
            min(sum(1 for w in toks if num.match(w)), 10) / 10.0]


def cmd_features(a) -> None:
    from sentence_transformers import SentenceTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from core.models import resolve_embedder_path

    enc = SentenceTransformer(resolve_embedder_path("all-MiniLM-L6-v2"), device="cpu")
    sets = {n: [r for r in rows_of(a.fit, n) if r["X"] or r["answerable"]] for n in TRAIN + ("dev",)}
    for rows in sets.values():
        texts = sorted({r["question"] for r in rows} | {t for r in rows for t in r["lines"] + r["passages"]})
        E = dict(zip(texts, enc.encode(texts, batch_size=64, normalize_embeddings=True)))
        for r in rows:
            if r["X"]:
                q = E[r["question"]]
                r["_lines"] = np.array([q * E[t] for t in r["lines"]])
                r["_passages"] = np.array([q * E[t] for t in r["passages"]])
                r["_typed"] = np.array([typed(r["question"], t) for t in r["lines"]])
    train = [r for n in TRAIN for r in sets[n]]
    dev = sets["dev"]
    model = shipped()
    result = {"shipped_top1": {"dev": top1(dev, lambda r: model.logits(np.array(r["X"]))),
                               "train": top1(train, lambda r: model.logits(np.array(r["X"])))}, "variants": []}
    for name, extra in (("shipped features", ()), ("+ question x answer line (MiniLM)", ("_lines",)),
                        ("+ question x passage (MiniLM)", ("_passages",)), ("+ typed-answer signals", ("_typed",))):
        def X(r, extra=extra):
            return np.hstack([np.array(r["X"])] + [r[k] for k in extra])
        fit_rows = [r for r in train if r["X"]]
        Xt, yt = np.vstack([X(r) for r in fit_rows]), np.concatenate([r["y"] for r in fit_rows])
        sc = StandardScaler().fit(Xt)
        for C in (0.01, 0.1, 1.0):
            lr = LogisticRegression(C=C, max_iter=4000).fit(sc.transform(Xt), yt)
            f = lambda r, lr=lr, X=X, sc=sc: lr.decision_function(sc.transform(X(r)))  # noqa: E731
            result["variants"].append({"name": name, "C": C, "dev_top1": top1(dev, f), "train_top1": top1(train, f)})
            print(result["variants"][-1], flush=True)
    save("features", result)


def top_distinct(r: dict, s: np.ndarray, k: int) -> list[int]:
    from app.scorer import answer_key

    seen, top = set(), []
    for j in np.argsort(-s):
        if answer_key(r["lines"][j]) not in seen:
            seen.add(answer_key(r["lines"][j]))
            top.append(int(j))
        if len(top) == k:
            break
    return top


def summarise(got: list[dict], key: str, secs: list[float]) -> dict:
    a = [g for g in got if g["answerable"]]
    return {"rows": len(got), "answerable": len(a),
            "scorer_top1": float(np.mean([g["y"][0] for g in a])),
            f"{key}_top1": float(np.mean([g["y"][int(np.argmax(g[key]))] for g in a])),
            "oracle_in_top": float(np.mean([max(g["y"]) for g in a])),
            "seconds_per_question": {"p50": float(np.median(secs)), "p95": float(np.percentile(secs, 95))}}


def cmd_ql(a) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from core.models import resolve_lm_path

    torch.set_num_threads(2)
    path = resolve_lm_path("gemma3-270m", Path.home() / ".cache" / "mgrag")
    tok = AutoTokenizer.from_pretrained(path)
    lm = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    model, got, secs = shipped(), [], []
    for r in [r for r in rows_of(a.fit, "dev") if r["X"]][:a.limit]:
        s = model.logits(np.array(r["X"]))
        top = top_distinct(r, s, 5)
        t = time.time()
        q = tok(r["question"].strip(), add_special_tokens=False)["input_ids"]
        seqs = [tok(f"Passage: {r['passages'][j].strip()[:1200]}\nA question this passage answers: ")["input_ids"]
                for j in top]
        L = max(len(p) + len(q) for p in seqs)
        x = torch.zeros((len(seqs), L), dtype=torch.long)
        att = torch.zeros_like(x)
        for i, p in enumerate(seqs):
            x[i, :len(p) + len(q)] = torch.tensor(p + q)
            att[i, :len(p) + len(q)] = 1
        with torch.no_grad():
            lp = torch.log_softmax(lm(input_ids=x, attention_mask=att).logits.float(), -1)
        ql = [float(lp[i, len(p) - 1:len(p) + len(q) - 1].gather(1, torch.tensor(q)[:, None]).mean())
              for i, p in enumerate(seqs)]
        secs.append(time.time() - t)
        got.append({"answerable": r["answerable"], "y": [r["y"][j] for j in top], "ql": ql,
                    "sum": [float(s[j]) + v for j, v in zip(top, ql)]})
    res = summarise(got, "ql", secs)
    a_rows = [g for g in got if g["answerable"]]
    res["scorer_plus_ql_top1"] = float(np.mean([g["y"][int(np.argmax(g["sum"]))] for g in a_rows]))
    save("ql", res)


MC_SYSTEM = ("You pick which numbered passage answers a question. Reply with the number only, or 0 if no passage "
             "answers it.")


def cmd_mc(a) -> None:
    from llama_cpp import Llama

    llm = Llama(model_path=a.gguf, n_ctx=4096, n_threads=2, verbose=False)
    digit = [llm.tokenize(str(i).encode(), add_bos=False)[0] for i in range(5)]
    model, got, secs = shipped(), [], []

    def clip(p: str) -> str:
        head, _, last = p.rpartition("\n")
        kept, last = head.split()[-25:], " ".join(last.split()[:90])
        return f"{' '.join(kept)} … {last}" if kept else last

    for r in [r for r in rows_of(a.fit, "dev") if r["X"]][:a.limit]:
        top = top_distinct(r, model.logits(np.array(r["X"])), 4)
        body = "\n".join(f"{i + 1}. {clip(r['passages'][j])}" for i, j in enumerate(top))
        user = (f"Question: {r['question']}\n\nPassages:\n{body}\n\nWhich passage answers the question? Reply with its "
                "number, or 0 if none does.")
        prompt = (f"<|im_start|>system\n{MC_SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
                  "<|im_start|>assistant\n")
        t = time.time()
        llm.reset()
        llm.eval(llm.tokenize(prompt.encode(), add_bos=False, special=True))
        lg = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm._n_vocab,)).astype(np.float64)
        secs.append(time.time() - t)
        got.append({"answerable": r["answerable"], "y": [r["y"][j] for j in top],
                    "mc": [float(lg[digit[i + 1]]) for i in range(len(top))]})
    save("mc", summarise(got, "mc", secs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("probe", choices=("features", "ql", "mc"))
    ap.add_argument("--fit", type=Path, default=Path("/work/devdata/fit"), help="bench/fit_reader.py collect's rows")
    ap.add_argument("--limit", type=int, default=10**9, help="ql, mc: the first N dev rows")
    ap.add_argument("--gguf", default="", help="mc: Qwen2.5-Coder-1.5B-Instruct GGUF")
    a = ap.parse_args()
    {"features": cmd_features, "ql": cmd_ql, "mc": cmd_mc}[a.probe](a)


if __name__ == "__main__":
    main()

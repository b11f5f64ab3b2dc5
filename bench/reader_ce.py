"""A probe, not shipped: a cross-encoder for the reader, MiniLM reading the question and one candidate together,
fine-tuned with low-rank adapters (issue 46: "only a model that reads question and candidate together ranks
better"). Its score, added to the scorer's features, made dev worse (``bench/results/reader_ce.json``).

    python bench/reader_ce.py data --out CE/groups.jsonl --fit FIT/filings.json
    python bench/reader_ce.py data --out CE2/groups.jsonl --fit FIT/filings.json --genres DIR \
        --cap conditionalqa=1300   # the second round (bench/results/reader_ce_genres.json), --epochs 1
    python bench/reader_ce.py train --groups CE/groups.jsonl --dev FIT/dev.json --out CE/reader_ce.npz --epochs 3 \
        --lr 1e-3
    python bench/reader_ce.py score --model CE/reader_ce.npz \
        --fit FIT/train.json --out CE/train_e0.json  # and the rest
    python bench/reader_ce.py compare --model CE/reader_ce.npz --train CE/train_e0.json,CE/train_short_e0.json \
        --dev CE/dev_e0.json

``data`` builds training groups (one question, its positive candidate lines and up to ``--negatives`` others of the
same context) from two sources no split of the answers corpus holds:

* TAT-QA (NExTplusplus/TAT-QA, MIT), ``dataset_raw/tatqa_dataset_dev.json`` and ``tatqa_dataset_test_gold.json``
  (the train file is not in the stored mirror), minus every context the corpus's ``filings`` and ``sheets`` kinds
  were built from (their table uids, read from ``bench/qa_build/filings.py`` and ``sheets.py``). Candidates are
  written as the product writes them: a paragraph's sentences, and each table cell as "row, column: value". A
  sentence is positive when it holds an answer span (or, for arithmetic, one of the figures the derivation uses); a
  cell when its value is one of those.
* ``--fit`` files of ``bench/fit_reader.py collect`` (issue 33's filings set): the product's own candidates and labels.
* ``--genres DIR`` (the second round): two more genres no split of the corpus holds, read from files copied out of
  their public repositories into DIR: COVID-QA (deepset-ai/COVID-QA, Apache-2.0,
  ``data/question-answering/200423_covidQA.json``: 1,380 questions over 98 scientific papers; the sentences that the
  answer span touches are positive, the paper's other sentences that share most words with the question negative)
  and ConditionalQA (haitian-sun/ConditionalQA, BSD-3, ``v1_0/train.json`` and ``dev.json``: questions about UK
  government guidance pages; the question's evidence sentences positive, the other evidence sentences of the same
  page negative). Hard negatives matter: the product's candidates all come from passages retrieved for the question.

``train`` fine-tunes all-MiniLM-L6-v2 (the bundled embedder) as a cross-encoder: [CLS] of "question [SEP] line"
into one linear score, LoRA adapters of rank ``--rank`` on every linear layer, a softmax over each group (the
positive against the question's other candidates); it keeps the epoch with the best top-1 on the dev fit rows. Only
the adapters and the head are saved (~1 MB). ``score`` appends the cross-encoder's score of each candidate to fit
rows as two more features (``ce`` and ``ce_gap``, its difference to the question's best). ``compare`` fits the
listwise scorer as ``bench/fit_reader.py`` does (its three L2 strengths) with and without them on the train files
and reads dev: top-1 right of the answerable, right at the 70%-precision threshold, unanswerable abstained; and the
cross-encoder alone against the shipped scorer per kind of document.
"""
from __future__ import annotations

import argparse
import functools  # noqa: F401
import json
import logging
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)
import numpy as np

log = logging.getLogger(__name__)

MIRRORS = Path(__import__("os").environ.get("MGRAG_MIRRORS", "/work/.mirror"))
TATQA = "NExTplusplus/TAT-QA"
TAT_FILES = ("dataset_raw/tatqa_dataset_dev.json", "dataset_raw/tatqa_dataset_test_gold.json")
ROOT = Path(__file__).resolve().parent.parent
_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"“])")
_HAS_FIGURE = re.compile(r"\d")
_FIGURE = re.compile(r"^[\s$€£(−-]*[\d,.]+\s*[)%]?\s*$")
_YEARISH = re.compile(r"^\s*(?:19|20)\d\d\s*$")


# -- the cross-encoder ------------------------------------------------------------------------------------------
MAX_TOKENS = 128  # question and line together; a longer line is cut (the answer is near a line's start)
BATCH = 64  # candidates per forward pass
# LoRA's scale is alpha / rank; alpha = 2 × rank is the common choice (Hu et al. 2021 use alpha = rank .. 2 rank)
ALPHA_PER_RANK = 2.0


def _torch():
    import torch

    return torch


class _LoRA:
    """Wraps one ``nn.Linear``: y = W x + b + scale · B (A x), with A and B trainable and W, b frozen."""

    def __init__(self, linear, rank: int):
        torch = _torch()
        self.linear = linear
        self.scale = ALPHA_PER_RANK
        self.A = torch.nn.Parameter(torch.randn(rank, linear.in_features) / np.sqrt(linear.in_features))
        self.B = torch.nn.Parameter(torch.zeros(linear.out_features, rank))
        original = linear.forward

        def forward(x):
            return original(x) + self.scale * ((x @ self.A.T) @ self.B.T)

        linear.forward = forward
        self.original = original

    def merge(self) -> None:
        torch = _torch()
        with torch.no_grad():
            self.linear.weight += self.scale * (self.B @ self.A)
        self.linear.forward = self.original


class CrossReader:
    """Scores (question, line) pairs: higher is more likely the line answers the question."""

    def __init__(self, rank: int, base: str | None = None):
        torch = _torch()
        from transformers import AutoModel, AutoTokenizer

        if base is None:
            from core.models import DEFAULT_EMBEDDER, resolve_embedder_path

            base = resolve_embedder_path(DEFAULT_EMBEDDER)
        self.tokenizer = AutoTokenizer.from_pretrained(base)
        self.encoder = AutoModel.from_pretrained(base)
        for p in self.encoder.parameters():
            p.requires_grad_(False)
        self.rank = rank
        self.loras: dict[str, _LoRA] = {}
        for name, mod in self.encoder.named_modules():
            if isinstance(mod, torch.nn.Linear) and ".layer." in f".{name}" and "pooler" not in name:
                self.loras[name] = _LoRA(mod, rank)
        self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)
        self._lock = threading.Lock()
        self.card: dict = {}

    # -- fitting ---------------------------------------------------------------------------------------------------
    @classmethod
    def untrained(cls, rank: int = 8, base: str | None = None) -> CrossReader:
        return cls(rank, base)

    def parameters(self):
        for lo in self.loras.values():
            yield lo.A
            yield lo.B
        yield from self.head.parameters()
        for p in self.encoder.parameters():
            yield p

    def train(self) -> None:
        self.encoder.train()

    def eval(self) -> None:
        self.encoder.eval()

    def score_tensor(self, question: str, lines: Sequence[str]):
        enc = self.tokenizer([question] * len(lines), list(lines), truncation="only_second", max_length=MAX_TOKENS,
                             padding=True, return_tensors="pt")
        out = self.encoder(**enc).last_hidden_state[:, 0]
        return self.head(out).squeeze(-1)

    def adapter_state(self) -> dict[str, np.ndarray]:
        st = {}
        for name, lo in self.loras.items():
            st[f"{name}.A"] = lo.A.detach().numpy().astype(np.float16)
            st[f"{name}.B"] = lo.B.detach().numpy().astype(np.float16)
        st["head.weight"] = self.head.weight.detach().numpy().astype(np.float32)
        st["head.bias"] = self.head.bias.detach().numpy().astype(np.float32)
        return st

    def save(self, path: str | Path, card: dict) -> None:
        st = self.adapter_state()
        st["card"] = np.frombuffer(json.dumps({**card, "rank": self.rank}).encode(), dtype=np.uint8)
        np.savez_compressed(path, **st)

    # -- use -------------------------------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path, base: str | None = None) -> CrossReader:
        torch = _torch()
        p = Path(path)
        z = np.load(p)
        card = json.loads(bytes(z["card"]).decode())
        m = cls(int(card["rank"]), base)
        with torch.no_grad():
            for name, lo in m.loras.items():
                lo.A.copy_(torch.from_numpy(z[f"{name}.A"].astype(np.float32)))
                lo.B.copy_(torch.from_numpy(z[f"{name}.B"].astype(np.float32)))
            m.head.weight.copy_(torch.from_numpy(z["head.weight"]))
            m.head.bias.copy_(torch.from_numpy(z["head.bias"]))
        for lo in m.loras.values():
            lo.merge()
        m.loras = {}
        m.card = card
        m.eval()
        return m

    def scores(self, question: str, lines: Sequence[str]) -> np.ndarray:
        """Each line's score (a logit; comparable within one question)."""
        if not lines:
            return np.zeros(0, np.float32)
        torch = _torch()
        order = sorted(range(len(lines)), key=lambda i: len(lines[i]))  # batches of like lengths pad less
        out = np.zeros(len(lines), np.float32)
        with self._lock, torch.inference_mode():
            for i in range(0, len(order), BATCH):
                part = order[i:i + BATCH]
                out[part] = self.score_tensor(question, [lines[j] for j in part]).float().numpy()
        return out


# -- data -------------------------------------------------------------------------------------------------------
def corpus_uids() -> set[str]:
    """Table uids of the TAT-QA contexts the answers corpus was built from (kept out of training)."""
    out: set[str] = set()
    for name in ("filings.py", "sheets.py"):
        out |= set(_UID.findall((ROOT / "bench" / "qa_build" / name).read_text()))
    return out


def _norm(v: str) -> str:
    return re.sub(r"[^\d.a-z%-]", "", str(v).lower().replace("(", "-")).strip(".")


def _num(v: str) -> str:
    d = re.sub(r"[^\d.]", "", str(v))
    try:
        return f"{float(d):g}" if d and d != "." else ""
    except ValueError:
        return ""


def tat_candidates(item: dict) -> list[tuple[str, str, str]]:
    """(kind, line, value) of one TAT-QA context: sentences of its paragraphs, cells of its table."""
    out = []
    for p in item["paragraphs"]:
        for s in _SENT.split(" ".join(p["text"].split())):
            if len(s.split()) >= 4:
                out.append(("sentence", s, ""))
    table = item["table"]["table"]
    head_rows = 0
    for row in table:
        cells = [c for c in row[1:] if c.strip()]
        if not any(_FIGURE.match(c) and not _YEARISH.match(c) for c in cells):
            head_rows += 1
        else:
            break
    width = max((len(r) for r in table), default=0)
    filled = []
    for r in range(head_rows):  # a header cell spans the empty cells to its right ("Years Ended September 30,")
        row, last = [], ""
        for j in range(width):
            v = table[r][j].strip() if j < len(table[r]) else ""
            last = v or (last if j > 0 else "")
            row.append(last if j > 0 else v)
        filled.append(row)
    heads = [" ".join(dict.fromkeys(f[j] for f in filled if f[j])) for j in range(width)]
    for row in table[head_rows:]:
        label = row[0].strip().rstrip(" .:")
        for j, v in enumerate(row[1:], 1):
            v = v.strip()
            if not v or not _HAS_FIGURE.search(v):
                continue
            col = heads[j].strip() if j < len(heads) else ""
            out.append(("cell", f"{label}{', ' + col if col else ''}: {v}", v))
    return out


def tat_groups(negatives: int, rng: random.Random) -> list[dict]:
    skip = corpus_uids()
    gd = MIRRORS / TATQA.replace("/", "+") / "repo"
    groups = []
    for f in TAT_FILES:
        items = json.loads(subprocess.run(["git", "--git-dir", str(gd), "show", f"HEAD:{f}"], check=True,
                                          capture_output=True).stdout)
        for item in items:
            if item["table"]["uid"] in skip:
                continue
            cands = tat_candidates(item)
            for q in item["questions"]:
                t = q["answer_type"]
                answers = q["answer"] if isinstance(q["answer"], list) else [q["answer"]]
                if t == "arithmetic":
                    wanted = [str(x) for x in q.get("facts") or []]
                elif t == "count":
                    continue
                else:
                    wanted = [str(x) for x in answers]
                wanted = [w for w in wanted if w.strip()]
                if not wanted:
                    continue
                pos, neg = [], []
                src = q.get("answer_from", "table-text")
                for kind, line, value in cands:
                    if kind == "cell":
                        hit = "table" in src and any(_norm(value) == _norm(w) or (_num(value) and _num(value)
                                                                                     == _num(w)) for w in wanted)
                    else:
                        low = line.lower()
                        hit = "text" in src and any(
                            re.search(r"(?<![\w.])" + re.escape(w.lower()) + r"(?![\w])", low)
                            for w in wanted if len(w) >= 4 or not _YEARISH.match(w))
                    (pos if hit else neg).append(line)
                if not pos or not neg:
                    continue
                rng.shuffle(neg)
                groups.append({"source": "tatqa", "context": item["table"]["uid"], "question": q["question"],
                               "pos": pos[:4], "neg": neg[:negatives]})
    return groups


def fit_groups(paths: str, negatives: int, rng: random.Random) -> list[dict]:
    out = []
    for p in paths.split(","):
        if not p:
            continue
        for r in json.loads(Path(p).read_text())["rows"]:
            pos = [ln for ln, y in zip(r["lines"], r["y"]) if y]
            neg = [ln for ln, y in zip(r["lines"], r["y"]) if not y]
            if not pos or not neg:
                continue
            rng.shuffle(neg)
            out.append({"source": Path(p).stem, "context": r["doc"], "question": r["question"], "pos": pos[:4],
                        "neg": neg[:negatives]})
    return out


_WORD = re.compile(r"[a-z0-9]+")
_TAG = re.compile(r"<[^>]+>")


def _hard(question: str, pool: Sequence[str], k: int) -> list[str]:
    """The ``k`` lines of ``pool`` sharing most words with the question (what retrieval would have brought)."""
    q = set(_WORD.findall(question.lower()))
    ranked = sorted(pool, key=lambda ln: -len(q & set(_WORD.findall(ln.lower()))))
    return ranked[:k]


def covid_groups(path: Path, negatives: int, rng: random.Random) -> list[dict]:
    groups = []
    for art in json.loads(path.read_text())["data"]:
        for par in art["paragraphs"]:
            ctx = par["context"]
            spans = []
            for m in re.finditer(r"[^.!?]+(?:[.!?]+|$)", ctx):  # sentences with their offsets
                if len(m.group().split()) >= 4:
                    spans.append((m.start(), m.end(), " ".join(m.group().split())))
            for qa in par["qas"]:
                hits = set()
                for ans in qa["answers"]:
                    a0, a1 = ans["answer_start"], ans["answer_start"] + len(ans["text"])
                    hits |= {i for i, (s0, s1, _) in enumerate(spans) if s0 < a1 and s1 > a0}
                if not hits:
                    continue
                pos = [spans[i][2] for i in sorted(hits)][:4]
                neg = _hard(qa["question"], [t for i, (_, _, t) in enumerate(spans) if i not in hits], negatives)
                if neg:
                    groups.append({"source": "covidqa", "context": art.get("title") or str(par.get("document_id")),
                                   "question": qa["question"], "pos": pos, "neg": neg})
    return groups


def cqa_groups(paths: Sequence[Path], negatives: int, rng: random.Random) -> list[dict]:
    items = [x for p in paths for x in json.loads(p.read_text())]
    clean = lambda h: " ".join(_TAG.sub(" ", h).split())  # noqa: E731
    pool: dict[str, set[str]] = {}
    for x in items:
        pool.setdefault(x["url"], set()).update(clean(e) for e in x["evidences"])
    groups = []
    for x in items:
        ev = [clean(e) for e in x["evidences"] if len(clean(e).split()) >= 4]
        if x["not_answerable"] or not ev:
            continue
        spans = [a[0].lower() for a in x["answers"] if a[0].lower() not in ("yes", "no")]
        pos = [e for e in ev if any(s in e.lower() for s in spans)] or ev
        others = [e for e in pool[x["url"]] if e not in ev and len(e.split()) >= 4]
        neg = _hard(x["question"], sorted(others), negatives)
        if neg:
            groups.append({"source": "conditionalqa", "context": x["url"], "question": x["question"], "pos": pos[:4],
                           "neg": neg})
    return groups


def cmd_data(a) -> None:
    rng = random.Random(46)
    groups = tat_groups(a.negatives, rng) + fit_groups(a.fit, a.negatives, rng)
    if a.genres:
        g = Path(a.genres)
        groups += covid_groups(g / "covidqa_0423.json", a.negatives, rng)
        groups += cqa_groups([g / "cqa_train.json", g / "cqa_dev.json"], a.negatives, rng)
    for cap in filter(None, a.cap.split(",")):  # "source=N": a random N of that source's groups (seed 46), last
        src, n = cap.split("=")
        some = [x for x in groups if x["source"] == src]
        random.Random(46).shuffle(some)
        groups = [x for x in groups if x["source"] != src] + some[:int(n)]
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w") as fh:
        for g in groups:
            fh.write(json.dumps(g) + "\n")
    by = {}
    for g in groups:
        by[g["source"]] = by.get(g["source"], 0) + 1
    print(f"{len(groups)} groups {by} -> {a.out}")


def cmd_train(a) -> None:
    import torch

    torch.manual_seed(46)
    rng = random.Random(46)
    groups = [json.loads(x) for x in open(a.groups)]
    dev = json.loads(Path(a.dev).read_text())["rows"] if a.dev else []
    model = CrossReader.untrained(rank=a.rank)
    params = [p for p in model.parameters() if p.requires_grad]
    print(f"trainable {sum(p.numel() for p in params)} of {sum(p.numel() for p in model.parameters())}")
    opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.01)
    best = (-1.0, None)
    log = []
    for epoch in range(a.epochs):
        rng.shuffle(groups)
        model.train()
        t0, total = time.time(), 0.0
        for i in range(0, len(groups), a.batch):
            loss = 0.0
            for g in groups[i:i + a.batch]:
                pos = rng.choice(g["pos"])
                lines = [pos] + g["neg"][:a.negatives]
                s = model.score_tensor(g["question"], lines)
                loss = loss + torch.nn.functional.cross_entropy(s.unsqueeze(0), torch.zeros(1, dtype=torch.long))
            loss = loss / len(groups[i:i + a.batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss)
            n = i // a.batch + 1
            if n % 50 == 0:
                print(f"epoch {epoch} step {n} loss {total / n:.4f} {time.time() - t0:.0f}s", flush=True)
            if a.max_steps and n >= a.max_steps:
                break
        model.eval()
        top1 = dev_top1(model, dev, a.dev_limit) if dev else 0.0
        log.append({"epoch": epoch, "loss": round(total / max(1, n), 4), "dev_top1": round(top1, 3),
                    "seconds": round(time.time() - t0)})
        print(log[-1], flush=True)
        if top1 > best[0]:
            best = (top1, model.adapter_state())
            model.save(a.out, card={"groups": a.groups, "epochs_log": log, "chosen_epoch": epoch,
                                    "rank": a.rank, "lr": a.lr, "negatives": a.negatives,
                                    "command": " ".join(sys.argv)})
    print("best dev top1", best[0], "->", a.out)


def dev_top1(model, rows: list[dict], limit: int = 0) -> float:
    """Share of answerable dev rows with a positive whose top candidate by the cross-encoder alone is right."""
    rows = [r for r in rows if r["answerable"] and any(r["y"])][: limit or None]
    hits = 0
    for r in rows:
        s = model.scores(r["question"], r["lines"])
        hits += int(r["y"][int(np.argmax(s))])
    return hits / max(1, len(rows))


def cmd_score(a) -> None:
    model = CrossReader.load(a.model)
    d = json.loads(Path(a.fit).read_text())
    t0 = time.time()
    if d["features"][-2:] == ["ce", "ce_gap"]:  # scored before: score again
        d["features"] = d["features"][:-2]
        for r in d["rows"]:
            r["X"] = [x[:-2] for x in r["X"]]
    d["features"] += ["ce", "ce_gap"]
    for i, r in enumerate(d["rows"]):
        ce = model.scores(r["question"], r["lines"]) if r["lines"] else np.zeros(0)
        top = float(ce.max()) if len(ce) else 0.0
        r["X"] = [x + [round(float(c), 5), round(float(c) - top, 5)] for x, c in zip(r["X"], ce)]
        if i % 50 == 0:
            print(f"{i}/{len(d['rows'])} {time.time() - t0:.0f}s", flush=True)
    Path(a.out).write_text(json.dumps(d))
    print("->", a.out)


def cmd_compare(a) -> None:
    import collections

    import fit_reader as F

    from app.scorer import ReaderModel

    shipped = ReaderModel.from_dict(json.loads((ROOT / "app" / "data" / "reader_model.json").read_text()))
    train = [r for p in a.train.split(",") for r in json.loads(Path(p).read_text())["rows"]]
    dev = json.loads(Path(a.dev).read_text())["rows"]
    d = len(next(r for r in train if r["X"])["X"][0])

    def zero(rows, cols):
        return [{**r, "X": [[0.0 if j in cols else v for j, v in enumerate(x)] for x in r["X"]]} for r in rows]

    fits = []
    for label, cols in (("without ce", {d - 2, d - 1}), ("with ce", set())):
        tr, dv = zero(train, cols), zero(dev, cols)
        mean, scale = F.standardise(tr)
        for l2 in (0.001, 0.01, 0.1):
            coef, b, _ = F.fit_listwise(tr, mean, scale, l2)
            op = F.operating_point(F.decisions(dv, mean, scale, coef, b, "listwise"), F.TARGET_PRECISION)
            op_tr = F.operating_point(F.decisions(tr, mean, scale, coef, b, "listwise"), F.TARGET_PRECISION)
            fits.append({"features": label, "l2": l2, "dev": op, "train_top1": op_tr["top1_right"],
                         "w_ce": round(float(coef[-2]), 3), "w_ce_gap": round(float(coef[-1]), 3)})
            print(fits[-1], flush=True)
    kinds: dict = collections.defaultdict(lambda: {"answerable": 0, "scorer_top1": 0, "ce_top1": 0, "any": 0})
    for r in dev:
        if not r["answerable"] or not r["X"]:
            continue
        X = np.asarray(r["X"])
        k = kinds[r["kind"]]
        k["answerable"] += 1
        k["scorer_top1"] += r["y"][int(np.argmax(shipped.logits(X[:, :-2])))]
        k["ce_top1"] += r["y"][int(np.argmax(X[:, -2]))]
        k["any"] += int(any(r["y"]))
    z = np.load(a.model)
    card = json.loads(bytes(z["card"]).decode())
    out = {"command": " ".join(sys.argv), "model_card": card, "groups": sum(1 for _ in open(card["groups"]))
           if Path(card["groups"]).exists() else None, "fits": fits, "dev_by_kind": dict(kinds),
           "date": time.strftime("%Y-%m-%d")}
    Path(a.out).write_text(json.dumps(out, indent=1))
    print("->", a.out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("data")
    d.add_argument("--out", required=True)
    d.add_argument("--fit", default="")
    d.add_argument("--negatives", type=int, default=15)
    d.add_argument("--genres", default="", help="folder with covidqa_0423.json, cqa_train.json, cqa_dev.json")
    d.add_argument("--cap", default="", help="source=N,...: at most N groups of that source (the second round: "
                   "conditionalqa=1300, to keep one epoch near half an hour on 2 cores)")
    t = sub.add_parser("train")
    t.add_argument("--groups", required=True)
    t.add_argument("--dev", default="")
    t.add_argument("--dev-limit", type=int, default=0)
    t.add_argument("--out", required=True)
    t.add_argument("--epochs", type=int, default=2)
    t.add_argument("--batch", type=int, default=4)
    t.add_argument("--negatives", type=int, default=7)
    t.add_argument("--rank", type=int, default=8)
    t.add_argument("--lr", type=float, default=5e-4)
    t.add_argument("--max-steps", type=int, default=0)
    s = sub.add_parser("score")
    s.add_argument("--fit", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--model", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--model", required=True)
    c.add_argument("--train", required=True)
    c.add_argument("--dev", required=True)
    c.add_argument("--out", default=str(ROOT / "bench" / "results" / "reader_ce.json"))
    a = p.parse_args()
    {"data": cmd_data, "train": cmd_train, "score": cmd_score, "compare": cmd_compare}[a.cmd](a)


if __name__ == "__main__":
    main()

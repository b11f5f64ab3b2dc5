"""What only a GPU can check (stop 62): the LGMGC chunker's words/s on CUDA, and the 8- and 4-bit loads.

Run on a machine with a CUDA GPU; everything goes through the product's own code: ``AppContext(Settings(...)).scorer``
(``core.models.load_causal_lm``, the default ``lg_batch_size``), ``LGConfig.from_settings`` and
``build_chunker("lgmgc", ...)``, ``app.synth.hf.load_chat_synthesizer``.

1. **LG chunker speed.** A Gemma-3-270M-shaped model (the shipped model's architecture and dtype, float32, with the
   real Gemma-3 tokenizer) whose weights are **random**: the shipped GGUF cannot travel to a machine without a
   network, and speed depends on the shapes, not the weights. Its boundaries are meaningless (the chunk counts and
   the tokens exact mode reads are a random model's, not Gemma's); the streaming figures do not depend on where the
   cuts fall. θ = 300, the product's defaults otherwise (``lg_size_prior`` 1, ``<eos>``, blocks of 1024 tokens
   after 64 of context). On the GPU: streaming with 1 and 4 blocks per pass and exact mode, on an excerpt of the
   text and on the whole text; on the same machine's CPU (its torch threads chosen by ``choose_threads``, as the
   product does): the excerpt only. Each timed run clears the sentence caches first, so it pays segmentation and
   tokenisation as an ingest does (*words/s*); *LM s* is the time inside the forward passes alone.
2. **8-bit LG load** (``lm_8bit``, bitsandbytes): the same random model through ``load_causal_lm(load_in_8bit=True)``,
   then streaming on the excerpt.
3. **4-bit synthesizer** (``load_chat_synthesizer(load_in_4bit=True)``): a tiny random Qwen2-shaped chat model
   (the Gemma tokenizer with a ChatML template), loaded in 4 bits, and one greedy generation.

Without CUDA (a smoke test of this script) 2 and 3 run unquantised and say so. Writes ``--out`` after every step,
so a run stopped at its limit keeps what it measured.

    python3 bench/gpu_check.py --tokenizer T/tokenizer.json.xz --text T/emma.txt.xz --out $OUT/gpu_check.json
    .venv/bin/python bench/gpu_check.py --tiny --devices cpu --excerpt 0.01 --book-fraction 0.02 --out /tmp/g.json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import lzma
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

CONVERTED = Path.home() / ".cache" / "mgrag" / "models" / "gemma-3-270m"  # the shipped Gemma, once converted
EMMA = ROOT.parent / "shared" / "bench" / "gutenqa_emma" / "docs" / "emma.txt"
# Gemma-3-270M's architecture (its config.json as the product converts it); the rope defaults are Gemma 3's own
GEMMA3_270M = dict(vocab_size=262144, hidden_size=640, intermediate_size=2048, num_hidden_layers=18,
                   num_attention_heads=4, num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256,
                   sliding_window=512, max_position_embeddings=32768, rms_norm_eps=1e-6, tie_word_embeddings=True,
                   hidden_activation="gelu_pytorch_tanh", bos_token_id=2, eos_token_id=1, pad_token_id=0,
                   final_logit_softcapping=None, attn_logit_softcapping=None,
                   layer_types=(["sliding_attention"] * 5 + ["full_attention"]) * 3)
TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, head_dim=32,
            query_pre_attn_scalar=32, layer_types=["sliding_attention", "full_attention"])
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizer", default=str(CONVERTED / "tokenizer.json"),
                    help="Gemma-3's tokenizer.json (or .json.xz); default: the converted shipped model's")
    ap.add_argument("--tokenizer-config", default=None,
                    help="its tokenizer_config.json (default: beside --tokenizer, as tokenizer_config.json or "
                    "gemma_tokenizer_config.json)")
    ap.add_argument("--text", default=str(EMMA), help="the document (.txt or .txt.xz); default GutenQA's Emma")
    ap.add_argument("--excerpt", type=float, default=0.1,
                    help="fraction of the text (cut at a paragraph or line break) timed on every device")
    ap.add_argument("--book-fraction", type=float, default=1.0, help="fraction of the text timed on the GPU alone")
    ap.add_argument("--theta", type=int, default=300)
    ap.add_argument("--devices", default="cuda,cpu", help="comma-separated torch devices, in run order")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per GPU configuration (the median is kept)")
    ap.add_argument("--cpu-repeats", type=int, default=1, help="timed runs per CPU configuration")
    ap.add_argument("--tiny", action="store_true", help="a 2-layer model of the same vocabulary (a smoke test)")
    ap.add_argument("--skip-quant", action="store_true", help="skip the 8-bit LG and 4-bit synthesizer checks")
    ap.add_argument("--deadline", type=float, default=330.0,
                    help="seconds after which the optional steps left (the CPU runs) are skipped")
    ap.add_argument("--work", default="/tmp/gpu_check", help="scratch folder for the random models and data dir")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "gpu_check.json"))
    return ap.parse_args(argv)


def read_text(path: str) -> str:
    p = Path(path)
    raw = lzma.decompress(p.read_bytes()) if p.suffix == ".xz" else p.read_bytes()
    return raw.decode("utf-8")


def head(text: str, fraction: float) -> str:
    """The first ``fraction`` of ``text``, cut at the last paragraph (else line) break before it."""
    if fraction >= 1:
        return text
    cut = int(len(text) * fraction)
    for sep in ("\n\n", "\n"):
        at = text.rfind(sep, 0, cut)
        if at > 0:
            return text[:at]
    return text[:cut]


def write_tokenizer(folder: Path, args) -> None:
    tok = Path(args.tokenizer)
    cfg = Path(args.tokenizer_config) if args.tokenizer_config else next(
        (p for p in (tok.parent / "tokenizer_config.json", tok.parent / "gemma_tokenizer_config.json") if p.exists()),
        None)
    if cfg is None:
        raise SystemExit(f"no tokenizer_config.json beside {tok}; give --tokenizer-config")
    (folder / "tokenizer.json").write_text(read_text(str(tok)), encoding="utf-8")
    shutil.copyfile(cfg, folder / "tokenizer_config.json")


def build_gemma(folder: Path, args) -> dict:
    """A Gemma-3-270M-shaped causal LM with random weights (seed 0), saved in float32 with the real tokenizer."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    t0 = time.perf_counter()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    torch.manual_seed(0)
    config = Gemma3TextConfig(**{**GEMMA3_270M, **(TINY if args.tiny else {})})
    model = Gemma3ForCausalLM(config).to(torch.float32).eval()
    model.save_pretrained(folder)
    write_tokenizer(folder, args)
    n = sum(p.numel() for p in model.parameters())
    del model
    return {"params": n, "layers": config.num_hidden_layers, "hidden": config.hidden_size, "weights": "random (seed 0)",
            "dtype_saved": "float32", "build_seconds": time.perf_counter() - t0}


def build_qwen(folder: Path, args) -> dict:
    """A tiny random Qwen2-shaped chat model (bfloat16 as chat models ship) with the Gemma tokenizer and ChatML."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    write_tokenizer(folder, args)
    tok = AutoTokenizer.from_pretrained(folder)
    tok.chat_template = CHATML
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(tok), hidden_size=256, intermediate_size=704, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16).eval()
    model.save_pretrained(folder)
    return {"params": sum(p.numel() for p in model.parameters()), "layers": 2, "hidden": 256,
            "weights": "random (seed 0)", "dtype_saved": "bfloat16"}


def settings_for(folder: Path, work: Path, **kw):
    from core.settings import Settings

    return Settings(lm_model=str(folder), data_dir=work / "data", cache_dir=work / "cache", **kw)


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def gpu_mib(fn: str = "max_memory_allocated") -> float | None:
    import torch

    return getattr(torch.cuda, fn)() / 2**20 if torch.cuda.is_available() else None


def load_scorer(settings, device: str) -> tuple:
    """``(scorer, seconds, note)``: the product's chunker LM (``AppContext.scorer``) and how long it took to load."""
    from app.context import AppContext

    ctx = AppContext(settings)
    t0 = time.perf_counter()
    scorer = ctx.scorer
    sync(device)
    return scorer, time.perf_counter() - t0, getattr(ctx, "threads_note", "")


def timed_chunks(scorer, settings, text: str, mode: str, batch: int, repeats: int, device: str) -> dict:
    """LGMGC over ``text`` ``repeats`` times with ``mode`` and ``batch`` blocks per pass: wall and LM seconds."""
    import torch

    from ingest.chunkers import build_chunker
    from ingest.chunkers.logits import LGConfig
    from ingest.text import sentences as sentences_mod
    from ingest.text.sentences import count_words

    sc = dataclasses.replace(scorer, batch_size=batch)
    lm = {"s": 0.0}
    forward = sc._forward

    def timed_forward(*a, **k):  # _forward ends in .cpu(): the device's work is done when it returns
        t = time.perf_counter()
        out = forward(*a, **k)
        lm["s"] += time.perf_counter() - t
        return out

    sc._forward = timed_forward
    cfg = dataclasses.replace(LGConfig.from_settings(settings, settings.theta), mode=mode)
    chunker = build_chunker("lgmgc", settings.theta, scorer=sc, lg_config=cfg)
    words = count_words(text)
    runs = []
    for _ in range(repeats):
        sentences_mod.clear_caches()  # each run pays its own segmentation, as a fresh ingest would
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        lm["s"], tp0, fp0 = 0.0, sc.tokens_processed, sc.forward_passes
        sync(device)
        t0 = time.perf_counter()
        chunks = chunker.chunk(text)
        sync(device)
        wall = time.perf_counter() - t0
        parents = [c for c in chunks if c.level == 0]
        runs.append({"seconds": wall, "lm_seconds": lm["s"], "lm_tokens": sc.tokens_processed - tp0,
                     "forward_passes": sc.forward_passes - fp0, "parents": len(parents), "chunks": len(chunks),
                     "mean_parent_words": sum(count_words(c.text) for c in parents) / max(len(parents), 1),
                     "peak_gpu_mib": gpu_mib() if device.startswith("cuda") else None})
    med = statistics.median(r["seconds"] for r in runs)
    lm_med = statistics.median(r["lm_seconds"] for r in runs)
    last = runs[-1]
    return {"mode": mode, "batch": batch, "words": words, "repeats": repeats, "seconds": med,
            "words_per_second": words / med, "lm_seconds": lm_med, "lm_share": lm_med / med,
            "lm_tokens": last["lm_tokens"], "lm_tokens_per_second": last["lm_tokens"] / max(lm_med, 1e-9),
            "forward_passes": last["forward_passes"], "parents": last["parents"],
            "mean_parent_words": last["mean_parent_words"],
            "peak_gpu_mib": max((r["peak_gpu_mib"] or 0) for r in runs) if device.startswith("cuda") else None,
            "runs": runs}


def lg_speed(res: dict, key: str, folder: Path, work: Path, device: str, texts: dict, args, out: Path) -> None:
    """Every mode and batch on ``device`` over ``texts`` (name -> text), each result written as it comes."""
    import torch

    from ingest.text.sentences import count_words

    settings = settings_for(folder, work, lm_device=device, theta=args.theta)
    scorer, load_s, note = load_scorer(settings, device)
    param = next(scorer.model.parameters())
    entry = res[key] = {"device": device, "load_seconds": load_s, "threads": note,
                        "default_batch": scorer.batch_size, "dtype": str(param.dtype),
                        "attn_implementation": getattr(scorer.model.config, "_attn_implementation", None),
                        "torch_threads": torch.get_num_threads(),
                        "gpu_mib_after_load": gpu_mib("memory_allocated") if device.startswith("cuda") else None,
                        "texts": {k: count_words(t) for k, t in texts.items()}, "runs": []}
    print(f"[{key}] LM loaded on {device} in {load_s:.1f}s ({param.dtype}; default batch {scorer.batch_size}; "
          f"threads {note})", flush=True)
    repeats = args.repeats if device.startswith("cuda") else args.cpu_repeats
    warm = head(next(iter(texts.values())), 0.2)
    for mode, batch in (("streaming", scorer.batch_size), ("exact", 1)):  # warm-up: kernels, handles (not kept)
        timed_chunks(scorer, settings, warm, mode, batch, 1, device)
    for name, text in texts.items():
        for mode, batch in (("streaming", 1), ("streaming", 4), ("exact", 1)):
            n = 1 if (mode == "exact" and name == "book") else repeats
            r = timed_chunks(scorer, settings, text, mode, batch, n, device)
            r["text"] = name
            entry["runs"].append(r)
            write(res, out)
            print(f"[{key}] {name} {mode} batch {batch}: {r['words']} words in {r['seconds']:.2f}s = "
                  f"{r['words_per_second']:,.0f} words/s (LM {r['lm_seconds']:.2f}s, {r['lm_tokens_per_second']:,.0f} "
                  f"LM tok/s, {r['forward_passes']} passes; peak GPU {r['peak_gpu_mib'] or 0:,.0f} MiB)", flush=True)
    del scorer
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def lg_8bit(res: dict, folder: Path, work: Path, text: str, args, out: Path) -> None:
    """``lm_8bit=True`` through the product's loader, then streaming at the default batch on ``text``."""
    import torch

    cuda = torch.cuda.is_available()
    entry = res["lg_8bit"] = {"quantized": cuda}
    write(res, out)
    settings = settings_for(folder, work, lm_8bit=cuda, theta=args.theta, **({} if cuda else {"lm_device": "cpu"}))
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    scorer, load_s, _ = load_scorer(settings, "cuda" if cuda else "cpu")
    model = scorer.model
    kinds: dict[str, int] = {}
    for m in model.modules():
        if type(m).__module__.startswith("bitsandbytes"):
            kinds[type(m).__name__] = kinds.get(type(m).__name__, 0) + 1
    entry.update(load_seconds=load_s, bnb_modules=kinds, default_batch=scorer.batch_size,
                 device=str(next(model.parameters()).device),
                 memory_footprint_mib=model.get_memory_footprint() / 2**20,
                 gpu_mib_after_load=gpu_mib("memory_allocated"))
    print(f"[8-bit LG] loaded in {load_s:.1f}s on {entry['device']}; bitsandbytes modules {kinds}; footprint "
          f"{entry['memory_footprint_mib']:,.0f} MiB", flush=True)
    device = "cuda" if cuda else "cpu"
    timed_chunks(scorer, settings, head(text, 0.2), "streaming", scorer.batch_size, 1, device)  # warm-up
    r = timed_chunks(scorer, settings, text, "streaming", scorer.batch_size, args.repeats if cuda else 1, device)
    r["text"] = "excerpt"
    entry["run"] = r
    write(res, out)
    print(f"[8-bit LG] excerpt streaming batch {r['batch']}: {r['words_per_second']:,.0f} words/s "
          f"(LM {r['lm_seconds']:.2f}s; peak GPU {r['peak_gpu_mib'] or 0:,.0f} MiB)", flush=True)
    del scorer, model
    if cuda:
        torch.cuda.empty_cache()


def synth_4bit(res: dict, work: Path, args, out: Path) -> None:
    """``load_chat_synthesizer(load_in_4bit=True)`` on a tiny random Qwen2-shaped model, one greedy generation."""
    import torch

    from app.synth.hf import load_chat_synthesizer

    cuda = torch.cuda.is_available()
    folder = work / "qwen2-tiny-random"
    entry = res["synth_4bit"] = {"quantized": cuda, "model": build_qwen(folder, args)}
    write(res, out)
    t0 = time.perf_counter()
    syn = load_chat_synthesizer(str(folder), max_new_tokens=16, load_in_4bit=cuda, total_timeout=60)
    load_s = time.perf_counter() - t0
    kinds: dict[str, int] = {}
    for m in syn.model.modules():
        if type(m).__module__.startswith("bitsandbytes"):
            kinds[type(m).__name__] = kinds.get(type(m).__name__, 0) + 1
    t0 = time.perf_counter()
    text = syn.complete([{"role": "user", "content": "When did the review take place?"}], max_tokens=16)
    gen_s = time.perf_counter() - t0
    # generated_tokens: the decoded reply tokenised again (at most max_tokens=16 were generated; a random model's
    # tokens, decoded and read again, can make many more)
    entry.update(load_seconds=load_s, bnb_modules=kinds, device=str(syn.model.device),
                 memory_footprint_mib=syn.model.get_memory_footprint() / 2**20, generate_seconds=gen_s,
                 generated_tokens=len(syn.tokenizer(text, add_special_tokens=False)["input_ids"]),
                 generated_text_is_str=isinstance(text, str))
    write(res, out)
    print(f"[4-bit synth] loaded in {load_s:.1f}s on {entry['device']}; bitsandbytes modules {kinds}; generated "
          f"{entry['generated_tokens']} tokens in {gen_s:.2f}s", flush=True)


def machine() -> dict:
    import torch
    import transformers

    info = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "cpu_count": os.cpu_count(), "processor": platform.processor() or platform.machine(),
            "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    try:
        import bitsandbytes

        info["bitsandbytes"] = bitsandbytes.__version__
    except Exception as e:  # not installed, or no library for this CUDA
        info["bitsandbytes"] = f"unavailable: {e.__class__.__name__}: {e}"
    return info


def write(res: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
    tmp.replace(out)


def step(res: dict, name: str, fn, *a) -> None:
    """Run one check; a failure is recorded in the results (with its message) and the next check runs."""
    t0 = time.perf_counter()
    try:
        fn(*a)
    except Exception as e:  # recorded, not raised: the other checks still run on the lent machine
        import traceback

        traceback.print_exc()
        res.setdefault("errors", {})[name] = f"{e.__class__.__name__}: {e}"
    res.setdefault("step_seconds", {})[name] = time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t_start = time.perf_counter()
    out, work = Path(args.out), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    import torch

    text = read_text(args.text)
    excerpt, book = head(text, args.excerpt), head(text, args.book_fraction)
    res: dict = {"benchmark": "gpu_check", "command": "python3 bench/gpu_check.py " + " ".join(sys.argv[1:]),
                 "machine": machine(), "text": Path(args.text).name, "excerpt": args.excerpt,
                 "book_fraction": args.book_fraction, "theta": args.theta, "tiny": args.tiny,
                 "note": "random weights: speed valid, boundaries meaningless"}
    lm = work / "gemma3-270m-random"
    res["lm"] = build_gemma(lm, args)
    write(res, out)
    print(f"machine: {res['machine']}\nrandom LM: {res['lm']}", flush=True)
    devices = [d for d in args.devices.split(",") if d and (not d.startswith("cuda") or torch.cuda.is_available())]
    for dev in [d for d in devices if d.startswith("cuda")]:
        step(res, f"lg_{dev}", lg_speed, res, f"lg_{dev}", lm, work, dev, {"excerpt": excerpt, "book": book}, args,
             out)
    if not args.skip_quant:
        step(res, "synth_4bit", synth_4bit, res, work, args, out)
        step(res, "lg_8bit", lg_8bit, res, lm, work, excerpt, args, out)
    for dev in [d for d in devices if not d.startswith("cuda")]:
        if time.perf_counter() - t_start > args.deadline:
            res.setdefault("skipped", []).append(f"lg_{dev}: past --deadline {args.deadline:.0f}s")
            continue
        step(res, f"lg_{dev}", lg_speed, res, f"lg_{dev}", lm, work, dev, {"excerpt": excerpt}, args, out)
    res["total_seconds"] = time.perf_counter() - t_start
    write(res, out)
    print("\n| device | text | mode | batch | words | s | words/s | LM s | LM tok/s | peak GPU MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in [k for k in res if k.startswith("lg_") and isinstance(res[k], dict) and "runs" in res[k]]:
        for r in res[key]["runs"]:
            print(f"| {res[key]['device']} | {r['text']} | {r['mode']} | {r['batch']} | {r['words']} "
                  f"| {r['seconds']:.2f} | {r['words_per_second']:,.0f} | {r['lm_seconds']:.2f} "
                  f"| {r['lm_tokens_per_second']:,.0f} | {r['peak_gpu_mib'] or 0:,.0f} |")
    if res.get("errors"):
        print(f"errors: {res['errors']}")
    print(f"total {res['total_seconds']:.0f}s; wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

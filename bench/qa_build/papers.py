"""The `papers` kind of the answers corpus: clinical-trial protocols (PDF) and research papers (plain text).

Sources:

* Clinical-trial protocols from ClinicalTrials.gov as collected in docugami/KG-RAG-datasets (MIT),
  ``nih-clinical-trial-protocols/data/v1/docs/``, read from the bare mirror ``MIRRORS/docugami+KG-RAG-datasets/repo``
  at a pinned commit and copied byte for byte (the product reads the PDFs itself).
* NLP papers from the Qasper dataset as sampled by LongBench, ``../shared/bench/longbench_sample/docs/qasper-N.txt``
  (``MGRAG_SHARED_BENCH``): the paper's body text without its title, so a title line is put first.
* Five texts on document chunking for retrieval in ``../shared/seeds/`` (``MGRAG_SHARED_SEEDS``): two arXiv papers,
  a structured summary of one of them, a blog post and a Chinese post of paper notes. A title line is put first where
  the text has none.

Everything is copied, never rewritten, so the output is byte for byte the same on every run.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("MGRAG_SHARED_BENCH", str(ROOT.parent / "shared" / "bench")))
SEEDS = Path(os.environ.get("MGRAG_SHARED_SEEDS", str(ROOT.parent / "shared" / "seeds")))

REPO = "docugami/KG-RAG-datasets"
COMMIT = "547f132d3c2bcc2b9976ca1d8413b99d8ba45aa1"
FOLDER = "nih-clinical-trial-protocols/data/v1/docs"

PROTOCOLS = [
    # the four protocols of bench/data/heldout_qa.jsonl (the project developed on them: train)
    "NCT06151600_Prot_000.pdf",  # CMT4J natural history study (28 pages)
    "NCT06152367_Prot_000.pdf",  # dendritic cells + low-dose IL-2 in melanoma (21 pages)
    "NCT06152900_Prot_SAP_000.pdf",  # Accufit electrical muscle stimulation (35 pages)
    "NCT06155006_Prot_SAP_000.pdf",  # hepatitis C screening in Colombian hospitals (32 pages)
    # the others, chosen short (under ~30 pages) and with a text layer
    "NCT06145295_Prot_SAP_000.pdf",  # online support group, ovarian cancer (6 pages)
    "NCT06147739_Prot_SAP_000.pdf",  # anterior open bite, temporary anchorage devices (13 pages)
    "NCT06149832_Prot_000.pdf",  # oral chronic GVHD, umbilical-cord MSC dressing (6 pages)
    "NCT06150378_Prot_SAP_000.pdf",  # PRP vs corticosteroids, rotator cuff tendinopathy (24 pages)
    "NCT06152666_Prot_000.pdf",  # day-case endourology: interviews with healthcare professionals (27 pages)
    "NCT06152679_Prot_000.pdf",  # day-case bladder/prostate surgery: patient interviews (28 pages)
    "NCT06152952_Prot_000.pdf",  # rhomboid flap vs deep suturing, pilonidal sinus (11 pages)
    "NCT06154122_Prot_000.pdf",  # virtual reality upper-limb therapy, tetraplegia (5 pages)
    "NCT06157684_Prot_000.pdf",  # postprandial walking in gestational diabetes (4 pages)
]

# output name, LongBench record, title line (the Qasper text starts at its Introduction)
QASPER = [
    ("elmo_seven_languages.txt", "qasper-0", "High Quality ELMo Embeddings for Seven Less-Resourced Languages"),
    ("pyramidal_recurrent_unit.txt", "qasper-1", "Pyramidal Recurrent Unit for Language Modeling"),
    ("nepali_ner.txt", "qasper-2", "Named Entity Recognition for Nepali Language"),
    ("hierarchical_transformers_long_documents.txt", "qasper-3",
     "Hierarchical Transformers for Long Document Classification"),
    ("hashtag_segmentation.txt", "qasper-5", "Multi-task Pairwise Neural Ranking for Hashtag Segmentation"),
    ("pun_detection_location.txt", "qasper-6", "Joint Detection and Location of English Puns"),
    ("offensive_language_olid.txt", "qasper-8", "Predicting the Type and Target of Offensive Posts in Social Media"),
]

# output name, seed file, title line (None: the text's own first line is its title)
SEED_TEXTS = [
    ("lgmgc_passage_segmentation.txt", "000_c53f6684851c2f16.txt",
     "Passage Segmentation of Documents for Extractive Question Answering (Liu, Simon and Caspani)"),
    ("lgmgc_paper_summary.md", "001_98d2655cd46a99e4.txt", None),
    ("mix_of_granularity.txt", "002_f44ae9a3b6bdecda.txt", None),
    ("llamachunk_blog.md", "003_c9dfbe098a57192c.txt",
     "# LlamaChunk: chunking documents for RAG with Llama log-probabilities"),
    ("meta_chunking_notes_zh.md", "004_a2655b32ef20fe32.txt",
     "# 文本分块的天花板来了~ (Meta-Chunking 论文笔记, NLP前沿)"),
]


def git_dir(mirrors: Path, repo: str) -> Path:
    base = mirrors / repo.replace("/", "+") / "repo"
    return base / ".git" if (base / ".git").is_dir() else base


def git_show(mirrors: Path, repo: str, commit: str, path: str) -> bytes:
    gd = git_dir(mirrors, repo)
    if not gd.is_dir():
        raise FileNotFoundError(f"{repo} is not fetched ({gd}); fetch github:{repo} first")
    return subprocess.run(["git", "--git-dir", str(gd), "show", f"{commit}:{path}"], check=True,
                          capture_output=True).stdout


def with_title(title: str | None, body: str) -> str:
    body = body.replace("\r\n", "\n").strip("\n") + "\n"
    return body if title is None else f"{title}\n\n{body}"


def build(out: Path, mirrors: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in PROTOCOLS:
        (out / name).write_bytes(git_show(mirrors, REPO, COMMIT, f"{FOLDER}/{name}"))
    for name, record, title in QASPER:
        body = (SHARED / "longbench_sample" / "docs" / f"{record}.txt").read_text(encoding="utf-8")
        (out / name).write_text(with_title(title, body), encoding="utf-8")
    for name, seed, title in SEED_TEXTS:
        body = (SEEDS / seed).read_text(encoding="utf-8")
        (out / name).write_text(with_title(title, body), encoding="utf-8")

"""The `calls` kind of the answers corpus: earnings-call transcripts.

Source: ECTSum (github.com/rajdeep345/ECTSum, GPL-3.0), the test split only:
``data/final/test/ects/<TICKER>_q<N>_<YEAR>.txt`` (one transcript a file, one sentence a line; the prepared remarks
of a public earnings call, speaker names and the operator removed by the dataset) read at a pinned commit from the
bare mirror ``MIRRORS/rajdeep345+ECTSum/repo`` (fetch it with the ``fetch`` tool). The reference summaries
(``gt_summaries``) were used only to find the facts the
questions ask about; they are not part of the documents.

Choice (deterministic): the test transcripts of 2,000-8,000 words, sorted by file name, the first of each ticker
(284 tickers); every 13th ticker from the first (22); a transcript whose text never names its company (BZH, HR, RM)
is replaced by the next ticker in the list (CAG, HTH, ROG). ``CALLS`` pins the outcome, with the company name as the
call says it (checked against the text) and the quarter the call reports (checked by reading it: the ECTSum file
``JCI_q3_2021`` is Johnson Controls' fiscal fourth-quarter 2021 call, so its document is ``JCI_q4_2021``).

Each document is a title line "<Company> <Quarter> <Year> earnings call" and the transcript's sentences, verbatim, in
order, grouped into paragraphs of four sentences. The documents alternate, in sorted order, between ``.docx``
(python-docx: a title, a subtitle naming the source, one paragraph per group; core.xml times fixed) and plain text,
``.txt`` and ``.md`` in turn (the title line, ``# ``-prefixed in Markdown, then paragraphs separated by blank lines).
"""
from __future__ import annotations

import io
import subprocess
from pathlib import Path

from qa_build import fixed_zip

REPO = "rajdeep345/ECTSum"
COMMIT = "6909f1fc543104c1c60cf9de63e799f6620d1b0a"
SOURCE_DIR = "data/final/test/ects"
GROUP = 4  # sentences a paragraph

# ECTSum file, document name, company as the title names it, a form of the name the transcript itself uses,
# quarter label
CALLS = [
    ("AAN_q3_2021", "AAN_q3_2021", "The Aaron's Company", "Aaron's Company", "Q3 2021"),
    ("ALL_q2_2021", "ALL_q2_2021", "Allstate", "Allstate", "Q2 2021"),
    ("BBY_q3_2022", "BBY_q3_2022", "Best Buy", "Best Buy", "Q3 fiscal 2022"),
    ("CAG_q1_2022", "CAG_q1_2022", "Conagra Brands", "Conagra", "Q1 fiscal 2022"),
    ("CMC_q1_2022", "CMC_q1_2022", "Commercial Metals Company (CMC)", "CMC", "Q1 fiscal 2022"),
    ("CW_q3_2021", "CW_q3_2021", "Curtiss-Wright", "Curtiss-Wright", "Q3 2021"),
    ("DRE_q4_2020", "DRE_q4_2020", "Duke Realty", "Duke Realty", "Q4 2020"),
    ("EW_q1_2021", "EW_q1_2021", "Edwards Lifesciences", "Edwards Lifesciences", "Q1 2021"),
    ("FNB_q4_2020", "FNB_q4_2020", "F.N.B. Corporation (FNB)", "FNB", "Q4 2020"),
    ("GPN_q3_2021", "GPN_q3_2021", "Global Payments", "Global Payments", "Q3 2021"),
    ("HTH_q4_2020", "HTH_q4_2020", "Hilltop Holdings", "Hilltop", "Q4 2020"),
    ("JCI_q3_2021", "JCI_q4_2021", "Johnson Controls", "Johnson Controls", "Q4 fiscal 2021"),
    ("KW_q3_2021", "KW_q3_2021", "Kennedy-Wilson", "Kennedy-Wilson", "Q3 2021"),
    ("MBI_q4_2019", "MBI_q4_2019", "MBIA", "MBIA", "Q4 2019"),
    ("MSM_q3_2021", "MSM_q3_2021", "MSC Industrial", "MSC", "Q3 fiscal 2021"),
    ("NYT_q2_2021", "NYT_q2_2021", "The New York Times Company", "New York Times", "Q2 2021"),
    ("PG_q1_2022", "PG_q1_2022", "Procter & Gamble (P&G)", "P&G", "Q1 fiscal 2022"),
    ("ROG_q2_2021", "ROG_q2_2021", "Rogers Corporation", "Rogers", "Q2 2021"),
    ("SKX_q3_2021", "SKX_q3_2021", "Skechers", "Skechers", "Q3 2021"),
    ("TBI_q4_2020", "TBI_q4_2020", "TrueBlue", "TrueBlue", "Q4 2020"),
    ("UNM_q2_2021", "UNM_q2_2021", "Unum Group", "Unum", "Q2 2021"),
    ("WRE_q2_2020", "WRE_q2_2020", "Washington REIT (WashREIT)", "WashREIT", "Q2 2020"),
]


def git_dir(mirrors: Path) -> Path:
    base = mirrors / REPO.replace("/", "+") / "repo"
    return base / ".git" if (base / ".git").is_dir() else base


def git_show(mirrors: Path, path: str) -> bytes:
    gd = git_dir(mirrors)
    if not gd.is_dir():
        raise FileNotFoundError(f"{REPO} is not fetched ({gd}); fetch github:{REPO} first")
    return subprocess.run(["git", "--git-dir", str(gd), "show", f"{COMMIT}:{path}"], check=True,
                          capture_output=True).stdout


def sentences(raw: bytes) -> list[str]:
    text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    return [ln.strip() for ln in text.split("\n") if ln.strip()]


def paragraphs(sents: list[str]) -> list[str]:
    return [" ".join(sents[i:i + GROUP]) for i in range(0, len(sents), GROUP)]


def write_docx(path: Path, title: str, paras: list[str]) -> None:
    import docx

    d = docx.Document()
    d.core_properties.title = title
    d.core_properties.author = ""
    d.add_heading(title, level=0)
    d.add_paragraph("Transcript of the prepared remarks (ECTSum).")
    for p in paras:
        d.add_paragraph(p)
    buf = io.BytesIO()
    d.save(buf)
    path.write_bytes(fixed_zip(buf.getvalue()))


def write_text(path: Path, title: str, paras: list[str], markdown: bool) -> None:
    head = f"# {title}" if markdown else title
    path.write_text(head + "\n\n" + "\n\n".join(paras) + "\n", encoding="utf-8")


def build(out: Path, mirrors: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.is_file():
            old.unlink()
    for i, (src, name, company, said, quarter) in enumerate(CALLS):
        sents = sentences(git_show(mirrors, f"{SOURCE_DIR}/{src}.txt"))
        body = " ".join(sents)
        if said not in body:
            raise ValueError(f"{src}: the transcript never says {said!r}")
        n = len(body.split())
        if not 2000 <= n <= 8000:
            raise ValueError(f"{src}: {n} words")
        title = f"{company} {quarter} earnings call"
        paras = paragraphs(sents)
        if i % 2 == 0:
            write_docx(out / f"{name}.docx", title, paras)
        else:
            write_text(out / f"{name}.{'txt' if i % 4 == 1 else 'md'}", title, paras, markdown=i % 4 == 3)

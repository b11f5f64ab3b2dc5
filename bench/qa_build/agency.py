"""The ``agency`` kind of the issue-46 answers corpus: US federal agency plans and reports (PDFs, copied unchanged).

Sources (bare mirrors fetched with the ``fetch`` tool into ``MIRRORS/<owner>+<name>/repo``), pinned to the commits
below (HEAD is used, with a warning, when a pinned commit is absent from a newer mirror; ``GCERC/site``'s HEAD no
longer holds its files, so that mirror must contain the pinned commit):

* ``docugami/KG-RAG-datasets`` (MIT; the documents themselves are US federal government works, public domain):
  ten agency reports from ``us-fed-agency-reports/data/v1/docs/`` (strategic plans / performance plan summaries of
  DHS, ED, GSA, State-USAID, DOL, DOT, DOC, EPA, HHS and NARA, downloaded by docugami from performance.gov). The OPM
  ``20xx-annual-performance-report.pdf`` files of the same folder are used elsewhere in the project and are left out;
* ``GCERC/site`` (the website of the Gulf Coast Ecosystem Restoration Council, the federal RESTORE Council; public
  domain in the US and CC0-1.0 worldwide, ``LICENSE.md``): four of the Council's own reports from ``uploads/``, which
  later commits removed, so they are read at the pinned commit: the FY2022 and FY2023 Annual Performance Plans, the
  FY2022 Agency Financial Report and the 2022 Annual Report to Congress.

Each PDF is written byte for byte as the mirror holds it (``git show <commit>:<path>``), so the build is
deterministic.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PINS = {
    "docugami/KG-RAG-datasets": "547f132d3c2bcc2b9976ca1d8413b99d8ba45aa1",
    "GCERC/site": "8215abb797acbabbff602223fc3e6b510099c67b",
}

LICENSES = {
    "docugami/KG-RAG-datasets": "MIT (collection); the reports are US government works in the public domain",
    "GCERC/site": "public domain (US government work) and CC0-1.0",
}

D = "us-fed-agency-reports/data/v1/docs/"
# (output name, repo, path)
DOCS = [
    ("DHS2020.pdf", "docugami/KG-RAG-datasets", D + "DHS2020.pdf"),
    ("EDAPP2022.pdf", "docugami/KG-RAG-datasets", D + "EDAPP2022.pdf"),
    ("GSA2022.pdf", "docugami/KG-RAG-datasets", D + "GSA2022.pdf"),
    ("DOSAID2022.pdf", "docugami/KG-RAG-datasets", D + "DOSAID2022.pdf"),
    ("DOL2022.pdf", "docugami/KG-RAG-datasets", D + "DOL2022.pdf"),
    ("DOT2022.pdf", "docugami/KG-RAG-datasets", D + "DOT2022.pdf"),
    ("DOC2022.pdf", "docugami/KG-RAG-datasets", D + "DOC2022.pdf"),
    ("EPA2022.pdf", "docugami/KG-RAG-datasets", D + "EPA2022.pdf"),
    ("HHS2022.pdf", "docugami/KG-RAG-datasets", D + "HHS2022.pdf"),
    ("NARA2022.pdf", "docugami/KG-RAG-datasets", D + "NARA2022.pdf"),
    ("RESTORE_Council_APP_FY2022.pdf", "GCERC/site", "uploads/Annual Performance PlanFY2022-final 508 compliant.pdf"),
    ("RESTORE_Council_APP_FY2023.pdf", "GCERC/site", "uploads/Annual Performance Plan FY2023 508 compliant.pdf"),
    ("RESTORE_Council_AFR_FY2022.pdf", "GCERC/site", "uploads/AFR_FY22_508_112922.pdf"),
    ("RESTORE_Council_Report_to_Congress_2022.pdf", "GCERC/site", "uploads/Annual_Report_to_Congress_2022_508.pdf"),
]


def _git_dir(mirrors: Path, repo: str) -> Path:
    return mirrors / repo.replace("/", "+") / "repo"


def _commit(gd: Path, repo: str) -> str:
    pin = PINS[repo]
    ok = subprocess.run(["git", "--git-dir", str(gd), "cat-file", "-e", pin + "^{commit}"],
                        capture_output=True).returncode == 0
    if ok:
        return pin
    print(f"agency: warning: {repo} lacks pinned commit {pin}; using HEAD", file=sys.stderr)
    return "HEAD"


def _show(gd: Path, rev: str, path: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(gd), "show", f"{rev}:{path}"],
                          capture_output=True, check=True).stdout


def build(out: Path, mirrors: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    revs: dict[str, str] = {}
    for name, repo, path in DOCS:
        gd = _git_dir(mirrors, repo)
        if not gd.is_dir():
            raise FileNotFoundError(f"agency: no mirror of {repo} at {gd} (fetch it first)")
        if repo not in revs:
            revs[repo] = _commit(gd, repo)
        try:
            data = _show(gd, revs[repo], path)
        except subprocess.CalledProcessError as e:
            raise FileNotFoundError(f"agency: {repo} has no {path} at {revs[repo]} (fetch a mirror holding "
                                    f"{PINS[repo]})") from e
        target = out / name
        if not target.is_file() or target.read_bytes() != data:
            target.write_bytes(data)

"""The ``filings`` kind of the issue-46 answers corpus: annual-report excerpts, each a table with its notes.

Source: TAT-QA (github.com/NExTplusplus/TAT-QA, MIT), ``dataset_raw/tatqa_dataset_dev.json`` only (the test file
is used by the ``sheets`` kind), read at a pinned commit from the bare mirror ``MIRRORS/NExTplusplus+TAT-QA/repo``
(fetch it with the ``fetch`` tool). Each TAT-QA item is one context from a real annual report: a table (a 2-D list
of cells) and the paragraphs around it.

Choice (deterministic): the dev contexts sorted by table uid; kept are those with at most 20 table rows and at least
four questions of a kind the corpus asks (a span, a count, a multi-span of two short items, or arithmetic that is one
difference ``a - b`` or one share ``a / b`` of printed figures), at least one answered from the table and one from the
text; of those (185), the ``int(i * n / 22)``-th for i = 0..21. ``CONTEXTS`` pins the outcome (the builder checks it)
with what was written by hand for each: the page title (naming the company only where the context itself names it),
the table's caption with the scale TAT-QA gives for its figures, and the paragraph after which the table stands.

Each document is a standalone HTML page ``tatqa_<first 8 characters of the uid>.html``: an ``<h1>`` title, the
context's paragraphs in order (a short line without a full stop becomes an ``<h2>``, lines opening with an em dash
become a list), and the table as a ``<table>`` with a ``<caption>``, its header row(s) in ``<thead>`` (the leading
rows whose filled cells past the first hold no figures other than years) and the rest in ``<tbody>``. Text is
copied verbatim except that runs of whitespace are collapsed, a paragraph repeated verbatim is kept once, and a
paragraph that restarts its own opening words part-way (a TAT-QA extraction slip) is cut where the repeat begins.
"""
from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

REPO = "NExTplusplus/TAT-QA"
COMMIT = "870accc41953dcde885aabeb963d94aabdc0fbc3"
SOURCE = "dataset_raw/tatqa_dataset_dev.json"
N_DOCS = 22
MAX_ROWS = 20

# table uid, title, table caption (with its scale), paragraph order after which the table stands (0: before all)
CONTEXTS = [
    ("001e29d7-77e9-4434-9a3d-f72ef640fa79", "Credit risk: trade receivables by geographic region",
     "Maximum exposure to credit risk for trade receivables by geographic region, 31 March (£m)", 3),
    ("0e8b88af-9af5-4bfd-865f-ca0dd3f85939", "Obligations and commitments as of May 26, 2019",
     "Contractual obligations as of May 26, 2019: payments due by period (in millions)", 3),
    ("1b94b114-fcbe-480d-933c-c35d4d004249", "Liquidity: cash flows for the years ended December 31, 2019 and 2018",
     "Summary of cash flows, years ended December 31 (in thousands)", 3),
    ("285a1ced-709e-4f45-a227-b6cd04e725f9", "American Tower Corporation \u2014 Note 17: Other operating expense",
     "Other operating expenses, years ended December 31 (in millions)", 4),
    ("3789d7da-dc3e-4cd7-b639-d6805211405a",
     "Teekay Corporation \u2014 Revenues and income from vessel operations by segment",
     "Revenues and income (loss) from vessel operations, 2019 and 2018 (in thousands of U.S. dollars)", 3),
    ("428d5e87-612b-468c-80f3-5b5298d589c8", "Net sales by reportable segment: modules and systems",
     "Net sales by reportable segment, years ended December 31 (dollars in thousands)", 3),
    ("4c2f88e1-b5d4-4565-a98a-04f56127e4af",
     "Advanced Energy Industries, Inc. \u2014 Unrecognized tax benefits",
     "Reconciliation of total gross unrecognized tax benefits, years ended December 31 (in thousands)", 2),
    ("5677fbce-7bb4-4f39-be85-a9ce618698c6", "SGRE \u2014 Orders, revenue and Adjusted EBITA, fiscal 2019",
     "Key figures, fiscal years 2019 and 2018 (in millions of \u20ac)", 0),
    ("644a6917-7add-4751-9e3b-bcc2150a8f49", "Acquisition-related and restructuring charges in operating income",
     "Charges included in operating income, fiscal 2019 and 2018 (in millions)", 1),
    ("6aa15859-a841-47eb-ad04-a441599cf05c",
     "Discontinued operation: Horizon Clinicals and Series2000 Revenue Cycle",
     "Pretax profit of discontinued operations, years ended December 31, 2018 and 2017 (in thousands)", 4),
    ("77d8e381-01d0-4cf9-882e-e1162db2cff2", "Reconciliation of statutory profit to EBITDA and underlying EBITDA, FY19",
     "Statutory profit to EBITDA and underlying EBITDA, years ended 30 June ($\u2019000)", 2),
    ("879fb3ae-fc64-49f1-8a85-5756ff4ee3b6", "Note 11 \u2014 Stock capital: warrants outstanding",
     "Warrants outstanding as of December 31, 2019: number, exercise price and expiration", 6),
    ("8edfdb1c-3d22-496f-b6ba-f3ea45cf6151", "Results of operations: net sales by product group, fiscal 2019",
     "Product group net sales, fiscal years ended March 31 (in thousands)", 4),
    ("9e0ae25d-0080-4fb6-8396-db61af489520",
     "Microchip Technology Incorporated \u2014 Cash flows: schedule of restricted cash",
     "Cash, cash equivalents and restricted cash, years ended March 31 (in millions)", 3),
    ("a9ddf64a-2806-4476-b341-05d7d06fdcf6", "Stock options: activity for fiscal years 2017 to 2019",
     "Stock option activity, fiscal years ended September 30", 2),
    ("b3f4d2dd-a59b-45da-9608-e3401041a2b1", "Results of continuing operations, 2019 compared with 2018",
     "Data from the consolidated statements of operations, years ended December 31 (in thousands)", 3),
    ("bea3f426-e6ba-438f-8058-b815be4cf646", "Cubic \u2014 Note 10: Goodwill and purchased intangible assets",
     "Changes in goodwill by segment, two years ended September 30, 2019 (in thousands)", 2),
    ("cca95e4f-c7f7-4ded-92e0-3371290f1374", "American Tower Corporation \u2014 Note 18: Earnings per common share",
     "Basic and diluted net income per common share, years ended December 31 (in millions; shares in thousands, "
     "except per share data)", 3),
    ("d8568399-5323-490a-9ea9-90968abca2f4",
     "Off-balance sheet arrangements and contractual obligations as of June 30, 2019",
     "Contractual obligations and commitments by maturity as of June 30, 2019 (in thousands)", 4),
    ("dd5eac5a-de74-4ed4-b959-e6ad134e646b", "Proofpoint, Inc. \u2014 2017 acquisition of Cloudmark, Inc.",
     "Fair values of assets acquired and liabilities assumed in the Cloudmark acquisition (in thousands)", 9),
    ("e9a946ce-72a9-4b42-86d6-4d91fceb14db", "IMFT joint venture with Intel: assets and liabilities",
     "Assets and liabilities of IMFT included in the consolidated balance sheets", 4),
    ("f50c6b84-25c9-418a-aba1-6cd025b904e3", "intu \u2014 Audit Committee report: the external auditor",
     "Fees paid to the external auditor, 2017 to 2019 (\u00a3000)", 23),
]

_CSS = ("body{font-family:Georgia,'Times New Roman',serif;max-width:58em;margin:2em auto;line-height:1.45;"
        "color:#222}h1{font-size:1.5em}h2{font-size:1.1em;margin-top:1.4em}table{border-collapse:collapse;"
        "margin:1em 0}caption{font-weight:bold;text-align:left;padding-bottom:.4em}th,td{padding:3px 10px;"
        "border-bottom:1px solid #ccc}td{text-align:right}td:first-child,th:first-child{text-align:left}"
        "footer{margin-top:2em;font-size:.85em;color:#666}")


# -- source ------------------------------------------------------------------------------------------------------------
def read_dev(mirrors: Path) -> list[dict]:
    base = mirrors / REPO.replace("/", "+") / "repo"
    gd = base / ".git" if (base / ".git").is_dir() else base
    if not gd.is_dir():
        raise FileNotFoundError(f"{REPO} is not fetched ({gd}); fetch github:{REPO} first")
    raw = subprocess.run(["git", "--git-dir", str(gd), "show", f"{COMMIT}:{SOURCE}"], check=True,
                         capture_output=True).stdout
    return json.loads(raw)


# -- choice ------------------------------------------------------------------------------------------------------------
_DIFF = re.compile(r"\(?-?[\d,.]+\)?-\(?-?[\d,.]+\)?")
_SHARE = re.compile(r"[\d,.]+/[\d,.]+(\*100)?")


def usable(q: dict) -> bool:
    """A question of a kind the corpus asks: span, count, two short spans, one difference or one share."""
    t = q["answer_type"]
    if t in ("span", "count"):
        return True
    if t == "multi-span":
        return len(q["answer"]) == 2 and all(len(str(a).split()) <= 6 for a in q["answer"])
    if t == "arithmetic":
        d = q["derivation"].replace(" ", "")
        return bool(_DIFF.fullmatch(d) or _SHARE.fullmatch(d))
    return False


def choose(items: list[dict]) -> list[dict]:
    items = sorted(items, key=lambda x: x["table"]["uid"])
    ok = []
    for x in items:
        good = [q for q in x["questions"] if usable(q)]
        src = {q["answer_from"] for q in good}
        if (len(good) >= 4 and any("table" in s for s in src) and src & {"text", "table-text"}
                and len(x["table"]["table"]) <= MAX_ROWS):
            ok.append(x)
    return [ok[int(i * len(ok) / N_DOCS)] for i in range(N_DOCS)]


# -- rendering ---------------------------------------------------------------------------------------------------------
def clean(text: str) -> str:
    t = " ".join(text.replace("\u2009", " ").replace("\xa0", " ").split())
    head = t[:60]
    if len(head) == 60:
        at = t.find(head, 1)
        if at > 0:
            t = t[:at].strip()
    return t


_FIG = re.compile(r"[$\u20ac\u00a3]?\s*\(?-?\d[\d,]*(?:\.\d+)?\)?\s*%?")
_YEAR = re.compile(r"(19|20)\d\d")


def is_figure(cell: str) -> bool:
    c = cell.strip()
    return bool(_FIG.fullmatch(c)) and not _YEAR.fullmatch(c)


def n_header_rows(rows: list[list[str]]) -> int:
    n = 0
    for r in rows:
        rest = [c.strip() for c in r[1:] if c.strip()]
        if not rest or any(is_figure(c) for c in rest):
            break
        n += 1
    return max(n, 1)


def heading(text: str) -> bool:
    words = text.split()
    if text.endswith(":"):
        return len(words) <= 3
    return len(words) <= 8 and not text.endswith(".")


def render_table(rows: list[list[str]], caption: str) -> str:
    e = html.escape
    nh = n_header_rows(rows)
    out = ["<table>", f"<caption>{e(caption)}</caption>", "<thead>"]
    for r in rows[:nh]:
        out.append("<tr>" + "".join(f"<th>{e(clean(c))}</th>" for c in r) + "</tr>")
    out += ["</thead>", "<tbody>"]
    for r in rows[nh:]:
        cells = [clean(c) for c in r]
        out.append("<tr>" + f"<th scope=\"row\">{e(cells[0])}</th>" + "".join(f"<td>{e(c)}</td>" for c in cells[1:])
                   + "</tr>")
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


def render(item: dict, title: str, caption: str, after: int) -> str:
    e = html.escape
    body = [f"<h1>{e(title)}</h1>"]
    table = render_table(item["table"]["table"], caption)
    if after == 0:
        body.append(table)
    seen: set[str] = set()
    bullets: list[str] = []

    def flush() -> None:
        if bullets:
            body.append("<ul>\n" + "\n".join(f"<li>{e(b)}</li>" for b in bullets) + "\n</ul>")
            bullets.clear()

    for p in sorted(item["paragraphs"], key=lambda p: p["order"]):
        t = clean(p["text"])
        if t and t not in seen:
            seen.add(t)
            if t.startswith("\u2014"):
                bullets.append(t.lstrip("\u2014 "))
            else:
                flush()
                body.append(f"<h2>{e(t)}</h2>" if heading(t) else f"<p>{e(t)}</p>")
        if p["order"] == after:
            flush()
            body.append(table)
    flush()
    uid = item["table"]["uid"]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
            + "\n".join(body)
            + "\n</main>\n<footer><p>Annual report excerpt from TAT-QA (MIT), dev context "
            + f"{e(uid)}.</p></footer>\n</body>\n</html>\n")


def file_name(uid: str) -> str:
    return f"tatqa_{uid[:8]}.html"


def build(out: Path, mirrors: Path) -> None:
    items = read_dev(mirrors)
    chosen = choose(items)
    got = [x["table"]["uid"] for x in chosen]
    want = [c[0] for c in CONTEXTS]
    if got != want:
        raise RuntimeError(f"the choice changed: {got} != {want}")
    out.mkdir(parents=True, exist_ok=True)
    for item, (uid, title, caption, after) in zip(chosen, CONTEXTS):
        orders = {p["order"] for p in item["paragraphs"]}
        if after and after not in orders:
            raise RuntimeError(f"{uid}: no paragraph {after}")
        (out / file_name(uid)).write_text(render(item, title, caption, after), encoding="utf-8")

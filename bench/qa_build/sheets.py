"""The ``sheets`` kind of the issue-46 answers corpus: spreadsheets (.xlsx, .csv) and slide decks (.pptx).

Sources (bare mirrors fetched with the ``fetch`` tool into ``MIRRORS/<owner>+<name>/repo``), read at pinned commits:

* ``NExTplusplus/TAT-QA`` (MIT): ``dataset_raw/tatqa_dataset_test_gold.json`` only. Each item is one table from a
  real annual report with its surrounding paragraphs. Tables of six companies (picked by the company the paragraphs
  name, or by unmistakable content) become one workbook per company, a sheet per table (a title row naming the
  company, table and unit, a header row of periods, the table's rows with plain figures written as numbers, footnote
  rows copied from the report); a "Notes" sheet holds a few of the report's paragraphs verbatim. Two more tables
  become ``.csv`` files.
* ``vega/vega-datasets`` (BSD-3-Clause; the data are U.S. government works, public domain): ``iowa-electricity.csv``
  (EIA), ``us-employment.csv`` (BLS CES), ``unemployment-across-industries.json`` (BLS CPS) and ``budget.json``
  (OMB, FY 2016 Budget receipts by account), reshaped into three workbooks and one CSV with a row per period.
* ``rajdeep345/ECTSum`` (GPL-3.0): ``data/final/val/ects/`` only (the prepared remarks of six earnings calls); each
  becomes an investor-update deck (title slide with the speakers the call names, highlights, a table slide,
  segment slides, outlook, speaker notes). Every figure on a slide is checked to occur in the transcript.
* ``github/opensource.guide`` (CC-BY-4.0): three articles (security best practices, leadership and governance,
  metrics) become training decks; every quoted phrase is checked against the article.

Deterministic: no clock, no randomness; the zip members of .xlsx / .pptx get fixed times and core properties.
"""
from __future__ import annotations

import csv
import io
import json
import re
import subprocess
from collections import defaultdict
from pathlib import Path

from qa_build import fixed_zip

PINS = {
    "NExTplusplus/TAT-QA": "870accc41953dcde885aabeb963d94aabdc0fbc3",
    "vega/vega-datasets": "cad85578e232704bb0453544742440038038c6a2",
    "rajdeep345/ECTSum": "6909f1fc543104c1c60cf9de63e799f6620d1b0a",
    "github/opensource.guide": "ebc9678e39b55ff5e5c8801d1960904692188e90",
}
TAT_PATH = "dataset_raw/tatqa_dataset_test_gold.json"
FIXED_TIME = "2024-01-01T00:00:00Z"


# -- sources -----------------------------------------------------------------------------------------------------------
def git_show(mirrors: Path, repo: str, path: str) -> bytes:
    base = mirrors / repo.replace("/", "+") / "repo"
    gd = base / ".git" if (base / ".git").is_dir() else base
    if not gd.is_dir():
        raise FileNotFoundError(f"{repo} is not fetched ({gd}); fetch github:{repo} first")
    return subprocess.run(["git", "--git-dir", str(gd), "show", f"{PINS[repo]}:{path}"], check=True,
                          capture_output=True).stdout


# -- cells -------------------------------------------------------------------------------------------------------------
_NUM = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


def tat_value(s: str):
    """A TAT-QA cell as a spreadsheet value: a plain figure ("$1,501.2", "(21.0)", "$ 8,173") becomes a number
    (negative when bracketed) with its number format; anything else (percentages, dashes, "1.30 (1)") stays text."""
    s = " ".join(s.replace("\u2009", " ").split())
    if not s:
        return None, None
    if s in ("$\u2014", "$ \u2014"):
        return "\u2014", None
    t = s.replace("$", "").replace(" ", "")
    neg = t.startswith("(") and t.endswith(")")
    if neg:
        t = t[1:-1].replace("$", "")
    if _NUM.fullmatch(t):
        dec = len(t.split(".")[1]) if "." in t else 0
        v = float(t.replace(",", "")) if dec else int(t.replace(",", ""))
        v = -v if neg else v
        fmt = "#,##0" + ("." + "0" * dec if dec else "")
        return v, f"{fmt};({fmt})"
    return s, None


def _label(s: str) -> str:
    return " ".join(s.replace("\u2009", " ").replace("\n", " ").split())


# -- TAT-QA workbooks --------------------------------------------------------------------------------------------------
# Each sheet: uid of the TAT-QA table, sheet name, title row, header row, TAT rows to skip at the top, row labels to
# replace {tat row index: label}, TAT rows to drop, footnote rows (verbatim from the item's paragraphs).
TAT_BOOKS = [
    ("american_tower_2019_financial_data.xlsx", "American Tower Corporation", [
        ("094094dd16bd0f5d4ff18b46b17e53fb", "Adj EBITDA",
         "American Tower Corporation - Reconciliation of Adjusted EBITDA to Net Income ($ in millions)",
         ["($ in millions)", "2015", "2016", "2017", "2018", "2019"], 1, {}, [],
         ["Totals may not add due to rounding."]),
        ("293279f81a05c9d75adf2cc2ef06ec35", "Cash",
         "American Tower Corporation - Cash, cash equivalents and restricted cash, years ended December 31 "
         "(in millions)",
         ["(in millions)", "2019", "2018", "2017"], 2, {}, [],
         ["Restricted cash includes cash pledged as collateral to secure obligations and all cash whose use is "
          "otherwise limited by contractual provisions."]),
        ("dd72572fa20be30bb762c6d9646ca39d", "Supplemental CF",
         "American Tower Corporation - Supplemental cash flow information, years ended December 31 (in millions)",
         ["(in millions)", "2019", "2018", "2017"], 1, {}, [],
         ["(1) Related to the note extinguishment with TV Azteca, S.A. de C.V. in 2018."]),
        ("c3735be8d1d086ef473b5e737ba57147", "Other assets",
         "American Tower Corporation - Notes receivable and other non-current assets (in millions)",
         ["(in millions)", "As of December 31, 2019", "As of December 31, 2018"], 2, {}, [],
         ["The reduction in Long-term prepaid ground rent is a result of the reclassification of assets to the "
          "Right-of-use asset in connection with the Company\u2019s adoption of the new lease accounting standard."]),
        ("1bc7290342bd0f4cc0a151c27ab69a8d", "Pro forma",
         "American Tower Corporation - Pro forma consolidated results (unaudited; in millions, except per share "
         "amounts)",
         ["(in millions, except per share)", "2019", "2018"], 2, {}, [],
         ["The following table presents the unaudited pro forma financial results as if the 2019 acquisitions had "
          "occurred on January 1, 2018 and the 2018 acquisitions had occurred on January 1, 2017."]),
    ], []),
    ("tencent_2019_results.xlsx", "Tencent Holdings", [
        ("abd9a03c501a39369634fb1aa57880f5", "Q4 income statement",
         "Tencent Holdings - Fourth quarter of 2019 compared to fourth quarter of 2018 (unaudited, RMB in millions)",
         ["RMB in millions", "Three months ended 31 December 2019", "Three months ended 31 December 2018"], 5, {},
         [21], []),
        ("7650d42c0b8ee9e5720698566b70419b", "Q4 cost of revenues",
         "Tencent Holdings - Cost of revenues by line of business, fourth quarter (unaudited, RMB in millions, "
         "unless specified)",
         ["Line of business", "Q4 2019 amount", "Q4 2019 % of segment revenues", "Q4 2018 amount (restated)",
          "Q4 2018 % of segment revenues (restated)"], 8, {}, [], []),
        ("2f35de3a90d60ef27c2036b3543fec53", "FY revenues",
         "Tencent Holdings - Revenues by line of business, year ended 31 December (RMB in millions, unless "
         "specified)",
         ["Line of business", "2019 amount", "2019 % of total revenues", "2018 amount (restated)",
          "2018 % of total revenues (restated)"], 6, {}, [], []),
    ], [
        ("abd9a03c501a39369634fb1aa57880f5", 2), ("abd9a03c501a39369634fb1aa57880f5", 3),
        ("abd9a03c501a39369634fb1aa57880f5", 4), ("7650d42c0b8ee9e5720698566b70419b", 4),
        ("2f35de3a90d60ef27c2036b3543fec53", 3),
    ]),
    ("navios_maritime_holdings_2019.xlsx", "Navios Maritime Holdings", [
        ("db004e01745b46797e6073aa68868331", "Revenue by region",
         "",
         ["Navios Maritime Holdings revenue by region (USD thousands)", "Year ended December 31, 2019",
          "Year ended December 31, 2018", "Year ended December 31, 2017"],
         1, {}, [],
         ["Vessels operate on a worldwide basis and are not restricted to specific locations.",
          "For the Logistics Business, all long-lived assets are located in South America."]),
        ("5208576a85192612b24f629769981aa8", "Receivables",
         "",
         ["Navios Maritime Holdings accounts receivable, net (USD thousands)", "December 31, 2019",
          "December 31, 2018"], 1, {}, [], []),
        ("1c66f3ce250aa12c64b054c72423134d", "Accrued expenses",
         "",
         ["Navios Maritime Holdings accrued expenses and other liabilities (USD thousands)", "December 31, 2019",
          "December 31, 2018"], 1, {}, [], []),
    ], []),
    ("micron_fy2019_financials.xlsx", "Micron Technology", [
        ("0ad31a3d0f7aff9ffd4d3a6ebbcb40f1", "Selected data",
         "",
         ["Micron selected financial data (USD millions, except per share)", "FY2019", "FY2018", "FY2017", "FY2016",
          "FY2015"], 2, {}, [], []),
        ("c49bcea15896dba87eb972b0350e50d2", "Income statement",
         "",
         ["Micron results of operations (USD millions)", "FY2019", "FY2019 % of revenue", "FY2018",
          "FY2018 % of revenue", "FY2017",
          "FY2017 % of revenue"], 1, {}, [], []),
        ("f7ac8d02826ae72b28ff5f27bf53870e", "Cash flows",
         "",
         ["Micron cash flows (USD millions)", "FY2019", "FY2018", "FY2017"], 1, {}, [], []),
    ], [
        ("c49bcea15896dba87eb972b0350e50d2", 4), ("c49bcea15896dba87eb972b0350e50d2", 7),
        ("c49bcea15896dba87eb972b0350e50d2", 8), ("f7ac8d02826ae72b28ff5f27bf53870e", 5),
    ]),
    ("bce_2019_operating_metrics.xlsx", "BCE (Bell Canada)", [
        ("28b843dd15fa99919296ccee8e2469ef", "Capex",
         "BCE - Capital expenditures by segment, 2019 vs 2018 ($ millions)",
         ["Segment", "2019", "2018", "$ change", "% change"], 1,
         {2: "Bell Wireless capital intensity ratio", 4: "Bell Wireline capital intensity ratio",
          6: "Bell Media capital intensity ratio", 8: "BCE capital intensity ratio"}, [], []),
        ("03a1386971da69e2cd625b87239694d4", "Retail subscribers",
         "BCE retail subscribers (millions)",
         ["Subscribers (millions)", "2019", "2018", "Change"], 2, {}, [],
         ["(1) Excludes wholesale subscribers.", "(2) Excludes business telephone services."]),
        ("becd30d40294d901789bd1e35c057cc7", "Wireless revenues",
         "Bell Wireless - Operating revenues ($ millions)",
         ["Revenues", "2019", "2018", "$ change", "% change"], 1, {}, [], []),
        ("a8c11cade3237853c6a6869143f7ec37", "Retail TV",
         "Bell - Retail TV subscribers and net activations",
         ["Retail TV", "2019", "2018", "Change", "% change"], 1,
         {1: "Retail net subscriber activations (losses) (1)", 2: "IPTV net subscriber activations",
          3: "Satellite net subscriber activations (losses)", 4: "Total retail subscribers (1)",
          5: "IPTV subscribers", 6: "Satellite subscribers"}, [],
         ["(1) As of January 1, 2019, we are no longer reporting wholesale subscribers in our TV subscriber base "
          "reflecting our focus on the retail market. Consequently, we restated previously reported 2018 "
          "subscribers for comparability."]),
    ], [
        ("28b843dd15fa99919296ccee8e2469ef", 3), ("28b843dd15fa99919296ccee8e2469ef", 5),
        ("becd30d40294d901789bd1e35c057cc7", 6), ("a8c11cade3237853c6a6869143f7ec37", 3),
    ]),
    ("jabil_fy2019.xlsx", "Jabil", [
        ("f4e5e687e6185cabde6d70a4d37f729f", "Quarterly FY2019",
         "",
         ["Jabil quarterly results FY2019, unaudited (USD thousands, except per share data)",
          "Q4 FY2019 (three months ended August 31, 2019)",
          "Q3 FY2019 (three months ended May 31, 2019)", "Q2 FY2019 (three months ended February 28, 2019)",
          "Q1 FY2019 (three months ended November 30, 2018)"], 3, {}, [],
         ["(1) Includes acquisition and integration charges related to our strategic collaboration with JJMD of "
          "$17.6 million, $13.4 million, $12.8 million, $8.9 million and $8.1 million for the three months ended "
          "August 31, 2019, May 31, 2019, February 28, 2019, November 30, 2018 and August 31, 2018, respectively.",
          "(2) Includes ($13.3 million), $111.4 million and $30.9 million of income tax (benefit) expense for the "
          "three months ended November 30, 2018, August 31, 2018 and February 28, 2018, respectively, related to "
          "the Tax Act.",
          "(3) Includes a restructuring of securities loss of $29.6 million for the three months ended August 31, "
          "2019.",
          "(4) Includes a distressed customer charge of $6.2 million, $18.0 million and $14.7 million during the "
          "three months ended August 31, 2019, August 31, 2018 and February 28, 2018, respectively."]),
        ("0b31ec7e0200c0354c067a2cf192f4af", "Cash flows",
         "",
         ["Jabil cash flows, fiscal years ended August 31 (USD thousands)", "FY2019", "FY2018", "FY2017"], 2, {}, [],
         []),
    ], []),
]

# Two tables as CSV files: uid, file name, header, TAT rows to skip, unit column values {tat row: unit}
TAT_CSVS = [
    ("09b859c31ad70ef8eaf63b92734256e1", "fitbit_key_business_metrics.csv",
     ["Fitbit key business metric", "Unit", "FY2019", "FY2018", "FY2017"], 3,
     {3: "thousands of devices", 4: "thousands of users", 5: "USD thousands", 6: "USD thousands"}),
    ("504d01c4bb83fc6d346c56fee69948cc", "sap_dividend_per_share.csv",
     ["SAP SE year ended December 31", "Dividend paid per ordinary share (EUR)",
      "Dividend paid per ordinary share (USD)"], 2, {}),
]
SAP_NOTES = [
    "(1) Translated for the convenience of the reader from euro into U.S. dollars at the Noon Buying Rate for "
    "converting euro into U.S. dollars on the dividend payment date.",
    "(2) Subject to approval at the Annual General Meeting of Shareholders of SAP SE currently scheduled to be held on "
    "May 15, 2020.",
    "(3) Translated for the convenience of the reader from euro into U.S. dollars at the Noon Buying Rate for "
    "converting euro into U.S. dollars on February 7, 2020 of US$1.0950 per \u20ac1.00.",
]


def _tat_items(mirrors: Path) -> dict[str, dict]:
    data = json.loads(git_show(mirrors, "NExTplusplus/TAT-QA", TAT_PATH))
    return {x["table"]["uid"]: x for x in data}


def _para_text(item: dict) -> str:
    return " ".join(p["text"] for p in item["paragraphs"])


def _style_title(ws, ncols: int) -> None:
    from openpyxl.styles import Font
    ws.cell(row=1, column=1).font = Font(bold=True, size=12)


def _write_tat_sheet(ws, item: dict, title: str, header: list[str], skip: int, relabel: dict, drop: list,
                     notes: list[str]) -> None:
    """A title row, a blank row, the header row, the rows, footnotes; or, when ``title`` is empty, the header row
    first (its first cell names the company, the table and the unit)."""
    from openpyxl.styles import Alignment, Font

    rows = item["table"]["table"]
    ncol = len(header)
    hrow = 1
    if title:
        ws.cell(row=1, column=1, value=title)
        _style_title(ws, ncol)
        hrow = 3
    for j, h in enumerate(header, 1):
        c = ws.cell(row=hrow, column=j, value=h)
        c.font = Font(bold=True)
        c.alignment = Alignment(wrap_text=True)
    r = hrow + 1
    for i, row in enumerate(rows):
        if i < skip or i in drop:
            continue
        label = relabel.get(i, _label(row[0]))
        ws.cell(row=r, column=1, value=label)
        for j, cell in enumerate(row[1:ncol], 2):
            v, fmt = tat_value(cell)
            if v is None:
                continue
            c = ws.cell(row=r, column=j, value=v)
            if fmt:
                c.number_format = fmt
        r += 1
    text = _para_text(item)
    if notes:
        r += 1
        for n in notes:
            if n not in text and n.replace("\u2019", "'") not in text:
                raise ValueError(f"footnote not in the report's paragraphs: {n[:60]!r}")
            ws.cell(row=r, column=1, value=n)
            r += 1
    ws.column_dimensions["A"].width = 60
    for j in range(2, ncol + 1):
        ws.column_dimensions[chr(64 + j)].width = 18


def _save_xlsx(wb, path: Path) -> None:
    wb.properties.creator = "issue-46 corpus"
    wb.properties.lastModifiedBy = None
    buf = io.BytesIO()
    wb.save(buf)
    path.write_bytes(fixed_zip(buf.getvalue()))


def build_tat(out: Path, mirrors: Path) -> None:
    import openpyxl

    items = _tat_items(mirrors)
    for name, company, sheets, note_paras in TAT_BOOKS:
        wb = openpyxl.Workbook()
        wb.remove(wb.active)
        for uid, sheet, title, header, skip, relabel, drop, notes in sheets:
            ws = wb.create_sheet(sheet)
            _write_tat_sheet(ws, items[uid], title, header, skip, relabel, drop, notes)
        if note_paras:
            ws = wb.create_sheet("Notes")
            ws.cell(row=1, column=1, value=f"{company} - Notes from the annual report")
            _style_title(ws, 2)
            ws.cell(row=3, column=1, value="No.")
            ws.cell(row=3, column=2, value="Commentary")
            for k, (uid, order) in enumerate(note_paras, 1):
                para = next(p["text"] for p in items[uid]["paragraphs"] if p["order"] == order)
                ws.cell(row=3 + k, column=1, value=k)
                ws.cell(row=3 + k, column=2, value=" ".join(para.split()))
            ws.column_dimensions["B"].width = 120
        _save_xlsx(wb, out / name)
    for uid, name, header, skip, units in TAT_CSVS:
        item = items[uid]
        rows = [header]
        for i, row in enumerate(item["table"]["table"]):
            if i < skip:
                continue
            cells = [_label(c) for c in row]
            if units:  # Fitbit: a unit column, figures plain ("$(128,333)" -> "-128333")
                vals = []
                for c in cells[1:4]:
                    v, _ = tat_value(c)
                    vals.append(str(v))
                rows.append([cells[0], units[i]] + vals)
            else:
                rows.append(cells[:3])
        if name.startswith("sap"):
            text = _para_text(item)
            for n in SAP_NOTES:
                if n not in text:
                    raise ValueError(f"SAP note not in the paragraphs: {n[:60]!r}")
                rows.append([n, "", ""])
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        (out / name).write_text(buf.getvalue(), encoding="utf-8")


# -- public data workbooks (vega-datasets) -----------------------------------------------------------------------------
def build_public(out: Path, mirrors: Path) -> None:
    """The four public spreadsheets from vega/vega-datasets (each of its own kind of layout)."""
    vega = "vega/vega-datasets"
    _iowa(out, mirrors, vega)
    _employment(out, mirrors, vega)
    _unemployment(out, mirrors, vega)
    _receipts(out, mirrors, vega)


def _iowa(out: Path, mirrors: Path, vega: str) -> None:
    import openpyxl
    from openpyxl.styles import Font

    bold = Font(bold=True)
    # 1. Iowa net generation by source, a row per year
    rows = list(csv.DictReader(io.StringIO(git_show(mirrors, vega, "data/iowa-electricity.csv").decode())))
    by_year: dict[str, dict[str, int]] = defaultdict(dict)
    for r in rows:
        by_year[r["year"][:4]][r["source"]] = int(r["net_generation"])
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Net generation"
    ws.append(["Iowa annual net generation of electricity by source (thousand megawatthours)"])
    ws["A1"].font = Font(bold=True, size=12)
    ws.append([])
    head = ["Year", "Fossil Fuels", "Nuclear Energy", "Renewables", "All sources"]
    ws.append(head)
    for c in ws[3]:
        c.font = bold
    for y in sorted(by_year):
        v = by_year[y]
        ws.append([y, v["Fossil Fuels"], v["Nuclear Energy"], v["Renewables"],
                   v["Fossil Fuels"] + v["Nuclear Energy"] + v["Renewables"]])
        for c in ws[ws.max_row][1:]:
            c.number_format = "#,##0"
    ws2 = wb.create_sheet("About")
    ws2.append(["About this data"])
    ws2["A1"].font = Font(bold=True, size=12)
    ws2.append([])
    ws2.append(["Item", "Description"])
    for k, v in [
        ("Source", "U.S. Energy Information Administration (EIA), Electricity Data Browser"),
        ("Downloaded", "May 6, 2018"),
        ("Geography", "State of Iowa"),
        ("Unit", "thousand megawatthours"),
        ("Coverage", "calendar years 2001 to 2017"),
        ("All sources", "sum of the three source columns, computed for this workbook"),
    ]:
        ws2.append([k, v])
    ws.column_dimensions["A"].width = 14
    ws2.column_dimensions["B"].width = 70
    _save_xlsx(wb, out / "iowa_electricity_net_generation.xlsx")


def _employment(out: Path, mirrors: Path, vega: str) -> None:
    import openpyxl
    from openpyxl.styles import Font

    bold = Font(bold=True)
    # 2. U.S. nonfarm employment by industry, monthly, a sheet per year 2008-2010
    emp = list(csv.DictReader(io.StringIO(git_show(mirrors, vega, "data/us-employment.csv").decode())))
    cols = [("nonfarm", "Total nonfarm"), ("construction", "Construction"), ("manufacturing", "Manufacturing"),
            ("retail_trade", "Retail trade"), ("information", "Information"),
            ("financial_activities", "Financial activities"), ("leisure_and_hospitality", "Leisure and hospitality"),
            ("government", "Government"), ("nonfarm_change", "Change in total nonfarm from prior month")]
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for year in ("2008", "2009", "2010"):
        ws = wb.create_sheet(year)
        ws.append([f"U.S. employment by industry, {year} (thousands of jobs, seasonally adjusted)"])
        ws["A1"].font = Font(bold=True, size=12)
        ws.append([])
        ws.append(["Month"] + [c[1] for c in cols])
        for c in ws[3]:
            c.font = bold
        for r in emp:
            if r["month"].startswith(year):
                vals = []
                for key, _ in cols:
                    f = float(r[key])
                    vals.append(int(f) if f.is_integer() else f)
                ws.append([r["month"][:7]] + vals)
        ws.column_dimensions["A"].width = 10
    ws = wb.create_sheet("Source")
    ws.append(["Source and notes"])
    ws["A1"].font = Font(bold=True, size=12)
    ws.append([])
    ws.append(["Item", "Note"])
    for k, v in [("Source", "U.S. Bureau of Labor Statistics, Current Employment Statistics (CES)"),
                 ("Unit", "thousands of jobs, seasonally adjusted"),
                 ("Months", "each row is one calendar month, written YYYY-MM"),
                 ("Change column", "change in total nonfarm employment from the prior month, thousands")]:
        ws.append([k, v])
    _save_xlsx(wb, out / "us_employment_by_industry_2008_2010.xlsx")


def _unemployment(out: Path, mirrors: Path, vega: str) -> None:
    # 3. Unemployment across industries, 2009, one row per industry and month (long format CSV)
    un = json.loads(git_show(mirrors, vega, "data/unemployment-across-industries.json"))
    order = sorted({r["series"] for r in un})
    rows = [["Industry", "Month", "Unemployed persons (thousands)", "Unemployment rate (%)"]]
    for s in order:
        for r in sorted((r for r in un if r["series"] == s and r["year"] == 2009), key=lambda r: r["month"]):
            rows.append([s, f"2009-{r['month']:02d}", str(r["count"]), f"{r['rate']:.1f}"])
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    (out / "unemployment_by_industry_2009.csv").write_text(buf.getvalue(), encoding="utf-8")


def _receipts(out: Path, mirrors: Path, vega: str) -> None:
    import openpyxl
    from openpyxl.styles import Font

    bold = Font(bold=True)
    # 4. Federal receipts by source category, FY 2008-2020 (OMB, FY 2016 Budget), millions of dollars
    bud = json.loads(git_show(mirrors, vega, "data/budget.json"))
    years = [str(y) for y in range(2008, 2021)]
    cats: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    onoff: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in bud:
        for y in years:
            v = int(str(r[y]).replace(",", "") or 0)
            cats[r["Source category name"]][y] += v
            onoff[r["On- or off-budget"]][y] += v
    cat_order = ["Individual Income Taxes", "Corporation Income Taxes", "Social Insurance Taxes and Contributions",
                 "Excise Taxes", "Estate and Gift Taxes", "Customs Duties", "Misc. Governmental Receipts",
                 "Legislative Proposals"]
    assert set(cat_order) == set(cats), sorted(cats)

    def mil(v: int) -> int:  # the source is in thousands of dollars
        return int(round(v / 1000))

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Receipts by source"
    ws.append(["U.S. federal receipts by source category, fiscal years 2008-2020 (millions of dollars)"])
    ws["A1"].font = Font(bold=True, size=12)
    ws.append(["FY 2016 Budget of the U.S. Government: actual receipts through FY 2014, estimates for FY 2015-2020"])
    ws.append(["Source category"] + [f"FY{y} {'actual' if int(y) <= 2014 else 'estimate'}" for y in years])
    for c in ws[3]:
        c.font = bold
    for cat in cat_order:
        ws.append([cat] + [mil(cats[cat][y]) for y in years])
    ws.append(["Total receipts"] + [mil(sum(cats[c][y] for c in cat_order)) for y in years])
    for row in ws.iter_rows(min_row=4, min_col=2):
        for c in row:
            c.number_format = "#,##0"
    ws.column_dimensions["A"].width = 42
    ws2 = wb.create_sheet("On- and off-budget")
    ws2.append(["U.S. federal receipts, on-budget and off-budget, fiscal years 2008-2020 (millions of dollars)"])
    ws2["A1"].font = Font(bold=True, size=12)
    ws2.append([])
    ws2.append(["Budget status"] + [f"FY{y}" for y in years])
    for c in ws2[3]:
        c.font = bold
    for k in ("On-budget", "Off-budget"):
        ws2.append([k] + [mil(onoff[k][y]) for y in years])
    ws2.append(["Note: off-budget receipts are mainly Social Security payroll taxes; source: Office of Management "
                "and Budget."])
    _save_xlsx(wb, out / "us_federal_receipts_fy2008_2020.xlsx")


# -- decks -------------------------------------------------------------------------------------------------------------
# A slide: (kind, title, body, notes). kind "title": body = subtitle lines; "bullets": body = lines (a line starting
# with "- " is a second-level bullet); "table": body = rows (first = header).
ECT_DECKS = [
    ("HIG_q2_2021", "the_hartford_q2_2021_investor_update.pptx", [
        ("title", "The Hartford: Second Quarter 2021 Results",
         ["Investor update based on the Q2 2021 earnings call",
          "Speakers: Chris Swift, Chairman and CEO; Beth Costello, Chief Financial Officer; Doug Elliot, President"],
         None),
        ("bullets", "Q2 2021 highlights",
         ["Core earnings of $836 million, or $2.33 per diluted share, up 91% from last year",
          "Book value per diluted share excluding AOCI rose 8% since June 30, 2020, to $49.01",
          "Trailing 12-month core earnings ROE of 13.1%",
          "$694 million returned to shareholders in the quarter"],
         "Strong performance across all businesses, excellent investment results and significantly lower COVID losses "
         "than in the prior year period."),
        ("table", "Results by business, Q2 2021",
         [["Business", "Q2 2021", "Comparison"],
          ["P&C combined ratio", "88.5", "improved 8.4 points vs Q2 2020"],
          ["Commercial Lines underlying combined ratio", "89.4", ""],
          ["Personal Lines underlying combined ratio", "88.2", "rose 7.5 points"],
          ["Group Benefits core earnings", "$149 million", "up 46%"],
          ["Hartford Funds core earnings", "$51 million", "$33 million in Q2 2020"],
          ["Corporate core loss", "$52 million", "$6 million loss in Q2 2020"]],
         "Personal Lines results were down from second quarter 2020 as last year benefited from significantly lower "
         "auto frequency due to the pandemic."),
        ("bullets", "Commercial Lines",
         ["Written premium up 15%, with growth in all lines of business",
          "Middle & Large Commercial written premium growth of 20%",
          "Middle Market new business of $147 million, up 48%",
          "Policy retention in Middle Market up four points to 82%",
          "Global Specialty written premium growth of 16%; Global Reinsurance up 26%"],
         "Cross-sell new business since the Navigators acquisition: $185 million, on pace to eclipse the initial goal "
         "of $200 million a year early."),
        ("bullets", "Group Benefits",
         ["Sales of nearly $100 million; persistency of 91.1%",
          "All-cause excess mortality of $25 million in the quarter",
          "Excess mortality of $210 million through the first six months",
          "Disability loss ratio of 64.2%, up 1.6 points"],
         "The disability loss ratio rose because the prior year benefited from favorable short-term disability claim "
         "frequency due to the deferral of elective medical procedures."),
        ("bullets", "Investments and capital",
         ["Net investment income of $581 million, up 71%",
          "Annualized limited partnership return of 33%",
          "Share repurchases of $568 million and common dividends of $126 million in the quarter",
          "$1.7 billion remaining under the $2.5 billion authorization through 2022"],
         "On June 30, 2021 the company received $217 million from the sale of its ownership interest in Talcott."),
        ("bullets", "Outlook",
         ["Hartford Next: pre-tax savings of approximately $540 million in 2022 and $625 million in 2023",
          "Core earnings ROE target of 13% to 14% in 2022 and into 2023",
          "Dividends from subsidiaries of approximately $725 million to $900 million over the second half of 2021",
          "Commercial Lines 4% to 5% multiyear CAGR guidance"],
         "Excess mortality trends are expected to improve significantly in the second half of 2021."),
    ], ["$836 million or $2.33 per diluted share", "up 91%", "$49.01", "13.1%", "$694 million", "88.5",
        "8.4 points", "89.4", "88.2", "7.5 points", "$149 million", "up 46%", "$51 million", "$33 million",
        "$52 million", "$6 million", "up 15%", "20%", "$147 million, up 48%", "82%", "16%", "26%", "$185 million",
        "$200 million", "nearly $100 million", "91.1%", "$25 million", "$210 million", "64.2%", "1.6 points",
        "$581 million", "up 71%", "33%", "$568 million", "$126 million", "$1.7 billion", "$2.5 billion",
        "$217 million", "$540 million in 2022 and $625 million in 2023", "13% to 14%", "$725 million to $900 million",
        "4% to 5%", "Chris Swift", "Beth Costello", "Doug Elliot"]),
    ("APH_q3_2020", "amphenol_q3_2020_investor_update.pptx", [
        ("title", "Amphenol: Third Quarter 2020 Results",
         ["Investor update based on the Q3 2020 earnings call",
          "Presented by Adam Norwitt, CEO, and Craig Lampo, CFO"], None),
        ("bullets", "Q3 2020 highlights",
         ["Record sales of $2,323 million, up 11% in US dollars and 9% organically",
          "GAAP diluted EPS of $1.12; adjusted diluted EPS of $1.09, up 15%",
          "Operating margin of 20.5%, up 250 basis points sequentially",
          "Orders of $2,275 million; book-to-bill of 0.98 to 1",
          "Board approved a 16% increase in the quarterly dividend"],
         "Sequential sales growth of 17% from the second quarter was significantly higher than the original "
         "expectations."),
        ("table", "Sales by end market, Q3 2020",
         [["End market", "Share of sales", "Change vs Q3 2019"],
          ["Military", "12%", "+6%"],
          ["Commercial aerospace", "2%", "-40%"],
          ["Industrial", "22%", "+21%"],
          ["Automotive", "17%", "+4%"],
          ["Mobile devices", "16%", "+25%"],
          ["Mobile networks", "6%", "-19%"],
          ["IT and data communications", "21%", "+24%"],
          ["Broadband", "4%", "+5%"]],
         "Commercial aerospace sales fell because the commercial aircraft market experienced unprecedented declines in "
         "demand for new aircraft due to the pandemic-related disruptions to the global travel industry."),
        ("table", "Segments",
         [["Segment", "Share of sales", "Sales growth (USD)", "Q3 2020 margin", "Q3 2019 margin"],
          ["Interconnect", "96%", "11%", "22.4%", "21.7%"],
          ["Cable", "4%", "2%", "10.7%", "10.2%"]], None),
        ("bullets", "Cash flow and balance sheet",
         ["Cash flow from operations of $398 million, 119% of adjusted net income",
          "Free cash flow of $330 million",
          "Repurchased 1.9 million shares for $202 million",
          "Cash and short-term investments of $1.5 billion at September 30",
          "Total debt of $3.8 billion; net debt of $2.4 billion"],
         "Third quarter EBITDA was $568 million and the pro forma net leverage ratio was 1.2 times."),
        ("bullets", "Outlook",
         ["Q4 2020: sales of $2,160 million to $2,200 million",
          "Q4 2020: adjusted diluted EPS of $0.98 to $1.00",
          "Full year 2020: sales of $8,333 million to $8,373 million",
          "Full year 2020: adjusted diluted EPS of $3.59 to $3.61"],
         "The outlook assumes no new material disruptions from the pandemic and constant exchange rates. The expected "
         "decline in full-year earnings relates directly to the significant cost and disruptions associated with the "
         "COVID-19 pandemic, particularly during the first half of 2020."),
    ], ["$2,323 million", "11%", "9% organically", "$1.12", "$1.09", "15%", "20.5%", "250 basis points",
        "$2,275 million", "0.98 to 1", "16% increase", "17%", "12%", "6%", "2%", "40%", "22%", "21%", "17%",
        "4%", "16%", "25%", "19%", "24%", "5%", "96%", "22.4%", "21.7%", "10.7%", "10.2%", "$398 million", "119%",
        "$330 million", "1.9 million shares", "$202 million", "$1.5 billion", "$3.8 billion", "$2.4 billion",
        "$568 million", "1.2 times", "$2,160 million to $2,200 million", "$0.98 to $1.00",
        "$8,333 million to $8,373 million", "$3.59 to $3.61", "Adam Norwitt", "Craig Lampo"]),
    ("HRB_q4_2020", "hr_block_fy2020_q4_update.pptx", [
        ("title", "H&R Block: Fiscal 2020 Fourth Quarter Update",
         ["Investor update based on the fiscal Q4 2020 earnings call",
          "On the call: Jeff Jones, President and CEO; Tony Bowen, CFO"], None),
        ("bullets", "Responding to the pandemic",
         ["At the peak, nearly 20% of the office network was closed to the public",
          "Drop-off required in nearly half the network",
          "Work-from-home model for tax pros stood up within two weeks",
          "Service quality scores up 2 points in Assisted and 5 points in DIY"],
         "Through June 5, the IRS reported total filings down 6%."),
        ("table", "Fiscal 2020 results",
         [["Metric", "Fiscal 2020"],
          ["Revenues", "$2.6 billion (down 14.7%)"],
          ["Total operating expenses", "up 3.4%"],
          ["Wave goodwill impairment", "$106 million (non-cash)"],
          ["Pre-tax loss from continuing operations", "$3 million"],
          ["GAAP EPS", "$0.03"],
          ["Adjusted EPS", "$0.84"]],
         "Revenues declined because of lower tax return volumes as a result of the extension of the federal tax "
         "filing deadline, partially offset by the contribution of Wave."),
        ("bullets", "Wave",
         ["Over 40% revenue growth through mid-March, then flat revenues in April and May",
          "Wave Money, a small business bank account, expanded to more customers",
          "No monthly fees or minimums"],
         "The goodwill impairment was recorded due to the pandemic and its impact on small businesses."),
        ("bullets", "Capital allocation",
         ["Ended the year with $2.7 billion in cash, including the full $2 billion drawn on the line of credit",
          "Quarterly dividend of $0.26 per share, payable July 1",
          "Repurchased 10.1 million shares for $247 million at an average price of $24.36 in fiscal 2020",
          "No share repurchases in the fourth quarter"],
         "The company has never missed a dividend payment since going public in 1962. It did not meet the debt to "
         "EBITDA covenant of 3.5 times on April 30 and secured a waiver from its lenders."),
        ("bullets", "Fiscal 2021 outlook",
         ["No financial outlook provided at this time",
          "Tax season recap on the first quarter call in September",
          "Full fiscal 2021 outlook on the second quarter call in December",
          "Extension costs expected in Q1: about $10 million more marketing and about $10 million more interest "
          "expense"],
         "Cost actions include renegotiating rents, a hiring freeze and eliminating merit increases for fiscal 2021; "
         "a non-binding letter of intent was signed with MetaBank to be the provider of the financial products."),
    ], ["nearly 20%", "nearly half", "two weeks", "2 points", "5 points", "down 6%", "$2.6 billion", "14.7%",
        "3.4%", "$106 million", "$3 million", "$0.03", "$0.84", "over 40%", "Wave Money", "$2.7 billion",
        "$2 billion", "$0.26 per share", "July 1", "10.1 million shares for $247 million", "$24.36", "1962",
        "3.5 times", "September", "December", "$10 million in marketing", "$10 million in interest", "MetaBank",
        "Jeff Jones", "Tony Bowen"]),
    ("GEF_q4_2021", "greif_q4_fy2021_investor_update.pptx", [
        ("title", "Greif: Fourth Quarter and Fiscal 2021 Results",
         ["Investor update based on the Q4 fiscal 2021 earnings call",
          "Hosted by Matt Eichmann with Pete Watson (President and CEO), Larry Hilsheimer (CFO) and Ole Rosgaard "
          "(COO)"], None),
        ("bullets", "Fiscal 2021 highlights",
         ["Record financial results in fiscal 2021",
          "Q4 adjusted Class A EPS of $1.93, more than doubled",
          "Fiscal 2021 adjusted Class A EPS of $5.60, a 74% improvement",
          "Q4 net sales excluding foreign exchange up 35%",
          "Q4 adjusted EBITDA up $57 million"],
         "Part of the earnings improvement came from a lower-than-anticipated non-GAAP tax rate of 18.1%."),
        ("bullets", "ESG",
         ["Global waste diversion rate of roughly 85%, from about 70% last year",
          "50 global facilities at zero waste to landfill status",
          "Fourth Colleague Resource Group launched",
          "ESG KPIs linked to the Greif business system"], None),
        ("table", "Segment results, Q4 fiscal 2021",
         [["Segment", "Q4 adjusted EBITDA change", "Volume"],
          ["Global Industrial Packaging (GIP)", "up roughly $47 million", "steel drum volume down 1.5% per day"],
          ["Paper Packaging", "up roughly $10 million", "tube and core volumes up 7% per day"]],
         "Paper packaging sales rose by roughly $120 million due to stronger volumes and higher published "
         "containerboard and boxboard prices; the OCC index headwind was $51 million."),
        ("bullets", "Fiscal 2022 guidance",
         ["Adjusted Class A EPS of $6.15 at the midpoint",
          "Adjusted free cash flow of $400 million to $460 million",
          "Capital expenditures of $150 million to $170 million",
          "Lower GIP profits, more than offset by higher paper packaging profits"],
         "GIP profits will be lower because the run-up in steel costs provided a roughly $100 million tailwind to "
         "fiscal 2021 results that will not recur."),
        ("bullets", "Leadership transition",
         ["Pete Watson's final earnings call as President and CEO",
          "Ole Rosgaard to lead Greif going forward",
          "Pete Watson took the helm in November of 2015"], None),
    ], ["$1.93", "$5.60", "74%", "35%", "57 million", "18.1%", "85%", "70%", "50 of our global facilities",
        "fourth Colleague Resource Group", "$47 million", "1.5% per day", "$10 million", "7% per day",
        "$120 million", "$6.15", "400 million and 460 million", "150 million and 170 million", "$100 million",
        "November of 2015", "Matt Eichmann", "Pete Watson", "Larry Hilsheimer", "Ole Rosgaard"]),
    ("WGO_q2_2022", "winnebago_q2_fy2022_investor_update.pptx", [
        ("title", "Winnebago Industries: Q2 Fiscal 2022 Results",
         ["Investor update based on the second-quarter fiscal 2022 earnings call",
          "Michael Happe, President and CEO; Bryan Hughes, Senior Vice President and CFO"], None),
        ("bullets", "Q2 FY2022 highlights",
         ["Revenues of $1.2 billion, up 39% year over year",
          "Organic growth of 29% excluding Barletta",
          "Gross margin of 18.6%, equal to last year",
          "Adjusted EPS of $3.14, up 42%; reported EPS of $2.69",
          "Net income of $91.2 million, up 32%"],
         "Growth was driven by a combination of pricing actions and unit shipments. Barletta contributed nine "
         "percentage points of growth."),
        ("table", "Segment results, Q2 FY2022",
         [["Segment", "Revenues", "Adjusted EBITDA", "Adjusted EBITDA margin"],
          ["Towable", "$646.6 million (+47%)", "$100.6 million", "15.6%"],
          ["Motorhome", "$417.6 million (+9%)", "$46.1 million", "11%"],
          ["Marine", "$97.3 million", "$13.0 million", "13.3%"]],
         "Motorhome adjusted EBITDA decreased because of ongoing supply chain inconsistencies in the delivery of "
         "chassis and other key components."),
        ("bullets", "Market share and balance sheet",
         ["RV market share of 14.3% on a trailing three-month basis through January",
          "Barletta: fifth-largest pontoon boat company, 4.6% share",
          "Liquidity of approximately $327 million; leverage ratio of 0.8 times",
          "Share buybacks of $40 million in the quarter"], None),
        ("bullets", "Outlook for calendar 2022",
         ["RV wholesale shipments could be down low to mid-single digits versus 600,000 units in 2021",
          "RV retail sales likely the second highest on record",
          "Retail sales down mid- to high single digits",
          "Marine inventories the last to recover, possibly well into 2023"],
         "At the January RV show in Tampa the company revealed the e-RV, an all-electric zero-emission motor home "
         "concept."),
    ], ["$1.2 billion", "39%", "29%", "18.6%", "$3.14", "42%", "$2.69", "$91.2 million", "32%",
        "nine percentage points", "$646.6 million", "47%", "$100.6 million", "15.6%", "$417.6 million", "9%",
        "$46.1 million", "11%", "$97.3 million", "$13.0 million", "13.3%", "14.3%", "fifth-largest", "4.6%",
        "$327 million", "0.8 times", "$40 million", "600,000 units", "second highest on record", "2023", "e-RV",
        "Michael Happe", "Bryan Hughes"]),
    ("ZBH_q4_2020", "zimmer_biomet_q4_2020_investor_update.pptx", [
        ("title", "Zimmer Biomet: Fourth Quarter 2020 Update",
         ["Investor update based on the Q4 2020 earnings call",
          "Bryan Hanson, President and CEO; Suketu Upadhyay, CFO"], None),
        ("bullets", "Q4 2020 highlights",
         ["Net sales of $2.085 billion, down 1.9% reported and 3.7% in constant currency",
          "GAAP diluted EPS of $1.59; adjusted diluted EPS of $2.11",
          "Adjusted gross margin of 71.3%",
          "Free cash flow of $329 million; $250 million of debt paid down"],
         "Adjusted earnings per share were down about 10%, driven by a lower operating margin and a higher share "
         "count."),
        ("table", "Q4 2020 sales change by region",
         [["Region", "Change vs Q4 2019"],
          ["Americas", "-0.3%"],
          ["EMEA", "-17.5%"],
          ["Asia-Pacific", "+2%"]],
         "EMEA was hardest hit by COVID-19, as surges in the virus led to policy actions and government lockdowns."),
        ("table", "Q4 2020 sales change by business",
         [["Business", "Change"],
          ["Global Knee", "-4.8%"],
          ["Global Hip", "-3.4%"],
          ["Sports, Extremity and Trauma", "-3.3%"],
          ["Dental, Spine and CMFT", "+0.8%"],
          ["Other", "-9.3%"]], None),
        ("bullets", "Spine and Dental spin-off (NewCo)",
         ["Plan to spin the Spine and Dental businesses into an independent, publicly traded company",
          "Expected to close around mid-2022",
          "NewCo pro forma revenues of approximately $1.022 billion (2019) and $897 million (2020)"],
         "Post-spin ZB adjusted EBITDA and operating margins are expected to expand by approximately 125 basis points "
         "on a pro forma basis."),
        ("bullets", "2021 outlook",
         ["No full-year financial guidance at this time",
          "Q1 revenue projected down low-single-digit to mid-single-digit percent versus Q1 2020",
          "Plan to pay down an additional $500 million of debt in 2021",
          "No share buybacks planned in 2021"],
         "Guidance is reserved until there is more certainty around elective procedures relative to COVID surges and "
         "vaccine adoption."),
    ], ["$2.085 billion", "1.9%", "3.7%", "$1.59", "$2.11", "71.3%", "$329 million", "$250 million", "10%",
        "0.3%", "17.5%", "2%", "4.8%", "3.4%", "3.3%", "0.8%", "9.3%", "mid-2022", "$1.022 billion",
        "$897 million", "125 basis points", "$500 million", "Bryan Hanson", "Suketu Upadhyay"]),
]

GUIDE_DECKS = [
    ("_articles/security-best-practices-for-your-project.md", "oss_security_best_practices_training.pptx", [
        ("title", "Security Best Practices for your Project",
         ["Maintainer training, based on the Open Source Guide (opensource.guide)",
          "Written by @nanzggits and @xcorail"], None),
        ("bullets", "Why security matters",
         ["A project's longevity hinges on the trust it earns from its users",
          "Strong security measures keep this trust alive"], None),
        ("bullets", "Enable Multi-Factor Authentication (MFA)",
         ["Applies to all privileged contributors",
          "MFA provides an additional layer of security against account takeover"],
         "A malicious actor who manages to impersonate a privileged contributor to your project will cause "
         "catastrophic damages."),
        ("table", "Tools mentioned in the guide",
         [["Practice", "Example tools"],
          ["Static Application Security Testing (SAST)", "GitHub CodeQL, SemGrep"],
          ["Secret scanning", "GitHub Secret Scanning, Trufflehog"],
          ["Software Composition Analysis (SCA)", "Dependabot, Renovate"]],
         "Security vulnerabilities in your code are cheaper to fix when detected early in the process than later."),
        ("bullets", "Dependencies and licenses",
         ["Equifax failed to update their Apache Struts dependency in 2017",
          "The breach affected 144 million users' data",
          "Some licenses (like AGPL or SSPL) impose restrictions",
          "A Software Bill of Materials (SBOM) lists all components and their metadata"], None),
        ("bullets", "Reporting security issues",
         ["Publish a security policy in a SECURITY.md file",
          "On GitHub, use private vulnerability reporting (PVR)",
          "Define a lightweight threat model"],
         "Without a designated process, a researcher might open a public issue, exposing the vulnerability to "
         "malicious actors before you have a chance to address it."),
        ("bullets", "Incident response: at minimum, define",
         ["Who reviews and triages security reports or alerts",
          "How severity is evaluated and how mitigation decisions are made",
          "What steps you take to prepare a fix and coordinate disclosure",
          "How you notify affected users, contributors, or downstream consumers"],
         "The Express.js Security WG provides a simple but effective example of an open source incident response "
         "plan."),
        ("bullets", "Security as a team effort",
         ["Assign clear roles",
          "Limit access using the principle of least privilege",
          "Invest in education",
          "Foster diversity and collaboration",
          "Engage upstream and downstream"],
         "Security is an ongoing process, not a one-time setup."),
    ], ["Multi-Factor Authentication (MFA)", "additional layer of security against account takeover",
        "catastrophic damages", "GitHub CodeQL or SemGrep", "GitHub Secret Scanning, and Trufflehog",
        "Dependabot and Renovate", "cheaper to fix when detected early", "Equifax in 2017", "Apache Struts",
        "144 million users' data", "AGPL or SSPL", "Software Bill of Materials (SBOM)", "`SECURITY.md`",
        "private vulnerability reporting (PVR)", "Who reviews and triages security reports or alerts",
        "How severity is evaluated and how mitigation decisions are made",
        "What steps you take to prepare a fix and coordinate disclosure",
        "How you notify affected users, contributors, or downstream consumers", "Express.js Security WG",
        "Assign clear roles", "Limit access using the principle of least privilege", "Invest in education",
        "Foster diversity and collaboration", "Engage upstream and downstream",
        "Security is an ongoing process, not a one-time setup", "@nanzggits", "@xcorail"]),
    ("_articles/leadership-and-governance.md", "oss_leadership_and_governance_training.pptx", [
        ("title", "Leadership and Governance in Open Source",
         ["Maintainer training, based on the Open Source Guide (opensource.guide)"], None),
        ("bullets", "Formal roles",
         ["Maintainer", "Contributor", "Committer"],
         "A maintainer doesn't necessarily have to be someone who writes code for your project. The term committer "
         "might be used to distinguish commit access from other forms of contribution."),
        ("bullets", "Formalizing leadership",
         ["Smaller project: add leaders' names to your README or a CONTRIBUTORS text file",
          "Bigger project: create a team page on your website",
          "Very active community: form a core team or subcommittees",
          "Document how people attain roles in your GOVERNANCE.md"],
         "Postgres has a comprehensive team page with short profiles for each contributor. On GitHub, move the project "
         "to an Organization and add at least one backup admin."),
        ("table", "Common governance structures",
         [["Model", "Who decides", "Examples"],
          ["BDFL (Benevolent Dictator for Life)", "one person, usually the initial author", "Python"],
          ["Meritocracy", "active contributors who demonstrate merit, by voting", "Apache projects"],
          ["Liberal contribution", "those who do the most current work, by consensus seeking", "Node.js, Rust"]],
         "Every model has advantages and trade-offs."),
        ("bullets", "Commit access",
         ["Some give commit access to everybody who makes a contribution",
          "Bigger projects may give it only to people who have demonstrated their commitment",
          "Use protected branches to manage who can push to a branch"], None),
        ("bullets", "Corporate contributions and legal entities",
         ["Treat commercial activity as normal, as just another source of development energy",
          "Paid developers shouldn't get special treatment over unpaid ones",
          "No legal entity needed unless you're handling money",
          "A fiscal sponsor accepts donations on your behalf"],
         "Examples of fiscal sponsors: Software Freedom Conservancy, Apache Foundation, Eclipse Foundation, Linux "
         "Foundation and Open Collective. Donations are not tax-deductible unless you are a qualifying nonprofit (a "
         "501c3, if you're in the US)."),
    ], ["**Maintainer**", "**Contributor**", "**Committer**", "CONTRIBUTORS text file", "team page",
        "core team", "GOVERNANCE.md", "Postgres", "at least one backup admin", "Benevolent Dictator for Life",
        "Python", "all Apache projects", "Node.js", "Rust", "advantages and trade-offs",
        "demonstrated their commitment", "protected branches", "just another source of development energy",
        "Paid developers shouldn't get special treatment over unpaid ones", "unless you're handling money",
        "A fiscal sponsor accepts donations on your behalf", "Software Freedom Conservancy", "Open Collective",
        "501c3"]),
    ("_articles/metrics.md", "oss_project_metrics_training.pptx", [
        ("title", "Open Source Metrics",
         ["Maintainer training, based on the Open Source Guide (opensource.guide)"], None),
        ("bullets", "Why measure anything?",
         ["Understand how users respond to a new feature",
          "Figure out where new users come from",
          "Quantify your project's popularity",
          "Raise money through sponsorships and grants"],
         "Homebrew finds that Google Analytics helps them prioritize work."),
        ("table", "Four questions to ask",
         [["Stage", "Question"],
          ["Discovery", "Are people finding this project?"],
          ["Usage", "Are people using this project?"],
          ["Retention", "Are people contributing back to this project?"],
          ["Maintainer activity", "Am I (or are we) responding to our community?"]], None),
        ("bullets", "Discovery and usage on GitHub",
         ["Insights > Traffic: total page views, unique visitors, referring sites, popular content",
          "GitHub stars give a baseline measure of popularity",
          "The clone graph shows total clones and unique cloners",
          "Libraries.io tracks usage statistics across package managers"],
         "If your project lands on the front page of Hacker News, you'll probably see a spike in discovery but a lower "
         "conversion rate."),
        ("bullets", "Retention and maintainer activity",
         ["Track total contributor count and commits per contributor",
          "Track first time, casual, and repeat contributors",
          "Unresponsive maintainers become a bottleneck",
          "Measure the average time to merge a pull request"],
         "Research from Mozilla suggests that maintainer responsiveness is a critical factor in encouraging repeat "
         "contributions. CHAOSS is a community focused on analytics, metrics and software for community health."),
    ], ["Understand how users respond to a new feature", "Figure out where new users come from",
        "Quantify your project's popularity", "Raise money through sponsorships and grants", "Homebrew",
        "Google Analytics", "are people finding this project?", "are people using this project?",
        "are people contributing back to this project?", "am I (or are we) responding to our community?",
        "Total page views", "GitHub stars", "unique cloners", "Libraries.io", "Hacker News",
        "Research from Mozilla", "maintainer responsiveness is a critical factor", "CHAOSS",
        "Unresponsive maintainers become a bottleneck", "Average time to merge a pull request"]),
]


def _check_facts(source: str, facts: list[str], what: str) -> None:
    flat = " ".join(source.split())
    for f in facts:
        if f not in flat:
            raise ValueError(f"{what}: {f!r} is not in the source")


def write_deck(path: Path, slides: list, subject: str) -> None:
    from pptx import Presentation
    from pptx.util import Inches, Pt

    prs = Presentation()
    prs.core_properties.title = slides[0][1]
    prs.core_properties.subject = subject
    prs.core_properties.author = "issue-46 corpus"
    prs.core_properties.last_modified_by = ""
    prs.core_properties.revision = 1
    for kind, title, body, notes in slides:
        if kind == "title":
            s = prs.slides.add_slide(prs.slide_layouts[0])
            s.shapes.title.text = title
            s.placeholders[1].text = "\n".join(body)
        elif kind == "bullets":
            s = prs.slides.add_slide(prs.slide_layouts[1])
            s.shapes.title.text = title
            tf = s.placeholders[1].text_frame
            for k, line in enumerate(body):
                p = tf.paragraphs[0] if k == 0 else tf.add_paragraph()
                if line.startswith("- "):
                    p.text, p.level = line[2:], 1
                else:
                    p.text = line
                p.font.size = Pt(20)
        else:
            s = prs.slides.add_slide(prs.slide_layouts[5])
            s.shapes.title.text = title
            nrow, ncol = len(body), len(body[0])
            shape = s.shapes.add_table(nrow, ncol, Inches(0.5), Inches(1.7), Inches(9), Inches(0.4) * nrow)
            for i, row in enumerate(body):
                for j, val in enumerate(row):
                    cell = shape.table.cell(i, j)
                    cell.text = val
                    for para in cell.text_frame.paragraphs:
                        para.font.size = Pt(14)
        if notes:
            s.notes_slide.notes_text_frame.text = notes
    buf = io.BytesIO()
    prs.save(buf)
    path.write_bytes(fixed_zip(buf.getvalue()))


def build_decks(out: Path, mirrors: Path) -> None:
    for src, name, slides, facts in ECT_DECKS:
        text = git_show(mirrors, "rajdeep345/ECTSum", f"data/final/val/ects/{src}.txt").decode("utf-8")
        _check_facts(text, facts, src)
        write_deck(out / name, slides, f"Built from the ECTSum transcript {src} (val split)")
    for src, name, slides, facts in GUIDE_DECKS:
        text = git_show(mirrors, "github/opensource.guide", src).decode("utf-8")
        _check_facts(text, facts, src)
        write_deck(out / name, slides, f"Built from opensource.guide {src}")


def build(out: Path, mirrors: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.is_file():
            old.unlink()
    build_tat(out, mirrors)
    build_public(out, mirrors)
    build_decks(out, mirrors)

"""The ``manuals`` kind of the issue-46 answers corpus: GitHub site policies and software/hardware user manuals.

Sources (bare mirrors fetched with the ``fetch`` tool into ``MIRRORS/<owner>+<name>/repo``), pinned to the commits
below (HEAD is used, with a warning, when a pinned commit is absent from a newer mirror):

* ``github/site-policy`` (CC0-1.0): eleven policies from ``Policies/`` (no privacy, cookie or data-protection text,
  no commercial contracts);
* ``BurntSushi/ripgrep`` (MIT / Unlicense): ``GUIDE.md``;
* ``pgbouncer/pgbouncer`` (ISC): ``doc/config.md``;
* ``RsyncProject/rsync`` (GPL-3.0): ``rsyncd.conf.5.md``;
* ``google/styleguide`` (CC-BY-3.0): ``shellguide.md``;
* ``valkey-io/valkey`` (BSD-3-Clause): ``valkey.conf``;
* ``github/opensource.guide`` (CC-BY-4.0): ``_articles/how-to-contribute.md``;
* ``espressif/esp-dev-kits`` (docs CC-BY-SA-4.0): the ESP32-C3-DevKitM-1 and ESP-Prog user guides (reStructuredText);
* ``jqlang/jq`` (docs CC-BY-3.0): ``docs/content/manual/v1.8/manual.yml``.

Markdown stays ``.md`` for some documents; others are rendered to a standalone ``.html`` page (markdown-it) or to a
``.docx`` (python-docx, headings as Heading styles, tables as Word tables, lists as List styles). The reStructuredText
guides and the jq YAML manual are first turned into markdown by the small converters below. Everything is
deterministic (fixed zip timestamps and core properties in the ``.docx`` files).
"""
from __future__ import annotations

import datetime as _dt
import html as _html
import io
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import yaml
from markdown_it import MarkdownIt

PINS = {
    "github/site-policy": "12992597c5d9d8cfc006693c54b9609d9993bc99",
    "BurntSushi/ripgrep": "3fce3b5bb0236da2df6d99672afb8a719642eca7",
    "pgbouncer/pgbouncer": "13a344f2625381296fc02e29b986a11be9c6b983",
    "RsyncProject/rsync": "7c20b077c980036a19587701cec320cc88e42a4a",
    "google/styleguide": "8487c083e1faecb1259be8a8873618cfdb69d33d",
    "valkey-io/valkey": "55bbbe09a3b37a98c907dbfbc225768ff253e84f",
    "github/opensource.guide": "ebc9678e39b55ff5e5c8801d1960904692188e90",
    "espressif/esp-dev-kits": "f6f80ab668e1d0ec7f107497f563a2277a270b83",
    "jqlang/jq": "579e6f76cffd7643ba4002a2c3618a5ea710589a",
}

LICENSES = {
    "github/site-policy": "CC0-1.0",
    "BurntSushi/ripgrep": "MIT OR Unlicense",
    "pgbouncer/pgbouncer": "ISC",
    "RsyncProject/rsync": "GPL-3.0-or-later",
    "google/styleguide": "CC-BY-3.0",
    "valkey-io/valkey": "BSD-3-Clause",
    "github/opensource.guide": "CC-BY-4.0",
    "espressif/esp-dev-kits": "CC-BY-SA-4.0 (documentation)",
    "jqlang/jq": "CC-BY-3.0 (documentation)",
}

SP = "github/site-policy"
P = "Policies/"
# (output name, repo, path, how): how = md | html | docx | txt | rst-html | rst-docx | jq-html
DOCS = [
    ("github-terms-of-service.md", SP, P + "github-terms/github-terms-of-service.md", "md"),
    ("github-acceptable-use-policies.html", SP,
     P + "acceptable-use-policies/github-acceptable-use-policies.md", "html"),
    ("github-dmca-takedown-policy.md", SP, P + "content-removal-policies/dmca-takedown-policy.md", "md"),
    ("github-dmca-counter-notice-guide.docx", SP,
     P + "content-removal-policies/guide-to-submitting-a-dmca-counter-notice.md", "docx"),
    ("github-trademark-policy.html", SP, P + "content-removal-policies/github-trademark-policy.md", "html"),
    ("github-community-guidelines.md", SP, P + "github-terms/github-community-guidelines.md", "md"),
    ("github-government-takedown-policy.docx", SP, P + "other-site-policies/github-government-takedown-policy.md",
     "docx"),
    ("github-deceased-user-policy.md", SP, P + "other-site-policies/github-deceased-user-policy.md", "md"),
    ("github-sponsors-additional-terms.docx", SP, P + "github-terms/github-sponsors-additional-terms.md", "docx"),
    ("github-bug-bounty-safe-harbor.html", SP, P + "security-policies/github-bug-bounty-program-legal-safe-harbor.md",
     "html"),
    ("github-appeal-and-reinstatement.md", SP, P + "acceptable-use-policies/github-appeal-and-reinstatement.md", "md"),
    ("ripgrep-user-guide.md", "BurntSushi/ripgrep", "GUIDE.md", "md"),
    ("pgbouncer-configuration.html", "pgbouncer/pgbouncer", "doc/config.md", "html"),
    ("rsyncd-conf-manual.md", "RsyncProject/rsync", "rsyncd.conf.5.md", "md"),
    ("google-shell-style-guide.docx", "google/styleguide", "shellguide.md", "docx"),
    ("valkey-example-config.txt", "valkey-io/valkey", "valkey.conf", "txt"),
    ("opensource-guide-how-to-contribute.html", "github/opensource.guide", "_articles/how-to-contribute.md", "html"),
    ("esp32-c3-devkitm-1-user-guide.html", "espressif/esp-dev-kits", "docs/en/esp32-c3-devkitm-1/user_guide.rst",
     "rst-html"),
    ("esp-prog-user-guide.docx", "espressif/esp-dev-kits", "docs/en/esp-prog/user_guide.rst", "rst-docx"),
    ("jq-1.8-manual.html", "jqlang/jq", "docs/content/manual/v1.8/manual.yml", "jq-html"),
]

# Titles for sources whose markdown has no title of its own.
TITLES = {
    "GUIDE.md": "ripgrep User Guide",
    "doc/config.md": "PgBouncer Configuration (pgbouncer.ini)",
    "rsyncd.conf.5.md": "rsyncd.conf(5) Manual Page",
}

# Liquid variables of docs.github.com used by the policies, as the rendered site prints them.
LIQUID = {
    "variables.contact.contact_dmca": "Copyright claims form",
    "variables.contact.contact_support": "GitHub Support",
}


def git_show(mirrors: Path, repo: str, path: str) -> str:
    gd = mirrors / repo.replace("/", "+") / "repo"
    pin = PINS[repo]
    r = subprocess.run(["git", "--git-dir", str(gd), "show", f"{pin}:{path}"], capture_output=True)
    if r.returncode != 0:
        print(f"manuals: {repo}@{pin} missing, using HEAD for {path}", file=sys.stderr)
        r = subprocess.run(["git", "--git-dir", str(gd), "show", f"HEAD:{path}"], capture_output=True, check=True)
    return r.stdout.decode("utf-8")


# ---------------------------------------------------------------- markdown clean-up


def front_matter(md: str) -> tuple[dict, str]:
    if md.startswith("---\n"):
        end = md.find("\n---", 4)
        if end > 0:
            meta = yaml.safe_load(md[4:end]) or {}
            return meta, md[end + 4:].lstrip("\n")
    return {}, md


def clean_md(md: str, path: str) -> tuple[str, str]:
    """``(title, markdown body with a '# title' line first)`` of a source markdown file."""
    meta, body = front_matter(md)
    body = re.sub(r"<!--.*?-->\n?", "", body, flags=re.S)
    body = re.sub(r"<aside\b.*?</aside>\n?", "", body, flags=re.S)  # opensource.guide pull quotes
    body = re.sub(r"^\s*\* \{% data reusables\.[^%]*%\}\s*$\n?", "", body, flags=re.M)
    body = re.sub(r"\{% data ([\w.]+) %\}", lambda m: LIQUID.get(m.group(1), m.group(1)), body)
    body = re.sub(r"^\[comment\]: #.*\n", "", body, flags=re.M)
    title = meta.get("title") or TITLES.get(path)
    m = re.match(r"\s*# (.+)\n", body)
    if m and not title:
        title = m.group(1).strip()
    if m:
        body = body[m.end():]
    if not title:
        title = Path(path).stem
    desc = meta.get("description")
    head = f"# {title}\n\n" + (f"_{desc}_\n\n" if desc else "")
    return title, head + body.lstrip("\n")


# ---------------------------------------------------------------- reStructuredText (esp-dev-kits) to markdown

_ADORN = set("=-^~*+#\"'")


def _rst_inline(s: str) -> str:
    s = re.sub(r":link_to_translation:`[^`]*`", "", s)
    s = re.sub(r":(?:ref|doc):`([^`<]*?)\s*<[^`]*>`", r"\1", s)
    s = re.sub(r":ref:`([^`]*)`", lambda m: m.group(1).replace("user-guide-c3-devkitm-1-v1-", "")
               .replace("-", " ").title(), s)
    s = re.sub(r"`([^`<]+?)\s*<([^`>]+)>`__?", r"[\1](\2)", s)
    s = re.sub(r"`([^`]+)`_", r"\1", s)
    s = re.sub(r"\s*\[(\d+)\]_", r" [\1]", s)
    s = re.sub(r"``([^`]+)``", r"`\1`", s)
    return s


def _cells(line: str, bounds: list[tuple[int, int]]) -> list[str]:
    out = []
    for i, (a, _b) in enumerate(bounds):
        end = len(line) if i == len(bounds) - 1 else bounds[i + 1][0]
        out.append(line[a:end].strip())
    return out


def rst_to_md(rst: str) -> str:
    lines = rst.split("\n")
    out: list[str] = []
    levels: list[str] = []
    i = 0

    def heading(text: str, key: str) -> None:
        if key not in levels:
            levels.append(key)
        out.extend(["#" * (levels.index(key) + 1) + " " + _rst_inline(text.strip()), ""])

    def block(start: int) -> tuple[list[str], int]:
        """The indented block after a directive line at ``start``."""
        j, body = start + 1, []
        while j < len(lines) and (not lines[j].strip() or lines[j].startswith(" ")):
            body.append(lines[j])
            j += 1
        while body and not body[-1].strip():
            body.pop()
        return body, j

    while i < len(lines):
        ln = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        nxt2 = lines[i + 2] if i + 2 < len(lines) else ""
        s = ln.strip()
        # over- and underlined title
        if s and set(s) <= _ADORN and len(set(s)) == 1 and nxt.strip() and nxt2.strip() and set(nxt2.strip()) == set(s):
            heading(nxt, "o" + s[0])
            i += 3
            continue
        # underlined section title
        if s and not s.startswith("..") and nxt.strip() and set(nxt.strip()) <= _ADORN and len(set(nxt.strip())) == 1 \
                and len(nxt.strip()) >= 3 and not set(s) <= _ADORN:
            heading(ln, "u" + nxt.strip()[0])
            i += 2
            continue
        if s.startswith(".. list-table::"):
            body, j = block(i)
            rows: list[list[str]] = []
            for b in body:
                t = b.strip()
                if t.startswith(":"):
                    continue
                if t.startswith("* - "):
                    rows.append([t[4:]])
                elif t.startswith("- ") and rows:
                    rows[-1].append(t[2:])
                elif t and rows:
                    rows[-1][-1] += " " + t
            if rows:
                out.append("| " + " | ".join(_rst_inline(c) for c in rows[0]) + " |")
                out.append("|" + "---|" * len(rows[0]))
                for r in rows[1:]:
                    out.append("| " + " | ".join(_rst_inline(c) for c in r) + " |")
                out.append("")
            i = j
            continue
        if s.startswith(".. note::"):
            body, j = block(i)
            text = " ".join(b.strip() for b in body if b.strip())
            out.extend([f"> **Note:** {_rst_inline(text)}", ""])
            i = j
            continue
        if re.match(r"\.\. \[(\d+)\] ", s):
            m = re.match(r"\.\. \[(\d+)\] (.*)", s)
            out.extend([f"[{m.group(1)}] {_rst_inline(m.group(2))}", ""])
            i += 1
            continue
        if s.startswith(".. "):  # figure, only, labels, link targets: dropped with their block
            _, j = block(i)
            i = j
            continue
        # simple table: a rule of '=' runs
        if re.fullmatch(r"=+(\s+=+)+", s):
            bounds = [(m.start(), m.end()) for m in re.finditer(r"=+", ln)]
            j = i + 1
            rows = []
            rules = 1
            while j < len(lines) and rules < 3:
                if re.fullmatch(r"=+(\s+=+)+", lines[j].strip()):
                    rules += 1
                elif lines[j].strip():
                    rows.append(_cells(lines[j], bounds))
                j += 1
            out.append("| " + " | ".join(_rst_inline(c) for c in rows[0]) + " |")
            out.append("|" + "---|" * len(rows[0]))
            for r in rows[1:]:
                out.append("| " + " | ".join(_rst_inline(c) for c in r) + " |")
            out.append("")
            i = j
            continue
        out.append(_rst_inline(ln))
        i += 1
    md = "\n".join(out)
    md = re.sub(r"\n{3,}", "\n\n", md)
    return md.strip() + "\n"


# ---------------------------------------------------------------- jq manual (YAML) to markdown


def _jq_examples(examples: list[dict]) -> str:
    """The examples of one jq manual entry as an HTML table (as the jq website shows them)."""
    if not examples:
        return ""
    e = _html.escape
    rows = ["<table>", "<thead><tr><th>Command</th><th>Input</th><th>Output</th></tr></thead>", "<tbody>"]
    for ex in examples:
        outs = ex.get("output") or []
        out = "<br>".join(f"<code>{e(str(o))}</code>" for o in outs) if outs else "<em>(no output)</em>"
        rows.append(f"<tr><td><code>jq {e(chr(39) + str(ex['program']) + chr(39))}</code></td>"
                    f"<td><code>{e(str(ex['input']))}</code></td><td>{out}</td></tr>")
    rows += ["</tbody>", "</table>"]
    return "Examples:\n\n" + "\n".join(rows) + "\n"


def jq_to_md(y: str) -> str:
    d = yaml.safe_load(y)
    parts = [f"# {d['headline']}\n", d.get("body", "")]
    for sec in d.get("sections", []):
        parts.append(f"## {sec['title']}\n")
        if sec.get("body"):
            parts.append(sec["body"])
        for e in sec.get("entries", []) or []:
            parts.append(f"### {e['title']}\n")
            if e.get("body"):
                parts.append(e["body"])
            parts.append(_jq_examples(e.get("examples") or []))
    return "\n".join(textwrap_dedent(p) for p in parts if p)


def textwrap_dedent(s: str) -> str:
    import textwrap

    return textwrap.dedent(s).strip("\n") + "\n"


# ---------------------------------------------------------------- markdown to HTML

_MD = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")

_CSS = ("body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:60em;margin:2em auto;"
        "line-height:1.5}table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:4px 8px}"
        "code,pre{font-family:monospace;background:#f6f8fa}")


def md_to_html(title: str, md: str, source: str) -> str:
    body = _MD.render(md)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{_html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n{body}</main>\n"
            f"<footer><p>{_html.escape(source)}</p></footer>\n</body>\n</html>\n")


# ---------------------------------------------------------------- markdown to DOCX


def _inline_runs(par, tok, base_bold=False) -> None:
    bold, italic, code = base_bold, False, False
    for ch in tok.children or []:
        t = ch.type
        if t == "text":
            r = par.add_run(ch.content)
            r.bold, r.italic = bold or None, italic or None
            if code:
                r.font.name = "Consolas"
        elif t == "code_inline":
            r = par.add_run(ch.content)
            r.font.name = "Consolas"
            r.bold = bold or None
        elif t == "strong_open":
            bold = True
        elif t == "strong_close":
            bold = base_bold
        elif t == "em_open":
            italic = True
        elif t == "em_close":
            italic = False
        elif t == "softbreak":
            par.add_run(" ")
        elif t == "hardbreak":
            par.add_run().add_break()
        elif t == "html_inline":
            if ch.content.lower().startswith("<br"):
                par.add_run().add_break()
        # link_open / link_close: the link text is kept as plain text


def md_to_docx(title: str, md: str, source: str) -> bytes:
    from docx import Document
    from docx.shared import Pt

    doc = Document()
    cp = doc.core_properties
    cp.title, cp.author, cp.comments = title, "", source
    fixed = _dt.datetime(2024, 1, 1)
    cp.created = cp.modified = cp.last_printed = fixed
    cp.revision = 1
    tokens = _MD.parse(md)
    lists: list[str] = []  # "bullet" / "ordered" stack
    in_item = 0
    quote = 0
    i = 0
    first_h1 = True
    while i < len(tokens):
        tk = tokens[i]
        t = tk.type
        if t == "heading_open":
            level = int(tk.tag[1])
            inline = tokens[i + 1]
            if level == 1 and first_h1:
                h = doc.add_heading(level=0)  # Title style
                first_h1 = False
            else:
                h = doc.add_heading(level=min(level, 9))
            _inline_runs(h, inline)
            i += 3
            continue
        if t in ("bullet_list_open", "ordered_list_open"):
            lists.append("bullet" if t.startswith("bullet") else "ordered")
        elif t in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif t == "list_item_open":
            in_item += 1
        elif t == "list_item_close":
            in_item -= 1
        elif t == "blockquote_open":
            quote += 1
        elif t == "blockquote_close":
            quote -= 1
        elif t == "paragraph_open":
            inline = tokens[i + 1]
            style = None
            if lists and in_item:
                kind = "List Bullet" if lists[-1] == "bullet" else "List Number"
                depth = min(len(lists), 3)
                style = kind if depth == 1 else f"{kind} {depth}"
            elif quote:
                style = "Quote"
            p = doc.add_paragraph(style=style)
            _inline_runs(p, inline)
            i += 3
            continue
        elif t in ("fence", "code_block"):
            for line in tk.content.rstrip("\n").split("\n"):
                p = doc.add_paragraph(style="No Spacing")
                r = p.add_run(line)
                r.font.name = "Consolas"
                r.font.size = Pt(9)
        elif t == "table_open":
            j = i
            rows: list[list] = []
            header_rows = 0
            in_head = False
            while tokens[j].type != "table_close":
                if tokens[j].type == "thead_open":
                    in_head = True
                elif tokens[j].type == "thead_close":
                    in_head = False
                elif tokens[j].type == "tr_open":
                    rows.append([])
                    header_rows += in_head
                elif tokens[j].type == "inline":
                    rows[-1].append(tokens[j])
                j += 1
            ncol = max(len(r) for r in rows)
            table = doc.add_table(rows=len(rows), cols=ncol)
            table.style = "Table Grid"
            for ri, r in enumerate(rows):
                for ci, cell_tok in enumerate(r):
                    par = table.cell(ri, ci).paragraphs[0]
                    _inline_runs(par, cell_tok, base_bold=ri < header_rows)
            doc.add_paragraph()
            i = j + 1
            continue
        i += 1
    buf = io.BytesIO()
    doc.save(buf)
    return _fixed_zip(buf.getvalue())


def _fixed_zip(data: bytes) -> bytes:
    """The same zip with every entry dated 2024-01-01 (python-docx stamps the current time)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            zi = zipfile.ZipInfo(info.filename, date_time=(2024, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, src.read(info.filename))
    return out.getvalue()


# ---------------------------------------------------------------- build


def build(out: Path, mirrors: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.is_file():
            old.unlink()
    for name, repo, path, how in DOCS:
        raw = git_show(mirrors, repo, path)
        source = (f"Source: github.com/{repo}, {path} (commit {PINS[repo][:12]}), license {LICENSES[repo]}. "
                  "Converted for this corpus.")
        if how == "txt":
            (out / name).write_text(raw, encoding="utf-8")
            continue
        if how.startswith("rst"):
            md = rst_to_md(raw)
            title = re.match(r"# (.+)", md).group(1) + " User Guide"
            md = re.sub(r"\A# .+\n", f"# {title}\n", md)
        elif how == "jq-html":
            md = jq_to_md(raw)
            title = re.match(r"# (.+)", md).group(1)
        else:
            title, md = clean_md(raw, path)
        target = out / name
        if how == "md":
            target.write_text(md, encoding="utf-8")
        elif how in ("html", "rst-html", "jq-html"):
            target.write_text(md_to_html(title, md, source), encoding="utf-8")
        elif how in ("docx", "rst-docx"):
            target.write_bytes(md_to_docx(title, md, source))
        else:
            raise ValueError(how)

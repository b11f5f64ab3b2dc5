"""The `prose` kind of the answers corpus: narrative prose (novels, stories, tales, travel, legends).

Sources (all public-domain texts):

* Project Gutenberg books mirrored by the GITenberg organisation on GitHub, one repository a book, each read at a
  pinned commit (fetch them with the ``fetch`` tool; they land in ``MIRRORS/GITenberg+<name>/repo``, bare git or a
  clone). The Gutenberg licence header and footer are stripped; a first line names the title and author, and a book
  too long for one document is cut to whole chapters, named on the second line.
* Emma by Jane Austen, the GutenQA copy in ``../shared/bench/gutenqa_emma`` (``MGRAG_SHARED_BENCH``), cut into its
  three volumes (157k words in all; a document stays under ~60k words).
* Three NarrativeQA stories of ``../shared/bench/longbench_sample`` (Gutenberg texts; footer stripped).

Most documents are plain ``.txt``; a few are converted, deterministically, to ``.epub`` (written with ``zipfile``:
``mimetype``, ``META-INF/container.xml``, an OPF and one XHTML file a chapter), ``.docx`` (python-docx, a title and
a heading a chapter) and ``.html`` (a heading a chapter), to vary the formats.
"""
from __future__ import annotations

import html
import io
import os
import re
import subprocess
import zipfile
from pathlib import Path

from qa_build import fixed_zip

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("MGRAG_SHARED_BENCH", str(ROOT.parent / "shared" / "bench")))

# name, repo, commit, path in repo, encoding, title line, part line, first kept line (regex), first dropped line
# (regex; None: to the end of the book), format
BOOKS = [
    ("little_colonels_hero", "GITenberg/The-Little-Colonel-s-Hero_15122", "69e1e7ab1c6c998ea3e46e8b55239fe480b657c4",
     "15122.txt", "ascii", "The Little Colonel's Hero, by Annie Fellows Johnston",
     "Chapters I to VI", r"^CHAPTER I\.$", r"^CHAPTER VII\.$", "txt"),
    ("katrine", "GITenberg/Katrine--A-Novel_14263", "cda5284ad5c11e1928cd4c133c0726c1592bea08",
     "14263.txt", "ascii", "Katrine: A Novel, by Elinor Macartney Lane",
     "Preface and Chapters I to VII", r"^PREFACE$", r"^VIII$", "epub"),
    ("jack_sheppard_epoch1", "GITenberg/Jack-Sheppard--A-Romance_16215", "53c2275d68a942a3c29d037179f8b89c9b094c3f",
     "16215.txt", "ascii", "Jack Sheppard: A Romance, by William Harrison Ainsworth",
     "Epoch the First, 1703: Jonathan Wild (Chapters I to VII)", r"^EPOCH THE FIRST\.$", r"^EPOCH THE SECOND\.$",
     "txt"),
    ("log_school_house_columbia", "GITenberg/The-Log-School-House-on-the-Columbia_14881",
     "e0989d1c6a67afbfa7716e87df2ab9438020d6d5", "14881.txt", "ascii",
     "The Log School-House on the Columbia, by Hezekiah Butterworth", "Chapters I to VIII",
     r"^CHAPTER I\.$", r"^CHAPTER IX\.$", "html"),
    ("news_from_nowhere", "GITenberg/News-from-Nowhere--Or-An-Epoch-of-Rest--13-Being-Some-Chapters-from-a-Utopian-"
     "Romance_3261", "79bd67b0ae225cd64f7bbc25c0449850b3131069", "3261.txt", "ascii",
     "News from Nowhere, or An Epoch of Rest, by William Morris", "Chapters I to IX",
     r"^CHAPTER I: DISCUSSION AND BED$", r"^CHAPTER X: QUESTIONS AND ANSWERS$", "txt"),
    ("american_adventures", "GITenberg/American-AdventuresA-Second-Trip-Abroad-at-home-_18304",
     "748434ca594b6997cc8e8ff6af53cb9d343071bd", "18304.txt", "ascii",
     "American Adventures: A Second Trip 'Abroad at Home', by Julian Street", "Chapters I to VIII",
     r"^CHAPTER I$", r"^CHAPTER IX$", "txt"),
    ("guernsey_folk_lore_fairies", "GITenberg/Guernsey-Folk-Lore-a-collection-of-popular-superstitions-legendary-"
     "tales-peculiar-customs-pro__52834", "9cde4452b41d2b14c7cdb7356967c556db2cff80", "52834-0.txt", "utf-8-sig",
     "Guernsey Folk Lore, by Sir Edgar MacCulloch, edited by Edith F. Carey",
     "Chapter VI (Fairies) and Chapter VII (Demons and Goblins)", r"^CHAPTER VI\.$", r"^CHAPTER VIII\.$", "txt"),
    ("gov_bob_taylors_tales", "GITenberg/Gov.-Bob.-Taylor-s-Tales--13--The-fiddle-and-the-bow----The-paradise-of-"
     "fools----Visions-and-__20171", "98c86721726ee862d4055d4c76359a7341c66ac9", "20171.txt", "ascii",
     "Gov. Bob. Taylor's Tales, by Robert L. Taylor", None, r"^PREFACE\.$", None, "docx"),
    ("legend_land_vol1", "GITenberg/Legend-Land-Vol.-1Railway._20170", "e3218eba4088f0960e7fd8298f2c1f773b4f8e9e",
     "20170.txt", "ascii", "Legend Land, Vol. 1, retold by Lyonesse (Great Western Railway)", None,
     r"^LEGEND LAND$", None, "txt"),
    ("legend_land_vol2", "GITenberg/Legend-Land-Volume-2Western-Parts-of-Britain-Served-by-The-Great-Western-"
     "Railway_20249", "917b33b5f9cedc8510b390e09ba7385b55c4549d", "20249.txt", "ascii",
     "Legend Land, Vol. 2, retold by Lyonesse (Great Western Railway)", None, r"^LEGEND LAND$", None, "epub"),
    ("passamaquoddy_folk_lore", "GITenberg/Contribution-to-Passamaquoddy-Folk-Lore_17997",
     "3280a83b4d91fe941133c852a111f48c17026e4c", "17997.txt", "ascii",
     "A Contribution to Passamaquoddy Folk-Lore, by J. Walter Fewkes", None,
     r"^Hemenway Southwestern Archaeological Expedition$", None, "txt"),
]

# name, file under SHARED, title line, first kept line (regex), format
STORIES = [
    ("coxon_fund", "longbench_sample/docs/narrativeqa-0.txt", "The Coxon Fund, by Henry James", r"^\s+THE$", "docx"),
    ("otto_of_the_silver_hand", "longbench_sample/docs/narrativeqa-1.txt", "Otto of the Silver Hand, by Howard Pyle",
     r"^OTTO OF THE SILVER HAND$", "epub"),
    ("armageddon_2419", "longbench_sample/docs/narrativeqa-3.txt", "Armageddon--2419 A.D., by Philip Francis Nowlan",
     r"^ARMAGEDDON--2419 A\.D\.$", "txt"),
]

EMMA_VOLUMES = [  # (volume, first sentence of the volume)
    ("I", "Emma Woodhouse, handsome, clever, and rich"),
    ("II", "Emma and Harriet had been walking together one morning"),
    ("III", "A very little quiet reflection was enough to satisfy Emma"),
]

FOOTER = re.compile(r"^\s*(\*\*\* ?END OF|\*\*\*END OF|End of (the )?Project Gutenberg|End of Project Gutenberg)",
                    re.I)


def git_dir(mirrors: Path, repo: str) -> Path:
    base = mirrors / repo.replace("/", "+") / "repo"
    return base / ".git" if (base / ".git").is_dir() else base


def git_show(mirrors: Path, repo: str, commit: str, path: str) -> bytes:
    gd = git_dir(mirrors, repo)
    if not gd.is_dir():
        raise FileNotFoundError(f"{repo} is not fetched ({gd}); fetch github:{repo} first")
    return subprocess.run(["git", "--git-dir", str(gd), "show", f"{commit}:{path}"], check=True,
                          capture_output=True).stdout


def lines_of(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def cut(lines: list[str], start: str, end: str | None) -> list[str]:
    """From the first line matching ``start`` (after the Gutenberg START marker, if any) to before the first line
    matching ``end`` (or the Gutenberg footer)."""
    i0 = 0
    for i, ln in enumerate(lines):
        if re.match(r"^\*\*\* ?START OF", ln):
            i0 = i + 1
            break
    s = next(i for i in range(i0, len(lines)) if re.match(start, lines[i]))
    e = len(lines)
    for i in range(s + 1, len(lines)):
        if (end and re.match(end, lines[i])) or FOOTER.match(lines[i]):
            e = i
            break
    body = lines[s:e]
    while body and not body[-1].strip():
        body.pop()
    return body


def tidy(lines: list[str]) -> str:
    """Lines joined, runs of more than two blank lines squeezed."""
    text = "\n".join(ln.rstrip() for ln in lines)
    return re.sub(r"\n{4,}", "\n\n\n", text).strip("\n") + "\n"


CAPS = r"^[A-Z][A-Z0-9 ,.;:'\"!?&()-]{2,70}$"  # an all-capitals line
HEADS = {  # document -> (heading line regex, does an all-capitals title line follow the heading?)
    "katrine": (r"^[IVXLC]+$", True),
    "log_school_house_columbia": (r"^CHAPTER [IVXLC]+\.?$", True),
    "gov_bob_taylors_tales": (CAPS, False),
    "legend_land_vol2": (CAPS, False),
    "coxon_fund": (r"^[IVXLC]+$", False),
    "otto_of_the_silver_hand": (r"^([IVXLC]+\. [A-Z].{2,60}\.|FOREWORD\.|Afterword)$", False),
}


def chapters(text: str, name: str) -> list[tuple[str, str]]:
    """``(heading, body)`` pairs: a chapter starts at a heading line standing alone between blank lines (``HEADS``);
    where an all-capitals title line follows the chapter number it joins the heading; a bare chapter number reads
    "Chapter N". Text before the first heading has heading ''."""
    head_re, follow = HEADS.get(name, (r"^CHAPTER [IVXLC]+\.?$", True))
    ls = text.split("\n")
    out: list[tuple[str, list[str]]] = [("", [])]
    i = 0
    while i < len(ls):
        ln = ls[i].strip()
        alone = (i == 0 or not ls[i - 1].strip()) and (i + 1 == len(ls) or not ls[i + 1].strip())
        if alone and ln and re.match(head_re, ln) and not ln.startswith("["):
            head = f"Chapter {ln}" if re.fullmatch(r"[IVXLC]+", ln) else ln
            if follow:
                j = i + 1
                while j < len(ls) and not ls[j].strip():
                    j += 1
                if j < len(ls) and re.match(CAPS, ls[j].strip()):
                    head = f"{head.rstrip('.')}. {ls[j].strip()}"
                    i = j
            out.append((head, []))
        else:
            out[-1][1].append(ls[i])
        i += 1
    return [(h, "\n".join(b).strip("\n")) for h, b in out if h or "\n".join(b).strip()]


def paragraphs(body: str) -> list[str]:
    """Blank-line separated paragraphs, their hard line breaks unwrapped (indented verse lines kept apart)."""
    paras = []
    for block in re.split(r"\n\s*\n", body):
        ls = [x for x in block.split("\n") if x.strip()]
        if not ls:
            continue
        if all(x.startswith("  ") for x in ls):  # verse, a letter or a contents list set off: keep its lines
            paras.append("\n".join(re.sub(r"\s{2,}", " ", x.strip()) for x in ls))
        else:
            paras.append(" ".join(x.strip() for x in ls))
    return paras


def write_txt(path: Path, title: str, part: str | None, body: str) -> None:
    head = title + ("\n" + part if part else "") + "\n\n\n"
    path.write_text(head + body, encoding="utf-8")


def _xhtml(title: str, parts: list[tuple[str, str]], level: int = 2) -> str:
    out = []
    for head, body in parts:
        if head:
            out.append(f"<h{level}>{html.escape(head)}</h{level}>")
        for p in paragraphs(body):
            out.append("<p>" + html.escape(p).replace("\n", "<br/>") + "</p>")
    return "\n".join(out)


def write_html(path: Path, title: str, part: str | None, body: str) -> None:
    doc = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8"/>',
           f"<title>{html.escape(title)}</title>", "</head>", "<body>", f"<h1>{html.escape(title)}</h1>"]
    if part:
        doc.append(f'<p class="part">{html.escape(part)}</p>')
    doc.append(_xhtml(title, chapters(body, path.stem)))
    doc += ["</body>", "</html>", ""]
    path.write_text("\n".join(doc), encoding="utf-8")


def write_docx(path: Path, title: str, part: str | None, body: str) -> None:
    import docx

    d = docx.Document()
    d.core_properties.title = title
    d.core_properties.author = title.split(", by ")[-1]
    d.add_heading(title, level=0)
    if part:
        d.add_paragraph(part)
    for head, text in chapters(body, path.stem):
        if head:
            d.add_heading(head, level=1)
        for p in paragraphs(text):
            d.add_paragraph(p)
    buf = io.BytesIO()
    d.save(buf)
    # python-docx stamps the save time into docProps/core.xml: rewrite the package with fixed times
    path.write_bytes(fixed_zip(buf.getvalue()))


def write_epub(path: Path, title: str, part: str | None, body: str, ident: str) -> None:
    parts = chapters(body, ident)
    author = title.split(", by ")[-1]
    files = []
    for n, (head, text) in enumerate(parts):
        name = f"chap{n:02d}.xhtml"
        inner = _xhtml(title, [(head, text)], level=2)
        if n == 0:
            inner = f"<h1>{html.escape(title)}</h1>\n" + (f"<p>{html.escape(part)}</p>\n" if part else "") + inner
        x = ('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n'
             '<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en">\n'
             f"<head><title>{html.escape(head or title)}</title></head>\n<body>\n{inner}\n</body>\n</html>\n")
        files.append((name, head or title, x))
    manifest = "\n".join(f'    <item id="c{n}" href="{f}" media-type="application/xhtml+xml"/>'
                         for n, (f, _, _) in enumerate(files))
    spine = "\n".join(f'    <itemref idref="c{n}"/>' for n in range(len(files)))
    nav_items = "\n".join(f'      <li><a href="{f}">{html.escape(h)}</a></li>' for f, h, _ in files)
    nav = ('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n'
           '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">\n'
           f'<head><title>{html.escape(title)}</title></head>\n<body>\n<nav epub:type="toc">\n    <ol>\n{nav_items}\n'
           "    </ol>\n</nav>\n</body>\n</html>\n")
    opf = ('<?xml version="1.0" encoding="utf-8"?>\n'
           '<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="bookid">\n'
           '  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">\n'
           f'    <dc:identifier id="bookid">urn:mgrag:qa:prose:{ident}</dc:identifier>\n'
           f"    <dc:title>{html.escape(title)}</dc:title>\n    <dc:creator>{html.escape(author)}</dc:creator>\n"
           '    <dc:language>en</dc:language>\n'
           '    <meta property="dcterms:modified">2024-01-01T00:00:00Z</meta>\n  </metadata>\n'
           '  <manifest>\n    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>\n'
           f"{manifest}\n  </manifest>\n  <spine>\n{spine}\n  </spine>\n</package>\n")
    container = ('<?xml version="1.0" encoding="utf-8"?>\n'
                 '<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">\n'
                 '  <rootfiles>\n    <rootfile full-path="OEBPS/content.opf" '
                 'media-type="application/oebps-package+xml"/>\n  </rootfiles>\n</container>\n')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        def put(name: str, data: str, store: bool = False) -> None:
            z.writestr(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), data.encode("utf-8"),
                       compress_type=zipfile.ZIP_STORED if store else zipfile.ZIP_DEFLATED)
        put("mimetype", "application/epub+zip", store=True)
        put("META-INF/container.xml", container)
        put("OEBPS/content.opf", opf)
        put("OEBPS/nav.xhtml", nav)
        for f, _, x in files:
            put(f"OEBPS/{f}", x)
    path.write_bytes(out.getvalue())


def emit(out: Path, name: str, fmt: str, title: str, part: str | None, body: str) -> None:
    path = out / f"{name}.{fmt}"
    if fmt == "txt":
        write_txt(path, title, part, body)
    elif fmt == "html":
        write_html(path, title, part, body)
    elif fmt == "docx":
        write_docx(path, title, part, body)
    elif fmt == "epub":
        write_epub(path, title, part, body, name)
    else:
        raise ValueError(fmt)


def build(out: Path, mirrors: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.is_file():
            old.unlink()
    for name, repo, commit, rel, enc, title, part, start, end, fmt in BOOKS:
        raw = git_show(mirrors, repo, commit, rel).decode(enc)
        body = tidy(cut(lines_of(raw), start, end))
        emit(out, name, fmt, title, part, body)
    for name, rel, title, start, fmt in STORIES:
        raw = (SHARED / rel).read_text(encoding="utf-8")
        body = tidy(cut(lines_of(raw), start, None))
        emit(out, name, fmt, title, None, body)
    emma = (SHARED / "gutenqa_emma" / "docs" / "emma.txt").read_text(encoding="utf-8")
    starts = [emma.index(s) for _, s in EMMA_VOLUMES] + [len(emma)]
    for k, (vol, _) in enumerate(EMMA_VOLUMES):
        body = emma[starts[k]:starts[k + 1]].strip("\n") + "\n"
        write_txt(out / f"emma_volume_{vol.lower()}.txt", "Emma, by Jane Austen", f"Volume {vol}", body)

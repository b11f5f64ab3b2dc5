"""Document store (originals by content hash) and the SQLite catalog of documents, versions, index
generations, indexed documents, chunks and ingestion runs."""
from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from core.db import open_db
from ingest.types import Chunk

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, name TEXT NOT NULL, current_version INTEGER NOT NULL, created REAL, updated REAL);
CREATE TABLE IF NOT EXISTS versions (
    doc_id TEXT NOT NULL, version INTEGER NOT NULL, hash TEXT NOT NULL, size INTEGER, kind TEXT, added REAL,
    PRIMARY KEY (doc_id, version));
CREATE INDEX IF NOT EXISTS versions_hash ON versions(hash);
CREATE INDEX IF NOT EXISTS documents_name ON documents(name);
CREATE TABLE IF NOT EXISTS generations (
    gen INTEGER PRIMARY KEY, chunker TEXT, theta INTEGER, params TEXT, embedder TEXT, dim INTEGER,
    n_levels INTEGER, status TEXT, created REAL, switched REAL);
CREATE TABLE IF NOT EXISTS indexed (
    gen INTEGER NOT NULL, doc_id TEXT NOT NULL, version INTEGER NOT NULL, hash TEXT NOT NULL,
    n_l0 INTEGER, n_l1 INTEGER, n_l2 INTEGER, seconds REAL, indexed_at REAL, PRIMARY KEY (gen, doc_id));
CREATE TABLE IF NOT EXISTS chunks (
    gen INTEGER NOT NULL, id TEXT NOT NULL, doc_id TEXT NOT NULL, level INTEGER NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, parent_id TEXT NOT NULL, PRIMARY KEY (gen, id));
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(gen, doc_id);
CREATE INDEX IF NOT EXISTS chunks_parent ON chunks(gen, parent_id);
CREATE TABLE IF NOT EXISTS pending (
    gen INTEGER NOT NULL, doc_id TEXT NOT NULL, started REAL, PRIMARY KEY (gen, doc_id));
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT, gen INTEGER, started REAL, finished REAL,
    status TEXT, n_ok INTEGER, n_failed INTEGER, detail TEXT);
"""


class DocumentStore:
    """Original bytes and extracted text, addressed by content hash (write-once, atomic renames; the text of a long
    PDF read range by range is extended, :meth:`extend`)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._layouts: OrderedDict[str, dict | None] = OrderedDict()  # by hash (dropped when extended)
        self._layouts_lock = threading.Lock()

    def _path(self, h: str, what: str) -> Path:
        return self.root / h[:2] / f"{h}.{what}"

    def put(self, h: str, data: bytes, text: str, layout: dict | None = None) -> None:
        items = [("orig", data), ("txt", text.encode("utf-8"))]
        if layout:
            items.append(("layout.json", json.dumps(layout).encode("utf-8")))
        for what, payload in items:
            p = self._path(h, what)
            if not p.exists():
                p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                self._replace(p, payload)

    @staticmethod
    def _replace(p: Path, payload: bytes) -> None:
        """Write ``p`` atomically (a temporary file renamed over it), owner-only: a private upload."""
        tmp = p.with_suffix(p.suffix + f".{os.getpid()}.tmp")
        try:
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
                f.write(payload)
            os.replace(tmp, p)
        finally:
            tmp.unlink(missing_ok=True)

    def extend(self, h: str, text: str, layout: dict | None) -> None:
        """Replace the text and layout of ``h`` with a longer reading of the same file (a long PDF read range by range):
        ``text`` must start with the stored text, so every offset into it stays valid. Atomic per file."""
        stored = self.text(h)
        if stored.startswith(text):  # already extended this far (a resumed reading commits a range again)
            return
        if not text.startswith(stored):
            raise ValueError(f"{h}: the new text does not extend the stored one")
        items = [("txt", text.encode("utf-8"))] + ([("layout.json", json.dumps(layout).encode("utf-8"))]
                                                  if layout else [])
        for what, payload in items:
            self._replace(self._path(h, what), payload)
        with self._layouts_lock:
            self._layouts.pop(h, None)

    def stage(self, h: str, gen: int, text: str, layout: dict | None) -> None:
        """Keep a new reading of ``h`` (a re-ingestion's re-read, by a newer reader) beside the stored one until
        generation ``gen``, whose chunks index into it, goes live (:meth:`promote`) or is dropped (:meth:`discard`);
        the stored text stays what the live generation's offsets index into."""
        self._replace(self._path(h, f"g{gen}.txt"), text.encode("utf-8"))
        self._replace(self._path(h, f"g{gen}.layout.json"), json.dumps(layout or {}).encode("utf-8"))

    def promote(self, h: str, gen: int) -> None:
        """Generation ``gen`` is live: its staged reading of ``h`` becomes the stored one (each file renamed over its
        old one; the layout first, then the text, whose presence says a staging is still to promote)."""
        for staged, what in ((f"g{gen}.layout.json", "layout.json"), (f"g{gen}.txt", "txt")):
            p = self._path(h, staged)
            if p.exists():
                os.replace(p, self._path(h, what))
        with self._layouts_lock:
            self._layouts.pop(h, None)

    def discard(self, h: str, gen: int) -> None:
        for staged in (f"g{gen}.layout.json", f"g{gen}.txt"):
            self._path(h, staged).unlink(missing_ok=True)

    def staged(self) -> list[tuple[str, int]]:
        """``(hash, generation)`` of every staged reading (:meth:`stage`) still on disk."""
        out = []
        for p in self.root.glob("*/*.g*.txt"):
            h, _, rest = p.name.partition(".g")
            gen = rest[: -len(".txt")]
            if gen.isdigit():
                out.append((h, int(gen)))
        return sorted(out)

    def original(self, h: str) -> bytes:
        return self._path(h, "orig").read_bytes()

    def text(self, h: str) -> str:
        return self._path(h, "txt").read_bytes().decode("utf-8")

    def has(self, h: str) -> bool:
        return self._path(h, "txt").exists()

    def layout(self, h: str) -> dict | None:
        """The pages and headings of ``h``'s text (ingest/readers/layout.py), or None when it has none recorded. The
        last 32 are kept parsed (answers look up the page of each quoted sentence); callers must not modify them."""
        with self._layouts_lock:
            if h in self._layouts:
                self._layouts.move_to_end(h)
                return self._layouts[h]
        p = self._path(h, "layout.json")
        lay = json.loads(p.read_text(encoding="utf-8")) if p.exists() else None
        with self._layouts_lock:
            self._layouts[h] = lay
            while len(self._layouts) > 32:
                self._layouts.popitem(last=False)
        return lay

    def remove(self, h: str) -> None:
        """Delete the original and text of ``h`` (when no document refers to it any more)."""
        for what in ("orig", "txt", "layout.json"):
            self._path(h, what).unlink(missing_ok=True)
        for p in self._path(h, "txt").parent.glob(f"{h}.g*"):  # staged readings of it (:meth:`stage`)
            p.unlink(missing_ok=True)
        with self._layouts_lock:
            self._layouts.pop(h, None)


@dataclass(frozen=True)
class Generation:
    gen: int
    chunker: str
    theta: int
    params: dict
    embedder: str
    dim: int
    n_levels: int
    status: str


class Catalog:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.db = open_db(self.path, SCHEMA)
        cols = {r[1] for r in self.db.execute("PRAGMA table_info(indexed)")}
        if "chunking" not in cols:  # per-document chunker and θ (NULL: the generation's), added later
            self.db.execute("ALTER TABLE indexed ADD COLUMN chunking TEXT")
        if "phase" not in cols:  # 'first': the quick MG chunks of a document whose LM refinement is pending
            self.db.execute("ALTER TABLE indexed ADD COLUMN phase TEXT")
        if "owner" not in {r[1] for r in self.db.execute("PRAGMA table_info(documents)")}:
            # who may replace the document: NULL = the shared library (CLI, admin), else the browser or user that
            # uploaded it in the chat (README "Security")
            self.db.execute("ALTER TABLE documents ADD COLUMN owner TEXT")
        self._lock = threading.RLock()  # one connection shared by threads (the server): serialise transactions

    @contextmanager
    def transaction(self):
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    # -- generations --------------------------------------------------------------------------------
    def _gen(self, row) -> Generation | None:
        if row is None:
            return None
        return Generation(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5], row[6], row[7])

    def live_generation(self) -> Generation | None:
        return self._gen(self.db.execute(
            "SELECT gen, chunker, theta, params, embedder, dim, n_levels, status FROM generations "
            "WHERE status='live' ORDER BY gen DESC LIMIT 1").fetchone())

    def live_gen(self) -> int | None:
        """The live generation's number (what the store searches; one indexed lookup)."""
        row = self.db.execute("SELECT gen FROM generations WHERE status='live' ORDER BY gen DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def generation(self, gen: int) -> Generation | None:
        return self._gen(self.db.execute(
            "SELECT gen, chunker, theta, params, embedder, dim, n_levels, status FROM generations WHERE gen=?",
            (gen,)).fetchone())

    def new_generation(self, chunker: str, theta: int, params: dict, embedder: str, dim: int, n_levels: int) -> int:
        with self.transaction() as db:
            gen = (db.execute("SELECT COALESCE(MAX(gen), 0) FROM generations").fetchone()[0]) + 1
            db.execute(
                "INSERT INTO generations VALUES (?,?,?,?,?,?,?,?,?,NULL)",
                (gen, chunker, theta, json.dumps(params, sort_keys=True), embedder, dim, n_levels, "building",
                 time.time()),
            )
        return gen

    def set_generation_status(self, gen: int, status: str) -> None:
        with self.transaction() as db:
            if status == "live":
                db.execute("UPDATE generations SET status='retired' WHERE status='live' AND gen<>?", (gen,))
                db.execute("UPDATE generations SET status='live', switched=? WHERE gen=?", (time.time(), gen))
            else:
                db.execute("UPDATE generations SET status=? WHERE gen=?", (status, gen))

    def generations(self, status: str | None = None) -> list[Generation]:
        q = "SELECT gen, chunker, theta, params, embedder, dim, n_levels, status FROM generations"
        rows = self.db.execute(q + (" WHERE status=?" if status else "") + " ORDER BY gen", (status,) if status else ())
        return [self._gen(r) for r in rows]

    def drop_generation_rows(self, gen: int) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM chunks WHERE gen=?", (gen,))
            db.execute("DELETE FROM indexed WHERE gen=?", (gen,))
            db.execute("DELETE FROM pending WHERE gen=?", (gen,))

    # -- store writes in flight (the consistency check on open finishes or undoes them) ----------------------
    def begin_pending(self, gen: int, doc_id: str) -> None:
        """Mark ``doc_id`` in ``gen`` as being written to the store, before its first point is written."""
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO pending VALUES (?,?,?)", (gen, doc_id, time.time()))

    def end_pending(self, gen: int, doc_id: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM pending WHERE gen=? AND doc_id=?", (gen, doc_id))

    def pending(self) -> list[tuple[int, str]]:
        return self.db.execute("SELECT gen, doc_id FROM pending ORDER BY gen, doc_id").fetchall()

    def drop_pending(self, gen: int) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM pending WHERE gen=?", (gen,))

    def chunk_counts(self, gen: int) -> dict[int, int]:
        return dict(self.db.execute("SELECT level, COUNT(*) FROM chunks WHERE gen=? GROUP BY level", (gen,)))

    def chunk_counts_of(self, gen: int, doc_id: str) -> dict[int, int]:
        """Chunks per level of one document in ``gen``."""
        return dict(self.db.execute("SELECT level, COUNT(*) FROM chunks WHERE gen=? AND doc_id=? GROUP BY level",
                                    (gen, doc_id)))

    def level_chunk_ids(self, gen: int, level: int) -> dict[str, str]:
        """chunk id -> doc id of every chunk of one level of ``gen``."""
        return dict(self.db.execute("SELECT id, doc_id FROM chunks WHERE gen=? AND level=?", (gen, level)))

    # -- documents ----------------------------------------------------------------------------------
    def doc_by_hash(self, h: str, gen: int, owner: str | None = None) -> str | None:
        """A document of ``gen`` with content ``h`` that ``owner`` can see (the shared library's or its own)."""
        row = self.db.execute(
            "SELECT i.doc_id FROM indexed i JOIN documents d ON d.doc_id=i.doc_id WHERE i.gen=? AND i.hash=? "
            "AND (d.owner IS NULL OR d.owner=?) ORDER BY (d.owner IS NULL) LIMIT 1", (gen, h, owner)).fetchone()
        return row[0] if row else None

    # -- ownership ------------------------------------------------------------------------------------
    def owner_of(self, doc_id: str) -> tuple[bool, str | None]:
        """(whether ``doc_id`` exists, its owner: None for the shared library)."""
        row = self.db.execute("SELECT owner FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
        return (row is not None, row[0] if row else None)

    def allocate_doc_id(self, name: str, owner: str | None) -> str:
        """The document id an ingest of ``name`` by ``owner`` writes to: ``name`` itself when it is free or already
        ``owner``'s (a new version), else the first free ``stem (n).ext`` (another owner's document of that name is
        never replaced)."""
        exists, current = self.owner_of(name)
        if not exists or current == owner:
            return name
        p = Path(name)
        stem, suffix = (name[: -len(p.suffix)] if p.suffix else name), p.suffix
        n = 2
        while True:
            cand = f"{stem} ({n}){suffix}"
            exists, current = self.owner_of(cand)
            if not exists or current == owner:
                return cand
            n += 1

    def labels(self, visible_to: str | None, doc_ids=None) -> dict[str, str]:
        """``{doc id: the name a reader sees}`` for the documents ``visible_to`` can search (None: every document),
        or only for ``doc_ids`` (a few: an answer's sources; one indexed lookup each, not a scan of the catalog):
        the file's own name, unless another of those documents has the same name (then the id, which tells them
        apart). So a private upload stored as ``report (2).pdf`` because another user has a ``report.pdf`` is shown
        to its owner as ``report.pdf``: nothing tells them that someone else has a file of that name."""
        if doc_ids is not None:
            ids = list(dict.fromkeys(doc_ids))
            rows = self.db.execute(f"SELECT doc_id, name FROM documents WHERE doc_id IN ({','.join('?' * len(ids))})",
                                   ids).fetchall() if ids else []
            return {d: self.label_of(d, name, visible_to) for d, name in rows}
        if visible_to is None:
            rows = self.db.execute("SELECT doc_id, name FROM documents").fetchall()
        else:
            rows = self.db.execute("SELECT doc_id, name FROM documents WHERE owner IS NULL OR owner=?",
                                   (visible_to,)).fetchall()
        seen: dict[str, int] = {}
        for _, name in rows:
            seen[name] = seen.get(name, 0) + 1
        return {d: (name if seen[name] == 1 else d) for d, name in rows}

    def label_of(self, doc_id: str, name: str, visible_to: str | None) -> str:
        """The name ``visible_to`` sees for ``doc_id`` (a file named ``name``), whether or not it is in the catalog
        yet (a queued upload): ``name`` unless another document they can search has that name."""
        sql = "SELECT 1 FROM documents WHERE name=? AND doc_id<>?"
        args: tuple = (name, doc_id)
        if visible_to is not None:
            sql, args = sql + " AND (owner IS NULL OR owner=?)", args + (visible_to,)
        return doc_id if self.db.execute(sql + " LIMIT 1", args).fetchone() else name

    def visible_doc_ids(self, owner: str | None) -> list[str]:
        """Documents ``owner`` can search: the shared library's and its own."""
        return [r[0] for r in self.db.execute(
            "SELECT doc_id FROM documents WHERE owner IS NULL OR owner=? ORDER BY doc_id", (owner,))]

    def owners(self) -> dict[str, str | None]:
        """``{doc id: owner}`` of every document (None: the shared library)."""
        return dict(self.db.execute("SELECT doc_id, owner FROM documents"))

    def has_hidden_docs(self, owner: str | None) -> bool:
        """Whether some document is private to another owner (then searches for ``owner`` need a filter)."""
        return self.db.execute("SELECT 1 FROM documents WHERE owner IS NOT NULL AND owner IS NOT ? LIMIT 1",
                               (owner,)).fetchone() is not None

    def indexed_doc(self, gen: int, doc_id: str):
        return self.db.execute(
            "SELECT version, hash FROM indexed WHERE gen=? AND doc_id=?", (gen, doc_id)).fetchone()

    def version_for(self, doc_id: str, h: str) -> int:
        """The version number content ``h`` has (or will get) for ``doc_id``."""
        row = self.db.execute("SELECT version FROM versions WHERE doc_id=? AND hash=?", (doc_id, h)).fetchone()
        if row:
            return row[0]
        return self.db.execute("SELECT COALESCE(MAX(version), 0) + 1 FROM versions WHERE doc_id=?",
                               (doc_id,)).fetchone()[0]

    def chunk_ids(self, gen: int, doc_id: str) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for cid, level in self.db.execute("SELECT id, level FROM chunks WHERE gen=? AND doc_id=?", (gen, doc_id)):
            out.setdefault(level, []).append(cid)
        return out

    def chunk_spans(self, gen: int, doc_id: str, level: int) -> list[tuple[str, int, int]]:
        """``(id, start, end)`` of a document's chunks of one level in ``gen``, in the document's order."""
        return self.db.execute('SELECT id, start, "end" FROM chunks WHERE gen=? AND doc_id=? AND level=? '
                               "ORDER BY start", (gen, doc_id, level)).fetchall()

    def docs_of_chunks(self, gen: int, ids: Iterable[str]) -> dict[str, str]:
        """``{chunk id: doc id}`` for chunks of ``gen``."""
        ids = list(ids)
        out: dict[str, str] = {}
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            marks = ",".join("?" * len(part))
            out.update(self.db.execute(f"SELECT id, doc_id FROM chunks WHERE gen=? AND id IN ({marks})",
                                       (gen, *part)).fetchall())
        return out

    def chunks_under(self, gen: int, parent_ids: Iterable[str]) -> list[tuple[str, str, int, int, int, str]]:
        """``(id, doc_id, level, start, end, parent_id)`` of every chunk of ``gen`` under the given parents."""
        pids = list(dict.fromkeys(parent_ids))
        out = []
        for i in range(0, len(pids), 500):
            part = pids[i:i + 500]
            out += self.db.execute(
                f'SELECT id, doc_id, level, start, "end", parent_id FROM chunks WHERE gen=? AND parent_id IN '
                f'({",".join("?" * len(part))})', (gen, *part)).fetchall()
        return out

    def record_indexed(self, gen: int, doc_id: str, name: str, h: str, size: int, kind: str,
                       chunks: Iterable, seconds: float, chunking: dict | None = None, owner: str | None = None,
                       phase: str | None = None, on_commit=None) -> int:
        """Record a new version (if the hash is new for this doc) and its chunks in ``gen``, in one transaction.
        ``chunking`` (``{"chunker", "theta", "params"}``) is recorded when the document was cut with other parameters
        than its generation's. ``owner`` is set when the document is new and never changed afterwards. ``phase``
        ``"first"`` marks the quick first-pass chunks of a document whose refinement is pending; ``on_commit(db)``
        runs inside the same transaction (the ingestion queue marks its job there). ``seconds`` is this write's work;
        what is recorded is the document's whole ingest time: a later write of the same content in the same generation
        (the next range of a long PDF, the refinement) adds its seconds to those before it."""
        chunks = list(chunks)
        now = time.time()
        with self.transaction() as db:
            before = db.execute("SELECT seconds FROM indexed WHERE gen=? AND doc_id=? AND hash=?",
                                (gen, doc_id, h)).fetchone()
            seconds = (seconds or 0.0) + ((before[0] or 0.0) if before else 0.0)
            version = self.version_for(doc_id, h)
            db.execute("INSERT OR IGNORE INTO versions VALUES (?,?,?,?,?,?)", (doc_id, version, h, size, kind, now))
            db.execute(
                "INSERT INTO documents (doc_id, name, current_version, created, updated, owner) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT(doc_id) DO UPDATE SET "
                "current_version=excluded.current_version, updated=excluded.updated, name=excluded.name",
                (doc_id, name, version, now, now, owner),
            )
            db.execute("DELETE FROM chunks WHERE gen=? AND doc_id=?", (gen, doc_id))
            db.executemany(
                "INSERT OR REPLACE INTO chunks VALUES (?,?,?,?,?,?,?)",
                [(gen, c.id, doc_id, c.level, c.start, c.end, c.parent_id) for c in chunks],
            )
            counts = [sum(1 for c in chunks if c.level == lv) for lv in range(3)]
            db.execute(
                "INSERT OR REPLACE INTO indexed (gen, doc_id, version, hash, n_l0, n_l1, n_l2, seconds, indexed_at, "
                "chunking, phase) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (gen, doc_id, version, h, *counts, seconds, now,
                 json.dumps(chunking, sort_keys=True) if chunking else None, phase),
            )
            if on_commit is not None:
                on_commit(db)
        return version

    def current_hash(self, doc_id: str) -> str | None:
        """The content hash of ``doc_id``'s current version; None when there is no such document."""
        row = self.db.execute("SELECT v.hash FROM documents d JOIN versions v ON v.doc_id=d.doc_id AND "
                              "v.version=d.current_version WHERE d.doc_id=?", (doc_id,)).fetchone()
        return row[0] if row else None

    def remove_document(self, doc_id: str) -> list[str]:
        """Forget ``doc_id`` entirely (chunks, index rows, its versions); returns the content hashes no other
        document refers to any more, whose originals the caller removes from the store."""
        with self.transaction() as db:
            hashes = [r[0] for r in db.execute("SELECT DISTINCT hash FROM versions WHERE doc_id=?", (doc_id,))]
            db.execute("DELETE FROM chunks WHERE doc_id=?", (doc_id,))
            db.execute("DELETE FROM indexed WHERE doc_id=?", (doc_id,))
            db.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))
            db.execute("DELETE FROM versions WHERE doc_id=?", (doc_id,))
            return [h for h in hashes if db.execute(
                "SELECT 1 FROM versions WHERE hash=? UNION SELECT 1 FROM indexed WHERE hash=? LIMIT 1",
                (h, h)).fetchone() is None]

    def documents(self, gen: int | None) -> list[dict]:
        rows = self.db.execute(
            "SELECT d.doc_id, d.name, d.current_version, v.hash, v.size, v.kind, d.updated, "
            "i.n_l0, i.n_l1, i.n_l2, i.seconds, i.indexed_at, i.chunking, d.owner, i.phase FROM documents d "
            "JOIN versions v ON v.doc_id=d.doc_id AND v.version=d.current_version "
            "LEFT JOIN indexed i ON i.doc_id=d.doc_id AND i.gen=? ORDER BY d.doc_id", (gen if gen is not None else -1,))
        keys = ("doc_id", "name", "version", "hash", "size", "kind", "updated", "n_l0", "n_l1", "n_l2",
                "seconds", "indexed_at", "chunking", "owner", "phase")
        out = [dict(zip(keys, r)) for r in rows]
        for r in out:
            r["chunking"] = json.loads(r["chunking"]) if r["chunking"] else None
        return out

    def phase(self, gen: int, doc_id: str) -> tuple[str | None, str | None] | None:
        """``(hash, phase)`` of ``doc_id`` in ``gen`` (phase ``"first"`` or None), or None when it is not indexed."""
        row = self.db.execute("SELECT hash, phase FROM indexed WHERE gen=? AND doc_id=?", (gen, doc_id)).fetchone()
        return (row[0], row[1]) if row else None

    def known_ids(self, gen: int, ids: Iterable[str]) -> set[str]:
        """The chunk ids among ``ids`` that the catalog records in ``gen``: what a search may show. Points written
        but not yet recorded (a document being swapped in) or recorded no more (its old chunks, about to be deleted)
        stay invisible, so a reader sees one chunking of a document or the other, never both."""
        ids = list(dict.fromkeys(ids))
        out: set[str] = set()
        with self._lock:
            for i in range(0, len(ids), 500):
                part = ids[i:i + 500]
                out.update(r[0] for r in self.db.execute(
                    f"SELECT id FROM chunks WHERE gen=? AND id IN ({','.join('?' * len(part))})", (gen, *part)))
        return out

    def chunking(self, gen: int, doc_id: str) -> dict | None:
        """The document's own chunking parameters in ``gen``, or None when it uses the generation's."""
        row = self.db.execute("SELECT chunking FROM indexed WHERE gen=? AND doc_id=?", (gen, doc_id)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def version_of(self, doc_id: str, h: str) -> dict | None:
        """``{"doc_id", "name", "kind", "version"}`` when ``doc_id`` exists and has (had) content ``h``."""
        row = self.db.execute(
            "SELECT d.doc_id, d.name, v.kind, v.version FROM documents d JOIN versions v ON v.doc_id=d.doc_id "
            "WHERE d.doc_id=? AND v.hash=?", (doc_id, h)).fetchone()
        return dict(zip(("doc_id", "name", "kind", "version"), row)) if row else None

    def find_document(self, ref: str) -> str | None:
        """The document ``ref`` names: its id, else its (unique) name or hash prefix."""
        if self.db.execute("SELECT 1 FROM documents WHERE doc_id=?", (ref,)).fetchone():
            return ref
        row = self.db.execute(
            "SELECT doc_id FROM documents WHERE doc_id=? OR name=? "
            "UNION SELECT doc_id FROM versions WHERE hash LIKE ? || '%' LIMIT 2",
            (ref, ref, ref if len(ref) >= 8 else "\x00")).fetchall()
        return row[0][0] if len(row) == 1 else None

    # -- runs -------------------------------------------------------------------------------------
    def start_run(self, kind: str, gen: int | None, detail: dict | None = None) -> int:
        cur = self.db.execute("INSERT INTO runs (kind, gen, started, status, detail) VALUES (?,?,?,?,?)",
                              (kind, gen, time.time(), "running", json.dumps(detail or {})))
        return int(cur.lastrowid)

    def interrupted_reingestion(self) -> tuple[Generation, dict] | None:
        """A re-ingestion whose process stopped before it switched or dropped: ``(the generation it was building,
        its run row with ``detail`` read)``, the newest; None when there is none. Its jobs and the documents it wrote
        stay for :func:`ingest.jobs.rebuild.resume`."""
        for g in reversed(self.generations("building")):
            row = self.db.execute("SELECT run_id, started, detail FROM runs WHERE kind='reingest' AND gen=? AND "
                                  "status='running' ORDER BY run_id DESC LIMIT 1", (g.gen,)).fetchone()
            if row is not None:
                return g, {"run_id": row[0], "started": row[1], "detail": json.loads(row[2] or "{}")}
        return None

    def finish_run(self, run_id: int, status: str, n_ok: int, n_failed: int, detail: dict | None = None) -> None:
        self.db.execute(
            "UPDATE runs SET finished=?, status=?, n_ok=?, n_failed=?, detail=? WHERE run_id=?",
            (time.time(), status, n_ok, n_failed, json.dumps(detail or {}), run_id))

    def runs(self, limit: int = 20) -> list[dict]:
        keys = ("run_id", "kind", "gen", "started", "finished", "status", "n_ok", "n_failed", "detail")
        return [dict(zip(keys, r)) for r in self.db.execute(
            "SELECT * FROM runs ORDER BY run_id DESC LIMIT ?", (limit,))]


def live_chunks(catalog: Catalog, store: DocumentStore, allowed: Collection[str] | None = None,
                ) -> tuple[dict[str, str], dict[str, list]]:
    """(text per document, chunks per document, sorted by level then start) of the live generation, rebuilt from
    the catalog's offsets over the stored originals; ``allowed`` limits it to those document ids. The one chunk
    listing behind router training, the Evaluate tab's benchmark and the chunk inspector."""
    live = catalog.live_generation()
    if live is None:
        return {}, {}
    docs = {r["doc_id"]: r for r in catalog.documents(live.gen) if r["n_l0"] is not None
            and (allowed is None or r["doc_id"] in allowed)}
    with catalog._lock:
        rows = catalog.db.execute('SELECT doc_id, level, start, "end", parent_id, id FROM chunks WHERE gen=?',
                                  (live.gen,)).fetchall()
    spans = {cid: (s, e) for _, lv, s, e, _, cid in rows if lv == 0}
    texts = {d: store.text(r["hash"]) for d, r in docs.items()}
    chunks: dict[str, list] = {}
    for d, lv, s, e, pid, _ in rows:
        if d in texts:
            ps, pe = spans.get(pid, (s, e))
            chunks.setdefault(d, []).append(Chunk(texts[d][s:e], s, e, lv, ps, pe, d, docs[d]["hash"]))
    for cs in chunks.values():
        cs.sort(key=lambda c: (c.level, c.start))
    return {d: t for d, t in texts.items() if d in chunks}, chunks

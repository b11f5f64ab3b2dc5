"""``mgrag export-index --to URL``: copy the live generation to a Qdrant server, resumably.

Every level of the live generation is read in id order, a page at a time, and upserted into the server's
collection of the same name (``{prefix}_g{gen}_L{level}``, created with the ``doc_id`` keyword index), then the
aliases ``{prefix}_L{level}`` are pointed at them. After each acknowledged batch the next read offset is saved
in ``DATA_DIR/export/<target>.json``, so a run that stops (network, Ctrl-C, a crash) goes on where it stopped;
upserts are idempotent (same ids), so a batch sent twice changes nothing. Then set ``MGRAG_QDRANT_URL`` to serve
the same data dir's catalog from the server.
"""
from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): tqdm

log = logging.getLogger(__name__)


@dataclass
class ExportReport:
    gen: int
    points: dict[int, int]  # level -> points on the target after the export
    sent: int  # points sent by this run
    resumed: bool


def state_path(data_dir: Path, url: str) -> Path:
    return Path(data_dir) / "export" / (re.sub(r"[^A-Za-z0-9._-]+", "_", url).strip("_") + ".json")


def _save(path: Path, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state), encoding="utf-8")
    os.replace(tmp, path)


def export_live(catalog, source, target, state_file: Path, batch: int = 512, progress: bool = True) -> ExportReport:
    """Copy the live generation from ``source`` (any :class:`ingest.store.index.VectorIndex`) to ``target`` (a
    :class:`ingest.store.index.ClientIndex` on the server)."""
    live = catalog.live_generation()
    if live is None:
        raise ValueError("the index is empty; nothing to export")
    state = {}
    if state_file.exists():
        state = json.loads(state_file.read_text(encoding="utf-8"))
        if state.get("gen") != live.gen or state.get("finished"):  # another generation, or a finished copy: anew
            state = {}
    resumed = bool(state)
    if not resumed:  # a fresh copy: nothing of an earlier export of this generation may stay on the server
        target.drop_generation(live.gen)
    state.setdefault("gen", live.gen)
    levels = state.setdefault("levels", {})
    totals = {lv: source.count(live.gen, lv) for lv in range(live.n_levels)}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=sum(totals.values()), initial=sum(v.get("sent", 0) for v in levels.values()),
                   desc="export", unit="pt")
    sent = 0
    try:
        for lv in range(live.n_levels):
            st = levels.setdefault(str(lv), {"offset": None, "sent": 0, "done": False})
            if st["done"]:
                continue
            target.create_level(live.gen, lv, live.dim)
            while True:
                pts, nxt = source.page(live.gen, lv, st["offset"], batch, with_vectors=True)
                target.upsert_points(live.gen, lv, pts)
                st["offset"], st["sent"], sent = nxt, st["sent"] + len(pts), sent + len(pts)
                st["done"] = nxt is None
                _save(state_file, state)
                if bar is not None:
                    bar.update(len(pts))
                if nxt is None:
                    break
    finally:
        if bar is not None:
            bar.close()
    target.switch(live.gen, live.n_levels)
    got = {lv: target.count(live.gen, lv) for lv in range(live.n_levels)}
    if got != totals:
        raise RuntimeError(f"export incomplete: the server has {got} points per level, the index {totals}; "
                           "run it again")
    state["finished"] = True
    _save(state_file, state)
    return ExportReport(live.gen, got, sent, resumed)

"""The Chat tab's upload panel: drop files, follow their rows (extracting, searchable, refining with the time left,
ready) until each is done, cancel what is unfinished, list and delete this browser's (or user's) own uploads."""
import html
import logging
from pathlib import Path

import gradio as gr
import pandas as pd

from services.service import AppService
from services.uploads import ACTIVE, FOUND, SUPPORTED, JobState, reading_rest
from ui.rooms.context import RoomContext, error

log = logging.getLogger("ui.app")  # the name it always had (log filters, tests)


def remove_uploads(paths, root) -> None:
    """Delete the upload cache files Gradio handed over (their text is in the document store now, or they were
    refused), so nothing stays downloadable by its URL."""
    for p in paths or []:
        try:
            real = Path(p).resolve()
            if real.is_relative_to(root) and real.is_file():
                real.unlink()
                if real.parent != root and not any(real.parent.iterdir()):
                    real.parent.rmdir()
        except OSError:
            log.warning("could not remove the upload %s", p)


def clean_uploads(service: AppService) -> None:
    """Stale files out of the upload cache (:meth:`AppService.clean_uploads`); a failure is logged, not raised."""
    try:
        service.clean_uploads()
    except Exception:  # pragma: no cover - cleaning is best effort
        log.exception("cleaning the upload folder %s failed", service.upload_root)


def upload_state(r) -> str:
    """One column a person can read in the narrow upload panel: the state, with what is being done, the
    progress and the time left ("refining 34% · about 4 min left"), or the reason a file was refused; a long PDF
    read in ranges says which pages are searchable, not "refining".

    >>> upload_state({"status": "refining", "message": "searchable (pages 1–40 of 168) · reading pages 41 of 168"})
    'searchable (pages 1–40 of 168) · reading pages 41 of 168'
    >>> upload_state({"status": "failed", "message": "is not a readable PDF"})
    'failed: is not a readable PDF'
    """
    status, message = str(r.get("status") or ""), str(r.get("message") or "")
    if not message or message == status:
        return status
    return message if message.startswith(status) or reading_rest(message) else f"{status}: {message}"


def upload_table(rows):
    return pd.DataFrame([[r.get("name", ""), upload_state(r), r.get("chunks", "")] for r in rows],
                        columns=["name", "state", "chunks per level"])


class UploadPanel:
    def __init__(self, c: RoomContext):
        self.c, self.service = c, c.service

    def layout_upload(self) -> None:
        """The drop zone, the last upload's rows and the cancel button."""
        s = self.c.settings
        self.files = gr.File(label=f"Upload documents (drag and drop; {', '.join(sorted(SUPPORTED))}; "
                                   f"at most {s.max_file_mb:g} MB each)",
                             file_count="multiple", type="filepath", elem_id="upload")
        self.upload_report = gr.Dataframe(headers=["name", "state", "chunks per level"],
                                          label="Last upload (each file and its state)",
                                          interactive=False, elem_id="upload-report", wrap=True,
                                          column_widths=["38%", "44%", "18%"])
        with gr.Row():
            self.cancel_upload_btn = gr.Button("Cancel unfinished", size="sm", scale=0, elem_id="cancel-upload")
        self.upload_rows_state = gr.State([])
        self.upload_timer = gr.Timer(1.0, active=False)

    def layout_own(self) -> None:
        """This browser's uploads, to delete."""
        with gr.Accordion("Your uploads", open=False, elem_id="my-docs"):
            self.my_docs = gr.CheckboxGroup([], label="only this browser (and the admin) can search them",
                                            elem_id="my-docs-select")
            self.delete_mine_btn = gr.Button("Delete selected", variant="stop", size="sm", elem_id="delete-mine")

    # -- handlers ----------------------------------------------------------------------------------------------
    def mine(self, browser_id, request: gr.Request):
        owner = self.c.reader_of(browser_id, request)
        return gr.update(choices=self.service.own_choices(owner) if owner else [], value=[])

    def on_upload(self, paths, browser_id, request: gr.Request):
        """Queue the files and show their rows at once; the rows move (extracting, searchable, refining N% with the
        time left, ready) until every file is searchable, then the timer keeps them moving through the refinement.
        The API's `/upload` returns when every file is searchable or has failed."""
        service = self.service
        clean_uploads(service)
        keep = gr.update
        if not paths:
            yield keep(), None, keep(), keep(), keep(), keep()
            return
        try:
            owner = self.c.owner_of(browser_id, request)
            rows, ids = service.enqueue_files(paths, owner=owner)
        finally:
            remove_uploads(paths, service.upload_root)
        yield upload_table(rows), None, keep(), rows, gr.Timer(active=False), keep()
        shown = 0
        for ready in service.watch_searchable(ids, poll_s=0.5):
            # each file joins "Search in" and "Your uploads" as soon as it is searchable, not when the batch is
            grew = ready > shown
            shown = ready
            yield (upload_table(service.upload_rows(rows)), None, self.mine(browser_id, request) if grew else keep(),
                   rows, keep(), self.scope_update(browser_id, request) if grew else keep())
        now = service.upload_rows(rows)
        bad = [r for r in now if r["status"] in (JobState.FAILED, "refused", JobState.CANCELLED)]
        if bad:
            gr.Warning(html.escape(f"{len(bad)} file(s) not ingested: "
                                   + "; ".join(f"{r['name']}: {r['message']}" for r in bad)))
        ok = [r for r in now if r["status"] in FOUND]
        if ok:
            unfinished = [r for r in ok if r["status"] != JobState.READY]
            reading = sum(reading_rest(r.get("message")) for r in unfinished)
            left = [f"{reading} still being read (its first pages searchable)" if reading else "",
                    f"{len(unfinished) - reading} being refined in the background" if len(unfinished) > reading
                    else ""]
            gr.Info(f"{len(ok)} document(s) searchable" + (f"; {'; '.join(x for x in left if x)} (the table follows "
                                                          "it)" if unfinished else ""))
        active = any(r["status"] in ACTIVE for r in now)
        yield (upload_table(now), None, self.mine(browser_id, request), rows, gr.Timer(active=active),
               self.scope_update(browser_id, request))

    def scope_update(self, browser_id, request: gr.Request):
        """*Search in*'s choices now (what is ticked stays ticked)."""
        reader = self.c.reader_of(browser_id, request)
        return gr.update(choices=self.service.searchable_choices(reader) if reader else [])

    def on_upload_tick(self, rows):
        """The timer: the last upload's rows as they are now; it stops when every file is done."""
        now = self.service.upload_rows(rows or [])
        active = any(r["status"] in ACTIVE for r in now)
        return upload_table(now), gr.Timer(active=active)

    def on_cancel_upload(self, rows, browser_id, request: gr.Request):
        service = self.service
        ids = [r["job_id"] for r in service.upload_rows(rows or [])
               if r.get("job_id") and r["status"] in ACTIVE]
        if not ids:
            gr.Info("nothing of the last upload is still queued or running")
            return upload_table(service.upload_rows(rows or []))
        gr.Info(html.escape("; ".join(service.cancel_jobs(self.c.owner_of(browser_id, request), ids))))
        return upload_table(service.upload_rows(rows))

    def on_delete_mine(self, browser_id, selected, request: gr.Request):
        try:
            deleted = self.service.delete_own(self.c.owner_of(browser_id, request), list(selected or []))
        except ValueError as e:
            raise error(e) from e
        gr.Info(html.escape(f"Deleted {', '.join(deleted)}"))
        return self.mine(browser_id, request)

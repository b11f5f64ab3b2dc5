"""The viewer's HTTP routes beside the Gradio app: an answer's source opened at its page with the passage, the
matched child and the supporting sentences marked (:mod:`services.viewer` draws them)."""
import html
import logging
from dataclasses import replace
from pathlib import Path

from ingest.readers.layout import Layout, page_span, place_label
from ingest.readers.sandbox import SandboxError
from services.service import AppService
from services.viewer import InvalidViewToken, RenderBusy, content_disposition, view_page

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): fastapi

log = logging.getLogger("ui.app")  # the name it always had (log filters, tests)


def add_viewer_routes(app, service: AppService) -> None:
    """``/mgrag/view/TOKEN`` (the viewer page), ``/mgrag/page/TOKEN`` (a PDF page as PNG, highlights drawn) and
    ``/mgrag/original/TOKEN`` (the original file). Tokens are minted per answer (:meth:`AppService.view_link`).
    Page images come from :attr:`AppService.page_renderer` (pixel cap, capped child process, a few at once, cached);
    when every render slot stays taken the answer is 503 with ``Retry-After``."""
    from fastapi.responses import HTMLResponse, Response


    def opened(token: str):
        try:
            return service.open_view(token)
        except InvalidViewToken as e:  # forged, malformed or expired
            return Response(html.escape(str(e)), status_code=403, media_type="text/plain")
        except ValueError as e:  # a valid link whose document is gone
            return Response(html.escape(str(e)), status_code=404, media_type="text/plain")

    def highlights(view, text):
        spans = [(view.start, view.end, "passage")] + ([(*view.matched, "child")] if view.matched else [])
        return [(text[s:e], k) for s, e, k in spans + [(s, e, "support") for s, e in view.support]]

    def page_view(token: str, page: int | None = None):
        got = opened(token)
        if isinstance(got, Response):
            return got
        view, row = got
        text = service.ctx.store.text(view.hash)
        lay = Layout.from_json(service.ctx.store.layout(view.hash))
        label = place_label(page_span(lay, view.start, view.end), [], lay.unit)
        n_pages, page_url = None, None
        if row["kind"] == "pdf" and lay.pages:
            view = replace(view, page=page or view.page or 1)
            n_pages = len(lay.pages)
            page_url = f"../page/{token}?page={view.page}"
        return HTMLResponse(view_page(view, text, row["kind"], n_pages, page_url, f"../original/{token}", label))

    def page_png(token: str, page: int = 1):
        got = opened(token)
        if isinstance(got, Response):
            return got
        view, row = got
        if row["kind"] != "pdf":
            return Response("not a PDF", status_code=404, media_type="text/plain")
        store = service.ctx.store
        try:
            png, _ = service.page_renderer.render(view.hash, lambda: store.original(view.hash), page,
                                                  highlights(view, store.text(view.hash)))
        except RenderBusy as e:
            return Response(str(e), status_code=503, media_type="text/plain", headers={"Retry-After": "5"})
        except SandboxError as e:
            log.warning("rendering page %s of %s failed: %s", page, view.doc_id, e.problem)
            return Response("this page could not be rendered within the viewer's memory and time limits; download "
                            "the original to see it", status_code=422, media_type="text/plain")
        return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})

    def original(token: str):
        got = opened(token)
        if isinstance(got, Response):
            return got
        view, row = got
        data = service.ctx.store.original(view.hash)
        types = {"pdf": "application/pdf", "html": "text/plain; charset=utf-8", "text": "text/plain; charset=utf-8",
                 "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}
        return Response(data, media_type=types.get(row["kind"], "application/octet-stream"),
                        headers={"Content-Disposition": content_disposition(Path(row["name"]).name),
                                 "X-Content-Type-Options": "nosniff"})

    app.add_api_route("/mgrag/view/{token}", page_view, methods=["GET"])
    app.add_api_route("/mgrag/page/{token}", page_png, methods=["GET"])
    app.add_api_route("/mgrag/original/{token}", original, methods=["GET"])


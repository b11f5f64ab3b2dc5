"""The viewer's HTTP routes beside the Gradio app: an answer's source opened at its page with the passage, the
matched child and the supporting sentences marked (:meth:`AppService.view_html` and its neighbours draw them; this
module answers them over HTTP)."""
import html

from services.service import AppService
from services.viewer import InvalidViewToken, RenderBusy, RenderFailed, ViewNotFound, content_disposition

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): fastapi


def add_viewer_routes(app, service: AppService) -> None:
    """``/mgrag/view/TOKEN`` (the viewer page), ``/mgrag/page/TOKEN`` (a PDF page as PNG, highlights drawn) and
    ``/mgrag/original/TOKEN`` (the original file). Tokens are minted per answer (:meth:`AppService.view_link`).
    Page images come from :attr:`AppService.page_renderer` (pixel cap, capped child process, a few at once, cached);
    when every render slot stays taken the answer is 503 with ``Retry-After``."""
    from fastapi.responses import HTMLResponse, Response

    def refused(e: InvalidViewToken | ViewNotFound):
        """The answer to a token that opens nothing: 403 (forged, malformed or expired) or 404 (its document is gone,
        or it is not a PDF where a page image is asked for)."""
        status = 403 if isinstance(e, InvalidViewToken) else 404
        return Response(html.escape(str(e)), status_code=status, media_type="text/plain")

    def page_view(token: str, page: int | None = None):
        try:
            return HTMLResponse(service.view_html(token, page))
        except (InvalidViewToken, ViewNotFound) as e:
            return refused(e)

    def page_png(token: str, page: int = 1):
        try:
            png = service.view_png(token, page)
        except (InvalidViewToken, ViewNotFound) as e:
            return refused(e)
        except RenderBusy as e:
            return Response(str(e), status_code=503, media_type="text/plain", headers={"Retry-After": "5"})
        except RenderFailed as e:
            return Response(str(e), status_code=422, media_type="text/plain")
        return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})

    def original(token: str):
        try:
            data, media_type, name = service.view_original(token)
        except (InvalidViewToken, ViewNotFound) as e:
            return refused(e)
        return Response(data, media_type=media_type,
                        headers={"Content-Disposition": content_disposition(name), "X-Content-Type-Options": "nosniff"})

    app.add_api_route("/mgrag/view/{token}", page_view, methods=["GET"])
    app.add_api_route("/mgrag/page/{token}", page_png, methods=["GET"])
    app.add_api_route("/mgrag/original/{token}", original, methods=["GET"])

"""The LLM endpoint the admin sets on the Admin tab (OpenAI-compatible: kept in ``data_dir/.secrets/llm.json``,
mode 0600, and applied to the context's settings) and the answer backends that can run here. A part of
:class:`services.service.AppService`."""
from __future__ import annotations

import json
import logging
from pathlib import Path

from app.synth import SynthesisError
from app.synth.openai_compat import check_endpoint, list_models
from app.synth.status import backend_status
from core.private import write_secret
from services.part import ServicePart

log = logging.getLogger("services.service")  # the name it always had (log filters, tests)


class LlmPart(ServicePart):
    """The OpenAI-compatible endpoint and the backends' status."""

    @property
    def _llm_path(self) -> Path:
        return self.ctx.settings.data_dir / ".secrets" / "llm.json"

    def _read_llm(self) -> dict | None:
        p = self._llm_path
        return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None

    def _apply_llm(self, cfg: dict) -> None:
        self.ctx.settings = self.ctx.settings.model_copy(update={
            "openai_base_url": cfg.get("base_url") or None, "openai_model": cfg.get("model") or "default",
            "openai_api_key": cfg.get("api_key") or None})

    def backends(self) -> dict[str, str | None]:
        """Every answer backend: None when it can run here, else why not (no model is loaded to tell)."""
        return backend_status(self.ctx.settings)

    def llm_endpoint(self, token: str) -> dict:
        """The OpenAI-compatible endpoint in use: base URL, model, and whether a key is set (never the key)."""
        self.auth.check(token)
        s = self.ctx.settings
        return {"base_url": s.openai_base_url or "", "model": s.openai_model if s.openai_base_url else "",
                "key_set": bool(s.openai_api_key)}

    def _key_for(self, base_url: str, api_key: str | None) -> str | None:
        """The key typed in, else the stored one when it is for the same endpoint."""
        if api_key:
            return api_key
        s = self.ctx.settings
        same = (base_url or "").rstrip("/") == (s.openai_base_url or "").rstrip("/")
        return s.openai_api_key if same else None

    def llm_models(self, token: str, base_url: str, api_key: str | None = None) -> list[str]:
        """The models the endpoint serves (``GET /v1/models``), or ValueError naming what failed."""
        self.auth.check(token)
        try:
            return list_models(base_url, self._key_for(base_url, api_key))
        except SynthesisError as e:
            raise ValueError(str(e)) from e

    def llm_test(self, token: str, base_url: str, model: str, api_key: str | None = None) -> str:
        """List the models and ask ``model`` for a few tokens; what worked, or ValueError naming the failed step."""
        self.auth.check(token)
        try:
            return check_endpoint(base_url, model, self._key_for(base_url, api_key),
                                  timeout=self.ctx.settings.llm_read_timeout_s)
        except SynthesisError as e:
            raise ValueError(str(e)) from e

    def set_llm(self, token: str, base_url: str, model: str, api_key: str | None = None,
                clear_key: bool = False, *, password: str | None = None, client: str = "") -> dict:
        """Save the endpoint for this server (``data_dir/.secrets/llm.json``, mode 0600) and use it from the next
        question on; an empty ``api_key`` keeps the stored one (for the same endpoint), ``clear_key`` drops it. An
        empty base URL removes the endpoint. The stored key goes to the endpoint saved, so besides the session
        token the admin ``password`` is asked again (failures throttled per ``client`` like logins)."""
        self.auth.check(token)
        self.auth.confirm(password, client, "saving the LLM endpoint")
        base_url = (base_url or "").strip().rstrip("/")
        if base_url and not base_url.startswith(("http://", "https://")):
            raise ValueError(f"{base_url!r} is not an http:// or https:// address")
        key = None if clear_key else self._key_for(base_url, (api_key or "").strip() or None)
        cfg = {"base_url": base_url, "model": (model or "").strip(), "api_key": key}
        write_secret(self._llm_path, json.dumps(cfg))
        self._apply_llm(cfg)
        log.info("LLM endpoint set to %s (model %s)", base_url or "(none)", cfg["model"] or "-")
        return self.llm_endpoint(token)

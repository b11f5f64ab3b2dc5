"""One settings object: defaults < TOML file < ``MGRAG_*`` environment variables < CLI flags.

The TOML file is ``$MGRAG_CONFIG`` if set, else ``./mgrag.toml`` if it exists. Keys are the field names below, at
the top level or in the table of their concern (``[retrieval]`` ``top_k = 30``): :data:`CONCERNS` groups the fields
by what they govern, and each concern is a read-only view of the settings (``settings.retrieval.top_k``), so a part
of the product can be handed only the settings it reads. The environment names stay flat (``MGRAG_TOP_K``).
"""
from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from core.components import BACKENDS, CHUNKERS

if TYPE_CHECKING:  # a Literal built from the registry at run time is a value the type checker cannot read
    ChunkerName = str
    BackendName = str
else:  # what pydantic validates against: the names of core/components.py
    ChunkerName = Literal[tuple(CHUNKERS)]
    BackendName = Literal[tuple(BACKENDS)]


def _default_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mgrag"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MGRAG_", extra="forbid", validate_assignment=True)

    # storage
    data_dir: Path = Field(Path("data"), description="Originals, catalog (SQLite) and embedded Qdrant live here.")
    cache_dir: Path = Field(default_factory=_default_cache, description="Converted models (Gemma safetensors).")
    qdrant_url: str | None = Field(None, description="Qdrant server URL; unset = the embedded engine (qdrant_engine) in data_dir.")
    qdrant_api_key: str | None = Field(None, description="API key for the Qdrant server.")
    qdrant_engine: Literal["edge", "local"] = Field(
        "edge", description="Embedded store when no server URL is set: edge (Qdrant Edge shards in data_dir/edge) or local (qdrant-client's local mode in data_dir/qdrant, slow above ~20k points).")
    hnsw_min_points: int = Field(250_000, ge=1, description="Edge: a level with more points than this gets an HNSW graph (built after ingestion; exact search costs ~0.09 ms per 1,000 points, BENCHMARKS.md); smaller levels are searched exactly.")
    hnsw_ef: int = Field(256, ge=1, description="Edge: HNSW search breadth (ef) for levels that have a graph (recall@10 0.992 on MiniLM chunks of the dev sets, BENCHMARKS.md).")
    collection_prefix: str = Field("mgrag", description="Prefix of Qdrant collections and aliases.")
    max_file_mb: float = Field(20.0, gt=0, description="Files larger than this are refused with a message.")
    max_unpacked_mb: float = Field(200.0, gt=0, description="A DOCX, PPTX, XLSX or EPUB whose parts unpack to more than this is refused before it is parsed (decompression bombs).")
    max_words_per_file: int = Field(4_000_000, ge=1, description="Files whose extracted text has more words are refused.")
    extract_timeout_s: float = Field(120.0, gt=0, description="CPU-seconds that extracting one file may use in its child process (a PDF: each range of pdf_pages_per_range pages; a page read by OCR adds 60). Work done, not wall time: a busy machine does not count against it; a child that reports no page for ten times this long is stopped.")
    extract_memory_mb: int = Field(2048, ge=256, description="Memory cap of the child process that extracts one PDF, DOCX or HTML file.")
    ocr_engine: Literal["auto", "tesseract", "rapidocr", "none"] = Field("auto", description="OCR for PDF pages without a text layer and for images: rapidocr (installed with MGRAG, models in the wheel; more accurate in reading order, BENCHMARKS.md \"OCR\"), tesseract (Debian's tesseract-ocr; 2.6x faster), auto (rapidocr if installed, else tesseract), none (such pages are refused).")
    max_rows: int = Field(200_000, ge=1, description="Rows of one CSV file or of all sheets of one XLSX file; more is refused.")
    pdf_reader: Literal["auto", "pdfplumber-tables", "pdfplumber"] = Field("auto", description="How a PDF page with a text layer is read: auto (pdfium, its ruled tables found by pdfplumber's table finder in pdfium's paths and their cells read from pdfium's characters: the same text at a fraction of the cost, BENCHMARKS.md \"PDF pages\"), pdfplumber-tables (pdfium for the pages with no ruled table, pdfplumber for the rest: the default until the tables were read by pdfium), pdfplumber (every page).")
    pdf_pages_per_range: int = Field(40, ge=1, description="A PDF is read this many pages at a time, each range in its own child process (memory cap and time limit per range; progress per range).")
    max_pdf_pages: int = Field(2000, ge=1, description="A PDF of more pages (counted in its page tree, not taken from its /Count) is refused before any page is read: 2,000 is ten 10-Ks of 200 pages, about 4 min at the measured 8 pages/s, under an hour even at 1.8 CPU-s a page.")
    doc_cpu_budget_s: float = Field(3600.0, gt=0, description="CPU-seconds all the page ranges of one PDF may use together (each range also within extract_timeout_s): checked before each range, a PDF past it stops there with a message naming this setting, the ranges already made searchable staying so. 3,600 is max_pdf_pages (2,000) pages at 1.8 CPU-s a page: 9x what the slowest text page measured costs (4.7-36 pages per CPU-s, BENCHMARKS.md \"PDF pages\"), or about 600 pages read by OCR (~6 s a page).")

    # ingestion queue
    first_pass: bool = Field(True, description="Make each document searchable within seconds with MG chunks (no LM), then refine it with the configured LM chunker in the background (the catalog records which phase is live); off: only the configured chunker, searchable when it is done. Chunkers that need no LM have one phase either way.")
    ingest_workers: int = Field(2, ge=1, le=64, description="First passes (extraction, chunking, embedding of a new document) run at once by the process that holds the data dir (`mgrag serve`, `mgrag worker`, or `mgrag ingest` when neither runs).")
    first_pass_timeout_s: float = Field(1800.0, gt=0, description="The most seconds one file's first pass (extraction, chunking, embedding) may hold a worker; past it the file fails with a message naming this setting, and the worker takes the next file.")
    owner_workers: int = Field(0, ge=0, le=64, description="The most files of one user (a browser) processed at once in each lane, so one user's slow files never hold every worker (0: every worker but one; the shared library's files, queued by the admin or the CLI, are not limited).")
    refine_workers: int = Field(1, ge=1, le=64, description="Refinements (the LM chunker's pass) run at once by that process; they yield the CPU to first passes.")
    ingest_max_attempts: int = Field(3, ge=1, le=20, description="A job interrupted this many times (the process killed, a worker lost, an unexpected error) is marked failed with its reason instead of being retried again.")
    queue_url: str | None = Field(None, description="Redis URL of the scale-out queue (e.g. redis://127.0.0.1:6379/0): first passes and refinements run on `mgrag worker` processes on any machine, the process holding the data dir writes their results; unset: they run in that process (no server needed).")
    queue_secret: SecretStr | None = Field(None, description="With queue_url: the key (32 or more random characters, about 128 bits; a repeated or guessable one is refused with one line) that signs every job and result passed through Redis (HMAC-SHA256); the same on the holder and every worker. Jobs are JSON, never code: a job or result that is not signed with it is refused and logged. Make one with `python -c 'import secrets; print(secrets.token_hex(32))'`.")
    queue_inflight: int = Field(8, ge=1, le=256, description="With queue_url: jobs per lane handed to the workers at once (the rest wait in the catalog's queue).")

    # chunking
    chunker: ChunkerName = Field(  # the names of core/components.py
        "mg", description="Chunker for new indexes.")
    theta: int = Field(300, ge=4, description="Parent chunk size bound in words; children are θ/2 and θ/4.")
    lm_model: str = Field("gemma3-270m", description="Causal LM for the LG chunker: the shipped Gemma alias or a local HF folder.")
    lm_8bit: bool = Field(False, description="Load the LM in 8-bit with bitsandbytes (CUDA and the `cuda` extra), as the paper.")
    lm_device: str | None = Field(None, description="torch device for the LM (default: cuda if present, else cpu).")
    lg_mode: Literal["exact", "streaming"] = Field("streaming", description="exact: one pass per window (the paper); streaming: one pass per document (the default: with the size prior it retrieved best of the LG variants on chroma and Emma, not on LongBench's 9 questions, at the same CPU cost, BENCHMARKS.md lg-variants).")
    lg_prompt: str = Field("Continue the text:\n\n", description="Prompt ρ placed before each window.")
    lg_boundary_tokens: list[str] = Field(["<eos>"], description="Tokens whose summed probability marks a boundary ('<eos>' = EOS; chosen by bench/boundary_signal.py).")
    lg_min_words: int = Field(0, ge=0, description="Optional minimum chunk length in words (0 = plain argmax, as the paper).")
    lg_structure_weight: float = Field(0.0, ge=0, le=100, description="LG cut score: log p(boundary) + this × the layout break after the sentence (paragraph 1, line 0.5, heading or page 1.5); 0 = the paper's argmax of p.")
    lg_size_prior: float = Field(1.0, ge=0, le=100, description="LG cut score: + this × log(chunk words / θ), so parents fill θ (1: the default, measured best on chroma and Emma in BENCHMARKS.md lg-variants); 0 = none (the paper).")
    lg_children: Literal["theta", "parent"] = Field("theta", description="LGMGC children: θ/2 and θ/4 words (MG's rule), or half and a quarter of their own parent.")
    lg_batch_size: int | None = Field(None, ge=1, description=(
        "Blocks per forward pass in streaming mode (default: 1 on a CPU, where batching measured slower, "
        "BENCHMARKS.md 'LM blocks batched'; 4 on CUDA)."))
    lg_block_tokens: int = Field(1024, ge=64, description="Streaming block length in tokens.")
    lg_context_tokens: int = Field(64, ge=0, description="Streaming: preceding tokens re-read before each block.")
    torch_threads: int | None = Field(None, description="torch CPU threads (default: measured when the LM loads: 1 thread or one per core, whichever runs the LM faster now).")

    # embedding
    embedder: str = Field("all-MiniLM-L6-v2", description="sentence-transformers model: the shipped MiniLM alias or a local folder; 'hashing' for tests.")
    embed_query_prefix: str | None = Field(None, description="Query prefix (None: known per model, e.g. BGE, E5).")
    embed_passage_prefix: str | None = Field(None, description="Passage prefix (None: known per model).")
    embed_batch_size: int = Field(0, ge=0, description="Embedding batch size; 0: chosen by the machine, 16 on a CPU with up to 4 threads (the product's ingest of six filings took 14% less CPU than at 64 on 2 cores in fp32, level with it in bf16), 64 with more threads or on a GPU (docs/sizing.md).")
    embed_precision: Literal["auto", "fp32", "bf16"] = Field("auto", description="The embedder's matrix products: auto (bf16 on a CPU that computes bfloat16 natively, AVX512-BF16 or AMX: 0.62× the embedding CPU on the dev sets, vectors within cosine 0.9999 of fp32's, the same retrieval, BENCHMARKS.md 'Late chunking'; fp32 elsewhere and on a GPU), fp32 or bf16.")
    chunk_context: bool = Field(True, description="Embed and keyword-index each chunk with its context (the document's title, the heading path, a table's caption and header row) before its text; shown and quoted text stays the document's own. Recorded per index: a change applies at `mgrag reingest` (BENCHMARKS.md 'Finding the passage').")
    late_quarters: bool = Field(True, description="One MiniLM pass for two levels: each θ/4 child's vector pooled from the token states of its θ/2 child's pass (late chunking) instead of embedded alone: 0.61× the embedding, retrieval with the shipped hybrid retriever within each dev set's CI (BENCHMARKS.md 'Late chunking'); an index searched dense alone loses a little recall with it. Applies to documents ingested after the change.")

    # asking
    top_k: int = Field(10, ge=1, description="Hits per level searched for each question.")
    retriever: Literal["dense", "bm25", "hybrid"] = Field("hybrid", description="hybrid (dense and BM25 fused by reciprocal rank; the default: BENCHMARKS.md 'Finding the passage'), dense (Qdrant) or bm25. With MoG selection the default is dense (MoG weighs one retriever's scores).")
    rrf_k: int = Field(60, ge=1, description="Reciprocal rank fusion constant for the hybrid retriever.")
    bm25_weight: float = Field(0.25, ge=0.0, le=1.0, description="The keyword (BM25) ranking's weight in the hybrid retriever's fusion, the dense ranking's being 1: chosen on the six dev sets ingested and searched by the product as the best mean DCG@10 with no set measurably below dense alone (at 0.5-1 the 10-Qs' evidence recall is; BENCHMARKS.md 'Retrieval through a running index', bench/index_retrieval.py). 1 is plain reciprocal-rank fusion.")
    no_retrieval_words: int = Field(3500, ge=50, description="No-retrieval baseline: the document truncated to this many words.")
    max_question_chars: int = Field(2000, ge=10, description="Longer questions are refused with a message.")
    context_words: int = Field(1500, ge=50, description="Context budget handed to the synthesizer, in words.")
    router: str = Field("none", description="Router weighting the levels per question: 'none' (uniform weights; the default, since no router beat them on held-out questions, see README), 'default' (DATA_DIR/router if trained there, else the shipped router/default) or a router folder.")
    router_selection: Literal["max", "mog"] = Field(
        "max", description="max: weighted level scores, parent = max over its children (the design card); mog: MoG's selection (App. A).")

    # answering
    synth_backend: BackendName = Field(  # the names of core/components.py
        "extractive", description="Synthesizer: extractive (no LLM; the default by measurement, BENCHMARKS.md \"Answers\"), offline (a shipped small model), transformers, openai.")
    synth_model: str = Field("meta-llama/Meta-Llama-3-8B-Instruct", description="Chat model for the transformers backend (local folder or local HF cache).")
    synth_4bit: bool | None = Field(None, description="Load the chat model in 4-bit (bitsandbytes, the `cuda` extra); default: when CUDA and bitsandbytes are present.")
    max_new_tokens: int = Field(256, ge=1, description="Answer length limit for chat backends, in tokens.")
    offline_max_new_tokens: int = Field(96, ge=1, description="Answer length limit for the offline backend.")
    offline_model: Literal["gemma3-270m", "qwen2.5-coder-0.5b-instruct"] = Field(
        "gemma3-270m", description="The offline backend's model: the shipped Gemma-3-270M base (completion prompt) or Qwen2.5-Coder-0.5B-Instruct (brief chat prompt).")
    offline_context_words: int | None = Field(
        500, ge=50, description="Context budget of the offline model in words (the first sources up to it; None: context_words). 500 measured no worse than 1500 for Gemma at a third of the time.")
    answer_style: Literal["auto", "generated", "hybrid"] = Field(
        "auto", description="generated: the model's answer, grounded; hybrid: the supporting sentences as the answer, led by the generated one only when a source supports it; auto: hybrid for the offline backend's small model, generated for the others (measured).")
    route_by_name: bool = Field(True, description="A question that names a company, product or report (\"Apple's net sales\") searches only the documents whose own text is about that name (their registrant, title, file name), among those it may search; the answer says which. Off: every document.")
    reader_check: bool = Field(True, description="Generating backends (offline, transformers, openai) abstain without generating when the reader's confidence in the best sentence or table cell of the passages is below its threshold (the fitted scorer of app/data/reader_model.json): the same decision the extractive backend answers by (BENCHMARKS.md 'Answers on documents nobody tuned on').")
    lm_check: Literal["off", "on"] = Field("off", description="The LM check: a small instruction model asked whether the reader's best candidate answers the question; a stage fitted on the train split combines its yes/no margin with the scorer's share to pick the answer and decide whether to answer (app/checker.py, bench/fit_reader.py fit-check). off (default): the reader alone; since two-sentence windows joined the reader's candidates the check no longer pays on dev (BENCHMARKS.md 'Two sentences as one candidate'). on: the endpoint of lm_check_url, else the bundled llama-server with Qwen2.5-Coder-1.5B-Instruct (`make check-model`; a CPU with AVX-512); where it cannot run (no AVX-512, the model not provisioned) the reader answers alone and one log line says why.")
    lm_check_url: str | None = Field(None, description="An OpenAI-compatible endpoint (ending in /v1) that returns logprobs, for the LM check instead of the bundled llama-server.")
    lm_check_model: str = Field("default", description="The model name sent to lm_check_url.")
    table_lookup: bool = Field(True, description="A figure question (an amount, a count, a percent) whose statement row the search did not bring gets that row looked up in the tables of the documents the search returned: the lines around the best-covering row are added as one more numbered source (BENCHMARKS.md, \"Answers on real documents\"). Off: the retrieved passages only.")
    grounding: bool = Field(True, description="Check answers against their sources: abstain when the context or the cited source does not support them.")
    context_floor: float | None = Field(
        None, description="Abstain when the reader's confidence in its answer is below this (None: the threshold chosen on the dev split and shipped with the scorer; -1: never abstain, for calibration sweeps).")
    support_floor: float | None = Field(
        None, description="A claim needs a source sentence with at least this support score (None: the measured value for the embedder).")
    rewrite: Literal["auto", "rules", "llm", "none"] = Field(
        "auto", description="Follow-up to standalone query: rules (offline), llm (the chat backend rewrites), auto (llm for chat backends, else rules), none.")
    openai_base_url: str | None = Field(None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")
    openai_model: str = Field("default", description="Model name sent to the OpenAI-compatible endpoint.")
    openai_api_key: str | None = Field(None, description="API key for the endpoint (sent as a bearer token).")
    llm_connect_timeout_s: float = Field(5.0, gt=0, description="Connect timeout to the LLM endpoint.")
    llm_read_timeout_s: float = Field(60.0, gt=0, description="Longest wait for the next streamed piece.")
    llm_total_timeout_s: float = Field(120.0, gt=0, description="Longest time one answer may take.")

    # web app (`mgrag serve`)
    ui_host: str = Field("127.0.0.1", description="Address the web app listens on (`mgrag serve`).")
    ui_port: int = Field(7860, ge=1, le=65535, description="Port of the web app.")
    trusted_proxies: str = Field(
        "", description="Web app: addresses or networks of reverse proxies (comma-separated, e.g. 127.0.0.1 for one on this machine) whose X-Forwarded-For header names the client, so the admin login slow-down counts per client; empty: none, a client is its connection's address and the header is ignored.")
    admin_user: str = Field("admin", description="User name of the web app's Admin tab.")
    source_floor: float = Field(0.75, ge=0, le=1, description="Web app: uncited sources scoring under this share of the top source's score (dense retrieval) are folded away under 'N more below the relevance floor'; 0 shows all (measured on chroma: 99.1% of the relevant sources stay shown, 4.4 of 5.6 sources per answer; bench/source_floor.py).")
    answer_links: bool = Field(False, description="Web app: render Markdown links in answers as live links (raw HTML stays escaped, images stay text); off: answers are shown literally.")
    admin_password: SecretStr | None = Field(
        None, description="Password of the Admin tab; unset: `mgrag serve` makes a random one, logs it once and keeps it in data_dir/.secrets/admin_password (`mgrag admin password` shows it, `--reset` changes it).")
    admin_idle_s: float = Field(1800.0, gt=0, description="Web app: an admin login unused this long (seconds) ends; the Admin tab asks for the password again.")
    api_requests_per_minute: int = Field(120, ge=1, description="HTTP API (/v1): requests one API key may make in any minute; more get 429 with Retry-After.")
    admin_session_s: float = Field(8 * 3600.0, gt=0, description="Web app: an admin login ends this long (seconds) after it began, however much it is used.")

    log_level: str = Field("INFO", description="Logging level.")

    @field_validator("lg_boundary_tokens")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("lg_boundary_tokens must name at least one token, e.g. ['\\n\\n'] or ['<eos>']")
        return v

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, v: str) -> str:
        out = []
        for item in (x.strip() for x in v.split(",")):
            if not item:
                continue
            try:
                out.append(str(ipaddress.ip_network(item, strict=False) if "/" in item else ipaddress.ip_address(item)))
            except ValueError:
                raise ValueError(f"trusted_proxies: {item!r} is not an IP address or network (e.g. 127.0.0.1, "
                                 "10.0.0.0/8)") from None
        return ",".join(out)

    @model_validator(mode="after")
    def _check(self) -> "Settings":
        if self.lg_context_tokens >= self.lg_block_tokens:
            raise ValueError("lg_context_tokens must be smaller than lg_block_tokens")
        return self

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        path = os.environ.get("MGRAG_CONFIG") or ("mgrag.toml" if Path("mgrag.toml").exists() else None)
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if path:
            if not Path(path).exists():
                raise FileNotFoundError(f"MGRAG_CONFIG={path}: no such settings file")
            sources.append(_ConcernToml(settings_cls, path))
        return tuple(sources)

    # the settings by concern (CONCERNS), read-only
    @property
    def storage(self) -> SettingsView:
        return SettingsView(self, "storage")

    @property
    def reading(self) -> SettingsView:
        return SettingsView(self, "reading")

    @property
    def queue(self) -> SettingsView:
        return SettingsView(self, "queue")

    @property
    def chunking(self) -> SettingsView:
        return SettingsView(self, "chunking")

    @property
    def embedding(self) -> SettingsView:
        return SettingsView(self, "embedding")

    @property
    def retrieval(self) -> SettingsView:
        return SettingsView(self, "retrieval")

    @property
    def answering(self) -> SettingsView:
        return SettingsView(self, "answering")

    @property
    def web(self) -> SettingsView:
        return SettingsView(self, "web")

    # derived paths
    @property
    def qdrant_path(self) -> Path:
        return self.data_dir / "qdrant"

    @property
    def edge_path(self) -> Path:
        return self.data_dir / "edge"

    @property
    def catalog_path(self) -> Path:
        return self.data_dir / "catalog.sqlite"

    @property
    def store_path(self) -> Path:
        return self.data_dir / "originals"

    @property
    def server_mode(self) -> bool:
        return bool(self.qdrant_url)


# What each setting governs: the settings are grouped by concern, in this order, each field in exactly one
# (tests/app/test_settings.py checks it); a concern is a TOML table and a read-only view (:class:`SettingsView`).
CONCERNS: dict[str, tuple[str, ...]] = {
    "storage": ("data_dir", "cache_dir", "qdrant_url", "qdrant_api_key", "qdrant_engine", "hnsw_min_points", "hnsw_ef",
                "collection_prefix"),
    "reading": ("max_file_mb", "max_unpacked_mb", "max_words_per_file", "extract_timeout_s", "extract_memory_mb",
                "ocr_engine", "max_rows", "pdf_reader", "pdf_pages_per_range", "max_pdf_pages", "doc_cpu_budget_s"),
    "queue": ("first_pass", "ingest_workers", "first_pass_timeout_s", "owner_workers", "refine_workers",
              "ingest_max_attempts", "queue_url", "queue_secret", "queue_inflight"),
    "chunking": ("chunker", "theta", "lm_model", "lm_8bit", "lm_device", "lg_mode", "lg_prompt", "lg_boundary_tokens",
                 "lg_min_words", "lg_structure_weight", "lg_size_prior", "lg_children", "lg_batch_size",
                 "lg_block_tokens", "lg_context_tokens", "torch_threads"),
    "embedding": ("embedder", "embed_query_prefix", "embed_passage_prefix", "embed_batch_size", "embed_precision",
                  "chunk_context", "late_quarters"),
    "retrieval": ("top_k", "retriever", "rrf_k", "bm25_weight", "no_retrieval_words", "max_question_chars",
                  "context_words", "router", "router_selection"),
    "answering": ("synth_backend", "synth_model", "synth_4bit", "max_new_tokens", "offline_max_new_tokens",
                  "offline_model", "offline_context_words", "answer_style", "route_by_name", "reader_check",
                  "lm_check", "lm_check_url", "lm_check_model", "table_lookup", "grounding", "context_floor",
                  "support_floor", "rewrite", "openai_base_url", "openai_model", "openai_api_key",
                  "llm_connect_timeout_s", "llm_read_timeout_s", "llm_total_timeout_s"),
    "web": ("ui_host", "ui_port", "trusted_proxies", "admin_user", "source_floor", "answer_links", "admin_password",
            "admin_idle_s", "api_requests_per_minute", "admin_session_s", "log_level"),
}
CONCERN_OF = {name: concern for concern, names in CONCERNS.items() for name in names}


class SettingsView:
    """One concern's settings, read-only (``settings.retrieval.top_k``); other settings are not reachable from it."""

    __slots__ = ("_settings", "_concern")

    def __init__(self, settings: Settings, concern: str):
        object.__setattr__(self, "_settings", settings)
        object.__setattr__(self, "_concern", concern)

    def __getattr__(self, name: str):
        if name not in CONCERNS[self._concern]:
            where = CONCERN_OF.get(name)
            raise AttributeError(f"{name!r} is not a {self._concern} setting" + (f" (it is {where}'s)" if where
                                                                                   else ""))
        return getattr(self._settings, name)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"the {self._concern} settings are read-only here; set {name} on the Settings")

    def as_dict(self) -> dict:
        return {n: getattr(self._settings, n) for n in CONCERNS[self._concern]}

    def __repr__(self) -> str:
        return f"SettingsView({self._concern}: {self.as_dict()!r})"


class _ConcernToml(PydanticBaseSettingsSource):
    """The TOML file, its concern tables (``[retrieval]``) flattened into the field names; a key in the wrong
    table, or a table no concern has, is an error that names the file."""

    def __init__(self, settings_cls, path: str):
        super().__init__(settings_cls)
        self.path = path
        self.inner = TomlConfigSettingsSource(settings_cls, toml_file=path)

    def get_field_value(self, field, field_name):  # pragma: no cover - __call__ reads the file whole
        return None, field_name, False

    def __call__(self) -> dict:
        flat: dict = {}
        for key, value in self.inner().items():
            if key in CONCERNS and isinstance(value, dict):
                for k, v in value.items():
                    if CONCERN_OF.get(k) != key:
                        where = CONCERN_OF.get(k)
                        raise ValueError(f"{Path(self.path).name}: [{key}] has no setting {k!r}"
                                         + (f"; it belongs in [{where}]" if where else ""))
                    flat[k] = v
            else:
                flat[key] = value
        return flat


def settings_table() -> str:
    """Markdown table of every setting by concern with its env var and default (keeps the README in sync)."""
    rows = ["| concern (TOML table) | setting | env var | default | meaning |", "|---|---|---|---|---|"]
    for concern, names in CONCERNS.items():
        for name in names:
            f = Settings.model_fields[name]
            default = f.get_default(call_default_factory=True)
            if name == "cache_dir":
                default = "~/.cache/mgrag"
            rows.append(f"| {concern} | `{name}` | `MGRAG_{name.upper()}` | `{default!r}` | {f.description} |")
    return "\n".join(rows)

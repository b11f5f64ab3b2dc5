"""The names of the pluggable parts, one line each: the chunkers and the answer backends.

This is the one list the settings validate against (``chunker``, ``synth_backend``), the CLI offers as choices and
the docs print. It lives in the foundation because the settings do and the foundation imports no stage; the
builders live with the things they build and are keyed by exactly these names:

* chunkers: :data:`ingest.chunkers.CHUNKERS` (``build_chunker``);
* answer backends: :data:`app.synth.BACKENDS` (``make_synthesizer``, ``backend_status``).

Both check on import that they build every name here and no other. Adding a chunker or a backend: a line here,
its builder there (CONTRIBUTING.md).
"""
from __future__ import annotations

from dataclasses import dataclass

# what a part needs besides the text: the boundary LM (a causal LM's logits, ``ingest.text.lm.LogitsScorer``),
# the embedder, or an instruction-following LLM (a chat model or an OpenAI-compatible endpoint)
NEEDS = frozenset({"lm", "embedder", "llm"})


@dataclass(frozen=True)
class Component:
    name: str
    description: str  # one line, for `--help`, the settings docs and menus
    needs: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.needs <= NEEDS:
            raise ValueError(f"{self.name}: unknown needs {sorted(self.needs - NEEDS)}")

    @property
    def needs_lm(self) -> bool:
        return "lm" in self.needs

    @property
    def needs_llm(self) -> bool:
        return "llm" in self.needs


def _table(*parts: Component) -> dict[str, Component]:
    return {p.name: p for p in parts}


# in the order the chunker benchmark reports them (app/evaluation/harness.py), simplest first
CHUNKERS: dict[str, Component] = _table(
    Component("recursive", "paragraphs, then sentences, then words, up to θ words a chunk (the papers' baseline)"),
    Component("paragraph", "one chunk per paragraph (longer ones split by sentences)"),
    Component("semantic", "breaks where neighbouring sentences' embeddings differ most", frozenset({"embedder"})),
    Component("ppl", "breaks at local minima of sentence perplexity (Meta-Chunking)", frozenset({"lm"})),
    Component("llamachunk", "breaks where the LM most wants to write a section marker (LlamaChunk)",
              frozenset({"lm"})),
    Component("lg", "logits-guided: breaks where the LM's boundary-token probability peaks (LGMGC §3.1)",
              frozenset({"lm"})),
    Component("mg", "multi-granular: θ-word parents split into θ/2 and θ/4 children, no LM (LGMGC §3.2)"),
    Component("lgmgc", "LG parents with MG children (LGMGC)", frozenset({"lm"})),
    Component("lumber", "an instruction-following LLM names where the content changes (LumberChunker)",
              frozenset({"llm"})),
)

# in the order the chat's backend menu shows them
BACKENDS: dict[str, Component] = _table(
    Component("offline", "a shipped small model (Gemma-3-270M or Qwen2.5-Coder-0.5B) on this machine",
              frozenset({"llm"})),
    Component("extractive", "no LLM: the sources' sentences closest to the question"),
    Component("transformers", "a chat model from a local folder or the local HF cache (synth_model)",
              frozenset({"llm"})),
    Component("openai", "an OpenAI-compatible endpoint: Ollama, llama.cpp server, vLLM, ... (openai_base_url)",
              frozenset({"llm"})),
)


def names(table: dict[str, Component]) -> tuple[str, ...]:
    return tuple(table)


def choices_help(table: dict[str, Component]) -> str:
    """``name: description; ...`` of every part (argparse help, docs)."""
    return "; ".join(f"{c.name}: {c.description}" for c in table.values())


def markdown_table(table: dict[str, Component], setting: str) -> str:
    """The parts as a Markdown table (the docs; ``mgrag settings --choices``)."""
    rows = [f"| `{setting}` | needs | what it does |", "|---|---|---|"]
    rows += [f"| `{c.name}` | {', '.join(sorted(c.needs)) or '-'} | {c.description} |" for c in table.values()]
    return "\n".join(rows)


@dataclass(frozen=True)
class Entry:
    """A registry's entry where the thing lives (a chunker's or backend's builder): its line of this module's tables,
    with that line's name and description."""
    spec: Component

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def description(self) -> str:
        return self.spec.description


def check_builders(kind: str, table: dict[str, Component], built: set[str]) -> None:
    """Fail on import when a stage's builders and the names here disagree (a name added on one side only)."""
    if built != set(table):
        missing, extra = sorted(set(table) - built), sorted(built - set(table))
        raise RuntimeError(f"{kind} builders and core.components disagree: no builder for {missing}, "
                           f"builders without a name for {extra}")

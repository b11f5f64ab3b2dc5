"""The registry of the pluggable parts: every chunker and every answer backend, one entry each.

Design: **one static table here, with lazy targets.** A part is defined by one :class:`Component` line below: its
name, one line of description, what it needs, and its class as a ``"module:Class"`` target. The foundation imports
no stage (tests/test_layers.py), so the target is a string, imported (importlib) only when the part is built
(:meth:`Component.resolve`); the settings validate against the names (``chunker``, ``synth_backend``), the CLI
offers them as choices and the docs print them without importing any stage.

The class marks itself :func:`registered`, which gives it its name (``cls.name``) and its entry
(``cls.component``) from this table, so the name is written once: a marked class that is not listed here fails on
import, and :meth:`Component.resolve` fails for a target that is not the class marked for that entry. The class
builds itself:

* chunkers (:class:`ingest.chunkers.base.Chunker`): ``cls.build(theta, scorer=, embedder=, lg_config=, llm=)``
  and ``cls.from_description(chunker.describe(), ...)``, what the entry ``needs`` checked generically;
  ``ingest.chunkers.build_chunker(name, ...)`` by name;
* answer backends (``app/synth``): ``cls.from_context(ctx, kept)`` and ``cls.why_not(settings)`` (why it cannot
  run here, no model loaded); ``app.synth.make_synthesizer(name, ctx)``, ``app.synth.status.backend_status``.

Adding a chunker or a backend: its class, marked ``@registered``, and its line here (CONTRIBUTING.md).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TypeVar

# what a part needs besides the text: the boundary LM (a causal LM's logits, ``ingest.text.lm.LogitsScorer``),
# the embedder, or an instruction-following LLM (a chat model or an OpenAI-compatible endpoint)
NEEDS = frozenset({"lm", "embedder", "llm"})
# how a missing need is named in the error of a part built without it ("the ppl chunker needs ...")
NEED_HINTS = {
    "lm": "a LogitsScorer (a causal LM)",
    "embedder": "an embedder",
    "llm": "an instruction-following model through the openai backend: set MGRAG_OPENAI_BASE_URL (and "
           "MGRAG_OPENAI_MODEL)",
}


@dataclass(frozen=True)
class Component:
    name: str
    description: str  # one line, for `--help`, the settings docs and menus
    target: str  # "package.module:Class", imported only when the part is built
    needs: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.needs <= NEEDS:
            raise ValueError(f"{self.name}: unknown needs {sorted(self.needs - NEEDS)}")
        module, _, cls = self.target.partition(":")
        if not module or not cls:
            raise ValueError(f"{self.name}: target {self.target!r} is not 'module:Class'")

    @property
    def needs_lm(self) -> bool:
        return "lm" in self.needs

    @property
    def needs_llm(self) -> bool:
        return "llm" in self.needs

    def resolve(self) -> type:
        """The part's class (its module imported now): the class marked :func:`registered` for this entry."""
        module, _, attr = self.target.partition(":")
        cls = getattr(importlib.import_module(module), attr, None)
        if cls is None or getattr(cls, "component", None) is not self:
            raise RuntimeError(f"{self.name}: {self.target} is not a class marked @registered for this entry")
        return cls


def _table(*parts: Component) -> dict[str, Component]:
    return {p.name: p for p in parts}


# in the order the chunker benchmark reports them (app/evaluation/harness.py), simplest first
CHUNKERS: dict[str, Component] = _table(
    Component("recursive", "blank-line blocks, lines, sentences, words: up to θ words a chunk (the papers' baseline)",
              "ingest.chunkers.recursive:RecursiveChunker"),
    Component("paragraph", "one chunk per paragraph (longer ones split by sentences)",
              "ingest.chunkers.paragraph:ParagraphChunker"),
    Component("semantic", "breaks where neighbouring sentences' embeddings differ most",
              "ingest.chunkers.semantic:SemanticChunker", frozenset({"embedder"})),
    Component("ppl", "breaks at local minima of sentence perplexity (Meta-Chunking)",
              "ingest.chunkers.perplexity:PerplexityChunker", frozenset({"lm"})),
    Component("llamachunk", "breaks where the LM most wants to write a section marker (LlamaChunk)",
              "ingest.chunkers.llamachunk:LlamaChunkChunker", frozenset({"lm"})),
    Component("lg", "logits-guided: breaks where the LM's boundary-token probability peaks (LGMGC §3.1)",
              "ingest.chunkers.logits:LogitsGuidedChunker", frozenset({"lm"})),
    Component("mg", "multi-granular: θ-word parents split into θ/2 and θ/4 children, no LM (LGMGC §3.2)",
              "ingest.chunkers.multigranular:MultiGranularChunker"),
    Component("lgmgc", "LG parents with MG children (LGMGC)", "ingest.chunkers.logits:LGMGCChunker",
              frozenset({"lm"})),
    Component("lumber", "an instruction-following LLM names where the content changes (LumberChunker)",
              "ingest.chunkers.lumber:LumberChunker", frozenset({"llm"})),
)

# in the order the chat's backend menu shows them
BACKENDS: dict[str, Component] = _table(
    Component("offline", "a shipped small model (Gemma-3-270M or Qwen2.5-Coder-0.5B) on this machine",
              "app.synth.hf:OfflineSynthesizer", frozenset({"llm"})),
    Component("extractive", "no LLM: the sources' sentences closest to the question",
              "app.synth.extractive:ExtractiveSynthesizer"),
    Component("transformers", "a chat model from a local folder or the local HF cache (synth_model)",
              "app.synth.hf:TransformersSynthesizer", frozenset({"llm"})),
    Component("openai", "an OpenAI-compatible endpoint: Ollama, llama.cpp server, vLLM, ... (openai_base_url)",
              "app.synth.openai_compat:OpenAICompatSynthesizer", frozenset({"llm"})),
)


_Class = TypeVar("_Class", bound=type)


def registered(cls: _Class) -> _Class:
    """Class decorator: mark ``cls`` as the part whose entry here targets it, giving it that entry's name
    (``cls.name``) and the entry (``cls.component``). A class without an entry fails on import."""
    target = f"{cls.__module__}:{cls.__qualname__}"
    found = [c for table in (CHUNKERS, BACKENDS) for c in table.values() if c.target == target]
    if not found:
        raise LookupError(f"{target} is marked @registered but has no entry in core/components.py: add its line "
                          "(name, description, target, needs)")
    for attr, value in (("component", found[0]), ("name", found[0].name)):
        setattr(cls, attr, value)  # setattr: the type checker knows no such attributes on an arbitrary class
    return cls


def lookup(table: dict[str, Component], name: str, kind: str) -> Component:
    """``table``'s entry ``name``, else a ValueError naming the choices (``kind``: "chunker", ...)."""
    entry = table.get(name)
    if entry is None:
        raise ValueError(f"unknown {kind} {name!r}; choose one of {', '.join(table)}")
    return entry


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

"""MGRAG from other frameworks: its chunkers and its search behind LlamaIndex's and LangChain's interfaces.

* :mod:`app.adapters.llamaindex`: ``MGRAGNodeParser`` (a ``NodeParser``: parents and their children, linked as
  ``HierarchicalNodeParser`` links them) and ``MGRAGRetriever`` (a ``BaseRetriever`` over an MGRAG index: the top
  parents with their scores per level).
* :mod:`app.adapters.langchain`: ``MGRAGTextSplitter`` (a ``TextSplitter``: the chunks of one level).

Those libraries are the ``llamaindex`` and ``langchain`` extras (both inside ``bench``), which the app does not
need: this package imports neither, and each module raises an ImportError that names its extra when its library is
missing.
"""
from __future__ import annotations


def install(extra: str) -> str:
    """The command that installs an extra: ``pip install 'mgrag[llamaindex]'``."""
    return f"pip install 'mgrag[{extra}]'"


def missing(module: str, dist: str, extra: str) -> ImportError:
    """The ImportError of an adapter module whose library is not installed."""
    return ImportError(f"{module} needs {dist}, which comes with the {extra} extra: {install(extra)}")


def chunker_theta(chunker, default: int) -> int:
    """The size bound in words a built chunker records (θ, or the max words of one that has no θ)."""
    d = chunker.describe()
    return int(d.get("theta", d.get("max_words", default)))

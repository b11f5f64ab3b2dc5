"""The protocols of ``core`` that type :class:`core.resources.Resources` cannot drift from the stages' classes (issue
48): every member a protocol names is on its class, each method with the same parameters (names, kinds, which have
defaults), and the members of a real context are instances of their protocols. mypy checks the types where the
services hand an ``AppContext`` to a stage (tests/test_typecheck.py); it does not compare parameter names, this does.
"""
from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

from core import protocols as P


def _members(proto) -> dict[str, object]:
    """The members a protocol of core.protocols declares (properties, methods, annotated attributes)."""
    own = {n: v for n, v in vars(proto).items() if not n.startswith("_")}
    own.update({n: None for n in getattr(proto, "__annotations__", {}) if not n.startswith("_")})
    return own


def _params(fn) -> list[tuple[str, object, bool]]:
    return [(p.name, p.kind, p.default is not inspect.Parameter.empty)
            for p in inspect.signature(fn).parameters.values()]


def _has_attribute(cls, name: str) -> bool:
    """On the class, a dataclass field, or set on the instance by one of the class's methods."""
    if hasattr(cls, name) or (dataclasses.is_dataclass(cls) and name in {f.name for f in dataclasses.fields(cls)}):
        return True
    return any(re.search(rf"\bself\.{name}\s*(:[^=]+)?=", inspect.getsource(c)) for c in cls.__mro__[:-1])


def drift(proto, cls) -> list[str]:
    """How ``cls`` differs from what ``proto`` asks of it (empty: it satisfies it, names and parameters)."""
    out = []
    for name, member in _members(proto).items():
        if not _has_attribute(cls, name):
            out.append(f"{cls.__name__} has no {name}")
        elif inspect.isfunction(member):
            mine = inspect.getattr_static(cls, name)
            if not callable(mine):
                out.append(f"{cls.__name__}.{name} is not a method")
            elif _params(mine) != _params(member):
                out.append(f"{cls.__name__}.{name}{inspect.signature(mine)} is not {name}{inspect.signature(member)}")
    return out


def _classes():
    from app.synth.openai_compat import OpenAICompatSynthesizer
    from ingest.embed import HashingEmbedder, SentenceTransformerEmbedder
    from ingest.jobs.state import JobStore
    from ingest.store.catalog import Catalog, DocumentStore
    from ingest.store.index import ClientIndex, EdgeIndex, StoredPoint, VectorIndex
    from ingest.text.lm import LogitsScorer
    from router.runtime import RouterRuntime

    return [(P.Embedder, HashingEmbedder), (P.Embedder, SentenceTransformerEmbedder), (P.Point, StoredPoint),
            (P.VectorStore, VectorIndex), (P.VectorStore, EdgeIndex), (P.VectorStore, ClientIndex),
            (P.DocumentCatalog, Catalog), (P.OriginalStore, DocumentStore), (P.JobQueue, JobStore),
            (P.BoundaryLM, LogitsScorer), (P.Router, RouterRuntime),
            (P.ChatLM, OpenAICompatSynthesizer)]


def test_every_protocol_is_checked_against_a_class():
    protos = {v for v in vars(P).values()
              if inspect.isclass(v) and v.__module__ == P.__name__ and getattr(v, "_is_protocol", False)}
    assert protos == {p for p, _ in _classes()}


@pytest.mark.parametrize("proto, cls", _classes(), ids=lambda x: x.__name__)
def test_the_stage_classes_have_what_the_protocols_ask(proto, cls):
    assert drift(proto, cls) == []


def test_the_check_sees_a_drift():
    class Store:
        def put(self, h, data, text, layout=None): ...

        def extend(self, h, text): ...  # layout gone

    found = drift(P.OriginalStore, Store)
    assert "Store has no original" in found and any(f.startswith("Store.extend") for f in found)


def test_a_real_context_hands_out_what_the_protocols_describe(make_ctx):
    from app.synth.openai_compat import OpenAICompatSynthesizer
    from core.resources import Resources

    ctx = make_ctx()
    for name, proto in [("catalog", P.DocumentCatalog), ("jobs", P.JobQueue), ("store", P.OriginalStore),
                        ("index", P.VectorStore), ("embedder", P.Embedder),
                        ("scorer", P.BoundaryLM)]:
        assert isinstance(getattr(ctx, name), proto), name
        assert name in Resources.__dict__
    assert isinstance(OpenAICompatSynthesizer("http://127.0.0.1:9/v1", "m"), P.ChatLM)

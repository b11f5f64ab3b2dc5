"""One registry of chunkers and backends (core/components.py) that the settings, the CLI, the factories, the
benchmark and the backend menu all read: every entry resolves to its class, what it needs is checked, and a
chunker rebuilt from its description cuts as it did."""
import dataclasses
import re
import subprocess
import sys
import typing

import pytest

from core import components
from core.settings import Settings


def test_the_settings_accept_exactly_the_registered_names():
    assert typing.get_args(Settings.model_fields["chunker"].annotation) == tuple(components.CHUNKERS)
    assert typing.get_args(Settings.model_fields["synth_backend"].annotation) == tuple(components.BACKENDS)


def _choices(parser, *path):
    for name in path:
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        parser = sub.choices[name]
    return parser


def test_the_cli_offers_exactly_the_registered_names():
    from cli.main import build_parser

    p = build_parser()
    opts = {a.dest: a for a in _choices(p, "reingest")._actions}
    assert tuple(opts["chunker"].choices) == tuple(components.CHUNKERS)
    for cmd in ("ask", "chat"):
        opts = {a.dest: a for a in _choices(p, cmd)._actions}
        assert tuple(opts["backend"].choices) == tuple(components.BACKENDS)
        assert all(name in opts["backend"].help for name in components.BACKENDS)
    for cmd in ("qa", "all"):
        opts = {a.dest: a for a in _choices(p, "bench", cmd)._actions}
        assert tuple(opts["backend"].choices) == tuple(components.BACKENDS)


class FakeLLM:
    """LumberChunker's LLM: names the middle paragraph of every window (deterministic, always a valid ID)."""

    model = "fake"

    def complete(self, messages, max_tokens=None):
        ids = re.findall(r"^ID (\d+):", messages[1]["content"], re.M)
        return f"Answer: ID {ids[len(ids) // 2]}"


def _models(scorer, embedder):
    return {"scorer": scorer, "embedder": embedder, "llm": FakeLLM()}


def test_every_registered_chunker_resolves_to_its_class(scorer, fake_embedder):
    from ingest.chunkers import CHUNKERS, NEEDS_LM, NEEDS_MODEL, Chunker, build_chunker, chunker_class

    assert CHUNKERS is components.CHUNKERS
    assert NEEDS_LM == {"lg", "lgmgc", "ppl", "llamachunk"} and NEEDS_MODEL == NEEDS_LM | {"lumber"}
    for name, entry in CHUNKERS.items():
        cls = chunker_class(name)
        assert issubclass(cls, Chunker) and cls.name == name and cls.component is entry
        assert f"{cls.__module__}:{cls.__qualname__}" == entry.target
        ch = build_chunker(name, 40, **_models(scorer, fake_embedder))
        assert type(ch) is cls and ch.name == ch.describe()["chunker"] == name
    with pytest.raises(ValueError, match="unknown chunker 'magic'; choose one of recursive, paragraph"):
        build_chunker("magic")


def test_every_chunker_gets_what_it_needs_and_nothing_else(scorer, fake_embedder):
    from ingest.chunkers import CHUNKERS, build_chunker
    from ingest.chunkers.base import MODEL_ARGS

    models = _models(scorer, fake_embedder)
    for name, entry in CHUNKERS.items():
        own = {MODEL_ARGS[n]: models[MODEL_ARGS[n]] for n in entry.needs}
        ch = build_chunker(name, 40, **own)  # its needs alone are enough
        assert all(getattr(ch, arg) is model for arg, model in own.items())
        fields = {f.name for f in dataclasses.fields(ch)}
        assert not (fields & set(MODEL_ARGS.values())) - set(own), f"{name} holds a model it does not declare"
        for need in entry.needs:  # and each is required, by name
            with pytest.raises(ValueError, match=f"the {name} chunker needs {re.escape(components.NEED_HINTS[need])}"):
                build_chunker(name, 40, **{k: v for k, v in own.items() if k != MODEL_ARGS[need]})


TEXT = "\n\n".join(" ".join(f"Sentence {p}.{i} is about topic {p}, with {'more ' * (i % 3)}words here."
                             for i in range(9)) for p in range(7))
# a recorded parameter of every chunker set away from its default, so that the round trip has to carry it
OTHER = {
    "recursive": {"theta": 25, "blocks": False}, "paragraph": {"max_words": 25}, "mg": {"theta": 32, "blocks": False},
    "semantic": {"buffer_size": 0, "breakpoint_percentile": 70.0}, "ppl": {"threshold": 0.5},
    "llamachunk": {"window_words": 90, "marker": "§"}, "lumber": {"window_tokens": 120, "max_words": 60},
    "lg": {"config": {"mode": "streaming", "min_words": 5, "structure_weight": 0.5, "size_prior": 1.0}},
    "lgmgc": {"config": {"mode": "exact", "min_rest": 10, "size_prior": 1.0, "children": "parent"}},
}


def _cuts(chunker, text):
    return [(c.level, c.start, c.end, c.parent_start, c.parent_end) for c in chunker.chunk(text)]


def test_a_chunker_rebuilt_from_its_description_cuts_the_same(scorer, fake_embedder):
    """describe() → from_description() over the whole registry: the same class, the same description, the same
    cut of the same text (what a re-ingest relies on), for the defaults and for other recorded parameters."""
    from ingest.chunkers import CHUNKERS, Chunker, build_chunker, from_description

    assert set(OTHER) == set(CHUNKERS)
    models = _models(scorer, fake_embedder)
    for name in CHUNKERS:
        default = build_chunker(name, 40, **models)
        change = OTHER[name]
        if "config" in change:
            change = {"config": dataclasses.replace(default.config, **change["config"])}
        other = dataclasses.replace(default, **change)
        assert other.describe() != default.describe(), f"{name}: {sorted(change)} is not recorded"
        for ch in (default, other):
            desc = ch.describe()
            back = from_description(desc, **models)
            assert type(back) is type(ch) and back.describe() == desc, name
            assert _cuts(back, TEXT) == _cuts(ch, TEXT), name
            assert type(ch).from_description(desc, **models).describe() == desc
            assert Chunker.from_description(desc, **models).describe() == desc
    assert len({tuple(_cuts(build_chunker(n, 40, **models), TEXT)) for n in CHUNKERS}) > 3  # the cuts differ


def test_a_description_names_its_chunker():
    from ingest.chunkers import from_description
    from ingest.chunkers.recursive import RecursiveChunker

    with pytest.raises(ValueError, match="unknown chunker 'magic'"):
        from_description({"chunker": "magic", "theta": 40})
    with pytest.raises(ValueError, match="a description of the mg chunker given to the recursive chunker"):
        RecursiveChunker.from_description({"chunker": "mg", "theta": 40})
    assert RecursiveChunker.from_description({"theta": 40}) == RecursiveChunker(40)  # its own name may be left out


def test_every_registered_backend_resolves_to_its_class_with_a_status(tmp_path):
    from app.synth import BACKENDS
    from app.synth.status import backend_status

    assert BACKENDS is components.BACKENDS
    for name, entry in BACKENDS.items():
        cls = entry.resolve()
        assert cls.name == name and cls.component is entry and f"{cls.__module__}:{cls.__qualname__}" == entry.target
        assert callable(cls.from_context) and callable(cls.why_not)
    status = backend_status(Settings(data_dir=tmp_path, openai_base_url=None))
    assert list(status) == list(components.BACKENDS)
    assert status["extractive"] is None and "no endpoint" in status["openai"]
    assert backend_status(Settings(data_dir=tmp_path, openai_base_url="http://h/v1"))["openai"] is None
    assert [n for n, b in BACKENDS.items() if not b.needs_llm] == ["extractive"]


def test_the_backends_build_by_name(make_ctx):
    from app.synth import make_synthesizer
    from app.synth.extractive import ExtractiveSynthesizer
    from app.synth.openai_compat import OpenAICompatSynthesizer

    ctx = make_ctx(openai_base_url="http://127.0.0.1:9/v1", openai_model="m")
    assert isinstance(make_synthesizer("extractive", ctx), ExtractiveSynthesizer)
    llm = make_synthesizer("openai", ctx)
    assert isinstance(llm, OpenAICompatSynthesizer) and llm.name == "openai" and llm.model == "m"


def test_a_class_is_registered_only_with_its_entry():
    with pytest.raises(LookupError, match="has no entry in core/components.py"):
        components.registered(type("Stray", (), {}))
    stray = components.Component("stray", "x", "ingest.chunkers.base:Chunker")  # a class not marked for it
    with pytest.raises(RuntimeError, match="not a class marked @registered for this entry"):
        stray.resolve()
    with pytest.raises(ValueError, match="not 'module:Class'"):
        components.Component("bad", "x", "ingest.chunkers.recursive")
    with pytest.raises(ValueError, match=r"unknown needs \['gpu'\]"):
        components.Component("bad", "x", "a:B", frozenset({"gpu"}))


def test_the_names_need_no_stage():
    """The settings, their choices and the docs table come from the registry without importing a chunker or a
    backend (the targets are strings)."""
    code = ("import sys; from core import components; import core.settings; "
            "components.markdown_table(components.CHUNKERS, 'chunker'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ingest', 'app')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_inspector_compares_registered_chunkers():
    from app.inspect import CHUNKERS, COLORS

    assert set(CHUNKERS) <= set(components.CHUNKERS) and set(COLORS) == set(CHUNKERS)


def test_the_benchmark_measures_every_registered_chunker():
    from app.evaluation.harness import DEFAULT_CHUNKERS, LM_CHUNKERS, OWN

    assert OWN == DEFAULT_CHUNKERS == tuple(components.CHUNKERS)
    assert LM_CHUNKERS == {n for n, c in components.CHUNKERS.items() if c.needs_lm}


def test_the_docs_table_lists_every_part(capsys):
    from cli.main import main

    assert main(["settings", "--choices"]) == 0
    out = capsys.readouterr().out
    for name, c in {**components.CHUNKERS, **components.BACKENDS}.items():
        assert f"| `{name}` | {', '.join(sorted(c.needs)) or '-'} | {c.description} |" in out

"""One list of chunker and backend names (core/components.py) that the settings, the CLI, the builders, the
benchmark and the backend menu all read."""
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


def test_every_registered_chunker_has_a_builder(scorer, fake_embedder):
    from ingest.chunkers import CHUNKERS, NEEDS_LM, build_chunker

    assert tuple(CHUNKERS) == tuple(components.CHUNKERS)
    assert NEEDS_LM == {"lg", "lgmgc", "ppl", "llamachunk"}
    llm = type("LLM", (), {"complete": lambda self, messages: "ID 1"})()
    for name in CHUNKERS:
        ch = build_chunker(name, 40, scorer=scorer, embedder=fake_embedder, llm=llm)
        assert ch.name == name
    with pytest.raises(ValueError, match="unknown chunker 'magic'; choose one of recursive, paragraph"):
        build_chunker("magic")


def test_every_registered_backend_has_a_builder_and_a_status(tmp_path):
    from app.synth import BACKENDS
    from app.synth.status import backend_status

    assert tuple(BACKENDS) == tuple(components.BACKENDS)
    status = backend_status(Settings(data_dir=tmp_path, openai_base_url=None))
    assert list(status) == list(components.BACKENDS)
    assert status["extractive"] is None and "no endpoint" in status["openai"]
    assert [n for n, b in BACKENDS.items() if not b.needs_llm] == ["extractive"]


def test_a_name_without_a_builder_fails_on_import():
    with pytest.raises(RuntimeError, match=r"no builder for \['new'\]"):
        components.check_builders("chunker", {**components.CHUNKERS, "new": components.Component("new", "x")},
                                  set(components.CHUNKERS))


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

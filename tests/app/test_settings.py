from pathlib import Path

import pytest
import yaml

from cli.main import _settings, build_parser
from core.settings import Settings, settings_table

ROOT = Path(__file__).resolve().parents[2]


def test_defaults():
    s = Settings()
    assert (s.chunker, s.theta, s.context_words, s.qdrant_url) == ("mg", 300, 1500, None)
    assert s.server_mode is False and s.qdrant_path == s.data_dir / "qdrant"


def test_env_then_toml_then_cli(tmp_path, monkeypatch):
    toml = tmp_path / "mgrag.toml"
    toml.write_text('theta = 200\nchunker = "mg"\nlg_boundary_tokens = ["<eos>", "\\n\\n"]\n')
    monkeypatch.setenv("MGRAG_CONFIG", str(toml))
    s = Settings()
    assert (s.theta, s.chunker, s.lg_boundary_tokens) == (200, "mg", ["<eos>", "\n\n"])
    monkeypatch.setenv("MGRAG_THETA", "500")
    assert Settings().theta == 500  # env beats the file
    args = build_parser().parse_args(["reingest", "--theta", "100"])
    assert _settings(args).theta == 100  # CLI flags beat env


def test_missing_config_file(monkeypatch):
    monkeypatch.setenv("MGRAG_CONFIG", "/nonexistent/mgrag.toml")
    with pytest.raises(FileNotFoundError, match="MGRAG_CONFIG=/nonexistent/mgrag.toml: no such settings file"):
        Settings()


@pytest.mark.parametrize("kw,msg", [({"theta": 2}, "greater than or equal to 4"),
                                     ({"chunker": "magic"}, "Input should be 'recursive'"),
                                     ({"lg_boundary_tokens": []}, "at least one token"),
                                     ({"lg_block_tokens": 64, "lg_context_tokens": 64}, "smaller than lg_block_tokens"),
                                     ({"not_a_setting": 1}, "Extra inputs are not permitted")])
def test_invalid_settings(kw, msg):
    with pytest.raises(ValueError, match=msg):
        Settings(**kw)


def test_readme_lists_every_setting():
    readme = (ROOT / "README.md").read_text()
    for name in Settings.model_fields:
        assert f"`MGRAG_{name.upper()}`" in readme, f"README misses MGRAG_{name.upper()}"
    assert settings_table().count("\n") == len(Settings.model_fields) + 1


def test_docker_compose_parses_and_points_app_at_qdrant():
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    q, app = spec["services"]["qdrant"], spec["services"]["app"]
    assert q["image"].startswith("qdrant/qdrant") and "healthcheck" in q
    assert any("/qdrant/storage" in v for v in q["volumes"])
    assert app["build"] == "." and app["environment"]["MGRAG_QDRANT_URL"] == "http://qdrant:6333"
    assert app["depends_on"]["qdrant"]["condition"] == "service_healthy"
    assert (ROOT / "Dockerfile").exists()


def test_server_mode_selected_by_url(tmp_path):
    from qdrant_client.local.qdrant_local import QdrantLocal
    from qdrant_client.qdrant_remote import QdrantRemote

    from ingest.store.index import make_client

    remote = make_client("http://qdrant.invalid:6333", None, tmp_path / "q", check_compatibility=False)
    assert isinstance(remote._client, QdrantRemote)  # no connection is made until the first request
    assert not (tmp_path / "q").exists()
    local = make_client(None, None, tmp_path / "q")
    assert isinstance(local._client, QdrantLocal) and (tmp_path / "q").exists()
    local.close()
    s = Settings(qdrant_url="http://qdrant:6333")
    assert s.server_mode


def test_the_engine_setting_picks_the_store(tmp_path, monkeypatch):
    """Edge is the embedded default; `qdrant_engine=local` selects qdrant-client's local mode; a URL a server."""
    from ingest.store.index import ClientIndex, EdgeIndex, open_index

    s = Settings(data_dir=tmp_path / "d")
    assert s.qdrant_engine == "edge"
    edge = open_index(s, lambda: None)
    assert isinstance(edge, EdgeIndex) and edge.root == tmp_path / "d" / "edge"
    local = open_index(Settings(data_dir=tmp_path / "d", qdrant_engine="local"), lambda: None)
    assert isinstance(local, ClientIndex) and (tmp_path / "d" / "qdrant").exists()
    local.close()
    import ingest.store.index

    made = []
    monkeypatch.setattr(ingest.store.index, "make_client", lambda url, key, path: made.append((url, key)) or object())
    remote = open_index(Settings(data_dir=tmp_path / "e", qdrant_url="http://qdrant:6333", qdrant_api_key="k"),
                        lambda: None)  # no connection is attempted here
    assert isinstance(remote, ClientIndex) and made == [("http://qdrant:6333", "k")]
    assert not (tmp_path / "e" / "edge").exists()
    with pytest.raises(ValueError, match="qdrant_engine"):
        Settings(qdrant_engine="chroma")


def test_every_setting_has_one_concern_and_its_view_reads_only_it():
    from core.settings import CONCERNS, SettingsView

    names = [n for group in CONCERNS.values() for n in group]
    assert sorted(names) == sorted(Settings.model_fields) and len(names) == len(set(names))
    s = Settings(top_k=7)
    assert isinstance(s.retrieval, SettingsView) and s.retrieval.top_k == 7
    assert s.retrieval.as_dict()["rrf_k"] == s.rrf_k
    s.top_k = 9
    assert s.retrieval.top_k == 9  # a view, not a copy
    with pytest.raises(AttributeError, match="'theta' is not a retrieval setting \\(it is chunking's\\)"):
        _ = s.retrieval.theta
    with pytest.raises(AttributeError, match="read-only"):
        s.retrieval.top_k = 3


def test_a_settings_file_may_group_keys_by_concern_and_the_env_names_stay_flat(tmp_path, monkeypatch):
    toml = tmp_path / "mgrag.toml"
    toml.write_text('theta = 200\n\n[retrieval]\ntop_k = 30\nbm25_weight = 0.5\n\n[web]\nui_port = 8123\n')
    monkeypatch.setenv("MGRAG_CONFIG", str(toml))
    s = Settings()
    assert (s.theta, s.top_k, s.retrieval.bm25_weight, s.web.ui_port) == (200, 30, 0.5, 8123)
    monkeypatch.setenv("MGRAG_TOP_K", "12")
    assert Settings().retrieval.top_k == 12  # the environment name is the flat one and still wins


@pytest.mark.parametrize("body,msg", [
    ('[retrieval]\ntheta = 200\n', r"mgrag.toml: \[retrieval\] has no setting 'theta'; it belongs in \[chunking\]"),
    ('[retrieval]\ntop_kk = 2\n', r"mgrag.toml: \[retrieval\] has no setting 'top_kk'$"),
])
def test_a_key_in_the_wrong_table_names_the_file_and_where_it_belongs(tmp_path, monkeypatch, body, msg):
    toml = tmp_path / "mgrag.toml"
    toml.write_text(body)
    monkeypatch.setenv("MGRAG_CONFIG", str(toml))
    with pytest.raises(ValueError, match=msg):
        Settings()

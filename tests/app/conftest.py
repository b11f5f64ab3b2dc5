"""A two-document library ingested through the CLI (hashing embedder, recursive θ=40), for the CLI tests."""
import pytest

from cli.main import main

KEEPER = "The keeper has tended the light for twenty-two years. She logs the weather at dawn and at dusk every day.\n"
ORCHARD = "The orchard has forty apple trees and six pear trees. The pears ripen late in the autumn every year.\n"


@pytest.fixture
def cli_env(monkeypatch):
    monkeypatch.setenv("MGRAG_EMBEDDER", "hashing")
    monkeypatch.setenv("MGRAG_CHUNKER", "recursive")
    monkeypatch.setenv("MGRAG_THETA", "40")


@pytest.fixture
def cli_library(tmp_path, cli_env):
    """The data dir (a str) of an index of a.md (KEEPER) and b.md (ORCHARD)."""
    (tmp_path / "a.md").write_text(KEEPER, encoding="utf-8")
    (tmp_path / "b.md").write_text(ORCHARD, encoding="utf-8")
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "ingest", "--quiet", str(tmp_path / "a.md"), str(tmp_path / "b.md")]) == 0
    return data

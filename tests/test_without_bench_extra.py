"""The app installs and runs without the ``bench`` extra (llama-index, LangChain, chonkie): in a child process where any
import of them raises ImportError (as on an install of ``mgrag`` alone), every module of the product imports (the
adapters to those libraries, app/adapters, refuse with the command that installs them), the
CLI's parser and an app context are built, a document is ingested and a question answered through the CLI, the
web app's blocks are built, and a benchmark of a peer chunker says which extra to install."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import importlib, importlib.abc, pkgutil, sys, tempfile
from pathlib import Path

BLOCKED = ("llama_index", "langchain", "langchain_core", "langchain_text_splitters", "chonkie")


class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"No module named {name!r} (blocked: the bench extra is not installed)")
        return None


sys.meta_path.insert(0, Blocker())
try:
    import llama_index.core  # noqa: F401
except ImportError:
    pass
else:
    raise SystemExit("the blocker let llama_index through")

adapters = []
for pkg in ("app", "ingest", "retrieval", "router", "ui"):
    mod = importlib.import_module(pkg)
    for info in pkgutil.walk_packages(mod.__path__, pkg + "."):
        if info.name.startswith("app.adapters."):  # LlamaIndex's and LangChain's classes, subclassed
            try:
                importlib.import_module(info.name)
            except ImportError as e:
                assert "pip install 'mgrag[bench]'" in str(e), (info.name, str(e))
                adapters.append(info.name)
                continue
            raise SystemExit(f"{info.name} imported without its library")
        importlib.import_module(info.name)
assert sorted(adapters) == ["app.adapters.langchain", "app.adapters.llamaindex"], adapters

from cli.main import build_parser, main
from app.context import AppContext
from core.settings import Settings

tmp = Path(tempfile.mkdtemp())
build_parser().parse_args(["ask", "How long?"])
ctx = AppContext(Settings(data_dir=tmp / "ctx", embedder="hashing", chunker="recursive", theta=40))
from ui.app import build_app
from services.service import AppService

build_app(AppService(ctx, admin_password="pw"))
ctx.close()
doc = tmp / "keeper.md"
doc.write_text("The keeper has tended the light for twenty-two years. She logs the weather at dawn.\n")
data = str(tmp / "data")
assert main(["--data-dir", data, "ingest", "--quiet", str(doc)]) == 0
assert main(["--data-dir", data, "ask", "--backend", "extractive", "How long has the keeper tended the light?"]) == 0

from app.evaluation import harness as H
from app.evaluation.peers import peer_unavailable

for name in ("li-sentence", "lc-recursive", "chonkie-recursive"):
    assert "pip install 'mgrag[bench]'" in peer_unavailable(name), name
bench = H.B.BenchSet("toy", {"d": "One sentence here. Another one there."}, [])
try:
    H.chunk_documents(bench, "li-hierarchical", 40, AppContext(Settings(data_dir=tmp / "b", embedder="hashing")),
                      cache_dir=tmp / "cache")
except H.BenchError as e:
    assert "mgrag[bench]" in str(e), e
else:
    raise SystemExit("a peer ran without its library")
assert not [m for m in sys.modules if m.split(".")[0] in BLOCKED]
print("OK without the bench extra")
'''


def test_the_app_imports_and_runs_without_llama_index_or_langchain(tmp_path):
    env = {**os.environ, "MGRAG_EMBEDDER": "hashing", "MGRAG_CHUNKER": "recursive", "MGRAG_THETA": "40",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False",
           "MGRAG_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "OK without the bench extra" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    assert "twenty-two years" in r.stdout  # the extractive answer, printed by `mgrag ask`

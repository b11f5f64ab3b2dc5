"""An extraction child imports the module of the function it runs, not the parent's ``__main__`` (issue 37: spawn's
default re-ran the ``mgrag`` command's imports in every child, 0.4 CPU-seconds for each range of every PDF)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_an_extraction_child_does_not_import_the_parent_s_main(tmp_path):
    marker = tmp_path / "imports.txt"
    script = tmp_path / "main.py"
    script.write_text(f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
with open({str(marker)!r}, "a") as f:
    f.write("imported\\n")
from ingest.readers.sandbox import run_limited
if __name__ == "__main__":
    print(run_limited("ingest.readers.sandbox:_echo", ("x.txt", b"hi"), name="x.txt", timeout_s=30, memory_mb=1024))
    import multiprocessing as mp  # a process started by other code still gets spawn's default
    p = mp.get_context("spawn").Process(target=print)
    p.start()
    p.join()
""", encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["hi"]
    # once by the script, once by the other code's child: not by the extraction child
    assert marker.read_text().splitlines() == ["imported", "imported"]

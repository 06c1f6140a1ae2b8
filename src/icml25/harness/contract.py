"""The reproduction contract of DESIGN.md: ``Paper``, ``Run``, ``Claim`` and ``Result``.

Every ``icml25.reproductions.<id>`` module defines ``PAPER = Paper(...)`` and
``reproduce(run: Run) -> Result``.  The harness discovers the modules, builds the ``Run``
and stores the ``Result`` as ``results/<id>/<scale>.json``.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCALES = ("smoke", "quick", "full")


@dataclass(frozen=True)
class Paper:
    """What a reproduction is about.

    ``seed`` and ``abstract`` locate the paper's abstract in the project's seed files;
    ``module`` is the library module that implements it; ``anchors`` are the libraries or
    official repositories it is compared with or modelled on.  ``default_seeds`` is the seed
    list a run uses unless ``--seeds`` overrides it.  ``quick_budget_s`` is the wall-clock
    budget of the quick scale on 2 CPU cores (60 s, or 120 s for papers that train a network).
    ``known_misses`` lists claim texts that a faithful implementation does not meet at quick
    scale; each must be explained in the reproduction file next to the claim.
    ``num_cpus`` and ``num_gpus`` are the resources a full-scale run asks a Ray cluster for
    (``icml25 reproduce --backend ray --scale full``); smoke and quick runs ask for one CPU.
    """

    id: str
    title: str
    seed: str
    abstract: int
    module: str
    anchors: tuple[str, ...] = ()
    default_seeds: tuple[int, ...] = (0, 1, 2)
    quick_budget_s: float = 60.0
    extras: tuple[str, ...] = ()
    known_misses: tuple[str, ...] = ()
    num_cpus: float = 1.0
    num_gpus: float = 0.0

    def __post_init__(self) -> None:
        if not self.id.isidentifier():
            raise ValueError(f"paper id must be a Python identifier, got {self.id!r}")
        if not self.default_seeds:
            raise ValueError("default_seeds must not be empty")
        if not self.num_cpus > 0 or not self.num_gpus >= 0:
            raise ValueError(f"num_cpus must be > 0 and num_gpus >= 0, got {self.num_cpus}, {self.num_gpus}")


@dataclass(frozen=True)
class Claim:
    """One comparison the paper makes, measured in this run.

    ``paper`` is the paper's figure (or the brief's pass criterion), ``measured`` our
    number, ``baseline`` the baseline's number measured in the same run (or ``None`` for
    exact checks without a baseline), ``holds`` the verdict.
    """

    text: str
    paper: str
    measured: Any
    baseline: Any
    holds: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "paper": self.paper,
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
    progress (``fraction`` in [0, 1] or ``None``).
    """

    scale: str
    seeds: tuple[int, ...]
    out: Path
    progress: Callable[[float | None, str], None] = lambda fraction, message="": None

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {self.scale!r}")
        if not self.seeds or not all(isinstance(s, int) for s in self.seeds):
            raise ValueError(f"seeds must be a non-empty tuple of ints, got {self.seeds!r}")
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

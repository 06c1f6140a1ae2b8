"""Side-by-side benchmarks against the field's installed peer libraries (``icml25 bench``).

A benchmark is a file ``benchmarks/<id>.py`` of the checkout, named after the paper it measures::

    \"\"\"What is compared, and where we are behind and why (shown on docs/benchmarks.md).\"\"\"
    PEERS = {"mapie": "MAPIE"}                      # import name -> name shown; imported before running

    def bench(size: str, seed: int) -> list[Comparison | Agreement]:
        ...                                         # same data, same process, ours and the peer

``size`` is ``"smoke"`` (seconds; the test suite runs it) or ``"full"`` (what the page reports).
A :class:`Comparison` is one quantity measured for both (accuracy, time) with the direction that is
better; an :class:`Agreement` states that both compute the same thing and records their largest
difference.  Times are medians of interleaved repeats in one process (:func:`compare_times`).
Records go to ``<out>/bench/<id>.json`` (atomically); :func:`page_markdown` turns them into
``docs/benchmarks.md``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import math
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from icml25.harness.store import git_revision, machine, versions, write_json_atomic
from icml25.harness.timing import interleaved_seconds
from icml25.utils.validation import check_choice, check_scalar

SIZES = ("smoke", "full")
BETTER = ("lower", "higher")
RECORD_KEYS = ("paper", "size", "seed", "peers", "notes", "rows", "seconds", "command")
INSTALL_HINT = "pip install -e '.[bench]' (or python3 tasks.py bench)"


class MissingPeerError(ImportError):
    """A benchmark's peer library is not installed."""


@dataclass(frozen=True)
class Comparison:
    """One quantity measured for ours and for the peer on the same task, in the same process.

    ``better`` says which direction wins (``"lower"`` for error, length, time; ``"higher"`` for
    accuracy).  The verdict is ``"ahead"``, ``"level"`` or ``"behind"``: level when the ratio
    ours / peer is within ``tolerance`` (relative) of 1.
    """

    task: str
    quantity: str
    ours: float
    peer: float
    better: str
    tolerance: float = 0.1
    unit: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "ours", check_scalar(self.ours, "ours", "real"))
        object.__setattr__(self, "peer", check_scalar(self.peer, "peer", "real"))
        check_choice(self.better, "better", BETTER)
        check_scalar(self.tolerance, "tolerance", "real", min=0, max=1, inclusive="left")

    @property
    def ratio(self) -> float:
        """ours / peer (``inf`` when only the peer is 0, 1 when both are)."""
        if self.peer == 0:
            return 1.0 if self.ours == 0 else math.inf
        return self.ours / self.peer

    @property
    def verdict(self) -> str:
        r = self.ratio
        if abs(r - 1) <= self.tolerance:
            return "level"
        return "ahead" if (r < 1) == (self.better == "lower") else "behind"

    def to_dict(self) -> dict[str, Any]:
        ratio = self.ratio
        return {"type": "comparison", **asdict(self), "ratio": ratio if math.isfinite(ratio) else None,
                "verdict": self.verdict}


@dataclass(frozen=True)
class Agreement:
    """Ours and the peer compute the same quantity: their largest difference, against ``tolerance``."""

    task: str
    quantity: str
    difference: float
    tolerance: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "difference", check_scalar(self.difference, "difference", "real"))
        check_scalar(self.tolerance, "tolerance", "real", min=0)

    @property
    def verdict(self) -> str:
        return "agree" if abs(self.difference) <= self.tolerance else "differ"

    def to_dict(self) -> dict[str, Any]:
        return {"type": "agreement", **asdict(self), "verdict": self.verdict}


def compare_times(task: str, ours: Callable[[], object], peer: Callable[[], object], repeats: int,
                  tolerance: float = 0.1, warmup: int = 1,
                  clock: Callable[[], float] = time.perf_counter) -> Comparison:
    """Time ``ours()`` against ``peer()`` in this process: medians of ``repeats`` interleaved calls each.

    ``clock`` as in :func:`~icml25.harness.timing.interleaved_seconds` (``time.thread_time`` for single-threaded
    work on a busy machine)."""
    times = interleaved_seconds({"ours": ours, "peer": peer}, repeats=repeats, warmup=warmup, clock=clock)
    return Comparison(task, "time (median s)", statistics.median(times["ours"]), statistics.median(times["peer"]),
                      better="lower", tolerance=tolerance, unit="s")


# --------------------------------------------------------------------------- finding and running
def find(directory: Path) -> dict[str, Path]:
    """The benchmark files of ``directory``: ``{paper id: path}``, sorted by id."""
    return {p.stem: p for p in sorted(Path(directory).glob("*.py")) if not p.name.startswith("_")}


def load(path: Path) -> ModuleType:
    """Import a benchmark file; raise ``ValueError`` if it lacks ``PEERS`` or ``bench(size, seed)``."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(f"icml25_benchmark_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    peers, fn = getattr(module, "PEERS", None), getattr(module, "bench", None)
    if not isinstance(peers, dict) or not peers or not callable(fn) or \
            list(inspect.signature(fn).parameters) != ["size", "seed"]:
        raise ValueError(f"{path}: a benchmark defines PEERS (a non-empty dict) and bench(size, seed)")
    return module


def peer_versions(peers: dict[str, str]) -> dict[str, str]:
    """``{shown name: version}`` of the peers, importing each; :class:`MissingPeerError` names those missing."""
    found, missing = {}, []
    for module_name, shown in peers.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            missing.append(module_name)
            continue
        version = getattr(module, "__version__", None)
        for dist in [module_name, *importlib.metadata.packages_distributions().get(module_name, [])]:
            if version is not None:
                break
            try:
                version = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
        found[shown] = str(version or "unknown")
    if missing:
        raise MissingPeerError(f"needs {', '.join(missing)}: {INSTALL_HINT}")
    return found


def run_benchmark(path: Path, size: str = "full", seed: int = 0) -> dict[str, Any]:
    """Run one benchmark file and return its record (not yet stored)."""
    size = check_choice(size, "size", SIZES)
    seed = check_scalar(seed, "seed", "int", min=0)
    module = load(path)
    peers = peer_versions(module.PEERS)
    start = time.perf_counter()
    rows = module.bench(size, seed)
    seconds = time.perf_counter() - start
    if not isinstance(rows, list) or not rows or not all(isinstance(r, Comparison | Agreement) for r in rows):
        raise TypeError(f"{path}: bench() must return a non-empty list of Comparison and Agreement rows")
    command = ["icml25", "bench", Path(path).stem] + (["--size", size] if size != "full" else []) + \
              (["--seed", str(seed)] if seed else [])
    return {"paper": Path(path).stem, "size": size, "seed": seed, "peers": peers,
            "notes": inspect.cleandoc(module.__doc__ or ""), "rows": [r.to_dict() for r in rows],
            "seconds": round(seconds, 3), "command": " ".join(command), "versions": versions(),
            "machine": machine(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "git": git_revision()}


def record_path(out: Path, pid: str) -> Path:
    return Path(out) / "bench" / f"{pid}.json"


def store(out: Path, record: dict[str, Any]) -> Path:
    """Write ``record`` to ``<out>/bench/<id>.json`` atomically; return the path."""
    path = record_path(out, record["paper"])
    write_json_atomic(path, record)
    return path


def load_records(out: Path, warn: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """The benchmark records stored in ``<out>/bench/``; an unreadable or foreign file is skipped (and
    reported to ``warn``)."""
    records = []
    for path in sorted((Path(out) / "bench").glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            record = exc
        if isinstance(record, dict) and all(k in record for k in RECORD_KEYS):
            records.append(record)
        elif warn is not None:
            warn(f"{path}: not an icml25 benchmark record; skipped")
    return records


def tally(record: dict[str, Any]) -> dict[str, int]:
    """How many rows of each verdict a record has (ahead, level, behind, agree, differ)."""
    counts = dict.fromkeys(("ahead", "level", "behind", "agree", "differ"), 0)
    for row in record["rows"]:
        counts[row["verdict"]] += 1
    return counts


def summary_line(record: dict[str, Any]) -> str:
    """One line: the peers, the verdict counts and the time taken."""
    c = tally(record)
    peers = ", ".join(f"{k} {v}" for k, v in record["peers"].items())
    agree = f"; {c['agree']}/{c['agree'] + c['differ']} agree" if c["agree"] + c["differ"] else ""
    return (f"{record['paper']} vs {peers}: {c['ahead']} ahead, {c['level']} level, {c['behind']} behind"
            f"{agree} ({record['seconds']:.1f} s)")


# --------------------------------------------------------------------------- the page
def _num(x: float | None) -> str:
    if x is None:
        return "∞"
    return f"{x:.3g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.1e}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def _table(rows: Iterable[dict[str, Any]]) -> list[str]:
    lines = ["| task | quantity | ours | peer | ours / peer | verdict |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if r["type"] == "comparison":
            lines.append(f"| {_cell(r['task'])} | {_cell(r['quantity'])} ({r['better']} is better) | "
                         f"{_num(r['ours'])} | {_num(r['peer'])} | {_num(r['ratio'])} | **{r['verdict']}** |")
        else:
            lines.append(f"| {_cell(r['task'])} | {_cell(r['quantity'])}: largest difference "
                         f"(tolerance {_num(r['tolerance'])}) "
                         f"| {_num(r['difference'])} | | | **{r['verdict']}** |")
    return lines


def page_markdown(records: Iterable[dict[str, Any]]) -> str:
    """``docs/benchmarks.md``: a summary table, then each paper's notes and rows."""
    records = sorted(records, key=lambda r: r["paper"])
    out = ["# Benchmarks against the field's libraries", "",
           "Generated by `icml25 bench --page docs/benchmarks.md` from `results/bench/*.json`; do not edit by hand.",
           "Each row measures ours and the peer library on the same data in the same process. Times are medians",
           "of interleaved repeats; `ours / peer` below 1 is faster (or smaller) for ours. *Level* means within the",
           "row's tolerance (10% unless stated) of the peer. *Agree* rows check that both compute the same thing.",
           "Install the peers with `python3 tasks.py bench` (the `bench` extra, then BackPACK, curvlinops and",
           "mpc.pytorch without their dependencies, so that the CPU build of PyTorch stays).", "",
           "| paper | peers | ahead | level | behind | agree | size | seconds |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in records:
        c = tally(r)
        peers = ", ".join(f"{k} {v}" for k, v in r["peers"].items())
        agree = f"{c['agree']}/{c['agree'] + c['differ']}" if c["agree"] + c["differ"] else "-"
        out.append(f"| [{r['paper']}](#{r['paper']}) | {peers} | {c['ahead']} | {c['level']} | {c['behind']} | "
                   f"{agree} | {r['size']} | {r['seconds']:.0f} |")
    for r in records:
        m = r.get("machine") or {}
        out += ["", f"## {r['paper']}", "", r["notes"], "", *_table(r["rows"]), "",
                f"`{r['command']}` ({r['size']} size, {r['seconds']:.0f} s on {m.get('cpu', '?')}, "
                f"{m.get('cores', '?')} cores, {r['date']}, git {str(r.get('git'))[:12]})."]
    return "\n".join(out) + "\n"

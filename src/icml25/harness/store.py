"""The result store: ``results/<id>/<scale>.json`` written atomically, plus provenance."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The keys every result record has; records the runner writes now also carry "command" (the
# `icml25 reproduce` line that gives them again), "machine" ({"cpu", "cores", "os"}), "date" (UTC,
# ISO 8601) and "figure_titles" ({figure path: title}); older records lack them and stay readable.
RESULT_KEYS = ("paper", "scale", "seeds", "metrics", "claims", "figures", "seconds", "versions", "git")


def result_path(root: Path, pid: str, scale: str) -> Path:
    return Path(root) / pid / f"{scale}.json"


def figure_dir(root: Path, pid: str, scale: str) -> Path:
    return Path(root) / pid / scale


def committed_path(root: Path, pid: str) -> Path:
    """Where a committed full-scale result lives: ``<root>/full/<id>.json`` (figures in ``<root>/full/<id>/``)."""
    return Path(root) / "full" / f"{pid}.json"


class StoreError(OSError):
    """A result or figure could not be written (full disk, unwritable folder): one clear line."""

    def __init__(self, path: Path, cause: OSError) -> None:
        reason = cause.strerror or str(cause)
        super().__init__(cause.errno, f"cannot write {path}: {reason}; results stored earlier are intact")
        self.path = Path(path)

    def __str__(self) -> str:
        return self.strerror


def warn(message: str) -> None:
    """The default sink of store warnings (corrupt or foreign files): one line on stderr."""
    print(f"icml25: warning: {message}", file=sys.stderr)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file, ``fsync`` and ``os.replace``.

    Any ``OSError`` (``ENOSPC``, ``EACCES`` ...) is raised as :class:`StoreError`; the previous
    content of ``path``, if any, is left as it was and no temporary file remains.
    """
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, StoreError):
            raise StoreError(path, exc) from exc
        raise


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to ``path`` atomically (see :func:`write_bytes_atomic`)."""
    text = json.dumps(data, indent=1, allow_nan=False, sort_keys=False) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"))


def check_writable(root: Path) -> None:
    """Raise :class:`StoreError` unless a file can be created in ``root`` (created if missing)."""
    root = Path(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".icml25-write-check.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise StoreError(root, exc) from exc


def read_result(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(record, None)`` for a stored result, ``(None, None)`` if there is no file, and
    ``(None, reason)`` if the file is unreadable, not JSON, or JSON that is not a result record."""
    path = Path(path)
    if not path.is_file():
        return None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"{path}: not a readable JSON file ({type(exc).__name__}: {str(exc)[:80]}); skipped"
    if not isinstance(data, dict) or any(key not in data for key in RESULT_KEYS):
        return None, f"{path}: JSON that is not an icml25 result record; skipped"
    return data, None


def load_result(path: Path, warn: Callable[[str], None] | None = None) -> dict[str, Any] | None:
    """Load a stored result; ``None`` if it is missing, corrupt or not one of ours.

    A corrupt or foreign file is reported to ``warn`` (one line naming the file) when given.
    """
    record, problem = read_result(path)
    if problem is not None and warn is not None:
        warn(problem)
    return record


def publish_full(root: Path, pid: str) -> Path:
    """Copy the stored full-scale result of ``pid`` and its figures to where they are committed.

    ``<root>/<id>/full.json`` becomes ``<root>/full/<id>.json`` and its figures ``<root>/full/<id>/*.png``
    (the record's figure paths are rewritten to match); returns the new record's path.  Raises
    ``FileNotFoundError`` when there is no stored full-scale result.
    """
    root = Path(root)
    source = result_path(root, pid, "full")
    record, problem = read_result(source)
    if record is None:
        raise FileNotFoundError(problem or f"no full-scale result of {pid} in {source}: run "
                                           f"`icml25 reproduce {pid} --scale full` first")
    moved = {fig: f"full/{pid}/{Path(fig).name}" for fig in record["figures"]}
    for old, new in moved.items():
        if (root / old).is_file():
            write_bytes_atomic(root / new, (root / old).read_bytes())
    record = {**record, "figures": list(moved.values()),
              "figure_titles": {moved[k]: v for k, v in (record.get("figure_titles") or {}).items() if k in moved}}
    target = committed_path(root, pid)
    write_json_atomic(target, record)
    return target


def versions() -> dict[str, str]:
    """Versions of Python, icml25 and the scientific libraries that are imported."""
    from icml25 import __version__

    found = {"python": platform.python_version(), "icml25": __version__}
    for name in ("numpy", "scipy", "sklearn", "torch", "ot", "networkx", "matplotlib"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "__version__"):
            found[name] = str(module.__version__)
    return found


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else what :mod:`platform` knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine() -> dict[str, Any]:
    """Where a result was computed: CPU model, logical cores, operating system."""
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "os": f"{platform.system()} {platform.release()}"}


def git_revision(cwd: Path | None = None) -> str | None:
    """The current git commit (with ``-dirty`` for local changes), or ``None`` outside git."""
    where = cwd or Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return rev + ("-dirty" if dirty else "")

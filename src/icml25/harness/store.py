"""The result store: ``results/<id>/<scale>.json`` written atomically, plus provenance."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

RESULT_KEYS = ("paper", "scale", "seeds", "metrics", "claims", "figures", "seconds", "versions", "git")


def result_path(root: Path, pid: str, scale: str) -> Path:
    return Path(root) / pid / f"{scale}.json"


def figure_dir(root: Path, pid: str, scale: str) -> Path:
    return Path(root) / pid / scale


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to ``path`` via a temporary file and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, allow_nan=False, sort_keys=False) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_result(path: Path) -> dict[str, Any] | None:
    """Load a stored result; ``None`` if it is missing, corrupt or not one of ours."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or any(key not in data for key in RESULT_KEYS):
        return None
    return data


def versions() -> dict[str, str]:
    """Versions of Python, icml25 and the scientific libraries that are imported."""
    from icml25 import __version__

    found = {"python": platform.python_version(), "icml25": __version__}
    for name in ("numpy", "scipy", "sklearn", "torch", "ot", "networkx", "matplotlib"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "__version__"):
            found[name] = str(module.__version__)
    return found


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

"""A per-user cache folder for generated data sets (never downloads)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from icml25.utils.validation import check_callable, check_instance


def cache_dir() -> Path:
    """``$ICML25_CACHE``, else ``$XDG_CACHE_HOME/icml25``, else ``~/.cache/icml25``; created if missing."""
    root = os.environ.get("ICML25_CACHE")
    if root:
        path = Path(root)
    else:
        path = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "icml25"
    path.mkdir(parents=True, exist_ok=True)
    return path


def cached_npz(name: str, make: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Load ``<cache>/<name>.npz``, or build it with ``make()`` and store it atomically.

    ``name`` should encode every parameter of the generator (including its seed).
    """
    check_instance(name, "name", str)
    check_callable(make, "make")
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"cache name must be a plain file name, got {name!r}")
    path = cache_dir() / f"{name}.npz"
    if path.exists():
        with np.load(path, allow_pickle=False) as stored:
            return {key: stored[key] for key in stored.files}
    arrays = make()
    if not isinstance(arrays, dict) or not all(isinstance(k, str) for k in arrays):
        raise TypeError(f"make must return a dict of name -> array, got {type(arrays).__name__}")
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
    os.close(fd)
    try:
        with open(tmp, "wb") as handle:
            np.savez(handle, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return arrays

"""Tensor transfer between worker processes through shared memory (``/dev/shm``).

The producer writes a tensor to a file in shared memory and sends only a small :class:`Handle` through a queue;
the consumer maps and copies it (Singh et al., arXiv 2501.05460, Section 3.1: MM tokens E -> P and KV caches
P -> D).  Every file of one system carries the system's prefix, so :func:`cleanup` removes whatever a crashed
worker left behind.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import tempfile
from dataclasses import dataclass

import numpy as np
import torch

SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
_counter = itertools.count()


@dataclass(frozen=True)
class Handle:
    """Where a shared tensor lives: file path, shape, dtype name and size in bytes."""

    path: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int


def put(tensor: torch.Tensor, prefix: str) -> Handle:
    """Write ``tensor`` to shared memory under ``prefix``; returns its handle."""
    arr = np.ascontiguousarray(tensor.detach().cpu().numpy())
    path = os.path.join(SHM_DIR, f"{prefix}-{os.getpid()}-{next(_counter)}")
    with open(path + ".tmp", "wb") as f:
        f.write(memoryview(arr).cast("B"))
    os.replace(path + ".tmp", path)
    return Handle(path, tuple(arr.shape), arr.dtype.str, arr.nbytes)


def take(handle: Handle, unlink: bool = True) -> torch.Tensor:
    """Read a shared tensor (a copy); ``unlink`` removes the file (the consumer owns it)."""
    arr = np.fromfile(handle.path, dtype=np.dtype(handle.dtype)).reshape(handle.shape)
    if unlink:
        release(handle)
    return torch.from_numpy(arr)


def release(handle: Handle) -> None:
    """Remove a shared tensor's file (no error if it is already gone)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(handle.path)


def cleanup(prefix: str) -> int:
    """Remove every shared-memory file of ``prefix``; returns how many there were."""
    paths = glob.glob(os.path.join(SHM_DIR, f"{prefix}-*"))
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    return len(paths)

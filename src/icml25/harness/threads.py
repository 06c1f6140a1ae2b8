"""Run quick reproductions with one BLAS/OpenMP and one PyTorch thread.

The quick and smoke scales train tiny models on small arrays: there, extra intra-op threads
only add synchronisation, and on a busy 2-core machine they slow runs down by 10x or more.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits


@contextmanager
def single_thread() -> Iterator[None]:
    """Limit BLAS/OpenMP pools (and PyTorch, if imported) to one thread; restore them afterwards."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    try:
        if torch is not None:
            torch.set_num_threads(1)
        with threadpool_limits(limits=1):
            yield
    finally:
        if torch is not None:
            torch.set_num_threads(before)

"""Explicit randomness: every public function takes ``seed: int | numpy.random.Generator | None``.

Library code never seeds or reads a global random state.  NumPy randomness comes from
:func:`as_generator`; PyTorch randomness from an explicit ``torch.Generator``
(:func:`torch_generator`) or, where a torch API has no generator argument (``nn.Module``
initialisation, dropout), from the :func:`seeded` context, which forks the global torch RNG,
seeds the fork and restores the caller's state afterwards.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = ["Seed", "as_generator", "check_seed", "init_rng", "int_seed", "seeded", "spawn", "torch_generator"]

Seed = int | np.random.Generator | None


def check_seed(seed: Any, name: str = "seed") -> Seed:
    """``seed`` if it is an int >= 0, a ``numpy.random.Generator`` or ``None``; else one clear error."""
    if seed is None or isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{name} must be an int, a numpy Generator or None, got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"{name} must be an int >= 0, a numpy Generator or None, got {seed!r}")
    return int(seed)


def as_generator(seed: Seed, name: str = "seed") -> np.random.Generator:
    """A NumPy Generator from an int seed, a Generator (used as is) or ``None`` (fresh OS entropy)."""
    seed = check_seed(seed, name)
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def int_seed(seed: Seed, name: str = "seed") -> int:
    """An integer seed: ``seed`` itself if it is an int, else one drawn from the generator (or OS entropy)."""
    seed = check_seed(seed, name)
    if isinstance(seed, int):
        return seed
    return int(as_generator(seed).integers(0, 2**63 - 1))


def spawn(seed: Seed, n: int, name: str = "seed") -> list[np.random.Generator]:
    """``n`` independent child generators of ``seed`` (NumPy's ``SeedSequence.spawn``)."""
    from icml25.utils.validation import check_scalar

    n = check_scalar(n, "n", "int", min=0)
    return as_generator(seed, name).spawn(n)


def torch_generator(seed: Seed, device: Any = "cpu", name: str = "seed") -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded from ``seed`` (see :func:`int_seed`)."""
    import torch

    if isinstance(seed, torch.Generator):
        return seed
    generator = torch.Generator(device=device)
    generator.manual_seed(int_seed(seed, name))
    return generator


@contextmanager
def seeded(seed: Seed, name: str = "seed") -> Iterator[None]:
    """Run a block on a forked, seeded torch RNG; the caller's global torch RNG state is restored after.

    For torch calls that take no generator (``nn.Linear`` initialisation, dropout): the block's
    random numbers depend only on ``seed``, and nothing outside the block sees a change.
    """
    import torch

    value = int_seed(seed, name)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(value)
        yield


def init_rng(seed: Seed, name: str = "seed") -> AbstractContextManager[None]:
    """The RNG of a module's weight initialisation: :func:`seeded` when ``seed`` is given, torch's global RNG
    (its default ``nn.Module`` initialisation) when ``seed`` is None."""
    return nullcontext() if seed is None else seeded(seed, name)

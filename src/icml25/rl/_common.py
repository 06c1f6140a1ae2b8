"""Checks shared by the deep learners (CleanRL keeps them inline; one place states them here)."""

from __future__ import annotations

from typing import Any

import numpy as np


def check_box(space: Any, name: str) -> tuple[int, ...]:
    """The shape of a gymnasium ``Box`` space; a ``TypeError`` for any other space."""
    import gymnasium

    if not isinstance(space, gymnasium.spaces.Box):
        raise TypeError(f"{name} must be a gymnasium Box space, got {space!r}")
    return tuple(space.shape)


def check_discrete(space: Any, name: str) -> int:
    """The number of actions of a gymnasium ``Discrete`` space; a ``TypeError`` for any other space."""
    import gymnasium

    if not isinstance(space, gymnasium.spaces.Discrete):
        raise TypeError(f"{name} must be a gymnasium Discrete space, got {space!r}")
    return int(space.n)


def check_obs(obs: Any, space: Any, name: str = "obs") -> np.ndarray:
    """One observation of a ``Box`` space as a finite float32 array of the space's shape."""
    from icml25.utils.validation import check_array

    return check_array(obs, name, shape=space.shape).astype(np.float32)


def linear_schedule(start_e: float, end_e: float, duration: float, t: int) -> float:
    """CleanRL's epsilon schedule: linear from ``start_e`` to ``end_e`` over ``duration`` steps, then flat."""
    slope = (end_e - start_e) / max(duration, 1.0)
    return max(slope * t + start_e, end_e)

"""diffusers interoperability: a diffusers model or scheduler plugs into our samplers and inversions.

A diffusers ``UNet2DModel`` (or any ``ModelMixin`` whose output has ``.sample``) is already a
``model(x, t)``; :func:`as_model` makes the output a plain tensor, and :func:`scheduler_alphas`
reads the schedule of a ``DDPMScheduler`` / ``DDIMScheduler`` (needs the ``diffusion`` extra:
``pip install -e '.[diffusion]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from icml25.diffusion.schedules import check_alphas_cumprod
from icml25.utils import check_callable

__all__ = ["as_model", "scheduler_alphas", "scheduler_prediction_type"]


def as_model(model: Callable[..., Any]) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """``model(x, t)`` returning a tensor, whether ``model`` returns one or a diffusers output (``.sample``)."""
    check_callable(model, "model")

    def call(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        out = model(x, t)
        return out.sample if hasattr(out, "sample") else out

    return call


def scheduler_alphas(scheduler: Any) -> torch.Tensor:
    """The ``alphas_cumprod`` of a diffusers scheduler, as a float64 tensor."""
    if not hasattr(scheduler, "alphas_cumprod"):
        raise TypeError(f"scheduler must be a diffusers scheduler with alphas_cumprod, got {type(scheduler).__name__}")
    return check_alphas_cumprod(torch.as_tensor(scheduler.alphas_cumprod).to(torch.float64), "scheduler.alphas_cumprod")


def scheduler_prediction_type(scheduler: Any) -> str:
    """The scheduler's ``prediction_type`` (``"epsilon"``, ``"sample"`` or ``"v_prediction"``)."""
    config = getattr(scheduler, "config", None)
    kind = getattr(config, "prediction_type", None) if config is not None else None
    if kind not in ("epsilon", "sample", "v_prediction"):
        raise TypeError("scheduler must be a diffusers scheduler with a prediction_type, "
                        f"got {type(scheduler).__name__}")
    return kind

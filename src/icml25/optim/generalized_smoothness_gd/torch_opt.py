"""PyTorch optimizer with the ℓ-step of Tyurin (ICML 2025): ``p <- p - γ(s) ∇p``, ``s`` the global norm.

``EllGD`` computes one gradient norm over all parameters of all groups (as
``torch.nn.utils.clip_grad_norm_`` does) and moves every parameter by ``γ(s) = ∫_0^1 dv /
ℓ(s + s v)``.  ``scale_grad_by_ell_`` is the same rule as an in-place gradient transformation
(the Optax ``scale_by_...`` pattern): after it, ``SGD(lr=1)`` takes exactly the ℓ-GD step.
Computing ``γ`` needs the norm on the host: one device synchronisation per step.

Checkpoints: ``EllGD.state_dict()`` holds only tensors, numbers and strings, so it round-trips
through ``torch.save`` / ``torch.load`` (``weights_only=True``) as ``SGD``'s does.  ℓ itself is
code, not state (as ``LambdaLR`` treats its functions): it is not saved, and ``load_state_dict``
keeps the ℓ of each group of the loading optimizer.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable

import numpy as np
import torch

from icml25.optim.generalized_smoothness_gd.ell import Ell, as_ell
from icml25.utils.validation import check_bool, check_callable, check_instance, check_scalar

__all__ = ["EllGD", "scale_grad_by_ell_"]


def _tensors(values: torch.Tensor | Iterable[torch.Tensor], name: str) -> list[torch.Tensor]:
    """``values`` (one tensor or an iterable of them) as a list of tensors."""
    if isinstance(values, torch.Tensor):
        return [values]
    if values is None or isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a tensor or an iterable of tensors, got {type(values).__name__}")
    out = list(values)
    for i, t in enumerate(out):
        check_instance(t, f"{name}[{i}]", torch.Tensor, "a torch.Tensor")
    return out


def _grads(tensors: Iterable[torch.Tensor]) -> list[torch.Tensor]:
    grads = [t.grad for t in tensors if t.grad is not None]
    if any(g.is_sparse for g in grads):
        raise NotImplementedError("EllGD does not support sparse gradients")
    return grads


def _global_norm(grads: list[torch.Tensor]) -> float:
    if not grads:
        return 0.0
    dtype = functools.reduce(torch.promote_types, (g.dtype for g in grads))
    if dtype in (torch.float16, torch.bfloat16):
        dtype = torch.float32
    device = grads[0].device
    norms = torch.stack([torch.linalg.vector_norm(g, dtype=dtype).to(device) for g in grads])
    return float(torch.linalg.vector_norm(norms))


def scale_grad_by_ell_(
    parameters: torch.Tensor | Iterable[torch.Tensor], ell: Ell | Callable[[np.ndarray], np.ndarray] | float
) -> float:
    """Multiply all gradients in place by ``γ(||g||)`` (global norm); return ``γ``.

    The "principled clipping" form of the ℓ-step: like ``clip_grad_norm_`` it rescales by a
    function of the global norm, here ``γ(s)`` (for ``AffineEll(L0, L1)`` between ``1/L0`` for
    small and ``ln 2 / (L1 s)`` for large gradients).  Follow with ``SGD(params, lr=1)``.
    ``parameters`` may be empty (as for ``clip_grad_norm_``): ``γ(0) = 1 / ℓ(0)`` is returned.
    """
    ell = as_ell(ell)
    grads = _grads(_tensors(parameters, "parameters"))
    s = _global_norm(grads)
    if not math.isfinite(s):
        raise FloatingPointError("non-finite gradient norm")
    gamma = float(ell.step(s))
    for g in grads:
        g.mul_(gamma)
    return gamma


class EllGD(torch.optim.Optimizer):
    """Gradient descent with the ℓ-smoothness step ``γ_k = ∫_0^1 dv / ℓ(s_k + s_k v)``.

    Args:
        params: parameters or parameter groups.  A group may set its own ``ell``, ``lr`` and
            ``maximize``; the gradient norm ``s_k`` is always the global one over all groups.
        ell: an ``Ell`` (``AffineEll(L0, L1)``, ``PowerEll``, ...), a vectorised callable, or a
            number ``L`` (plain GD with learning rate ``1/L``).
        lr: a multiplier ``>= 0`` of the ℓ-step: the move is ``lr * γ_k * g``.  The paper's method
            is ``lr = 1`` (the default); a group with ``lr = 0`` does not move, and learning-rate
            schedulers (which rescale ``group["lr"]``) work as with any torch optimizer.
        maximize: ascend instead of descend.

    After each ``step``, ``n_steps``, ``last_grad_norm`` and ``last_step`` hold the step count,
    ``s_k`` and ``γ_k`` (the ℓ-step before ``lr``; the last group's ``γ_k`` when groups set their
    own ℓ); ``state_dict`` saves them, so a loaded optimizer continues identically.  ℓ is not
    saved (see the module docstring).  Sparse gradients raise ``NotImplementedError``; a
    non-finite gradient norm raises ``FloatingPointError`` naming the step.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict],
        ell: Ell | Callable[[np.ndarray], np.ndarray] | float,
        *,
        lr: float = 1.0,
        maximize: bool = False,
    ) -> None:
        if params is None or isinstance(params, (str, bytes, torch.Tensor, dict)) or not hasattr(params, "__iter__"):
            raise TypeError(f"params must be an iterable of tensors or of parameter-group dicts, "
                            f"got {type(params).__name__}")
        params = list(params)
        if not params:
            raise ValueError("params must not be empty (an optimizer needs at least one parameter)")
        defaults = {
            "ell": as_ell(ell),
            "lr": check_scalar(lr, "lr", "real", min=0.0),
            "maximize": check_bool(maximize, "maximize"),
        }
        super().__init__(params, defaults)
        self.n_steps = 0
        self.last_grad_norm: float | None = None
        self.last_step: float | None = None

    def add_param_group(self, param_group: dict) -> None:
        """Add a group (a dict with ``params`` and optionally its own ``ell``, ``lr``, ``maximize``)."""
        check_instance(param_group, "param_group", dict)
        if "ell" in param_group:
            param_group["ell"] = as_ell(param_group["ell"])
        if "lr" in param_group:
            param_group["lr"] = check_scalar(param_group["lr"], "lr", "real", min=0.0)
        if "maximize" in param_group:
            param_group["maximize"] = check_bool(param_group["maximize"], "maximize")
        super().add_param_group(param_group)

    def state_dict(self) -> dict:
        """The torch state dict without ℓ (code, not state), plus the step counters."""
        state = super().state_dict()
        for group in state["param_groups"]:
            group.pop("ell", None)
        state["n_steps"] = self.n_steps
        state["last_grad_norm"] = self.last_grad_norm
        state["last_step"] = self.last_step
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a ``state_dict``; every group keeps this optimizer's ℓ."""
        check_instance(state_dict, "state_dict", dict)
        ells = [group["ell"] for group in self.param_groups]
        super().load_state_dict(state_dict)
        for group, ell in zip(self.param_groups, ells, strict=True):
            group["ell"] = ell
        self.n_steps = int(state_dict.get("n_steps", 0))
        self.last_grad_norm = state_dict.get("last_grad_norm")
        self.last_step = state_dict.get("last_step")

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """One ℓ-GD step; ``closure`` re-evaluates the loss (and gradients) first if given."""
        loss = None
        if closure is not None:
            check_callable(closure, "closure")
            with torch.enable_grad():
                loss = closure()
        grads = _grads(p for group in self.param_groups for p in group["params"])
        s = _global_norm(grads)
        if not math.isfinite(s):
            raise FloatingPointError(f"non-finite gradient norm at step {self.n_steps}")
        gamma = None
        for group in self.param_groups:
            gamma = float(group["ell"].step(s))
            move = group["lr"] * gamma
            alpha = move if group["maximize"] else -move
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=alpha)
        self.n_steps += 1
        self.last_grad_norm, self.last_step = s, gamma
        return loss

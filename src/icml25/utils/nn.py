"""Small PyTorch helpers shared by the papers that train little networks (needs the ``torch`` extra).

``make_mlp`` builds a seeded MLP; ``train_classifier`` runs a seeded mini-batch loop with Adam
(or any optimizer factory) and cross-entropy; ``accuracy`` evaluates.  The digits as tensors
are data and live in :mod:`icml25.data.tensors`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from icml25.utils.random import seeded, torch_generator
from icml25.utils.validation import check_scalar, check_sequence

__all__ = ["accuracy", "make_mlp", "train_classifier"]


def make_mlp(sizes: Sequence[int], *, activation: Callable[[], nn.Module] = nn.ReLU, bias: bool = True,
             seed: int = 0) -> nn.Sequential:
    """An MLP ``sizes[0] -> ... -> sizes[-1]`` with ``activation`` between layers, initialised from ``seed``."""
    sizes = check_sequence(sizes, "sizes", min_len=2, item=lambda s, name: check_scalar(s, name, "int", min=1))
    with seeded(seed):
        layers: list[nn.Module] = []
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            layers.append(nn.Linear(n_in, n_out, bias=bias))
            if i < len(sizes) - 2:
                layers.append(activation())
        return nn.Sequential(*layers)


def train_classifier(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int = 20,
    batch_size: int = 64,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    optimizer: Callable[..., torch.optim.Optimizer] | torch.optim.Optimizer | None = None,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    seed: int = 0,
) -> torch.optim.Optimizer:
    """Train ``model`` on ``(X, y)`` with seeded shuffling; return the optimizer (its state is kept).

    ``optimizer`` is an optimizer class/factory called as ``optimizer(params, lr=..., weight_decay=...)``
    (default ``torch.optim.Adam``) or an existing optimizer instance to continue with.  ``loss_fn``
    defaults to mean cross-entropy.
    """
    if X.ndim < 2 or y.ndim != 1 or X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise ValueError(f"X must be (n, ...) and y (n,) with n > 0, got {tuple(X.shape)} and {tuple(y.shape)}")
    epochs = check_scalar(epochs, "epochs", "int", min=1)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
    if isinstance(optimizer, torch.optim.Optimizer):
        opt = optimizer
    else:
        opt = (optimizer or torch.optim.Adam)(model.parameters(), lr=lr, weight_decay=weight_decay)
    loss_fn = loss_fn or nn.functional.cross_entropy
    generator = torch_generator(seed)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(X.shape[0], generator=generator).to(X.device)
        for start in range(0, X.shape[0], batch_size):
            idx = order[start:start + batch_size]
            opt.zero_grad()
            loss = loss_fn(model(X[idx]), y[idx])
            loss.backward()
            opt.step()
    model.eval()
    return opt


@torch.no_grad()
def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of ``X`` whose arg-max prediction equals ``y``."""
    model.eval()
    return float((model(X).argmax(dim=-1) == y).float().mean())

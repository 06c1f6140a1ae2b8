"""One small-model trainer shared by the papers that train little networks on digits.

``digits_tensors`` gives the bundled digits as float32 tensors with a seeded split;
``make_mlp`` builds a seeded MLP; ``train_classifier`` runs a seeded mini-batch loop with
Adam (or any optimizer factory) and cross-entropy; ``accuracy`` evaluates.  Requires the
``torch`` extra.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from icml25.data.bundled import load_digits_split


@dataclass(frozen=True)
class TensorSplit:
    """A train/test split as tensors (inputs float32, labels int64)."""

    X_train: torch.Tensor
    X_test: torch.Tensor
    y_train: torch.Tensor
    y_test: torch.Tensor


def digits_tensors(test_size: float = 0.25, seed: int = 0) -> TensorSplit:
    """The 8x8 digits in [0, 1] as tensors, with ``load_digits_split``'s seeded split."""
    s = load_digits_split(test_size=test_size, seed=seed)
    return TensorSplit(torch.as_tensor(s.X_train, dtype=torch.float32), torch.as_tensor(s.X_test, dtype=torch.float32),
                       torch.as_tensor(s.y_train, dtype=torch.int64), torch.as_tensor(s.y_test, dtype=torch.int64))


def make_mlp(sizes: Sequence[int], *, activation: Callable[[], nn.Module] = nn.ReLU, bias: bool = True,
             seed: int = 0) -> nn.Sequential:
    """An MLP ``sizes[0] -> ... -> sizes[-1]`` with ``activation`` between layers, initialised from ``seed``."""
    sizes = list(sizes)
    if len(sizes) < 2 or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sizes):
        raise ValueError(f"sizes must list at least two positive layer widths, got {sizes!r}")
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        layers: list[nn.Module] = []
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            layers.append(nn.Linear(n_in, n_out, bias=bias))
            if i < len(sizes) - 2:
                layers.append(activation())
        return nn.Sequential(*layers)
    finally:
        torch.random.set_rng_state(generator_state)


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
    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    if isinstance(optimizer, torch.optim.Optimizer):
        opt = optimizer
    else:
        opt = (optimizer or torch.optim.Adam)(model.parameters(), lr=lr, weight_decay=weight_decay)
    loss_fn = loss_fn or nn.functional.cross_entropy
    generator = torch.Generator(device="cpu").manual_seed(seed)
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

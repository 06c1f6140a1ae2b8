"""The bundled digits as PyTorch tensors (needs the ``torch`` extra)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

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

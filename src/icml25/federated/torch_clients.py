"""PyTorch glue for the federated runtime: model <-> named arrays, and a plain supervised client."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import torch
from torch import nn

from icml25.federated.messages import EvaluateIns, EvaluateRes, FitIns, FitRes, MalformedMessageError
from icml25.federated.simulation import Client, check_same_layout
from icml25.utils.nn import accuracy, train_classifier
from icml25.utils.validation import check_choice, check_consistent_length, check_scalar

__all__ = ["module_to_arrays", "load_arrays", "TorchClassifierClient", "accuracy_evaluator"]


def module_to_arrays(module: nn.Module) -> dict[str, np.ndarray]:
    """The module's floating-point state (parameters and buffers) as named float32 numpy arrays."""
    return {name: t.detach().to("cpu", torch.float32).numpy().copy()
            for name, t in module.state_dict().items() if t.is_floating_point()}


@torch.no_grad()
def load_arrays(module: nn.Module, arrays: Mapping[str, np.ndarray]) -> nn.Module:
    """Copy named arrays into the module's state in place (device and dtype follow the module)."""
    state = {k: v for k, v in module.state_dict().items() if v.is_floating_point()}
    check_same_layout({k: np.broadcast_to(np.float32(0), tuple(v.shape)) for k, v in state.items()}, arrays)
    for name, tensor in state.items():
        tensor.copy_(torch.as_tensor(arrays[name], dtype=tensor.dtype, device=tensor.device))
    return module


class TorchClassifierClient(Client):
    """A client that trains a classifier on its own ``(X, y)`` for ``epochs`` local epochs (FedAvg's client).

    ``model_fn()`` builds a fresh model; the local shuffling seed is ``seed + round``.
    """

    def __init__(self, model_fn: Callable[[], nn.Module], X: torch.Tensor, y: torch.Tensor, epochs: int = 1,
                 lr: float = 0.05, batch_size: int = 32, optimizer: str = "sgd", seed: int = 0) -> None:
        check_choice(optimizer, "optimizer", ("sgd", "adam"))
        check_consistent_length(X, y, names=("X", "y"))
        epochs = check_scalar(epochs, "epochs", "int", min=1)
        lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
        batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
        seed = check_scalar(seed, "seed", "int", min=0)
        self.model_fn, self.X, self.y = model_fn, X, y
        self.epochs, self.lr, self.batch_size, self.optimizer, self.seed = epochs, lr, batch_size, optimizer, seed

    def fit(self, ins: FitIns) -> FitRes:
        model = load_arrays(self.model_fn(), ins.arrays)
        if self.X.shape[0] == 0:
            return FitRes(module_to_arrays(model), 0, {})
        opt = torch.optim.SGD if self.optimizer == "sgd" else torch.optim.Adam
        train_classifier(model, self.X, self.y, epochs=self.epochs, batch_size=self.batch_size, lr=self.lr,
                         optimizer=opt, seed=self.seed + int(ins.config.get("round", 0)))
        metrics = {"train_accuracy": accuracy(model, self.X, self.y)}
        return FitRes(module_to_arrays(model), int(self.X.shape[0]), metrics)

    def evaluate(self, ins: EvaluateIns) -> EvaluateRes:
        model = load_arrays(self.model_fn(), ins.arrays)
        with torch.no_grad():
            loss = float(nn.functional.cross_entropy(model(self.X), self.y)) if self.X.shape[0] else 0.0
        return EvaluateRes(loss, int(self.X.shape[0]), {"accuracy": accuracy(model, self.X, self.y)})


def accuracy_evaluator(model_fn: Callable[[], nn.Module], X: torch.Tensor,
                       y: torch.Tensor) -> Callable[[Mapping[str, np.ndarray]], dict[str, float]]:
    """A server-side ``evaluate_fn`` for :class:`~icml25.federated.simulation.FedAvg`: test accuracy."""
    def evaluate(arrays: Mapping[str, np.ndarray]) -> dict[str, float]:
        try:
            model = load_arrays(model_fn(), arrays)
        except MalformedMessageError as exc:
            raise ValueError(f"cannot evaluate the global arrays: {exc}") from exc
        return {"accuracy": accuracy(model, X, y)}
    return evaluate

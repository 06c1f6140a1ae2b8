"""FedKSeed (Qin et al., ICML 2024): zeroth-order federated tuning with K candidate seeds, the Ferret baseline.

Each local step picks a seed ``s`` of the pool, regenerates ``z = basis(s, d)`` (the same bases as
Ferret, one block over all trainable parameters), estimates the directional derivative
``g = (L(w + eps z) - L(w - eps z)) / (2 eps)`` on a mini-batch, steps ``w <- w - lr g z`` and adds
``g`` to the accumulator of ``s``.  The client uploads the ``K`` accumulators (dense float32); the
server replays ``w <- w - lr sum_s accbar_s z_s``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from icml25.federated.ferret.bases import KINDS, basis, candidate_seeds, seed_digest
from icml25.federated.ferret.ferret import Arrays, LocalSGDClient, SharedSeedServer, load_model
from icml25.federated.messages import FitIns, FitRes, MalformedMessageError, Scalar
from icml25.utils.random import Seed, torch_generator
from icml25.utils.validation import check_choice, check_instance, check_scalar

__all__ = ["FedKSeedClient", "FedKSeed"]


class FedKSeedClient(LocalSGDClient):
    """FedKSeed's client: ``local_steps`` two-point zeroth-order steps along seed-regenerated directions."""

    def __init__(self, model_fn: Callable[[], nn.Module], X: torch.Tensor, y: torch.Tensor, K: int,
                 root_seed: int = 0, local_steps: int = 10, lr: float = 1e-3, eps: float = 1e-3,
                 batch_size: int = 32, kind: str = "gaussian", seed: Seed = 0) -> None:
        super().__init__(model_fn, X, y, local_steps, lr, batch_size, None, seed)
        self.eps = check_scalar(eps, "eps", "real", min=0.0, inclusive="neither")
        self.K, self.root_seed = check_scalar(K, "K", "int", min=1), check_scalar(root_seed, "root_seed", "int", min=0)
        self.kind = check_choice(kind, "kind", KINDS)
        self.seeds = candidate_seeds(self.root_seed, self.K)
        self.digest = seed_digest(self.root_seed, self.K, "fixed", kind)

    @torch.no_grad()
    def fit(self, ins: FitIns) -> FitRes:
        check_instance(ins, "ins", FitIns)
        server_round = int(ins.config.get("round", 0))
        if int(ins.config.get("seed_digest", -1)) != self.digest:
            raise ValueError("the server's seed digest differs from this client's (root seed, K, basis)")
        model = load_model(self.model_fn, ins.arrays, self.X.device)
        params = [p for p in model.parameters() if p.requires_grad]
        theta = nn.utils.parameters_to_vector(params).float()
        acc = np.zeros(self.K, dtype=np.float32)
        n = self.X.shape[0]
        rng = np.random.default_rng([self.seed, server_round, 0x5EED])
        generator = torch_generator(int(rng.integers(2**62)))
        model.eval()
        for _ in range(self.local_steps if n else 0):
            k = int(rng.integers(self.K))
            z = torch.from_numpy(basis(int(self.seeds[k]), theta.numel(), self.kind)).to(theta.device)
            idx = torch.randperm(n, generator=generator)[:self.batch_size].to(self.X.device)
            losses = []
            for sign in (1.0, -1.0):
                nn.utils.vector_to_parameters(theta + sign * self.eps * z, params)
                losses.append(float(nn.functional.cross_entropy(model(self.X[idx]), self.y[idx])))
            g = (losses[0] - losses[1]) / (2 * self.eps)
            if not np.isfinite(g):
                raise ValueError("the zeroth-order estimate is NaN or Inf (diverged local training): message rejected")
            theta = theta - self.lr * g * z
            acc[k] += g
        meta = np.array([server_round, self.digest], dtype=np.uint64)
        return FitRes({"accumulators": acc, "meta": meta}, int(n), {"n_coords": self.K})


class FedKSeed(SharedSeedServer):
    """FedKSeed's server: averages the clients' K accumulators and replays them with the clients' ``lr``."""

    def __init__(self, model: nn.Module, K: int, lr: float, root_seed: int = 0, kind: str = "gaussian",
                 weighting: str = "equal", evaluate_fn: Callable[[Arrays], dict[str, Scalar]] | None = None) -> None:
        lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
        super().__init__(model, K, root_seed, lr, "fixed", kind, "single", weighting, 0.0, None, evaluate_fn)

    def _dense(self, res: FitRes) -> np.ndarray:
        acc = res.arrays.get("accumulators")
        if acc is None or acc.shape != (self.K,) or acc.dtype.kind != "f" or not np.all(np.isfinite(acc)):
            raise MalformedMessageError(f"FedKSeed message needs 'accumulators': {self.K} finite floats")
        return acc.astype(np.float32)[None, :]

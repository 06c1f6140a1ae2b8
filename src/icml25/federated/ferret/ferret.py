"""Ferret clients and server on the shared federated runtime (Shu et al., ICML 2025, Alg. 1).

Round ``r``: the server broadcasts ``w_r``; a client runs ``T`` plain SGD steps, takes
``Delta = w_r - w_{r,T}`` (official sign), splits it into blocks, gives block ``l`` ``K_l``
directions by the norm rule and sends ``K_l`` float32 coordinates plus their seed indices; the
server averages the coordinates (the same seeds on every client make this equal to averaging the
reconstructions), regenerates each direction once and sets ``w_l <- w_l - eta_s * sum_k gammā_{l,k} v_{l,k}``.
Messages carry ``meta = [round, seed digest]`` so that replies from another round or seed pool are
rejected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import torch
from torch import nn

from icml25.federated.ferret.bases import KINDS, SCHEDULES, round_seeds, seed_digest
from icml25.federated.ferret.projection import (
    Coords,
    allocate_directions,
    make_blocks,
    parameter_aliases,
    project,
    reconstruct,
)
from icml25.federated.messages import FitIns, FitRes, MalformedMessageError, Scalar
from icml25.federated.simulation import Client, Strategy
from icml25.federated.torch_clients import load_arrays, module_to_arrays
from icml25.utils.random import Seed, int_seed, torch_generator
from icml25.utils.validation import (
    check_callable,
    check_choice,
    check_consistent_length,
    check_instance,
    check_scalar,
    check_sequence,
    check_tensor,
)

__all__ = ["local_sgd", "load_model", "LocalSGDClient", "FerretClient", "SharedSeedServer", "Ferret", "check_meta"]

Arrays = dict[str, np.ndarray]


def _check_xy(X: object, y: object) -> None:
    check_tensor(X, "X", ndim=(2, 3, 4), floating=True, finite=True)
    check_tensor(y, "y", ndim=1)
    if y.is_floating_point() or y.dtype == torch.bool:
        raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")
    check_consistent_length(X, y, names=("X", "y"))


def _server_round(server_round: object) -> int:
    return check_scalar(server_round, "server_round", "int", min=1)


def _check_results(results: object, failures: object) -> list[tuple[int, FitRes]]:
    def pair(item: object, name: str) -> tuple[int, FitRes]:
        if not isinstance(item, (tuple, list)) or len(item) != 2 or not isinstance(item[1], FitRes):
            raise TypeError(f"{name} must be a pair (client id, FitRes), got {type(item).__name__}")
        return check_scalar(item[0], f"{name} client id", "int", min=0), item[1]

    out = check_sequence(results, "results", item=pair)
    check_sequence(failures, "failures")
    return out


def _block_target(blocks: str | int) -> int | None:
    if blocks == "official":
        return None
    if blocks == "single":
        return 2**62
    return check_scalar(blocks, "blocks", "int", min=1)


def local_sgd(model: nn.Module, X: torch.Tensor, y: torch.Tensor, steps: int, batch_size: int, lr: float,
              seed: Seed, grad_clip: float | None = None) -> float:
    """``steps`` plain SGD steps (momentum 0, weight decay 0) on random mini-batches; returns the last loss.

    ``seed`` (an int, a NumPy Generator, ``None`` or a ``torch.Generator``) draws the mini-batches.  ``X``
    (floating, finite, at least one sample) and ``y`` (integer labels) have the same length.
    """
    check_instance(model, "model", nn.Module, "an nn.Module")
    _check_xy(X, y)
    if X.shape[0] == 0:
        raise ValueError("X must hold at least one sample")
    steps = check_scalar(steps, "steps", "int", min=1)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    if grad_clip is not None:
        grad_clip = check_scalar(grad_clip, "grad_clip", "real", min=0.0, inclusive="neither")
    generator = torch_generator(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=lr)
    model.train()
    loss = torch.zeros(())
    for _ in range(steps):
        idx = torch.randperm(X.shape[0], generator=generator)[:batch_size].to(X.device)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(X[idx]), y[idx])
        loss.backward()
        if grad_clip is not None:
            nn.utils.clip_grad_norm_(params, grad_clip)
        opt.step()
    model.eval()
    return float(loss.detach())


def load_model(model_fn: Callable[[], nn.Module], arrays: Mapping[str, np.ndarray], device: torch.device) -> nn.Module:
    """A fresh ``model_fn()`` holding ``arrays``, on ``device``, in its own dtype (bf16/fp16 included)."""
    model = model_fn()
    dtype = next(model.parameters()).dtype
    return load_arrays(model.float(), arrays).to(device=device, dtype=dtype)


class LocalSGDClient(Client):
    """A classifier client running ``local_steps`` SGD steps per round and sending the full model (FedAvg).

    ``model_fn()`` builds a fresh model; it is moved to ``X``'s device.  The batch seed of round
    ``r`` is derived from ``(seed, r)``.
    """

    def __init__(self, model_fn: Callable[[], nn.Module], X: torch.Tensor, y: torch.Tensor, local_steps: int = 10,
                 lr: float = 0.05, batch_size: int = 32, grad_clip: float | None = None, seed: Seed = 0) -> None:
        check_callable(model_fn, "model_fn")
        _check_xy(X, y)
        self.model_fn, self.X, self.y = model_fn, X, y
        self.local_steps = check_scalar(local_steps, "local_steps", "int", min=1)
        self.batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
        self.lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
        if grad_clip is not None:
            grad_clip = check_scalar(grad_clip, "grad_clip", "real", min=0.0, inclusive="neither")
        self.grad_clip, self.seed = grad_clip, int_seed(seed)

    def _train(self, ins: FitIns) -> tuple[nn.Module, float]:
        model = load_model(self.model_fn, ins.arrays, self.X.device)
        if self.X.shape[0] == 0:
            return model, 0.0
        batch_seed = int(np.random.SeedSequence([self.seed, int(ins.config.get("round", 0))]).generate_state(1)[0])
        loss = local_sgd(model, self.X, self.y, self.local_steps, self.batch_size, self.lr, batch_seed,
                         self.grad_clip)
        return model, loss

    def fit(self, ins: FitIns) -> FitRes:
        check_instance(ins, "ins", FitIns)
        model, loss = self._train(ins)
        return FitRes(module_to_arrays(model), int(self.X.shape[0]), {"train_loss": loss})


def check_meta(arrays: Mapping[str, np.ndarray], server_round: int, digest: int) -> None:
    """Raise MalformedMessageError unless ``arrays["meta"] == [server_round, digest]``."""
    meta = arrays.get("meta")
    if meta is None or np.asarray(meta).shape != (2,) or np.asarray(meta).dtype.kind not in "iu":
        raise MalformedMessageError("message lacks meta = [round, seed digest] (two integers)")
    if int(meta[0]) != server_round:
        raise MalformedMessageError(f"message from round {int(meta[0])}, expected round {server_round}")
    if int(meta[1]) != digest:
        raise MalformedMessageError("message made with another root seed, K, seed schedule or basis (digest mismatch)")


class FerretClient(LocalSGDClient):
    """Ferret's client: local SGD, then the update projected onto ``K_l`` shared directions per block.

    ``K`` (seeds per round), ``root_seed``, ``seed_schedule`` ("fixed": the official pool drawn once;
    "per_round"), ``kind`` (basis: "gaussian" unbiased default, "rademacher", "official") and
    ``blocks`` ("official": 0.9 x median tensor size, "single", or a target size) must match the
    server's.  ``rule`` is the direction allocation ("norm" official, "uniform").
    """

    def __init__(self, model_fn: Callable[[], nn.Module], X: torch.Tensor, y: torch.Tensor, K: int,
                 root_seed: int = 0, local_steps: int = 10, lr: float = 0.05, batch_size: int = 32,
                 seed_schedule: str = "fixed", kind: str = "gaussian", blocks: str | int = "official",
                 rule: str = "norm", min_per_block: int = 2, grad_clip: float | None = None, seed: Seed = 0) -> None:
        super().__init__(model_fn, X, y, local_steps, lr, batch_size, grad_clip, seed)
        self.K, self.root_seed = check_scalar(K, "K", "int", min=1), check_scalar(root_seed, "root_seed", "int", min=0)
        self.rule = check_choice(rule, "rule", ("norm", "uniform"))
        self.min_per_block = check_scalar(min_per_block, "min_per_block", "int", min=0)
        check_choice(seed_schedule, "seed_schedule", SCHEDULES)
        check_choice(kind, "kind", KINDS)
        self.seed_schedule, self.kind = seed_schedule, kind
        self.digest = seed_digest(self.root_seed, self.K, seed_schedule, kind)
        self.blocks = make_blocks(model_fn(), _block_target(blocks))

    def fit(self, ins: FitIns) -> FitRes:
        check_instance(ins, "ins", FitIns)
        server_round = int(ins.config.get("round", 0))
        if int(ins.config.get("seed_digest", -1)) != self.digest:
            raise ValueError("the server's seed digest differs from this client's (root seed, K, schedule, basis)")
        start = {b: b.flatten(ins.arrays) for b in self.blocks}
        model, loss = self._train(ins)
        end = module_to_arrays(model)
        deltas = [start[b] - b.flatten(end) for b in self.blocks]
        if not all(np.all(np.isfinite(d)) for d in deltas):
            raise ValueError("the local update contains NaN or Inf (diverged local training): message rejected")
        counts = allocate_directions([float(np.linalg.norm(d)) for d in deltas], self.K,
                                     [b.numel for b in self.blocks], self.min_per_block, self.rule)
        rng = np.random.default_rng([self.seed, server_round, 0xFE])
        coords = project(deltas, round_seeds(self.root_seed, self.K, server_round, self.seed_schedule), counts,
                         self.kind, seed=rng)
        arrays = {**coords.to_arrays(self.K), "meta": np.array([server_round, self.digest], dtype=np.uint64)}
        return FitRes(arrays, int(self.X.shape[0]), {"train_loss": loss, "n_coords": coords.n_coords})


class SharedSeedServer(Strategy):
    """Common server of Ferret and FedKSeed: average per-seed coordinates, rebuild, apply to the full model.

    Subclasses define ``_dense(res)``, the ``(n_blocks, K)`` coordinates of one validated reply.
    """

    def __init__(self, model: nn.Module, K: int, root_seed: int, server_lr: float, seed_schedule: str, kind: str,
                 blocks: str | int, weighting: str, momentum: float, clip: float | None,
                 evaluate_fn: Callable[[Arrays], dict[str, Scalar]] | None) -> None:
        check_instance(model, "model", nn.Module, "an nn.Module")
        check_choice(kind, "kind", KINDS)
        check_choice(seed_schedule, "seed_schedule", SCHEDULES)
        check_choice(weighting, "weighting", ("equal", "num_examples"))
        if clip is not None:
            clip = check_scalar(clip, "clip", "real", min=0.0, inclusive="neither")
        if evaluate_fn is not None:
            check_callable(evaluate_fn, "evaluate_fn")
        self.K, self.root_seed = check_scalar(K, "K", "int", min=1), check_scalar(root_seed, "root_seed", "int", min=0)
        self.server_lr = check_scalar(server_lr, "server_lr", "real", min=0.0, inclusive="neither")
        self.momentum = check_scalar(momentum, "momentum", "real", min=0.0, max=1.0, inclusive="left")
        self.seed_schedule, self.kind, self.weighting, self.clip = seed_schedule, kind, weighting, clip
        self.digest = seed_digest(self.root_seed, self.K, seed_schedule, kind)
        self.blocks = make_blocks(model, _block_target(blocks))
        self.aliases = parameter_aliases(model)
        self.initial_arrays = module_to_arrays(model)
        self.evaluate_fn = evaluate_fn
        self.pool = np.zeros((len(self.blocks), self.K), dtype=np.float32)
        self.velocity: list[np.ndarray] | None = None

    def initialize(self) -> Arrays:
        self.pool[:] = 0
        self.velocity = None
        return {k: v.copy() for k, v in self.initial_arrays.items()}

    def fit_config(self, server_round: int) -> dict[str, Scalar]:
        server_round = _server_round(server_round)
        return {"round": server_round, "seed_digest": self.digest}

    def _dense(self, res: FitRes) -> np.ndarray:
        raise NotImplementedError

    def validate_fit(self, server_round: int, arrays: Arrays, res: FitRes) -> None:
        server_round = _server_round(server_round)
        check_instance(arrays, "arrays", Mapping, "a mapping name -> array")
        check_instance(res, "res", FitRes)
        check_meta(res.arrays, server_round, self.digest)
        self._dense(res)

    def aggregate_fit(self, server_round, arrays, results, failures):
        server_round = _server_round(server_round)
        check_instance(arrays, "arrays", Mapping, "a mapping name -> array")
        results = _check_results(results, failures)
        weights = np.array([1.0 if self.weighting == "equal" else float(res.num_examples) for _, res in results])
        if weights.sum() == 0:
            return arrays, {"clients": len(results), "directions_regenerated": 0, "skipped": "no examples"}
        weights = weights / weights.sum()
        mean = sum(np.float32(w) * self._dense(res) for w, (_, res) in zip(weights, results, strict=True))
        seeds = round_seeds(self.root_seed, self.K, server_round, self.seed_schedule)
        dims = [b.numel for b in self.blocks]
        if self.seed_schedule == "fixed":  # one basis for every round: momentum on the coordinates is exact
            self.pool = (self.momentum * self.pool + mean).astype(np.float32)
            updates, count = reconstruct(self.pool, seeds, dims, self.kind, self.clip)
        else:  # new directions every round: the momentum lives in parameter space
            updates, count = reconstruct(mean, seeds, dims, self.kind, self.clip)
            if self.momentum > 0:
                if self.velocity is not None:
                    updates = [(self.momentum * v + u).astype(np.float32)
                               for v, u in zip(self.velocity, updates, strict=True)]
                self.velocity = updates
        new = {k: v.copy() for k, v in arrays.items()}
        for block, update in zip(self.blocks, updates, strict=True):
            for name, part in block.split(update).items():
                new[name] = (new[name] - self.server_lr * part).astype(new[name].dtype)
        for alias, name in self.aliases.items():
            new[alias] = new[name].copy()
        return new, {"clients": len(results), "directions_regenerated": count,
                     "client_coords": int(sum(np.count_nonzero(self._dense(res)) for _, res in results))}

    def evaluate(self, server_round: int, arrays: Arrays) -> dict[str, Scalar]:
        _server_round(server_round)
        check_instance(arrays, "arrays", Mapping, "a mapping name -> array")
        return {} if self.evaluate_fn is None else dict(self.evaluate_fn(arrays))


class Ferret(SharedSeedServer):
    """Ferret's server (a runtime :class:`~icml25.federated.Strategy`).

    ``model`` gives the initial arrays and the block layout (keyed by parameter names; frozen
    parameters excluded, tied ones counted once).  ``server_lr`` (eta_s, 1 for the unbiased
    Gaussian default; the official script uses 10 with ``kind="official"``), ``momentum`` (server
    momentum in [0, 1), official 0: ``u_r = momentum * u_{r-1} + Delta_r`` on the reconstructed update,
    kept on the coordinate pool with ``seed_schedule="fixed"`` and as the parameter-space vector with
    "per_round", whose directions change every round), ``clip`` (per-seed norm cap, official 10),
    ``weighting`` ("equal" official, or "num_examples").  ``validate_fit`` rejects replies from another
    round, seed pool or layout, and non-finite coordinates, as MalformedMessageError.
    """

    def __init__(self, model: nn.Module, K: int, root_seed: int = 0, server_lr: float = 1.0,
                 seed_schedule: str = "fixed", kind: str = "gaussian", blocks: str | int = "official",
                 weighting: str = "equal", momentum: float = 0.0, clip: float | None = None,
                 evaluate_fn: Callable[[Arrays], dict[str, Scalar]] | None = None) -> None:
        super().__init__(model, K, root_seed, server_lr, seed_schedule, kind, blocks, weighting, momentum, clip,
                         evaluate_fn)

    def _dense(self, res: FitRes) -> np.ndarray:
        return Coords.from_arrays(res.arrays, self.blocks, self.K).dense(self.K)

"""Learning Multi-Level Features with Matryoshka Sparse Autoencoders (Bussmann et al., ICML 2025).

Example
-------
>>> import torch
>>> from icml25.interpretability.matryoshka_sae import HierarchicalFeatures, MatryoshkaSAE, evaluate_sae, train_sae
>>> data = HierarchicalFeatures(seed=0)                         # 8 parents x 4 children in R^32
>>> sae = MatryoshkaSAE(d_in=32, d_sae=40, k=5, matryoshka_widths=[8, 40], seed=0)
>>> history = train_sae(sae, data.batches(512, seed=1), steps=200, lr=3e-3, threshold_start_step=100)
>>> x, active, _ = data.sample(2048, seed=2)
>>> sorted(evaluate_sae(sae.eval(), x))[:3]
['dead_fraction', 'fvu', 'fvu_per_width']

A sparse autoencoder (SAE) writes an activation ``x`` in R^d as a sparse non-negative code
``f = sparsify(relu((x - b_dec) W_enc + b_enc))`` times unit-norm decoder rows, ``x_hat = b_dec + f W_dec``.
``BatchTopKSAE`` keeps the ``k * batch`` largest pre-activations of a batch (``activation="batchtopk"``, the
paper's baseline), the ``k`` largest per row (``"topk"``) or all of them with an L1 penalty (``"relu"``).
``MatryoshkaSAE`` (Section 3 of the paper) orders its latents and sums the reconstruction losses of nested
prefixes ``m_1 < ... < m_n = d_sae`` of the dictionary, computed from the same code ``f``:
``L = sum_j w_j ||x - b_dec - f[:, :m_j] W_dec[:m_j]||^2 + alpha * L_auxK``.  Early latents must reconstruct
``x`` alone, so they carry general concepts and later latents cannot absorb them (feature absorption).

Training (``train_sae``) follows the reference trainer (dictionary_learning's ``MatryoshkaBatchTopKTrainer``):
geometric-median ``b_dec``, ``W_enc = W_dec^T`` at init, the auxK dead-latent loss, decoder-parallel gradient
removal, gradient clipping, Adam with warm-up, unit-norm decoder rows after each step, and an EMA threshold
that replaces BatchTopK at inference.  ``HierarchicalFeatures`` is the synthetic parent/child benchmark with
exact ground truth; ``match_latents_f1``, ``absorption_rate`` and ``evaluate_sae`` measure absorption and
per-prefix reconstruction.  Configuration names follow SAELens (``d_in``, ``d_sae``, ``k``,
``matryoshka_widths``, ``aux_loss_coefficient``); ``save`` / ``load`` write ``cfg.json`` and the weights.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from icml25.utils.random import Seed, check_seed, int_seed, torch_generator
from icml25.utils.validation import (
    check_array,
    check_bool,
    check_callable,
    check_choice,
    check_instance,
    check_scalar,
    check_sequence,
    check_tensor,
)

ACTIVATIONS = ("batchtopk", "topk", "relu")
PREFIX_SAMPLING = ("fixed", "random")
CFG_FILE, WEIGHTS_FILE = "cfg.json", "sae_weights.pt"

__all__ = [
    "BatchTopKSAE",
    "HierarchicalFeatures",
    "MatryoshkaSAE",
    "TrainHistory",
    "absorption_rate",
    "evaluate_sae",
    "fvu",
    "geometric_median",
    "l0",
    "load_sae",
    "match_latents_cosine",
    "match_latents_f1",
    "train_sae",
]


def check_activations(x: Any, d_in: int, name: str = "x") -> torch.Tensor:
    """Raise a clear error unless ``x`` is a floating tensor of shape (batch >= 1, d_in)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (batch, {d_in}), got {type(x).__name__}")
    if x.dim() != 2 or x.shape[-1] != d_in or x.shape[0] < 1:
        raise ValueError(f"{name} must have shape (batch >= 1, {d_in}), got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    return x


def _check_codes(f: Any, d_sae: int, name: str, *, finite: bool = False) -> torch.Tensor:
    """Raise a clear error unless ``f`` is a floating tensor of shape (batch >= 1, d_sae) (finite if asked)."""
    check_tensor(f, name, ndim=2, floating=True, finite=finite)
    if f.shape[-1] != d_sae or f.shape[0] < 1:
        raise ValueError(f"{name} must have shape (batch >= 1, {d_sae}), got {tuple(f.shape)}")
    return f


def _check_dtype(dtype: Any) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype (e.g. torch.float32), got {dtype!r}")
    return dtype


# ----------------------------------------------------------------------------------------------- models


class BatchTopKSAE(nn.Module):
    """A sparse autoencoder with BatchTopK (default), TopK or ReLU+L1 sparsity; one reconstruction loss.

    ``d_in``: input width d; ``d_sae``: dictionary size D; ``k``: average L0 per row (BatchTopK) or exact L0
    (TopK), unused by ReLU; ``l1_coefficient``: the L1 weight of the ReLU SAE.  Buffers: ``threshold``
    (inference threshold of BatchTopK, -1 until calibrated by ``train_sae``) and ``tokens_since_fired`` (per
    latent, for the auxK loss).  Initialisation (seeded): Kaiming-uniform decoder rows normalised to unit norm,
    ``W_enc = W_dec^T``, zero biases.  A ``MatryoshkaSAE`` with the single width ``[d_sae]`` is this model.
    """

    architecture = "batchtopk"

    def __init__(self, d_in: int, d_sae: int, k: int = 32, activation: str = "batchtopk",
                 l1_coefficient: float = 1e-3, seed: Seed = 0, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None) -> None:
        super().__init__()
        self.d_in = check_scalar(d_in, "d_in", "int", min=1)
        self.d_sae = check_scalar(d_sae, "d_sae", "int", min=1)
        self.k = check_scalar(k, "k", "int", min=1, max=self.d_sae)
        self.activation = check_choice(activation, "activation", ACTIVATIONS)
        self.l1_coefficient = check_scalar(l1_coefficient, "l1_coefficient", "real", min=0.0)
        self.seed = int_seed(seed)  # an int, so that cfg.json rebuilds the same initialisation
        dtype = _check_dtype(dtype)
        self.widths: tuple[int, ...] = (self.d_sae,)
        self.group_weights: tuple[float, ...] = (1.0,)
        g = torch_generator(self.seed)
        bound = math.sqrt(6.0 / self.d_in)  # Kaiming uniform, then unit-norm rows
        w_dec = (torch.rand(self.d_sae, self.d_in, generator=g, dtype=torch.float64) * 2 - 1) * bound
        w_dec = w_dec / w_dec.norm(dim=1, keepdim=True)
        self.W_dec = nn.Parameter(w_dec.to(dtype=dtype, device=device))
        self.W_enc = nn.Parameter(w_dec.T.contiguous().to(dtype=dtype, device=device))
        self.b_enc = nn.Parameter(torch.zeros(self.d_sae, dtype=dtype, device=device))
        self.b_dec = nn.Parameter(torch.zeros(self.d_in, dtype=dtype, device=device))
        self.register_buffer("threshold", torch.tensor(-1.0, dtype=dtype, device=device))
        self.register_buffer("tokens_since_fired", torch.zeros(self.d_sae, dtype=torch.long, device=device))
        self._warned_threshold = False

    # configuration ---------------------------------------------------------------------------------
    @property
    def cfg(self) -> dict[str, Any]:
        """The constructor arguments (SAELens-style names), as saved in ``cfg.json``."""
        return {"architecture": self.architecture, "d_in": self.d_in, "d_sae": self.d_sae, "k": self.k,
                "activation": self.activation, "l1_coefficient": self.l1_coefficient, "seed": self.seed,
                "dtype": str(self.W_dec.dtype).removeprefix("torch.")}

    def _check(self, x: Any, name: str = "x") -> torch.Tensor:
        x = check_activations(x, self.d_in, name)
        if x.device != self.W_dec.device:
            raise ValueError(f"{name} is on {x.device} but the SAE is on {self.W_dec.device}; "
                             f"move one of them (sae.to({name}.device))")
        return x.to(self.W_dec.dtype)

    # encoder / decoder -------------------------------------------------------------------------------
    def encode_pre(self, x: torch.Tensor) -> torch.Tensor:
        """Non-negative pre-activations ``relu((x - b_dec) W_enc + b_enc)``, shape (batch, d_sae)."""
        x = self._check(x)
        return torch.relu((x - self.b_dec) @ self.W_enc + self.b_enc)

    def sparsify(self, pre: torch.Tensor, use_threshold: bool | None = None) -> torch.Tensor:
        """Apply the sparsity rule to non-negative pre-activations (see ``encode``)."""
        _check_codes(pre, self.d_sae, "pre")
        if use_threshold is not None:
            use_threshold = check_bool(use_threshold, "use_threshold")
        if self.activation == "relu":
            return pre
        if self.activation == "topk":
            values, idx = pre.topk(self.k, dim=-1)
            return torch.zeros_like(pre).scatter(-1, idx, values)
        if use_threshold is None:
            use_threshold = not self.training
        if use_threshold and float(self.threshold) < 0:
            if not self._warned_threshold:
                warnings.warn("BatchTopK threshold not calibrated yet (train with train_sae past "
                              "threshold_start_step); falling back to batch top-k", stacklevel=3)
                self._warned_threshold = True
            use_threshold = False
        if use_threshold:
            return pre * (pre > self.threshold)
        flat = pre.flatten()
        values, idx = flat.topk(min(self.k * pre.shape[0], flat.numel()))
        return torch.zeros_like(flat).scatter(0, idx, values).view_as(pre)

    def encode(self, x: torch.Tensor, use_threshold: bool | None = None) -> torch.Tensor:
        """Sparse code f, shape (batch, d_sae).

        BatchTopK keeps the ``k * batch`` largest pre-activations of the batch; with ``use_threshold`` (default:
        in eval mode) it keeps those above the trained ``threshold`` instead, so a row's code does not depend
        on the rest of the batch.  TopK keeps ``k`` per row; ReLU keeps all.
        """
        return self.sparsify(self.encode_pre(x), use_threshold)

    def decode(self, f: torch.Tensor, width: int | None = None) -> torch.Tensor:
        """``b_dec + f[:, :width] @ W_dec[:width]`` (all latents when ``width`` is None)."""
        _check_codes(f, self.d_sae, "f")
        m = self.d_sae if width is None else check_scalar(width, "width", "int", min=1, max=self.d_sae)
        return self.b_dec + f[:, :m].to(self.W_dec.dtype) @ self.W_dec[:m]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x_hat, f)`` with the full dictionary."""
        f = self.encode(x)
        return self.decode(f), f

    def prefix_reconstructions(self, x: torch.Tensor, widths: Sequence[int] | None = None) -> list[torch.Tensor]:
        """One reconstruction per nested width (default ``self.widths``), all from the same code f."""
        if widths is not None:
            widths = check_sequence(widths, "widths", min_len=1,
                                    item=lambda w, name: check_scalar(w, name, "int", min=1, max=self.d_sae))
        f = self.encode(x)
        widths = self.widths if widths is None else widths
        return [self.decode(f, w) for w in widths]

    # training loss -------------------------------------------------------------------------------------
    def _loss_widths(self, seed: Seed | torch.Generator) -> tuple[tuple[int, ...], tuple[float, ...]]:
        return self.widths, self.group_weights

    def loss(self, x: torch.Tensor, aux_loss_coefficient: float = 1 / 32, dead_tokens: int | None = None,
             seed: Seed | torch.Generator = None) -> dict[str, Any]:
        """Training loss on a batch: ``total``, ``mse`` (weighted sum over widths), ``per_width``, ``aux``, ``l1``.

        Squared errors are summed over the input dimension and averaged over the batch.  The reconstruction
        is accumulated group by group, so n widths cost one decoder product in total.  ``aux`` is the
        normalised auxK loss on latents that have not fired for ``dead_tokens`` tokens (TopK variants only;
        0 when none is dead); ``f`` and ``pre`` are returned for the training statistics.  ``seed`` (an int, a
        NumPy Generator, None or a ``torch.Generator``, advanced by the call) draws the prefixes of
        ``prefix_sampling="random"``; the other SAEs draw nothing.
        """
        x = self._check(x)
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x must contain only finite values, got NaN or inf")
        aux_loss_coefficient = check_scalar(aux_loss_coefficient, "aux_loss_coefficient", "real", min=0.0)
        if dead_tokens is not None:
            dead_tokens = check_scalar(dead_tokens, "dead_tokens", "int", min=1)
        if not isinstance(seed, torch.Generator):
            seed = check_seed(seed)
        pre = self.encode_pre(x)
        f = self.sparsify(pre, use_threshold=False)
        widths, weights = self._loss_widths(seed)
        x_hat = self.b_dec.expand_as(x)
        start, per_width = 0, []
        for width in widths:
            x_hat = x_hat + f[:, start:width] @ self.W_dec[start:width]
            per_width.append((x - x_hat).pow(2).sum(-1).mean())
            start = width
        mse = sum(w * e for w, e in zip(weights, per_width, strict=True))
        aux = x.new_zeros(())
        if self.activation != "relu" and aux_loss_coefficient > 0:
            aux = self._aux_loss(x - x_hat.detach(), pre, dead_tokens)
        l1 = f.sum(-1).mean() if self.activation == "relu" else x.new_zeros(())
        total = mse + aux_loss_coefficient * aux + self.l1_coefficient * l1
        return {"total": total, "mse": mse, "per_width": per_width, "aux": aux, "l1": l1, "f": f,
                "widths": widths}

    def _aux_loss(self, residual: torch.Tensor, pre: torch.Tensor, dead_tokens: int | None) -> torch.Tensor:
        dead_tokens = 200 * pre.shape[0] if dead_tokens is None else dead_tokens
        dead = self.tokens_since_fired >= dead_tokens
        n_dead = int(dead.sum())
        if n_dead == 0:
            return residual.new_zeros(())
        k_aux = min(max(self.d_in // 2, 1), n_dead)
        values, idx = torch.where(dead, pre, torch.full_like(pre, -math.inf)).topk(k_aux, dim=-1)
        f_aux = torch.zeros_like(pre).scatter(-1, idx, values)
        err = (residual - f_aux @ self.W_dec).pow(2).sum(-1).mean()
        scale = (residual - residual.mean(0)).pow(2).sum(-1).mean()
        return torch.nan_to_num(err / scale, nan=0.0)

    @torch.no_grad()
    def update_training_stats(self, f: torch.Tensor, update_threshold: bool, beta: float = 0.999) -> None:
        """After a step: count tokens since each latent fired; EMA of BatchTopK's smallest kept activation."""
        _check_codes(f, self.d_sae, "f", finite=True)
        update_threshold = check_bool(update_threshold, "update_threshold")
        beta = check_scalar(beta, "beta", "real", min=0.0, max=1.0, inclusive="left")
        fired = (f > 0).any(0)
        self.tokens_since_fired += f.shape[0]
        self.tokens_since_fired[fired] = 0
        if update_threshold and self.activation == "batchtopk":
            kept = f[f > 0]
            if kept.numel():
                low = kept.min().to(self.threshold.dtype)
                new = low if float(self.threshold) < 0 else beta * self.threshold + (1 - beta) * low
                self.threshold.copy_(new)

    # save / load -----------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write ``cfg.json`` and ``sae_weights.pt`` (state dict, buffers included) into folder ``path``."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / CFG_FILE).write_text(json.dumps(self.cfg, indent=2))
        torch.save({k: v.detach().cpu() for k, v in self.state_dict().items()}, folder / WEIGHTS_FILE)
        return folder

    @classmethod
    def load(cls, path: str | Path, device: torch.device | str | None = None) -> BatchTopKSAE:
        """Rebuild an SAE saved with ``save`` (the class is read from ``cfg.json``)."""
        return load_sae(path, device)


class MatryoshkaSAE(BatchTopKSAE):
    """Matryoshka SAE: BatchTopK SAE trained with nested-prefix reconstruction losses (paper, Section 3).

    ``matryoshka_widths``: strictly increasing cumulative widths; ``d_sae`` is appended if the last is smaller
    (as SAELens does).  Or ``group_fractions`` (dictionary_learning): group sizes as fractions of ``d_sae``
    summing to 1.  ``group_weights``: loss weight per width (default equal, 1/n).  ``prefix_sampling="random"``
    is Nabeshima's variant: each batch draws ``n_prefixes`` prefix lengths from a truncated power law
    P(m) ∝ m^-(1 + pareto_alpha) over 1..d_sae, plus ``d_sae``, with equal weights (our reading of the exponent).
    """

    architecture = "matryoshka_batchtopk"

    def __init__(self, d_in: int, d_sae: int, k: int = 32, matryoshka_widths: Sequence[int] | None = None,
                 group_fractions: Sequence[float] | None = None, group_weights: Sequence[float] | None = None,
                 prefix_sampling: str = "fixed", n_prefixes: int = 10, pareto_alpha: float = 1.0,
                 activation: str = "batchtopk", l1_coefficient: float = 1e-3, seed: Seed = 0,
                 dtype: torch.dtype = torch.float32, device: torch.device | str | None = None) -> None:
        super().__init__(d_in, d_sae, k, activation, l1_coefficient, seed, dtype, device)
        self.prefix_sampling = check_choice(prefix_sampling, "prefix_sampling", PREFIX_SAMPLING)
        self.n_prefixes = check_scalar(n_prefixes, "n_prefixes", "int", min=1)
        self.pareto_alpha = check_scalar(pareto_alpha, "pareto_alpha", "real", min=0.0, inclusive="neither")
        self.widths = self._resolve_widths(matryoshka_widths, group_fractions)
        if group_weights is None:
            self.group_weights = tuple(1.0 / len(self.widths) for _ in self.widths)
        else:
            weights = check_array(group_weights, "group_weights", ndim=1, dtype=float,
                                  shape=(len(self.widths),))
            if np.any(weights < 0):
                raise ValueError(f"group_weights must be >= 0, got {weights.tolist()}")
            self.group_weights = tuple(float(w) for w in weights)

    def _resolve_widths(self, widths: Sequence[int] | None, fractions: Sequence[float] | None) -> tuple[int, ...]:
        if widths is not None and fractions is not None:
            raise ValueError("give matryoshka_widths or group_fractions, not both")
        if fractions is not None:
            fr = check_array(fractions, "group_fractions", ndim=1, dtype=float, min_len=1).tolist()
            if any(v <= 0 for v in fr) or abs(sum(fr) - 1.0) > 1e-6:
                raise ValueError(f"group_fractions must be positive and sum to 1 (tol 1e-6), got {fr}")
            sizes = [int(round(v * self.d_sae)) for v in fr[:-1]]
            sizes.append(self.d_sae - sum(sizes))
            if any(s <= 0 for s in sizes):
                raise ValueError(f"group_fractions {fr} give an empty group for d_sae={self.d_sae}")
            return tuple(int(v) for v in np.cumsum(sizes))
        if widths is None:
            return (self.d_sae,)
        out = check_sequence(widths, "matryoshka_widths", min_len=1,
                             item=lambda w, name: check_scalar(w, name, "int", min=1, max=self.d_sae))
        if any(b <= a for a, b in zip(out, out[1:], strict=False)):
            raise ValueError(f"matryoshka_widths must be strictly increasing, got {list(widths)}")
        if out[-1] != self.d_sae:
            out.append(self.d_sae)
        return tuple(out)

    @property
    def cfg(self) -> dict[str, Any]:
        return {**super().cfg, "matryoshka_widths": list(self.widths), "group_weights": list(self.group_weights),
                "prefix_sampling": self.prefix_sampling, "n_prefixes": self.n_prefixes,
                "pareto_alpha": self.pareto_alpha}

    def _loss_widths(self, seed: Seed | torch.Generator) -> tuple[tuple[int, ...], tuple[float, ...]]:
        if self.prefix_sampling == "fixed":
            return self.widths, self.group_weights
        m = torch.arange(1, self.d_sae + 1, dtype=torch.float64)
        probs = m.pow(-(1.0 + self.pareto_alpha))
        draws = torch.multinomial(probs, self.n_prefixes, replacement=True, generator=torch_generator(seed)) + 1
        widths = tuple(sorted({*draws.tolist(), self.d_sae}))
        return widths, tuple(1.0 / len(widths) for _ in widths)


def load_sae(path: str | Path, device: torch.device | str | None = None) -> BatchTopKSAE:
    """Load an SAE written by ``save`` (``cfg.json`` + ``sae_weights.pt``) onto ``device`` (default CPU)."""
    folder = Path(path)
    if not (folder / CFG_FILE).is_file() or not (folder / WEIGHTS_FILE).is_file():
        raise FileNotFoundError(f"{folder} does not hold {CFG_FILE} and {WEIGHTS_FILE} (written by sae.save)")
    cfg = json.loads((folder / CFG_FILE).read_text())
    classes = {c.architecture: c for c in (BatchTopKSAE, MatryoshkaSAE)}
    arch = cfg.pop("architecture", None)
    if arch not in classes:
        raise ValueError(f"unknown architecture {arch!r} in {folder / CFG_FILE}; known: {sorted(classes)}")
    dtype = getattr(torch, cfg.pop("dtype", "float32"))
    sae = classes[arch](**cfg, dtype=dtype, device=device)
    sae.load_state_dict(torch.load(folder / WEIGHTS_FILE, map_location=device or "cpu", weights_only=True))
    return sae


# ----------------------------------------------------------------------------------------------- training


def geometric_median(x: torch.Tensor, max_iter: int = 100, tol: float = 1e-5) -> torch.Tensor:
    """Geometric median of the rows of ``x`` by Weiszfeld iterations (the reference ``b_dec`` init)."""
    check_tensor(x, "x", ndim=2, floating=True, finite=True)
    if x.shape[0] < 1:
        raise ValueError(f"x must have shape (n >= 1, d), got {tuple(x.shape)}")
    max_iter = check_scalar(max_iter, "max_iter", "int", min=1)
    tol = check_scalar(tol, "tol", "real", min=0.0)
    median = x.mean(0)
    for _ in range(max_iter):
        weights = 1.0 / (x - median).norm(dim=1).clamp_min(1e-8)
        new = (weights[:, None] * x).sum(0) / weights.sum()
        if (new - median).norm() < tol * max(1.0, float(median.norm())):
            return new
        median = new
    return median


@dataclass
class TrainHistory:
    """What ``train_sae`` logged: per logged step the total loss, weighted MSE, per-width MSE, aux loss, L0."""

    steps: list[int] = field(default_factory=list)
    total: list[float] = field(default_factory=list)
    mse: list[float] = field(default_factory=list)
    per_width: list[list[float]] = field(default_factory=list)
    aux: list[float] = field(default_factory=list)
    l0: list[float] = field(default_factory=list)
    dead_fraction: list[float] = field(default_factory=list)
    seconds: float = 0.0


def _batch_iterator(data: torch.Tensor | Iterable[torch.Tensor], batch_size: int,
                    generator: torch.Generator) -> Iterator[torch.Tensor]:
    if isinstance(data, torch.Tensor):
        if data.dim() != 2 or data.shape[0] < 1:
            raise ValueError(f"data must have shape (n_tokens >= 1, d_in), got {tuple(data.shape)}")
        n = data.shape[0]
        while True:
            order = torch.randperm(n, generator=generator).to(data.device)
            for start in range(0, n - min(batch_size, n) + 1, min(batch_size, n)):
                yield data[order[start:start + batch_size]]
    else:
        yield from data


def default_lr(d_sae: int) -> float:
    """The reference learning rate 2e-4 / sqrt(d_sae / 2^14)."""
    return 2e-4 / math.sqrt(d_sae / 2**14)


def train_sae(sae: BatchTopKSAE, data: torch.Tensor | Iterable[torch.Tensor], steps: int, batch_size: int = 512,
              lr: float | None = None, warmup_steps: int = 100, decay_start: int | None = None,
              aux_loss_coefficient: float = 1 / 32, dead_tokens: int | None = None,
              threshold_start_step: int = 1000, threshold_beta: float = 0.999, normalize_decoder: bool = True,
              init_b_dec: str = "geometric_median", max_grad_norm: float = 1.0, seed: Seed = 0,
              log_every: int = 50, callback: Callable[[int, dict[str, Any]], None] | None = None) -> TrainHistory:
    """Train ``sae`` in place with the reference recipe (dictionary_learning's BatchTopK / Matryoshka trainers).

    ``data``: a tensor (n_tokens, d_in) sampled in shuffled batches of ``batch_size``, or an iterable of batch
    tensors (e.g. ``HierarchicalFeatures.batches``); batches are moved to the SAE's device.  ``lr`` defaults
    to ``default_lr(d_sae)``; linear warm-up over ``warmup_steps``, linear decay to 0 from ``decay_start``
    (off when None).  ``b_dec`` starts at the geometric median of the first batch (``init_b_dec="zeros"``
    keeps 0).  Each step: loss (``sae.loss``), backward, remove the decoder-row-parallel gradient, clip the
    gradient norm to ``max_grad_norm``, Adam (0.9, 0.999), unit-norm decoder rows (``normalize_decoder``).
    The BatchTopK inference threshold is an EMA (``threshold_beta``) of the smallest kept activation from
    ``threshold_start_step`` on.  ``dead_tokens`` (default 200 batches) defines dead latents for the auxK
    loss.  ``seed`` drives the mini-batch order and the random prefixes.  The SAE is left in eval mode.
    """
    check_instance(sae, "sae", BatchTopKSAE, "a BatchTopKSAE or MatryoshkaSAE")
    if isinstance(data, torch.Tensor):
        check_tensor(data, "data", ndim=2, floating=True, finite=True)
        if data.shape[0] < 1 or data.shape[1] != sae.d_in:
            raise ValueError(f"data must have shape (n_tokens >= 1, {sae.d_in}), got {tuple(data.shape)}")
    elif isinstance(data, (str, bytes)) or not isinstance(data, Iterable):
        raise TypeError(f"data must be a tensor (n_tokens, {sae.d_in}) or an iterable of batch tensors, "
                        f"got {type(data).__name__}")
    normalize_decoder = check_bool(normalize_decoder, "normalize_decoder")
    if callback is not None:
        check_callable(callback, "callback")
    steps = check_scalar(steps, "steps", "int", min=1)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    init_b_dec = check_choice(init_b_dec, "init_b_dec", ("geometric_median", "zeros"))
    lr = check_scalar(default_lr(sae.d_sae) if lr is None else lr, "lr", "real", min=0.0, inclusive="neither")
    warmup_steps = check_scalar(warmup_steps, "warmup_steps", "int", min=0)
    if decay_start is not None:
        decay_start = check_scalar(decay_start, "decay_start", "int", min=0)
    aux_loss_coefficient = check_scalar(aux_loss_coefficient, "aux_loss_coefficient", "real", min=0.0)
    threshold_start_step = check_scalar(threshold_start_step, "threshold_start_step", "int", min=0)
    threshold_beta = check_scalar(threshold_beta, "threshold_beta", "real", min=0.0, max=1.0, inclusive="left")
    max_grad_norm = check_scalar(max_grad_norm, "max_grad_norm", "real", min=0.0, inclusive="neither")
    log_every = check_scalar(log_every, "log_every", "int", min=1)
    dead_tokens = 200 * batch_size if dead_tokens is None else check_scalar(dead_tokens, "dead_tokens", "int", min=1)
    generator = torch_generator(seed)
    batches = _batch_iterator(data, batch_size, generator)
    optimizer = torch.optim.Adam(sae.parameters(), lr=lr, betas=(0.9, 0.999))

    def schedule(step: int) -> float:
        scale = min(1.0, (step + 1) / warmup_steps) if warmup_steps > 0 else 1.0
        if decay_start is not None and step >= decay_start:
            scale *= max(0.0, (steps - step) / max(1, steps - decay_start))
        return scale

    history, start_time = TrainHistory(), time.perf_counter()
    sae.train()
    for step in range(steps):
        try:
            x = next(batches)
        except StopIteration:
            break
        x = sae._check(x.to(sae.W_dec.device) if isinstance(x, torch.Tensor) else x, "batch")
        if not torch.isfinite(x).all():
            raise ValueError(f"batch at step {step} must contain only finite values, got NaN or inf")
        if step == 0 and init_b_dec == "geometric_median":
            with torch.no_grad():
                sae.b_dec.copy_(geometric_median(x))
        for group in optimizer.param_groups:
            group["lr"] = lr * schedule(step)
        out = sae.loss(x, aux_loss_coefficient, dead_tokens, generator)
        optimizer.zero_grad(set_to_none=True)
        out["total"].backward()
        if normalize_decoder and sae.W_dec.grad is not None:
            with torch.no_grad():
                w = sae.W_dec
                sae.W_dec.grad -= (sae.W_dec.grad * w).sum(-1, keepdim=True) * w
        torch.nn.utils.clip_grad_norm_(sae.parameters(), max_grad_norm)
        optimizer.step()
        if normalize_decoder:
            with torch.no_grad():
                sae.W_dec /= sae.W_dec.norm(dim=-1, keepdim=True).clamp_min(1e-8)
        sae.update_training_stats(out["f"].detach(), step >= threshold_start_step, threshold_beta)
        if step % log_every == 0 or step == steps - 1:
            f = out["f"].detach()
            history.steps.append(step)
            history.total.append(float(out["total"].detach()))
            history.mse.append(float(out["mse"].detach()))
            history.per_width.append([float(e.detach()) for e in out["per_width"]])
            history.aux.append(float(out["aux"].detach()))
            history.l0.append(float((f > 0).sum(-1).float().mean()))
            history.dead_fraction.append(float((sae.tokens_since_fired >= dead_tokens).float().mean()))
            if callback is not None:
                callback(step, out)
    history.seconds = time.perf_counter() - start_time
    sae.eval()
    return history


# ------------------------------------------------------------------------------------------ synthetic data


class HierarchicalFeatures:
    """Synthetic feature hierarchy with exact ground truth, on which feature absorption is measured exactly.

    ``n_parents`` parent features, each with ``children_per_parent`` children, plus ``n_independent`` free
    features, as random unit directions in R^d (re-drawn until max |cos| < ``max_cos``, from their own
    generator seeded by ``seed``).  Sampling: each parent is active i.i.d. with ``p_parent``; the children of an
    active parent are active i.i.d. with ``p_child_given_parent`` (never without their parent); independent
    features with ``p_parent``; each active feature gets a coefficient ~ U(``magnitude``);
    ``x = sum_g c_g g + noise_std * N(0, I)``.  Feature order: parents, then children parent by parent, then
    independent features.  ``parents`` and ``children`` hold these indices.
    """

    def __init__(self, n_parents: int = 8, children_per_parent: int = 4, n_independent: int = 0, d: int = 32,
                 p_parent: float = 0.25, p_child_given_parent: float = 0.4,
                 magnitude: tuple[float, float] = (0.5, 1.5), noise_std: float = 0.0, max_cos: float = 0.6,
                 seed: Seed = 0) -> None:
        self.n_parents = check_scalar(n_parents, "n_parents", "int", min=1)
        self.children_per_parent = check_scalar(children_per_parent, "children_per_parent", "int", min=1)
        self.n_independent = check_scalar(n_independent, "n_independent", "int", min=0)
        self.d = check_scalar(d, "d", "int", min=1)
        self.p_parent, self.p_child_given_parent = (
            check_scalar(p, name, "real", min=0.0, max=1.0, inclusive="right")
            for name, p in (("p_parent", p_parent), ("p_child_given_parent", p_child_given_parent)))
        lo, hi = check_array(magnitude, "magnitude", shape=(2,), dtype=float).tolist()
        if not 0.0 <= lo <= hi:
            raise ValueError(f"magnitude must be (low, high) with 0 <= low <= high, got {magnitude}")
        self.magnitude = (lo, hi)
        self.noise_std = check_scalar(noise_std, "noise_std", "real", min=0.0)
        max_cos = check_scalar(max_cos, "max_cos", "real", min=0.0, max=1.0, inclusive="right")
        self.n_features = self.n_parents * (1 + self.children_per_parent) + self.n_independent
        self.parents = np.arange(self.n_parents)
        base = self.n_parents
        self.children = np.arange(base, base + self.n_parents * self.children_per_parent).reshape(
            self.n_parents, self.children_per_parent)
        self.independent = np.arange(base + self.children.size, self.n_features)
        rng = np.random.default_rng(np.random.SeedSequence([int_seed(seed), 0x5AE]))
        for _ in range(10_000):
            dirs = rng.standard_normal((self.n_features, self.d))
            dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
            gram = np.abs(dirs @ dirs.T - np.eye(self.n_features))
            if gram.max() < max_cos:
                break
        else:
            raise ValueError(f"could not draw {self.n_features} directions in R^{self.d} with max |cos| < {max_cos}")
        self.directions = torch.from_numpy(dirs.astype(np.float32))

    def sample(self, n: int, seed: Seed | torch.Generator = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(x, active, coeff)``: activations (n, d), boolean activity (n, n_features), coefficients (n, n_features).

        ``seed``: an int, a NumPy Generator or None (see ``icml25.utils.random``), or a ``torch.Generator``
        (advanced by the call, so that successive calls draw fresh samples).
        """
        n = check_scalar(n, "n", "int", min=1)
        g = torch_generator(seed)
        parent = torch.rand(n, self.n_parents, generator=g) < self.p_parent
        child = torch.rand(n, self.n_parents, self.children_per_parent, generator=g) < self.p_child_given_parent
        child = (child & parent[:, :, None]).reshape(n, -1)
        indep = torch.rand(n, self.n_independent, generator=g) < self.p_parent
        active = torch.cat([parent, child, indep], dim=1)
        lo, hi = self.magnitude
        coeff = (lo + (hi - lo) * torch.rand(n, self.n_features, generator=g)) * active
        x = coeff @ self.directions
        if self.noise_std > 0:
            x = x + self.noise_std * torch.randn(n, self.d, generator=g)
        return x, active, coeff

    def batches(self, batch_size: int, seed: Seed = 0) -> Iterator[torch.Tensor]:
        """An endless stream of fresh batches (x only), deterministic given ``seed`` (checked at the call)."""
        batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
        g = torch_generator(seed)

        def stream() -> Iterator[torch.Tensor]:
            while True:
                yield self.sample(batch_size, g)[0]

        return stream()


# ----------------------------------------------------------------------------------------------- metrics


def fvu(x: torch.Tensor, x_hat: torch.Tensor) -> float:
    """Fraction of variance unexplained ``sum ||x - x_hat||^2 / sum ||x - mean(x)||^2`` (nan if no variance)."""
    if not isinstance(x, torch.Tensor) or not isinstance(x_hat, torch.Tensor) or x.shape != x_hat.shape:
        raise ValueError(f"x and x_hat must be tensors of the same shape, got {getattr(x, 'shape', x)} and "
                         f"{getattr(x_hat, 'shape', x_hat)}")
    x, x_hat = x.detach(), x_hat.detach()
    if not (torch.isfinite(x).all() and torch.isfinite(x_hat).all()):
        raise ValueError("x and x_hat must contain only finite values, got NaN or inf")
    total = float((x - x.mean(0)).pow(2).sum())
    if total == 0.0:
        warnings.warn("fvu: x has zero variance; returning nan", stacklevel=2)
        return float("nan")
    return float((x - x_hat).pow(2).sum()) / total


def l0(f: torch.Tensor) -> float:
    """Mean number of active latents per row of the codes ``f`` (batch >= 1, d_sae)."""
    check_tensor(f, "f", ndim=2, finite=True)
    if f.shape[0] < 1:
        raise ValueError(f"f must have at least 1 row, got shape {tuple(f.shape)}")
    return float((f != 0).sum(-1).float().mean())


def _f1_matrix(fired: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    fired, labels = fired.double(), labels.double()
    tp = labels.T @ fired                                      # (n_labels, n_latents)
    precision_den = fired.sum(0)[None, :]
    recall_den = labels.sum(0)[:, None]
    return (2 * tp / (precision_den + recall_den).clamp_min(1e-12))


def match_latents_f1(f: torch.Tensor, active: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """For each true feature (column of ``active``) the latent whose firing (f > 0) predicts it best by F1.

    Returns ``(latent index, F1)`` per feature (SAEBench-style probe-aligned matching; also the "best single
    latent" sparse-probing score).  Matching by decoder cosine is unstable under absorption, see the docs.
    """
    check_tensor(f, "f", ndim=2, finite=True)
    check_tensor(active, "active", ndim=2, finite=True)
    if f.shape[0] < 1 or f.shape[0] != active.shape[0]:
        raise ValueError(f"f (n, d_sae) and active (n, n_features) must share n, got {tuple(f.shape)} and "
                         f"{tuple(active.shape)}")
    f1 = _f1_matrix(f.detach().cpu() > 0, active.cpu().bool())
    best, idx = f1.max(dim=1)
    return idx.numpy(), best.numpy()


def match_latents_cosine(W_dec: torch.Tensor, directions: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """For each true direction the decoder row with the largest cosine: ``(latent index, cosine)``."""
    check_tensor(W_dec, "W_dec", ndim=2, floating=True, finite=True)
    check_tensor(directions, "directions", ndim=2, floating=True, finite=True)
    if W_dec.shape[0] < 1 or directions.shape[0] < 1 or W_dec.shape[1] != directions.shape[1]:
        raise ValueError(f"W_dec (d_sae >= 1, d) and directions (n >= 1, d) must share d, got "
                         f"{tuple(W_dec.shape)} and {tuple(directions.shape)}")
    w = W_dec.detach().cpu().double()
    d = directions.detach().cpu().double()
    cos = (d / d.norm(dim=1, keepdim=True)) @ (w / w.norm(dim=1, keepdim=True).clamp_min(1e-12)).T
    best, idx = cos.max(dim=1)
    return idx.numpy(), best.numpy()


def absorption_rate(f: torch.Tensor, active: torch.Tensor, parents: Sequence[int], children: Sequence[Sequence[int]],
                    latent_of: Sequence[int]) -> dict[str, Any]:
    """Exact feature absorption on ground truth.

    For parent p with matched latent ``latent_of[i]``: absorption = fraction of samples with p active and some
    child of p active where the latent does not fire; parent-only recall = fraction of samples with p active
    and no child active where it fires.  A parent that never co-occurs with a child (or never appears alone)
    gets nan and is left out of the means (``n_excluded`` counts them).
    """
    check_tensor(f, "f", ndim=2, finite=True)
    check_tensor(active, "active", ndim=2, finite=True)
    fired = f.detach().cpu() > 0
    act = active.cpu().bool()
    if fired.shape[0] != act.shape[0]:
        raise ValueError(f"f and active must have the same number of rows, got {fired.shape[0]} and {act.shape[0]}")
    n_features, n_latents = act.shape[1], fired.shape[1]

    def feature(v: Any, name: str) -> int:
        return check_scalar(v, name, "int", min=0, max=n_features - 1)

    parents = check_sequence(parents, "parents", min_len=1, item=feature)
    children = check_sequence(children, "children",
                              item=lambda kids, name: check_sequence(kids, name, min_len=1, item=feature))
    latent_of = check_sequence(latent_of, "latent_of",
                               item=lambda v, name: check_scalar(v, name, "int", min=0, max=n_latents - 1))
    if not len(parents) == len(children) == len(latent_of):
        raise ValueError("parents, children and latent_of must have one entry per parent")
    absorb, recall = [], []
    for p, kids, lat in zip(parents, children, latent_of, strict=True):
        par = act[:, int(p)]
        any_child = act[:, list(map(int, kids))].any(1)
        lat_fires = fired[:, int(lat)]
        with_child, alone = par & any_child, par & ~any_child
        absorb.append(float((~lat_fires[with_child]).float().mean()) if with_child.any() else float("nan"))
        recall.append(float(lat_fires[alone].float().mean()) if alone.any() else float("nan"))
    a, r = np.array(absorb), np.array(recall)
    return {"absorption": float(np.nanmean(a)) if np.isfinite(a).any() else float("nan"),
            "parent_only_recall": float(np.nanmean(r)) if np.isfinite(r).any() else float("nan"),
            "per_parent_absorption": a.tolist(), "per_parent_recall": r.tolist(),
            "n_excluded": int((~np.isfinite(a)).sum())}


@torch.no_grad()
def evaluate_sae(sae: BatchTopKSAE, x: torch.Tensor, use_threshold: bool | None = None,
                 batch_size: int = 8192) -> dict[str, Any]:
    """Per-prefix reconstruction on held-out ``x``: ``fvu_per_width`` (one per ``sae.widths``), ``fvu`` (full),
    ``l0``, ``dead_fraction`` (latents that never fire on ``x``), ``widths``.  Eval mode uses the threshold."""
    check_instance(sae, "sae", BatchTopKSAE, "a BatchTopKSAE or MatryoshkaSAE")
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    x = sae._check(x)
    if not torch.isfinite(x).all():
        raise ValueError("x must contain only finite values, got NaN or inf")
    fs = [sae.encode(chunk, use_threshold) for chunk in x.split(batch_size)]
    f = torch.cat(fs)
    per_width = [fvu(x, sae.decode(f, w)) for w in sae.widths]
    return {"widths": list(sae.widths), "fvu_per_width": per_width, "fvu": per_width[-1], "l0": l0(f),
            "dead_fraction": float(((f > 0).sum(0) == 0).float().mean())}

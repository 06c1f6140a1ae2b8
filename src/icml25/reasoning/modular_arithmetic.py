"""Saxena et al. (ICML 2025): custom data distributions and loss regularisation for modular arithmetic.

Paper: "Making Hard Problems Easier with Custom Data Distributions and Loss Regularization: A Case Study
in Modular Arithmetic", arXiv 2410.03569.

Learning ``y = (x_1 + ... + x_N) mod q`` with a transformer.  Three ingredients: a training
distribution with real mass on sparse inputs (:func:`sample_inputs`, strategy ``"inv_sqrt"``),
angular input/output embeddings (:func:`to_circle`, :func:`from_circle`, :class:`ModularTransformer`)
and a norm-regularised angular loss (:class:`NormRegularizedAngularLoss`).  The LWE application has a
sampler (:class:`LWESampler`) and a model-agnostic secret-recovery routine (:func:`recover_binary_secret`).

The modulus ``q`` need not be prime (the task does not need a field).

Example
-------
>>> import torch
>>> from icml25.reasoning.modular_arithmetic import ModularSumSampler, ModularTransformer, train, evaluate
>>> sampler = ModularSumSampler(N=4, q=11, strategy="inv_sqrt", seed=0)
>>> model = ModularTransformer(N=4, q=11, hidden=32, n_layers=1, n_heads=2, emb_input="token")
>>> history = train(model, sampler, steps=20, batch_size=64, lr=3e-3, clip_grad_norm=1.0, seed=0)
>>> sorted(evaluate(model, n_test=200, seed=1))[:3]
['collapsed_fraction', 'exact_accuracy', 'mean_norm']
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import nullcontext

import numpy as np
import torch
from torch import nn

from icml25.attention.transformer import TransformerBlock, init_gpt_weights
from icml25.utils.random import Seed, as_generator, init_rng, seeded
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

__all__ = [
    "STRATEGIES",
    "FUNCTIONS",
    "TAUS",
    "nonzero_count_probs",
    "sample_inputs",
    "targets",
    "ModularSumSampler",
    "LWESampler",
    "to_circle",
    "from_circle",
    "circular_distance",
    "ModularTransformer",
    "AngularMSE",
    "NormRegularizedAngularLoss",
    "WrappedAngleLoss",
    "make_loss",
    "train",
    "predict",
    "evaluate",
    "recover_binary_secret",
]

STRATEGIES = ("inv_sqrt", "uniform_n", "uniform")
FUNCTIONS = ("sum", "sum_x10", "sum_sq", "sq_sum")
TAUS = (0.001, 0.002, 0.005, 0.01, 0.05, 0.1)
COLLAPSE_NORM = 0.2  # collapse diagnostic (our choice): an output point with norm < 0.2


# ---------------------------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------------------------
def _check_problem(N: int, q: int, name: str = "N") -> tuple[int, int]:
    N, q = check_scalar(N, name, "int", min=1), check_scalar(q, "q", "int", min=2, max=2**31)
    if N * q * q >= 2**63:  # the sq_sum / sum_sq targets square values < q before reducing
        raise ValueError(f"{name} * q**2 must be < 2**63 to avoid int64 overflow, got {name}={N}, q={q}")
    return N, q


def _check_residues(x: np.ndarray, q: int, name: str = "x") -> np.ndarray:
    x = check_array(x, name, dtype=None)
    if not np.issubdtype(x.dtype, np.integer):
        raise TypeError(f"{name} must be an integer array, got dtype {x.dtype}")
    if x.size and (x.min() < 0 or x.max() >= q):
        raise ValueError(f"{name} must have values in [0, {q}), got range [{x.min()}, {x.max()}]")
    return x.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# data: the sparse training distributions (Section 3) and the LWE sampler
# ---------------------------------------------------------------------------------------------
def nonzero_count_probs(N: int, strategy: str, q: int | None = None) -> np.ndarray:
    """P(n non-zero entries), n = 0..N, under a training ``strategy``.

    ``inv_sqrt`` (code name ``1_sqrtx``): P(n) proportional to 1/sqrt(N - n + 1) on n = 1..N;
    ``uniform_n`` (code name ``min_1``): uniform on 1..N; ``uniform``: every entry uniform on
    0..q-1, so n ~ Binomial(N, 1 - 1/q) (needs ``q``).
    """
    N = check_scalar(N, "N", "int", min=1)
    check_choice(strategy, "strategy", STRATEGIES)
    n = np.arange(N + 1)
    if strategy == "uniform":
        if q is None:
            raise ValueError("strategy='uniform' needs q")
        q = check_scalar(q, "q", "int", min=2)
        p_nz = 1.0 - 1.0 / q
        log_binom = np.array([math.lgamma(N + 1) - math.lgamma(k + 1) - math.lgamma(N - k + 1) for k in n])
        with np.errstate(divide="ignore"):
            return np.exp(log_binom + n * np.log(p_nz) + (N - n) * np.log1p(-p_nz))
    weights = np.where(n >= 1, 1.0 / np.sqrt(N - n + 1.0), 0.0) if strategy == "inv_sqrt" else (n >= 1) * 1.0
    return weights / weights.sum()


def sample_inputs(n_samples: int, N: int, q: int, strategy: str = "inv_sqrt",
                  seed: Seed = None, max_nonzero: int | None = None) -> np.ndarray:
    """Draw ``(n_samples, N)`` int64 inputs in [0, q) from a training distribution (vectorised).

    Sparse strategies draw the number n of non-zero entries from :func:`nonzero_count_probs`
    (capped at ``max_nonzero`` for the curriculum's easy phase), fill n uniformly chosen positions
    with values uniform on 1..q-1 and leave the rest 0.
    """
    n_samples = check_scalar(n_samples, "n_samples", "int", min=0)
    N, q = _check_problem(N, q)
    check_choice(strategy, "strategy", STRATEGIES)
    rng = as_generator(seed)
    if strategy == "uniform":
        if max_nonzero is not None:
            raise ValueError("max_nonzero applies to the sparse strategies only")
        return rng.integers(0, q, size=(n_samples, N), dtype=np.int64)
    probs = nonzero_count_probs(N, strategy)
    if max_nonzero is not None:
        probs = probs * (np.arange(N + 1) <= check_scalar(max_nonzero, "max_nonzero", "int", min=1))
        probs = probs / probs.sum()
    counts = rng.choice(N + 1, size=n_samples, p=probs)
    values = rng.integers(1, q, size=(n_samples, N), dtype=np.int64)
    keys = rng.random((n_samples, N))
    threshold = np.take_along_axis(np.sort(keys, axis=1), (counts - 1)[:, None], axis=1)
    return np.where(keys <= threshold, values, 0)


def targets(x: np.ndarray, q: int, function: str = "sum", secret: np.ndarray | None = None) -> np.ndarray:
    """Targets mod q: ``sum`` = sum(x s), ``sum_x10`` = 10 sum(x s), ``sum_sq`` = sum(x^2 s), ``sq_sum`` = (sum x s)^2.

    ``secret`` (default all ones) weights the terms: with a binary secret this is the LWE form a.s mod q.
    """
    check_choice(function, "function", FUNCTIONS)
    x = check_array(x, "x", ndim=2, dtype=None)
    _check_problem(x.shape[1], q)
    x = _check_residues(x, q)
    s = np.ones(x.shape[1], dtype=np.int64) if secret is None else _check_residues(secret, q, "secret")
    if s.shape != (x.shape[1],):
        raise ValueError(f"secret must have shape ({x.shape[1]},), got {s.shape}")
    if function == "sum_sq":
        return ((x * x % q) @ s) % q
    total = (x @ s) % q
    if function == "sum_x10":
        return (10 * total) % q
    if function == "sq_sum":
        return (total * total) % q
    return total


class ModularSumSampler:
    """On-the-fly training data ``(x, y)`` for the modular-sum task (no pre-generated files).

    ``strategy`` in :data:`STRATEGIES`, ``function`` in :data:`FUNCTIONS`; ``sample(m)`` returns
    int64 arrays of shapes (m, N) and (m,).  ``max_nonzero`` restricts to easy inputs (curriculum).
    """

    def __init__(self, N: int, q: int, strategy: str = "inv_sqrt", function: str = "sum",
                 secret: np.ndarray | None = None, seed: Seed = None) -> None:
        self.N, self.q = _check_problem(N, q)
        self.strategy = check_choice(strategy, "strategy", STRATEGIES)
        self.function = check_choice(function, "function", FUNCTIONS)
        self.secret = None if secret is None else _check_residues(secret, self.q, "secret")
        if self.secret is not None and self.secret.shape != (self.N,):
            raise ValueError(f"secret must have shape ({self.N},), got {self.secret.shape}")
        self.rng = as_generator(seed)

    def sample(self, m: int, max_nonzero: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        m = check_scalar(m, "m", "int", min=0)
        x = sample_inputs(m, self.N, self.q, self.strategy, self.rng, max_nonzero)
        return x, targets(x, self.q, self.function, self.secret)


class LWESampler:
    """LWE samples ``b = a.s + e mod q`` with a binary secret of Hamming weight ``hamming_weight``.

    ``a`` is uniform on Z_q^n, ``e`` is a rounded Gaussian with standard deviation ``sigma``.
    ``sample(m)`` returns ``(A, b)`` of shapes (m, n) and (m,); the secret is ``.secret``.
    """

    def __init__(self, n: int, q: int, hamming_weight: int, sigma: float = 3.0,
                 seed: Seed = None) -> None:
        self.n, self.q = _check_problem(n, q, "n")
        self.hamming_weight = check_scalar(hamming_weight, "hamming_weight", "int", min=1, max=self.n)
        self.sigma = check_scalar(sigma, "sigma", "real", min=0.0)
        self.rng = as_generator(seed)
        self.secret = np.zeros(self.n, dtype=np.int64)
        self.secret[self.rng.choice(self.n, self.hamming_weight, replace=False)] = 1

    def sample(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        m = check_scalar(m, "m", "int", min=0)
        A = self.rng.integers(0, self.q, size=(m, self.n), dtype=np.int64)
        e = np.rint(self.rng.normal(0.0, self.sigma, size=m)).astype(np.int64)
        return A, (A @ self.secret + e) % self.q


# ---------------------------------------------------------------------------------------------
# angular representation (Section 4)
# ---------------------------------------------------------------------------------------------
def to_circle(x: torch.Tensor, q: int) -> torch.Tensor:
    """Map residues to the unit circle: ``x -> (cos 2 pi x / q, sin 2 pi x / q)``, shape (..., 2).

    ``x`` is a tensor or array-like of finite numbers (any shape; elementwise).
    """
    q = check_scalar(q, "q", "int", min=2)
    if torch.is_tensor(x):
        check_tensor(x, "x", finite=True)
    else:
        check_array(x, "x")
    x = torch.as_tensor(x)
    theta = (2.0 * math.pi / q) * (x if x.is_floating_point() else x.to(torch.get_default_dtype()))
    return torch.stack((torch.cos(theta), torch.sin(theta)), dim=-1)


def from_circle(z: torch.Tensor, q: int) -> torch.Tensor:
    """Decode points (..., 2) to residues: ``round(atan2(z2, z1) mod 2 pi * q / 2 pi) mod q``.

    The origin decodes to 0 (atan2(0, 0) = 0); :func:`evaluate` counts such outputs as collapsed.
    ``z`` must be finite (a NaN point has no residue).
    """
    q = check_scalar(q, "q", "int", min=2)
    check_instance(z, "z", torch.Tensor, "a torch.Tensor")
    if z.shape[-1:] != (2,) or not z.is_floating_point():
        raise ValueError(f"z must be a float tensor of shape (..., 2), got {getattr(z, 'shape', type(z))}")
    check_tensor(z, "z", finite=True)
    angle = torch.remainder(torch.atan2(z[..., 1], z[..., 0]), 2.0 * math.pi)
    return torch.remainder(torch.round(angle * (q / (2.0 * math.pi))).long(), q)


def circular_distance(a: torch.Tensor | np.ndarray, b: torch.Tensor | np.ndarray, q: int):
    """``min(|a - b| mod q, q - |a - b| mod q)``: the distance on Z_q, elementwise.

    ``a`` and ``b`` are both tensors or both array-likes of finite numbers, of the same shape.
    """
    q = check_scalar(q, "q", "int", min=2)
    if torch.is_tensor(a) != torch.is_tensor(b):
        raise TypeError(f"a and b must both be tensors or both arrays, got {type(a).__name__} and {type(b).__name__}")
    if torch.is_tensor(a):
        check_tensor(a, "a", finite=True)
        check_tensor(b, "b", finite=True)
    else:
        a, b = check_array(a, "a"), check_array(b, "b")
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"a and b must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    d = (a - b) % q
    return d.minimum(q - d) if torch.is_tensor(d) else np.minimum(d, q - d)


# ---------------------------------------------------------------------------------------------
# model (Section 4; official defaults: 4 layers, hidden 256, heads = hidden / 64, no biases)
# ---------------------------------------------------------------------------------------------
class ModularTransformer(nn.Module):
    """Encoder-only pre-norm transformer for modular sums.

    Input ``x``: LongTensor (batch, N) with values in [0, q).  ``emb_input="angular"`` embeds each
    entry as Linear(2, hidden) of :func:`to_circle`; ``"token"`` uses nn.Embedding(q, hidden).
    Learned positional embeddings of the N inputs, one extra learned token appended (the official
    "secret key" token), ``n_layers`` shared pre-norm blocks (no biases, GELU), and, if ``final_norm``,
    a final LayerNorm (off by default, as in the official code).
    ``head="angular"``: max-pool over tokens then Linear(hidden, 2), output z of shape (batch, 2);
    ``head="ce"``: flatten all tokens then Linear(hidden (N + 1), q), logits of shape (batch, q).
    ``seed`` fixes the initial weights (GPT-2 init, N(0, 0.02), residual projections scaled down).
    """

    def __init__(self, N: int, q: int, hidden: int = 256, n_layers: int = 4, n_heads: int | None = None,
                 emb_input: str = "angular", head: str = "angular", positional: bool = True,
                 final_norm: bool = False, seed: Seed = None) -> None:
        super().__init__()
        self.N, self.q = _check_problem(N, q)
        self.emb_input = check_choice(emb_input, "emb_input", ("angular", "token"))
        self.head = check_choice(head, "head", ("angular", "ce"))
        self.hidden = check_scalar(hidden, "hidden", "int", min=1)
        self.n_layers = check_scalar(n_layers, "n_layers", "int", min=1)
        n_heads = max(1, hidden // 64) if n_heads is None else check_scalar(n_heads, "n_heads", "int", min=1)
        check_bool(positional, "positional")
        check_bool(final_norm, "final_norm")
        # the layers' default initialisation is overwritten below; with a seed it must not advance the caller's RNG
        with torch.random.fork_rng(devices=[]) if seed is not None else nullcontext():
            self.embed = nn.Linear(2, hidden, bias=False) if emb_input == "angular" else nn.Embedding(q, hidden)
            self.extra_token = nn.Parameter(torch.zeros(hidden))
            self.position = nn.Embedding(N, hidden) if positional else None
            self.blocks = nn.ModuleList(TransformerBlock(hidden, n_heads, bias=False, activation="gelu")
                                        for _ in range(n_layers))
            self.norm = nn.LayerNorm(hidden, bias=False) if final_norm else nn.Identity()
            self.out = (nn.Linear(hidden, 2, bias=False) if head == "angular"
                        else nn.Linear(hidden * (N + 1), q, bias=False))
        with init_rng(seed):
            init_gpt_weights(self, n_layers)
            nn.init.normal_(self.extra_token, 0.0, 0.02)

    def _check_input(self, x: torch.Tensor) -> None:
        check_tensor(x, "x", ndim=2)
        if x.shape[0] == 0 or x.shape[1] != self.N:
            raise ValueError(f"x must have shape (batch, {self.N}) with batch >= 1, got {tuple(x.shape)}")
        if x.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
            raise TypeError(f"x must be an integer tensor, got {x.dtype}")
        if x.numel() and (int(x.min()) < 0 or int(x.max()) >= self.q):
            raise ValueError(f"x must have values in [0, {self.q}), got range [{int(x.min())}, {int(x.max())}]")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check_input(x)
        dtype = self.extra_token.dtype
        h = self.embed(to_circle(x, self.q).to(dtype)) if self.emb_input == "angular" else self.embed(x.long())
        if self.position is not None:
            h = h + self.position.weight
        h = torch.cat((h, self.extra_token.expand(x.shape[0], 1, -1)), dim=1)
        for block in self.blocks:
            h = block(h)
        h = self.norm(h)
        return self.out(h.amax(dim=1)) if self.head == "angular" else self.out(h.flatten(1))


# ---------------------------------------------------------------------------------------------
# losses (Section 5); z = output point (B, 2), t = target point (B, 2)
# ---------------------------------------------------------------------------------------------
def _check_points(z: torch.Tensor, t: torch.Tensor) -> None:
    check_tensor(z, "z", ndim=2, floating=True)
    check_tensor(t, "t", ndim=2, floating=True)
    if z.shape[0] == 0 or z.shape[1] != 2 or t.shape != z.shape:
        raise ValueError(f"z and t must be tensors of the same shape (batch, 2), got "
                         f"{tuple(z.shape)} and {tuple(t.shape)} (batch >= 1)")


class AngularMSE(nn.Module):
    """Plain MSE to the target point: mean of ||z - t||^2 (the baseline loss)."""

    def forward(self, z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        _check_points(z, t)
        return (z - t).pow(2).sum(-1).mean()


class NormRegularizedAngularLoss(nn.Module):
    """The paper's ``custom`` loss: ||z - t||^2 + alpha (||z||^2 + 1 / (||z||^2 + eps)), batch mean.

    The regulariser is smallest at ||z|| = 1 (for eps -> 0) and blows up as z -> 0, which stops the
    "predict the centre of the circle" collapse.  ``forward`` returns (total, mse, reg); alpha = 0 is MSE.
    """

    def __init__(self, alpha: float = 0.1, eps: float = 1e-6) -> None:
        super().__init__()
        self.alpha = check_scalar(alpha, "alpha", "real", min=0.0)
        self.eps = check_scalar(eps, "eps", "real", min=0.0, inclusive="neither")

    def forward(self, z: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        _check_points(z, t)
        mse = (z - t).pow(2).sum(-1).mean()
        sq = z.pow(2).sum(-1)
        reg = (sq + 1.0 / (sq + self.eps)).mean()
        return mse + self.alpha * reg, mse, reg


class WrappedAngleLoss(nn.Module):
    """Ablation: mean squared wrapped angle difference between z and t (in radians)."""

    def forward(self, z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        _check_points(z, t)
        diff = torch.atan2(z[:, 1], z[:, 0]) - torch.atan2(t[:, 1], t[:, 0])
        return torch.atan2(torch.sin(diff), torch.cos(diff)).pow(2).mean()


def make_loss(name: str, alpha: float = 0.1) -> nn.Module:
    """Loss by the official name: ``custom`` (alpha >= 0), ``MSE``, ``angle`` or ``CE``.

    Errors name the choice ``loss`` (the argument of :func:`train` that reaches here).
    """
    check_choice(name, "loss", ("custom", "MSE", "angle", "CE"))
    return {"custom": lambda: NormRegularizedAngularLoss(alpha), "MSE": AngularMSE, "angle": WrappedAngleLoss,
            "CE": nn.CrossEntropyLoss}[name]()


# ---------------------------------------------------------------------------------------------
# training and evaluation
# ---------------------------------------------------------------------------------------------
def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def _step_loss(model: ModularTransformer, loss_fn: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = model(x)
    if isinstance(loss_fn, nn.CrossEntropyLoss):
        if model.head != "ce":
            raise ValueError("loss 'CE' needs head='ce'")
        return loss_fn(out, y)
    if model.head != "angular":
        raise ValueError("angular losses need head='angular'")
    result = loss_fn(out, to_circle(y, model.q).to(out.dtype))
    return result[0] if isinstance(result, tuple) else result


def train(model: ModularTransformer, sampler: ModularSumSampler, steps: int, batch_size: int = 256,
          lr: float = 1e-3, weight_decay: float = 0.1, warmup: int = 200, loss: str | nn.Module = "custom",
          alpha: float = 0.1, curriculum: str | None = None, clip_grad_norm: float = 0.0, log_every: int = 100,
          seed: Seed = 0) -> dict[str, list[float]]:
    """Train with AdamW, linear warm-up then cosine decay; data drawn on the fly from ``sampler``.

    ``curriculum="easy_all"`` (official ``train_with_cl``): only inputs with <= N/2 non-zeros until the
    running training loss (mean of the last 200 steps, checked every 200 steps) drops below 1e-2.
    ``clip_grad_norm > 0`` clips the gradient norm (the official ``--clip_grad_norm``; 0 disables it).
    ``seed`` seeds the torch RNG of the training loop (on a fork: the caller's global RNG is left as it was);
    the data come from ``sampler``'s own generator.
    Returns a history with ``step``, ``loss`` (mean over each ``log_every`` window) and ``switch_step``.
    """
    check_instance(model, "model", ModularTransformer)
    check_instance(sampler, "sampler", ModularSumSampler)
    steps, batch_size = check_scalar(steps, "steps", "int", min=1), check_scalar(batch_size, "batch_size", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
    alpha = check_scalar(alpha, "alpha", "real", min=0.0)
    if not isinstance(loss, (str, nn.Module)):
        raise TypeError(f"loss must be a loss name or an nn.Module, got {type(loss).__name__}")
    warmup, log_every = check_scalar(warmup, "warmup", "int", min=0), check_scalar(log_every, "log_every", "int", min=1)
    clip_grad_norm = check_scalar(clip_grad_norm, "clip_grad_norm", "real", min=0.0)
    check_choice(curriculum, "curriculum", (None, "easy_all"))
    if curriculum and sampler.strategy == "uniform":
        raise ValueError("curriculum='easy_all' needs a sparse sampler strategy")
    if sampler.N != model.N or sampler.q != model.q:
        raise ValueError(f"sampler (N={sampler.N}, q={sampler.q}) does not match model (N={model.N}, q={model.q})")
    loss_fn = make_loss(loss, alpha) if isinstance(loss, str) else loss
    with seeded(seed):
        return _train_loop(model, sampler, loss_fn, steps, batch_size, lr, weight_decay, warmup, curriculum,
                           clip_grad_norm, log_every)


def _train_loop(model: ModularTransformer, sampler: ModularSumSampler, loss_fn: nn.Module, steps: int,
                batch_size: int, lr: float, weight_decay: float, warmup: int, curriculum: str | None,
                clip_grad_norm: float, log_every: int) -> dict[str, list[float]]:
    device = _device(model)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warmup if s < warmup else
        0.5 * (1 + math.cos(math.pi * (s - warmup) / max(1, steps - warmup))))
    easy = curriculum == "easy_all"
    history: dict[str, list[float]] = {"step": [], "loss": [], "switch_step": []}
    window: list[float] = []
    model.train()
    for step in range(1, steps + 1):
        x, y = sampler.sample(batch_size, max(1, sampler.N // 2) if easy else None)
        value = _step_loss(model, loss_fn, torch.as_tensor(x, device=device), torch.as_tensor(y, device=device))
        opt.zero_grad(set_to_none=True)
        value.backward()
        if clip_grad_norm > 0:
            nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
        opt.step()
        sched.step()
        window.append(float(value.detach()))
        if easy and step % 200 == 0 and np.mean(window[-200:]) < 1e-2:
            easy = False
            history["switch_step"].append(step)
        if step % log_every == 0 or step == steps:
            history["step"].append(step)
            history["loss"].append(float(np.mean(window[-log_every:])))
            window = window[-200:]
    model.eval()
    return history


@torch.no_grad()
def predict(model: ModularTransformer, x: np.ndarray | torch.Tensor,
            batch_size: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Predicted residues and output norms (NaN for the CE head) of ``model`` on inputs ``x``.

    ``x`` is a ``(n, N)`` integer array or tensor with ``n >= 1`` and values in ``[0, q)``; ``batch_size`` >= 1.
    """
    check_instance(model, "model", ModularTransformer)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    if not torch.is_tensor(x):
        x = check_array(x, "x", ndim=2, dtype=None)
    model._check_input(torch.as_tensor(x))
    model.eval()
    x = torch.as_tensor(np.asarray(x) if not torch.is_tensor(x) else x, device=_device(model))
    preds, norms = [], []
    for chunk in x.split(batch_size):
        out = model(chunk)
        if model.head == "angular":
            preds.append(from_circle(out, model.q))
            norms.append(out.norm(dim=-1))
        else:
            preds.append(out.argmax(-1))
            norms.append(torch.full((len(chunk),), float("nan"), device=out.device))
    return torch.cat(preds).cpu().numpy(), torch.cat(norms).float().cpu().numpy()


def evaluate(model: ModularTransformer, n_test: int = 5000, taus: tuple[float, ...] = TAUS,
             function: str = "sum", secret: np.ndarray | None = None, seed: Seed = 12345) -> dict[str, float]:
    """Metrics on ``n_test`` uniform test inputs: exact accuracy, tau-accuracies (circular error
    <= tau q), accuracy at error <= max(1, 0.01 q), mean output norm and the collapsed fraction (norm < 0.2).

    ``taus`` is a sequence (possibly empty) of reals in (0, 1].
    """
    check_instance(model, "model", ModularTransformer)
    n_test = check_scalar(n_test, "n_test", "int", min=1)
    taus = tuple(check_sequence(
        taus, "taus", item=lambda v, name: check_scalar(v, name, "real", min=0.0, max=1.0, inclusive="right")))
    rng = as_generator(seed)
    x = rng.integers(0, model.q, size=(n_test, model.N), dtype=np.int64)
    y = targets(x, model.q, function, secret)
    pred, norms = predict(model, x)
    err = circular_distance(pred, y, model.q)
    metrics = {"exact_accuracy": float(np.mean(err == 0)),
               "tol_accuracy": float(np.mean(err <= max(1.0, 0.01 * model.q))),
               "mean_norm": float(np.mean(norms)), "collapsed_fraction": float(np.mean(norms < COLLAPSE_NORM))}
    metrics.update({f"tau_{tau:g}": float(np.mean(err <= tau * model.q)) for tau in taus})
    return metrics


# ---------------------------------------------------------------------------------------------
# LWE secret recovery (the official evaluator's distinguisher, model-agnostic)
# ---------------------------------------------------------------------------------------------
def recover_binary_secret(predict_fn: Callable[[np.ndarray], np.ndarray], A: np.ndarray, b: np.ndarray, q: int,
                          hamming_weight: int, sigma: float) -> tuple[np.ndarray, bool]:
    """Guess a binary secret from a predictor of ``a.s mod q`` and verify it.

    For each coordinate i, ``a_i <- a_i + floor(q/2)`` on all rows of ``A`` and the circular changes of
    ``predict_fn`` are summed; the ``hamming_weight`` coordinates with the largest change form the guess.
    The guess is accepted if the centred residual ``(A s_hat - b) mod q`` (in (-q/2, q/2]) has standard
    deviation < 2 sigma (<= 2 sigma when sigma = 0).  Returns (guess, accepted).
    """
    check_callable(predict_fn, "predict_fn")
    q = check_scalar(q, "q", "int", min=2)
    A, b = _check_residues(A, q, "A"), _check_residues(b, q, "b")
    if A.ndim != 2 or b.shape != (A.shape[0],):
        raise ValueError(f"A must have shape (m, n) and b shape (m,), got {A.shape} and {b.shape}")
    m, n = A.shape
    hamming_weight = check_scalar(hamming_weight, "hamming_weight", "int", min=1, max=n)
    if m < n:
        raise ValueError(f"A must have at least n = {n} rows (samples) for secret recovery, got {m}")
    sigma = check_scalar(sigma, "sigma", "real", min=0.0)
    base = np.asarray(predict_fn(A), dtype=np.int64)
    if base.shape != (m,):
        raise ValueError(f"predict_fn must return shape ({m},), got {base.shape}")
    change = np.empty(n)
    for i in range(n):
        shifted = A.copy()
        shifted[:, i] = (shifted[:, i] + q // 2) % q
        change[i] = circular_distance(np.asarray(predict_fn(shifted), dtype=np.int64), base, q).sum()
    guess = np.zeros(n, dtype=np.int64)
    guess[np.argsort(-change, kind="stable")[:hamming_weight]] = 1
    residual = (A @ guess - b) % q
    residual = np.where(residual > q // 2, residual - q, residual)
    spread = float(np.std(residual))
    return guess, bool(spread < 2 * sigma if sigma > 0 else spread == 0.0)

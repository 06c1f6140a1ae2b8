"""Mezidi et al., "A Bregman Proximal Viewpoint on Neural Operators" (ICML 2025): Bregman FNO (BFNO).

A neural-operator layer ``v -> sigma(W v + K v + b)`` is a proximal step; replacing its Euclidean
proximity term by the Bregman divergence of a Legendre function psi with ``grad psi* = sigma`` gives
the Bregman layer ``v -> sigma(sigma^-1(v) + W v + K v + b)`` (Sec. 3), which is the identity when
``W = K = b = 0``. ``FNO(architecture=...)`` switches between the standard block, the Euclidean
residual-inside-the-activation block and the Bregman block, in 1-D and 2-D (``len(n_modes)``).

Example
-------
>>> import torch
>>> from icml25.operators import FNO, BregmanFNO
>>> x = torch.randn(4, 1, 64)                               # (batch, channels, grid)
>>> fno = FNO(1, 1, hidden_channels=16, n_modes=(8,), n_layers=4)
>>> bfno = BregmanFNO(1, 1, hidden_channels=16, n_modes=(8,), n_layers=16)
>>> fno(x).shape, bfno(torch.randn(2, 1, 128)).shape      # any grid size, e.g. a finer one
(torch.Size([4, 1, 64]), torch.Size([2, 1, 128]))
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from icml25.utils.random import Seed, init_rng, torch_generator
from icml25.utils.validation import (
    check_array,
    check_bool,
    check_callable,
    check_choice,
    check_consistent_length,
    check_instance,
    check_scalar,
    check_tensor,
)

__all__ = [
    "ACTIVATIONS",
    "ARCHITECTURES",
    "ActivationPair",
    "BregmanFNO",
    "FNO",
    "FNOBlock",
    "SpectralConv",
    "fit_operator",
    "get_activation_pair",
    "relative_l2",
]

ARCHITECTURES = ("standard", "euclidean", "bregman")
ACTIVATIONS = ("softplus", "tanh", "scaled_tanh", "sigmoid", "isru", "atan", "asinh", "relu", "gelu")
INVERSE_EPS = 1e-4
_SCALED_TANH = (1.7159, 0.6666)

Fn = Callable[[torch.Tensor], torch.Tensor]


class ActivationPair(NamedTuple):
    """An activation ``sigma``, its inverse (``None`` if it has none) and its range ``(lo, hi)``."""

    sigma: Fn
    sigma_inv: Fn | None
    domain: tuple[float, float]




def _clamped(inverse: Fn, lo: float, hi: float) -> Fn:
    """``inverse`` evaluated on ``v`` clamped into ``[lo + eps, hi - eps]`` (finite ends only)."""

    def inv(v: torch.Tensor) -> torch.Tensor:
        return inverse(v.clamp(min=lo + INVERSE_EPS if math.isfinite(lo) else None,
                               max=hi - INVERSE_EPS if math.isfinite(hi) else None))

    return inv


def get_activation_pair(name: str, version: str = "bregman", beta: float = 10.0,
                        threshold: float = 20.0) -> ActivationPair:
    """``(sigma, sigma_inv, (lo, hi))`` for one of ``ACTIVATIONS``.

    ``sigma_inv`` clamps its argument into ``[lo + 1e-4, hi - 1e-4]`` instead of returning inf/NaN at
    the edges of the range. ``softplus`` is ``log(1 + exp(beta z)) / beta`` (linear when
    ``beta z > threshold``) with inverse ``v + log(1 - exp(-beta v)) / beta``. ``relu`` has no inverse:
    with ``version="bregman"`` it becomes the bent identity ``(z + sqrt(z^2 + 1)) / 2`` with inverse
    ``v - 1 / (4 v)`` (the official pair); with ``version="standard"`` it is the plain ReLU and
    ``sigma_inv`` is ``None``, as for ``gelu``.
    """
    if not isinstance(name, str) or name not in ACTIVATIONS:
        raise ValueError(f"name must be a known activation: unknown activation {name!r}; valid: "
                         f"{', '.join(ACTIVATIONS)}")
    check_choice(version, "version", ("bregman", "standard"))
    beta = check_scalar(beta, "beta", "real", min=0.0, inclusive="neither")
    threshold = check_scalar(threshold, "threshold", "real", min=0.0, inclusive="neither")
    inf = math.inf
    if name == "softplus":

        def softplus_inv(v: torch.Tensor) -> torch.Tensor:
            small = v + torch.log(-torch.expm1(-beta * v)) / beta
            return torch.where(beta * v > threshold, v, small)

        return ActivationPair(partial(F.softplus, beta=beta, threshold=threshold),
                              _clamped(softplus_inv, 0.0, inf), (0.0, inf))
    if name == "tanh":
        return ActivationPair(torch.tanh, _clamped(torch.atanh, -1.0, 1.0), (-1.0, 1.0))
    if name == "scaled_tanh":
        amp, slope = _SCALED_TANH
        return ActivationPair(lambda z: amp * torch.tanh(slope * z),
                              _clamped(lambda v: torch.atanh(v / amp) / slope, -amp, amp), (-amp, amp))
    if name == "sigmoid":
        return ActivationPair(torch.sigmoid, _clamped(torch.logit, 0.0, 1.0), (0.0, 1.0))
    if name == "isru":
        return ActivationPair(lambda z: z * torch.rsqrt(1 + z * z),
                              _clamped(lambda v: v * torch.rsqrt(1 - v * v), -1.0, 1.0), (-1.0, 1.0))
    if name == "atan":
        half_pi = math.pi / 2
        return ActivationPair(torch.atan, _clamped(torch.tan, -half_pi, half_pi), (-half_pi, half_pi))
    if name == "asinh":
        return ActivationPair(torch.asinh, torch.sinh, (-inf, inf))
    if name == "relu":
        if version == "standard":
            return ActivationPair(F.relu, None, (0.0, inf))
        return ActivationPair(lambda z: (z + torch.sqrt(z * z + 1)) / 2,
                              _clamped(lambda v: v - 1 / (4 * v), 0.0, inf), (0.0, inf))
    return ActivationPair(F.gelu, None, (-0.17, inf))  # "gelu", the last name left


def _check_modes(n_modes: int | tuple[int, ...]) -> tuple[int, ...]:
    """``n_modes`` as a tuple of 1 to 3 Fourier-mode counts (one per spatial dimension)."""
    modes = n_modes if isinstance(n_modes, (tuple, list)) else (n_modes,)
    modes = tuple(check_scalar(m, f"n_modes[{i}]", "int", min=1) for i, m in enumerate(modes))
    if not 1 <= len(modes) <= 3:
        raise ValueError(f"n_modes must list 1 to 3 mode counts (one per spatial dimension), got {n_modes!r}")
    return modes


class SpectralConv(nn.Module):
    """Fourier integral operator ``v -> IFFT(R . FFT(v)[modes])`` (FNO, Li et al. 2021) in ``len(n_modes)`` dims.

    ``n_modes[i]`` Fourier modes are kept along spatial dimension i: the lowest ``n_modes[-1]`` of the
    real FFT along the last dimension, and the lowest ``n_modes[i]`` positive and negative frequencies
    along each other dimension (the low-frequency corner blocks). Weights are complex, stored as real
    pairs so that ``.double()`` and ``.to(device)`` apply. ``init_std="auto"`` draws real and imaginary
    parts from ``N(0, 2 / (in + out))``; ``0.0`` gives the zero operator. With ``fft_norm="forward"``
    the kept coefficients do not depend on the grid size, so the operator can be evaluated on a finer
    grid; ``forward(x, output_shape)`` also evaluates the output directly on another grid.
    ``seed`` fixes the initial weights without touching the caller's global torch RNG; ``seed=None``
    draws them from the global RNG, as ``nn`` layers do (the same holds for ``FNOBlock`` and ``FNO``).
    """

    def __init__(self, in_channels: int, out_channels: int, n_modes: tuple[int, ...],
                 init_std: str | float = "auto", fft_norm: str = "forward", seed: Seed = None) -> None:
        super().__init__()
        in_channels = check_scalar(in_channels, "in_channels", "int", min=1)
        out_channels = check_scalar(out_channels, "out_channels", "int", min=1)
        n_modes = _check_modes(n_modes)
        check_choice(fft_norm, "fft_norm", ("forward", "backward", "ortho"))
        if isinstance(init_std, str):
            check_choice(init_std, "init_std", ("auto",))
            std = math.sqrt(2.0 / (in_channels + out_channels))
        else:
            std = check_scalar(init_std, "init_std", "real", min=0.0)
        self.in_channels, self.out_channels, self.n_modes, self.fft_norm = in_channels, out_channels, n_modes, fft_norm
        shape = (in_channels, out_channels, *(2 * m for m in n_modes[:-1]), n_modes[-1], 2)
        with init_rng(seed):
            self.weight = nn.Parameter(torch.randn(shape) * std)

    def _check(self, x: torch.Tensor, name: str = "x") -> None:
        d = len(self.n_modes)
        check_tensor(x, name, floating=True)
        if x.dim() != d + 2:
            raise ValueError(f"{name} must be (batch, channels, {d} spatial dims) for the {d}-D n_modes "
                             f"{self.n_modes}, got {x.dim() - 2} spatial dims (shape {tuple(x.shape)})")
        if x.shape[1] != self.in_channels:
            raise ValueError(f"{name}: expected {self.in_channels} input channels, got {x.shape[1]}")
        if x.shape[0] == 0:
            raise ValueError(f"{name} must hold at least one sample (the FFT needs a non-empty batch), "
                             f"got shape {tuple(x.shape)}")
        self._check_grid(tuple(x.shape[2:]), name)

    def _check_grid(self, sizes: tuple[int, ...], name: str) -> None:
        limits = [n // 2 for n in sizes[:-1]] + [sizes[-1] // 2 + 1]
        for axis, (m, n, lim) in enumerate(zip(self.n_modes, sizes, limits, strict=True)):
            if m > lim:
                raise ValueError(f"{name}: n_modes[{axis}] = {m} is too large for grid size {n} along that axis "
                                 f"(at most {lim})")

    def forward(self, x: torch.Tensor, output_shape: tuple[int, ...] | None = None) -> torch.Tensor:
        self._check(x)
        d = len(self.n_modes)
        dims = tuple(range(-d, 0))
        if output_shape is None:
            out_shape = tuple(x.shape[2:])
        else:
            if isinstance(output_shape, (str, bytes)) or not hasattr(output_shape, "__iter__"):
                raise TypeError(f"output_shape must be a tuple of {d} grid sizes, got {output_shape!r}")
            out_shape = tuple(check_scalar(n, f"output_shape[{i}]", "int", min=1) for i, n in enumerate(output_shape))
        if len(out_shape) != d:
            raise ValueError(f"output_shape must have {d} entries, got {out_shape}")
        x_ft = torch.fft.rfftn(x, dim=dims, norm=self.fft_norm)
        # gather the kept modes: both corners along each non-last dim, the low end of the last one
        for axis, m in enumerate(self.n_modes[:-1]):
            n = x.shape[2 + axis]
            x_ft = torch.cat([x_ft.narrow(2 + axis, 0, m), x_ft.narrow(2 + axis, n - m, m)], dim=2 + axis)
        x_ft = x_ft.narrow(-1, 0, self.n_modes[-1])
        letters = "xyz"[:d]
        weight = torch.view_as_complex(self.weight)
        y_ft = torch.einsum(f"bi{letters},io{letters}->bo{letters}", x_ft, weight)
        out_ft = x_ft.new_zeros((x.shape[0], self.out_channels, *out_shape[:-1], out_shape[-1] // 2 + 1))
        m_last = min(self.n_modes[-1], out_shape[-1] // 2 + 1)
        for corner in itertools.product((0, 1), repeat=d - 1):
            src, dst = [slice(None), slice(None)], [slice(None), slice(None)]
            for axis, high in enumerate(corner):
                m = min(self.n_modes[axis], out_shape[axis] // 2)
                src.append(slice(self.n_modes[axis], self.n_modes[axis] + m) if high else slice(0, m))
                dst.append(slice(out_shape[axis] - m, out_shape[axis]) if high else slice(0, m))
            src.append(slice(0, m_last))
            dst.append(slice(0, m_last))
            out_ft[tuple(dst)] = y_ft[tuple(src)]
        return torch.fft.irfftn(out_ft, s=out_shape, dim=dims, norm=self.fft_norm)


def _pointwise(d: int, in_channels: int, out_channels: int) -> nn.Module:
    return (nn.Conv1d, nn.Conv2d, nn.Conv3d)[d - 1](in_channels, out_channels, kernel_size=1)


class FNOBlock(nn.Module):
    """One Fourier layer: the pre-activation update ``K v + W v + b`` (spectral conv plus 1x1 conv).

    With ``zero_init`` (the Bregman default) both ``K`` and ``W`` start at zero, so that the Bregman
    layer ``sigma(sigma^-1(v) + K v + W v + b)`` is exactly the identity at initialisation.
    """

    def __init__(self, channels: int, n_modes: tuple[int, ...], zero_init: bool = False,
                 fft_norm: str = "forward", seed: Seed = None) -> None:
        super().__init__()
        channels = check_scalar(channels, "channels", "int", min=1)
        zero_init = check_bool(zero_init, "zero_init")
        with init_rng(seed):
            self.spectral = SpectralConv(channels, channels, n_modes, init_std=0.0 if zero_init else "auto",
                                         fft_norm=fft_norm)
            self.skip = _pointwise(len(self.spectral.n_modes), channels, channels)
        if zero_init:
            nn.init.zeros_(self.skip.weight)
            nn.init.zeros_(self.skip.bias)

    def forward(self, v: torch.Tensor) -> torch.Tensor:
        self.spectral._check(v, "v")
        return self.spectral(v) + self.skip(v)


class FNO(nn.Module):
    """Fourier neural operator with the ``standard``, ``euclidean`` or ``bregman`` block rule.

    Lifting ``P`` (a 1x1 linear map, or a 2-layer GELU MLP if ``lifting_channels``) from the input
    channels plus, if ``positional_grid``, the grid coordinates in [0, 1); then ``n_layers`` blocks
    with ``u_l = K_l v_l + W_l v_l + b_l``:

    - ``standard``: ``v_{l+1} = sigma(u_l)``;
    - ``euclidean``: ``v_{l+1} = sigma(v_l + u_l)`` (Euclidean proximal step);
    - ``bregman``: ``v_{l+1} = sigma(sigma^-1(v_l) + u_l)`` (Bregman proximal step, Eq. of Sec. 3),
      with ``v_0 = sigma(P a)``; computed by carrying the pre-activation ``z_{l+1} = z_l + u_l``
      (``carry_preactivation=True``, exact and free of the inverse's domain issues) or with the
      explicit (clamped) inverse (``carry_preactivation=False``).

    The last block has no activation; the projection ``Q`` is a 2-layer GELU MLP. ``activation``
    is a name from ``ACTIVATIONS`` or a callable (a Bregman model then needs ``inverse_activation``).
    ``zero_init`` (default: ``architecture == "bregman"``) starts every ``K_l``, ``W_l``, ``b_l`` at 0.
    Input (batch, in_channels, *grid) with ``len(grid) == len(n_modes)``; output on the same grid.
    """

    def __init__(self, in_channels: int, out_channels: int, hidden_channels: int = 32,
                 n_modes: tuple[int, ...] = (16,), n_layers: int = 4, lifting_channels: int | None = 128,
                 projection_channels: int = 128, architecture: str = "standard",
                 activation: str | Fn = "relu", activation_kwargs: dict | None = None,
                 inverse_activation: Fn | None = None, positional_grid: bool = True,
                 carry_preactivation: bool = True, zero_init: bool | None = None, fft_norm: str = "forward",
                 seed: Seed = None) -> None:
        super().__init__()
        in_channels, out_channels, hidden_channels, n_layers, projection_channels = (
            check_scalar(v, name, "int", min=1) for v, name in (
                (in_channels, "in_channels"), (out_channels, "out_channels"), (hidden_channels, "hidden_channels"),
                (n_layers, "n_layers"), (projection_channels, "projection_channels")))
        if lifting_channels is not None:
            lifting_channels = check_scalar(lifting_channels, "lifting_channels", "int", min=1)
        check_choice(architecture, "architecture", ARCHITECTURES)
        positional_grid = check_bool(positional_grid, "positional_grid")
        carry_preactivation = check_bool(carry_preactivation, "carry_preactivation")
        n_modes = _check_modes(n_modes)
        if zero_init is not None:
            zero_init = check_bool(zero_init, "zero_init")
        if inverse_activation is not None:
            check_callable(inverse_activation, "inverse_activation")
        if activation_kwargs is not None:
            check_instance(activation_kwargs, "activation_kwargs", dict, "a dict of keyword arguments or None")
        if not callable(activation) and not (isinstance(activation, str) and activation in ACTIVATIONS):
            raise ValueError(f"activation must be a callable or a known activation: unknown activation "
                             f"{activation!r}; valid: {', '.join(ACTIVATIONS)}")
        if callable(activation):
            if architecture == "bregman" and inverse_activation is None:
                raise ValueError("architecture='bregman' with a callable activation needs inverse_activation= "
                                 "(or use a named activation, which carries the pre-activation)")
            pair = ActivationPair(activation, inverse_activation, (-math.inf, math.inf))
        else:
            version = "bregman" if architecture == "bregman" else "standard"
            pair = get_activation_pair(activation, version=version, **(activation_kwargs or {}))
        if architecture == "bregman" and not carry_preactivation and pair.sigma_inv is None:
            raise ValueError(f"activation {activation!r} has no inverse; use carry_preactivation=True")
        self.architecture, self.n_modes, self.n_layers = architecture, n_modes, n_layers
        self.in_channels, self.out_channels, self.positional_grid = in_channels, out_channels, positional_grid
        self.carry_preactivation = carry_preactivation
        self.sigma, self.sigma_inv = pair.sigma, pair.sigma_inv
        d = len(n_modes)
        lift_in = in_channels + (d if positional_grid else 0)
        zero = architecture == "bregman" if zero_init is None else zero_init
        with init_rng(seed):
            if lifting_channels is None:
                self.lifting = _pointwise(d, lift_in, hidden_channels)
            else:
                self.lifting = nn.Sequential(_pointwise(d, lift_in, lifting_channels), nn.GELU(),
                                             _pointwise(d, lifting_channels, hidden_channels))
            self.blocks = nn.ModuleList(FNOBlock(hidden_channels, n_modes, zero_init=zero, fft_norm=fft_norm)
                                        for _ in range(n_layers))
            self.projection = nn.Sequential(_pointwise(d, hidden_channels, projection_channels), nn.GELU(),
                                            _pointwise(d, projection_channels, out_channels))

    def _grid(self, x: torch.Tensor) -> torch.Tensor:
        sizes = x.shape[2:]
        axes = [torch.arange(n, device=x.device, dtype=x.dtype) / n for n in sizes]
        mesh = torch.stack(torch.meshgrid(*axes, indexing="ij"))
        return mesh.unsqueeze(0).expand(x.shape[0], *mesh.shape)

    def _check(self, x: torch.Tensor) -> None:
        check_tensor(x, "x", floating=True)
        d = len(self.n_modes)
        if x.dim() != d + 2:
            raise ValueError(f"x must be (batch, {self.in_channels}, {d} spatial dims) for n_modes "
                             f"{self.n_modes}, got shape {tuple(x.shape)} ({x.dim() - 2} spatial dims)")
        if x.shape[1] != self.in_channels:
            raise ValueError(f"x: expected {self.in_channels} input channels, got {x.shape[1]}")
        if not torch.isfinite(x).all():
            raise ValueError("x: input must contain only finite values, got NaN or inf")
        if x.shape[0] == 0:
            raise ValueError(f"x must hold at least one sample (the FFT needs a non-empty batch), "
                             f"got shape {tuple(x.shape)}")
        self.blocks[0].spectral._check_grid(tuple(x.shape[2:]), "x")

    def lift(self, x: torch.Tensor) -> torch.Tensor:
        """The lifted input ``P(a)`` (hidden channels on the input grid)."""
        self._check(x)
        if self.positional_grid:
            x = torch.cat([x, self._grid(x)], dim=1)
        return self.lifting(x)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """The output of the last block (before the projection): ``z_L`` for Bregman, ``v_L`` otherwise."""
        h = self.lift(x)
        last = self.n_layers - 1
        if self.architecture == "bregman":
            z, v = h, self.sigma(h)
            for i, block in enumerate(self.blocks):
                dual = z if self.carry_preactivation else self.sigma_inv(v)
                z = dual + block(v)
                if i < last:
                    v = self.sigma(z)
            return z
        v = h
        for i, block in enumerate(self.blocks):
            u = block(v) + (v if self.architecture == "euclidean" else 0)
            v = self.sigma(u) if i < last else u
        return v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.projection(self.hidden(x))


BregmanFNO = partial(FNO, architecture="bregman", activation="softplus")
"""``FNO(architecture="bregman", activation="softplus", ...)``: the paper's BFNO."""


def relative_l2(pred: torch.Tensor, target: torch.Tensor, reduce: bool = True) -> torch.Tensor:
    """Relative L2 error ``||pred - target|| / ||target||`` per sample (LpLoss, p = 2), averaged if ``reduce``."""
    check_tensor(pred, "pred", floating=True, finite=True)
    check_tensor(target, "target", floating=True, finite=True)
    reduce = check_bool(reduce, "reduce")
    if pred.shape != target.shape:
        raise ValueError(f"pred and target shapes differ: {tuple(pred.shape)} vs {tuple(target.shape)}")
    if pred.dim() < 2:
        raise ValueError(f"expected (batch, ...) tensors, got shape {tuple(pred.shape)}")
    diff = (pred - target).flatten(1).norm(dim=1)
    err = diff / target.flatten(1).norm(dim=1).clamp_min(torch.finfo(target.dtype).tiny)
    return err.mean() if reduce else err


class _Normalizer:
    """Unit-Gaussian normaliser with one mean/std per channel (so it applies at every resolution)."""

    def __init__(self, x: torch.Tensor) -> None:
        dims = [0, *range(2, x.dim())]
        self.mean = x.mean(dim=dims, keepdim=True)[0]
        self.std = x.std(dim=dims, keepdim=True)[0].clamp_min(1e-8)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std

    def decode(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.std + self.mean


def _check_fields(t: torch.Tensor, name: str, min_len: int | None = None) -> None:
    """A finite (n, channels, *grid) tensor (1 to 3 grid dimensions)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor (n, channels, *grid), got {type(t).__name__}")
    check_array(t, name, ndim=(3, 4, 5), min_len=min_len)


def fit_operator(model: nn.Module, x_train: torch.Tensor, y_train: torch.Tensor,
                 x_test: torch.Tensor | dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None,
                 y_test: torch.Tensor | None = None, epochs: int = 30, lr: float = 1e-3, batch_size: int = 32,
                 seed: Seed = 0, normalize: bool = True,
                 validation: tuple[torch.Tensor, torch.Tensor] | None = None, patience: int | None = None) -> dict:
    """Train ``model`` with Adam (constant ``lr``) on the relative L2 loss in original units.

    Inputs and outputs are normalised with per-channel train mean/std when ``normalize`` (the model
    sees normalised tensors; the loss and all reported errors are in original units). The test set
    is ``(x_test, y_test)``, or a dict ``name -> (x, y)`` of test sets (e.g. other resolutions).

    Early stopping on validation relative L2 (as in the official training scripts): with
    ``validation=(x_val, y_val)`` the model is evaluated on it after every epoch and, at the end,
    the weights of the epoch with the lowest validation error are restored before testing; with
    ``patience`` too, training also stops once that many epochs pass without a new best.

    Returns ``{"train_loss": [...per epoch], "test_rel_l2": float or {name: float}}``, plus
    ``"val_rel_l2"`` (per epoch) and ``"best_epoch"`` (1-based) with ``validation``; the mini-batch
    order comes from ``torch_generator(seed)`` (``icml25.utils.random``).
    """
    check_instance(model, "model", nn.Module, "an nn.Module")
    for name, t in (("x_train", x_train), ("y_train", y_train)):
        _check_fields(t, name, min_len=1)
    check_consistent_length(x_train, y_train, names=("x_train", "y_train"))
    normalize = check_bool(normalize, "normalize")
    epochs = check_scalar(epochs, "epochs", "int", min=0)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    if validation is not None:
        if not isinstance(validation, tuple) or len(validation) != 2:
            raise TypeError(f"validation must be a tuple (x_val, y_val) of tensors, got {type(validation).__name__}")
        for name, t in zip(("x_val", "y_val"), validation, strict=True):
            _check_fields(t, name, min_len=1)
        check_consistent_length(*validation, names=("x_val", "y_val"))
    if patience is not None:
        if validation is None:
            raise ValueError("patience needs a validation set (validation=(x_val, y_val))")
        patience = check_scalar(patience, "patience", "int", min=1)
    if isinstance(x_test, dict):
        if y_test is not None:
            raise ValueError("y_test must be None when x_test is a dict name -> (x, y) of test sets")
        tests = x_test
    elif x_test is None:
        if y_test is not None:
            raise ValueError("y_test needs x_test")
        tests = {}
    else:
        tests = {"test": (x_test, y_test)}
    for name, pair in tests.items():
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"x_test[{name!r}] must be a tuple (x, y) of tensors, got {type(pair).__name__}")
        labels = ("x_test", "y_test") if name == "test" and not isinstance(x_test, dict) else \
            (f"x_test[{name!r}][0]", f"x_test[{name!r}][1]")
        for label, t in zip(labels, pair, strict=True):
            _check_fields(t, label, min_len=1)
        check_consistent_length(*pair, names=labels)
    xn, yn = (_Normalizer(x_train), _Normalizer(y_train)) if normalize else (None, None)
    enc_x = xn.encode if xn else (lambda t: t)
    dec_y = yn.decode if yn else (lambda t: t)

    def evaluate(x: torch.Tensor, y: torch.Tensor) -> float:
        with torch.no_grad():
            return float(torch.cat([relative_l2(dec_y(model(enc_x(x[i:i + 256]))), y[i:i + 256], reduce=False)
                                    for i in range(0, x.shape[0], 256)]).mean())

    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch_generator(seed)
    n = x_train.shape[0]
    history, val_history = [], []
    best: tuple[float, int, dict] | None = None
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(n, generator=gen).to(x_train.device)
        total = 0.0
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            loss = relative_l2(dec_y(model(enc_x(x_train[idx]))), y_train[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.item() * idx.numel()
        history.append(total / n)
        if validation is not None:
            model.eval()
            val_history.append(evaluate(*validation))
            if best is None or val_history[-1] < best[0]:
                best = (val_history[-1], epoch, {k: v.detach().clone() for k, v in model.state_dict().items()})
            elif patience is not None and epoch - best[1] >= patience:
                break
    if best is not None:
        model.load_state_dict(best[2])
    model.eval()
    scores = {name: evaluate(x, y) for name, (x, y) in tests.items()}
    out = {"train_loss": history, "test_rel_l2": scores if isinstance(x_test, dict) else scores.get("test")}
    if validation is not None:
        out.update(val_rel_l2=val_history, best_epoch=None if best is None else best[1] + 1)
    return out

"""Joint bilateral upsampling of feature maps: FeatUp's learned JBU and the classical training-free filter.

The learned layer follows FeatUp (Fu et al., "FeatUp: A Model-Agnostic Framework for Features at Any
Resolution", ICLR 2024, Sec. 3.2), as used by FeatSharp (Ranzinger et al., arXiv:2502.16025, Sec. 3):
for a high-resolution position ``q`` and the low-resolution window ``Ω(q)`` around its parent cell,

    F_up[q] = Σ_p F[p] k_s(q, p) k_r(q, p) / Σ_p k_s(q, p) k_r(q, p),

with a Gaussian spatial kernel ``k_s`` (learned ``σ_s``, distances in high-resolution pixels) and a range
kernel ``k_r = softmax_p(<e(G[q]), e(G[p])> / σ_r²)`` over a learned 1x1-conv embedding ``e`` of the
guidance image. FeatUp evaluates it with a CUDA kernel; here it is ``unfold`` plus ``einsum`` (CPU and GPU).
The classical filter (Kopf et al., "Joint Bilateral Upsampling", SIGGRAPH 2007) uses a fixed Gaussian range
kernel on RGB differences instead.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from icml25.utils import check_scalar, check_tensor, init_rng
from icml25.utils.random import Seed

__all__ = ["JBULayer", "JBUStack", "joint_bilateral_upsample"]


def _check_pair(feats: torch.Tensor, guidance: torch.Tensor) -> None:
    check_tensor(feats, "feats", ndim=4, floating=True)
    check_tensor(guidance, "guidance", ndim=4, floating=True, finite=True)
    if guidance.shape[1] != 3 or guidance.shape[0] != feats.shape[0]:
        raise ValueError(f"guidance must be an RGB batch (B, 3, H, W) with the batch size of feats "
                         f"{tuple(feats.shape)}, got {tuple(guidance.shape)}")
    if 0 in feats.shape or 0 in guidance.shape:
        raise ValueError(f"feats and guidance must not be empty, got {tuple(feats.shape)} and {tuple(guidance.shape)}")


def _log_spatial_kernel(radius: int, factor: int, sigma: torch.Tensor) -> torch.Tensor:
    """``log k_s`` as (1, k², 1, s, 1, s): window entry (dy, dx) for sub-pixel (ay, ax) of a parent cell.

    The low-resolution cell ``j`` is centred at ``s (j + 1/2)`` and the high-resolution pixel ``s j + a`` at
    ``s j + a + 1/2`` (high-resolution units), so window offset ``d`` lies ``s d + s/2 - a - 1/2`` away.
    """
    k = 2 * radius + 1
    d = torch.arange(-radius, radius + 1, dtype=sigma.dtype, device=sigma.device)
    a = torch.arange(factor, dtype=sigma.dtype, device=sigma.device)
    off = factor * d[:, None] + factor / 2 - a[None] - 0.5  # (k, s)
    dist2 = off[:, None, :, None] ** 2 + off[None, :, None, :] ** 2  # (dy, dx, ay, ax)
    return (-dist2 / (2 * sigma**2)).reshape(1, k * k, 1, factor, 1, factor)


def _windows(x: torch.Tensor, radius: int) -> torch.Tensor:
    """(B, C, h, w) -> (B, C, k², h, w): the zero-padded (2r+1)² window around every cell."""
    b, c, h, w = x.shape
    k = 2 * radius + 1
    return F.unfold(x, k, padding=radius).view(b, c, k * k, h, w)


def _weighted_upsample(feats: torch.Tensor, log_weight: torch.Tensor, radius: int, factor: int) -> torch.Tensor:
    """Sum of the low-resolution windows weighted by ``softmax(log_weight)`` over the window axis.

    ``log_weight`` is (B, k², h, s, w, s); window entries that fall outside the map (zero padding) get no weight,
    and the softmax keeps the weights normalised however small they are.
    """
    b, c, h, w = feats.shape
    ones = torch.ones(1, 1, h, w, dtype=feats.dtype, device=feats.device)
    inside = _windows(ones, radius).view(1, -1, h, 1, w, 1) > 0
    weight = torch.softmax(log_weight.masked_fill(~inside, float("-inf")), dim=1)
    out = torch.einsum("bckhw,bkhawe->bchawe", _windows(feats, radius), weight)
    return out.reshape(b, c, h * factor, w * factor)


class JBULayer(nn.Module):
    """One learned 2x joint bilateral upsampling layer (FeatUp): spatial Gaussian times softmax range kernel.

    Parameters
    ----------
    dim : feature channels ``C``.
    radius : window radius in low-resolution cells (FeatUp: 3, a 7x7 window).
    guidance_dim : width of the 1x1-conv guidance embedding ``e``.
    seed : weight initialisation (``None``: torch's global RNG).

    A learned 1x1 "fixup" convolution (zero-initialised) adds a residual, as in FeatUp, so an untrained layer
    is a pure bilateral filter: it maps a constant map to the same constant.
    """

    def __init__(self, dim: int, radius: int = 3, guidance_dim: int = 16, seed: Seed = None) -> None:
        super().__init__()
        self.dim = check_scalar(dim, "dim", "int", min=1)
        self.radius = check_scalar(radius, "radius", "int", min=1)
        guidance_dim = check_scalar(guidance_dim, "guidance_dim", "int", min=1)
        with init_rng(seed):
            self.embed = nn.Sequential(nn.Conv2d(3, guidance_dim, 1), nn.GELU(),
                                       nn.Conv2d(guidance_dim, guidance_dim, 1))
            self.fixup = nn.Conv2d(dim, dim, 1)
        self.log_sigma_spatial = nn.Parameter(torch.tensor(0.0))
        self.log_sigma_range = nn.Parameter(torch.tensor(0.0))
        nn.init.zeros_(self.fixup.weight)
        nn.init.zeros_(self.fixup.bias)

    def forward(self, feats: torch.Tensor, guidance: torch.Tensor) -> torch.Tensor:
        """``feats`` (B, C, h, w) and RGB ``guidance`` (B, 3, H, W) of any size -> (B, C, 2h, 2w)."""
        _check_pair(feats, guidance)
        if feats.shape[1] != self.dim:
            raise ValueError(f"feats must have {self.dim} channels, got {feats.shape[1]}")
        b, _, h, w = feats.shape
        g = self.embed(F.interpolate(guidance, size=(2 * h, 2 * w), mode="bilinear", align_corners=False,
                                     antialias=guidance.shape[-1] > 2 * w))
        g_win = _windows(F.avg_pool2d(g, 2), self.radius)
        logits = torch.einsum("bekhw,behawf->bkhawf", g_win, g.view(b, -1, h, 2, w, 2))
        log_k = logits / self.log_sigma_range.exp() ** 2 + _log_spatial_kernel(self.radius, 2,
                                                                                self.log_sigma_spatial.exp())
        out = _weighted_upsample(feats, log_k, self.radius, 2)
        return out + self.fixup(out)


class JBUStack(nn.Module):
    """``log2(factor)`` :class:`JBULayer` s, each 2x, all guided by the same image (FeatUp's JBU upsampler)."""

    def __init__(self, dim: int, factor: int = 2, radius: int = 3, guidance_dim: int = 16, seed: Seed = None) -> None:
        super().__init__()
        factor = check_scalar(factor, "factor", "int", min=2)
        if factor & (factor - 1):
            raise ValueError(f"factor must be a power of 2 (stacked 2x layers), got {factor}")
        with init_rng(seed):
            self.layers = nn.ModuleList(JBULayer(dim, radius, guidance_dim) for _ in range(factor.bit_length() - 1))
        self.factor = factor

    def forward(self, feats: torch.Tensor, guidance: torch.Tensor) -> torch.Tensor:
        """Upsample ``feats`` (B, C, h, w) to (B, C, factor h, factor w)."""
        for layer in self.layers:
            feats = layer(feats, guidance)
        return feats


def joint_bilateral_upsample(feats: torch.Tensor, guidance: torch.Tensor, factor: int, sigma_spatial: float = 1.0,
                             sigma_range: float = 0.1, radius: int = 2) -> torch.Tensor:
    """Classical, training-free joint bilateral upsampling (Kopf et al., 2007) by an integer ``factor``.

    Weights are ``exp(-|q - p|² / 2σ_s²) exp(-|G[q] - G↓[p]|² / 2σ_r²)``, with ``G`` the RGB guidance resized to
    the output grid, ``G↓`` its ``factor``-average at the input grid, ``σ_s`` in high-resolution pixels and
    ``σ_r`` in RGB units. Returns (B, C, factor h, factor w).
    """
    _check_pair(feats, guidance)
    factor = check_scalar(factor, "factor", "int", min=1)
    sigma_spatial = check_scalar(sigma_spatial, "sigma_spatial", "real", min=0.0, inclusive="neither")
    sigma_range = check_scalar(sigma_range, "sigma_range", "real", min=0.0, inclusive="neither")
    radius = check_scalar(radius, "radius", "int", min=1)
    b, _, h, w = feats.shape
    g = F.interpolate(guidance.to(feats.dtype), size=(factor * h, factor * w), mode="bilinear",
                      align_corners=False, antialias=guidance.shape[-1] > factor * w)
    g_win = _windows(F.avg_pool2d(g, factor), radius)  # (B, 3, k², h, w)
    diff2 = ((g_win[:, :, :, :, None, :, None] - g.view(b, 3, 1, h, factor, w, factor)) ** 2).sum(1)
    sigma = torch.tensor(sigma_spatial, dtype=feats.dtype, device=feats.device)
    log_k = -diff2 / (2 * sigma_range**2) + _log_spatial_kernel(radius, factor, sigma)
    return _weighted_upsample(feats, log_k, radius, factor)

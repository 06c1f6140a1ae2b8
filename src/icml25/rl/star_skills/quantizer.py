"""Rotation-augmented residual skill quantization (RaRSQ, Algorithm 1 of Li et al., "STAR: Learning Diverse
Robot Skill Abstractions through Rotation-Augmented Vector Quantization", ICML 2025, arXiv:2506.03863).

Each residual ``r`` is replaced by its nearest code ``e`` through the rotation trick (Fifty et al. 2024,
arXiv:2410.06424): ``q = sg[s R] r`` with ``R`` the rotation taking ``r / |r|`` onto ``e / |e|`` and
``s = |e| / |r|``. The forward value of ``q`` is exactly ``e``; its Jacobian with respect to ``r`` is ``s R``,
so residuals in one code cell receive different gradients depending on their angle to the code. With
``rotation=False`` the same class is residual VQ with the straight-through estimator (Jacobian ``I``).
"""

from __future__ import annotations

import torch
from torch import nn

from icml25.utils.random import Seed, init_rng
from icml25.utils.validation import check_bool, check_scalar, check_tensor

__all__ = ["ResidualSkillQuantizer", "code_usage", "rotate_to", "rotation_apply"]


def rotation_apply(u: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``R x`` for the rotation ``R = I - 2 w wᵀ + 2 v uᵀ`` (``w = (u + v) / |u + v|``) that maps the unit
    vector ``u`` onto the unit vector ``v``, without forming ``R`` (batched over the leading axis, O(m)).

    Parameters
    ----------
    u, v : unit vectors ``[B, m]`` with ``u != -v``.
    x : vectors ``[B, m]`` to rotate.
    """
    for name, t in (("u", u), ("v", v), ("x", x)):
        check_tensor(t, name, ndim=2, floating=True)
    if u.shape != v.shape or u.shape != x.shape:
        raise ValueError(f"u, v and x must have one shape, got {tuple(u.shape)}, {tuple(v.shape)}, {tuple(x.shape)}")
    w = u + v
    w = w / w.norm(dim=-1, keepdim=True)
    return x - 2 * w * (w * x).sum(-1, keepdim=True) + 2 * v * (u * x).sum(-1, keepdim=True)


def rotate_to(r: torch.Tensor, e: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """The rotation-trick quantization of residuals ``r`` onto codes ``e`` (both ``[B, m]``).

    Forward: exactly ``e``. Backward: ``dq/dr = s R`` with ``s = |e| / |r|`` and ``R`` the rotation of
    ``r / |r|`` onto ``e / |e|`` (:func:`rotation_apply`), both treated as constants; no gradient reaches
    ``e`` (the codebook learns from the codebook loss). Rows where the rotation is ill-defined (``|r| < eps``
    or ``r ≈ -c e``) fall back to the straight-through estimator (``dq/dr = I``).
    """
    check_tensor(r, "r", ndim=2, floating=True)
    check_tensor(e, "e", ndim=2, floating=True)
    if e.shape != r.shape:
        raise ValueError(f"e must have the shape of r {tuple(r.shape)}, got {tuple(e.shape)}")
    eps = check_scalar(eps, "eps", "real", min=0.0, inclusive="neither")
    return _rotate(r, e, eps)[0]


def _rotate(r: torch.Tensor, e: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`rotate_to` without argument checks, with the mask of the rows that fell back to the STE."""
    with torch.no_grad():
        rn, en = r.norm(dim=-1, keepdim=True), e.norm(dim=-1, keepdim=True)
        u, v = r / rn.clamp_min(eps), e / en.clamp_min(eps)
        bad = (rn < eps) | (en < eps) | ((u + v).norm(dim=-1, keepdim=True) < eps)
        if bool(bad.any()):  # identity rotation and unit scale: the straight-through estimator
            u = torch.where(bad, torch.ones_like(u) / u.shape[-1] ** 0.5, u)
            v = torch.where(bad, u, v)
        s = torch.where(bad, torch.ones_like(rn), en / rn.clamp_min(eps))
        w = u + v
        w = w / w.norm(dim=-1, keepdim=True)
    moved = s * (r - 2 * w * (w * r).sum(-1, keepdim=True) + 2 * v * (u * r).sum(-1, keepdim=True))
    return e.detach() + (moved - moved.detach()), bad.squeeze(-1)


def code_usage(indices: torch.Tensor, codebook_size: int) -> list[dict[str, float]]:
    """Per depth: ``utilization`` (fraction of the ``codebook_size`` codes used at least once) and
    ``perplexity`` (``exp`` of the entropy of the empirical code distribution) of ``indices [N, D]``."""
    check_tensor(indices, "indices", ndim=2)
    codebook_size = check_scalar(codebook_size, "codebook_size", "int", min=1)
    if indices.shape[0] == 0:
        raise ValueError("indices must hold at least one row, got 0")
    if indices.is_floating_point() or indices.min() < 0 or indices.max() >= codebook_size:
        raise ValueError(f"indices must be integers in [0, {codebook_size}), got values in "
                         f"[{indices.min().item()}, {indices.max().item()}]")
    out = []
    for d in range(indices.shape[1]):
        counts = torch.bincount(indices[:, d].long(), minlength=codebook_size).double()
        p = counts / counts.sum()
        entropy = -(p[p > 0] * p[p > 0].log()).sum()
        out.append({"utilization": float((counts > 0).double().mean()), "perplexity": float(entropy.exp())})
    return out


class ResidualSkillQuantizer(nn.Module):
    """Residual vector quantizer over ``depth`` codebooks of ``codebook_size`` vectors (RaRSQ, Algorithm 1).

    Parameters
    ----------
    dim : latent size ``m``.
    codebook_size : codes per depth ``K`` (paper: 16).
    depth : number of residual stages ``D`` (paper: 2).
    rotation : the rotation trick (True) or the straight-through estimator (False, the "w/o rotation" ablation).
    beta : commitment weight; the loss is ``sum_d |sg[r] - e|² + beta |r - sg[e]|²`` (the standard pair; the
        paper writes one combined term and does not print ``beta``, 0.25 is VQ-VAE's value).
    ema : update the codebooks by exponential moving averages of their assigned residuals instead of the
        codebook loss (off by default, as in the paper).
    ema_decay : the EMA decay (0.8, vector-quantize-pytorch's default).
    kmeans_init : initialise each codebook by k-means on the first training batch's residuals (off by default).
    dead_code_threshold : in training, replace codes used by fewer than this many rows of a batch with the
        batch's largest residuals (0, the default, disables restarts).
    eps : the degeneracy tolerance of :func:`rotate_to`.
    seed : codebook initialisation (uniform in ``±sqrt(6 / (codebook_size * dim))``, vector-quantize-pytorch's
        default Kaiming-uniform initialisation of a ``[1, K, dim]`` codebook).

    ``forward(z)`` returns ``(z_hat, indices [B, D], loss)`` like ``vector_quantize_pytorch.ResidualVQ``;
    ``n_fallback`` counts the rows whose rotation fell back to the straight-through estimator.
    """

    def __init__(self, dim: int, codebook_size: int = 16, depth: int = 2, *, rotation: bool = True,
                 beta: float = 0.25, ema: bool = False, ema_decay: float = 0.8, kmeans_init: bool = False,
                 dead_code_threshold: int = 0, eps: float = 1e-6, seed: Seed = None) -> None:
        super().__init__()
        self.dim = check_scalar(dim, "dim", "int", min=1)
        self.codebook_size = check_scalar(codebook_size, "codebook_size", "int", min=2)
        self.depth = check_scalar(depth, "depth", "int", min=1)
        self.rotation = check_bool(rotation, "rotation")
        self.beta = check_scalar(beta, "beta", "real", min=0.0)
        self.ema = check_bool(ema, "ema")
        self.ema_decay = check_scalar(ema_decay, "ema_decay", "real", min=0.0, max=1.0, inclusive="left")
        self.kmeans_init = check_bool(kmeans_init, "kmeans_init")
        self.dead_code_threshold = check_scalar(dead_code_threshold, "dead_code_threshold", "int", min=0)
        self.eps = check_scalar(eps, "eps", "real", min=0.0, inclusive="neither")
        with init_rng(seed):
            bound = (6.0 / (self.codebook_size * self.dim)) ** 0.5
            codebooks = (2 * torch.rand(self.depth, self.codebook_size, self.dim) - 1) * bound
        self.codebooks = nn.Parameter(codebooks, requires_grad=not self.ema)
        self.register_buffer("ema_count", torch.ones(self.depth, self.codebook_size))
        self.register_buffer("ema_sum", codebooks.clone())
        self.register_buffer("initialised", torch.tensor(not self.kmeans_init))
        self.n_fallback = 0

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Quantize ``z [B, dim]``: ``(z_hat, indices [B, D] int64, loss)`` (Algorithm 1)."""
        check_tensor(z, "z", ndim=2, floating=True, shape=(None, self.dim))
        if len(z) == 0:
            raise ValueError("z must hold at least one row, got 0")
        if self.training and not bool(self.initialised):
            self._kmeans(z.detach())
        residual, z_hat = z, torch.zeros_like(z)
        indices, loss = [], z.new_zeros(())
        for d in range(self.depth):
            book = self.codebooks[d].to(z.dtype)
            k = torch.cdist(residual.detach(), book.detach()).argmin(-1)
            e = book[k]
            loss = loss + self.beta * ((residual - e.detach()) ** 2).sum(-1).mean()
            if not self.ema:
                loss = loss + ((residual.detach() - e) ** 2).sum(-1).mean()
            if self.rotation:
                q, bad = _rotate(residual, e, self.eps)
                self.n_fallback += int(bad.sum())
            else:
                q = e.detach() + (residual - residual.detach())
            if self.training:
                self._maintain(d, residual.detach(), k)
            residual = residual - q
            z_hat = z_hat + q
            indices.append(k)
        return z_hat, torch.stack(indices, dim=1), loss

    def codes_from_indices(self, indices: torch.Tensor) -> torch.Tensor:
        """``sum_d e_{d, k_d}`` for ``indices [B, D]`` (the decoder's input at inference; no rotation)."""
        check_tensor(indices, "indices", ndim=2, shape=(None, self.depth))
        if indices.is_floating_point():
            raise TypeError(f"indices must be an integer tensor, got dtype {indices.dtype}")
        for d in range(self.depth):
            col = indices[:, d]
            if col.numel() and (col.min() < 0 or col.max() >= self.codebook_size):
                raise IndexError(f"indices at depth {d} must lie in [0, {self.codebook_size}), got values in "
                                 f"[{col.min().item()}, {col.max().item()}]")
        return sum(self.codebooks[d][indices[:, d]] for d in range(self.depth))

    def usage_stats(self, indices: torch.Tensor) -> list[dict[str, float]]:
        """:func:`code_usage` of ``indices`` with this quantizer's codebook size."""
        return code_usage(indices, self.codebook_size)

    @torch.no_grad()
    def _kmeans(self, z: torch.Tensor, iters: int = 10) -> None:
        residual = z
        for d in range(self.depth):
            pick = torch.linspace(0, len(residual) - 1, self.codebook_size, device=z.device).long()
            centres = residual[pick].clone()
            for _ in range(iters):
                k = torch.cdist(residual, centres).argmin(-1)
                for j in range(self.codebook_size):
                    if (k == j).any():
                        centres[j] = residual[k == j].mean(0)
            self.codebooks[d].copy_(centres)
            self.ema_sum[d].copy_(centres)
            residual = residual - centres[torch.cdist(residual, centres).argmin(-1)]
        self.initialised.fill_(True)

    @torch.no_grad()
    def _maintain(self, d: int, residual: torch.Tensor, k: torch.Tensor) -> None:
        counts = torch.bincount(k, minlength=self.codebook_size).to(residual.dtype)
        if self.ema:
            sums = torch.zeros(self.codebook_size, self.dim, dtype=residual.dtype, device=residual.device)
            sums.index_add_(0, k, residual)
            self.ema_count[d].mul_(self.ema_decay).add_(counts.to(self.ema_count.dtype), alpha=1 - self.ema_decay)
            self.ema_sum[d].mul_(self.ema_decay).add_(sums.to(self.ema_sum.dtype), alpha=1 - self.ema_decay)
            self.codebooks[d].copy_(self.ema_sum[d] / self.ema_count[d].clamp_min(1e-5).unsqueeze(-1))
        if self.dead_code_threshold:
            dead = (counts < self.dead_code_threshold).nonzero().flatten()
            if len(dead):  # the batch's residuals farthest from the origin, deterministic
                pick = residual.norm(dim=-1).topk(min(len(dead), len(residual))).indices
                dead = dead[:len(pick)]
                self.codebooks[d][dead] = residual[pick].to(self.codebooks.dtype)
                self.ema_sum[d][dead] = residual[pick].to(self.ema_sum.dtype)
                self.ema_count[d][dead] = 1.0

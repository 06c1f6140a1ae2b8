"""Multi-view consistency training of feature upsamplers (FeatUp, Fu et al., ICLR 2024; FeatSharp, arXiv:2502.16025).

The encoder stays frozen; only unlabeled images are needed. For an image ``I`` and a random view transform ``t``
(flip, zoom, shift; an affine map of normalised coordinates), the upsampled features ``H = up(I)`` are warped by
``t`` and brought back to the encoder's grid by a learned downsampler ``D``; they must match the encoder's own
(de-biased) features of the transformed image:

    L = Σ_q w(q) m(q) |D(t(H))[q] - (b + f(t(I)))[q]|² / Σ_q m(q),

with ``m`` the valid region of the warp and ``w`` FeatSharp's loss grid, which weighs the positions fed by
tile-seam rows and columns ``grid_weight`` times more (normalised to mean 1). An optional total-variation term
``tv_weight · TV(H)`` regularises ``H``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from icml25.utils import check_choice, check_instance, check_scalar, check_tensor, init_rng, torch_generator
from icml25.utils.random import Seed

__all__ = ["AttentionDownsampler", "BlurDownsampler", "MultiViewTrainer", "multiview_loss", "random_views",
           "warp"]


def random_views(n: int, *, max_zoom: float = 1.5, max_shift: float = 0.1, flip: bool = True,
                 seed: Seed = None) -> torch.Tensor:
    """``n`` random affine views as (n, 2, 3) matrices in ``torch.nn.functional.affine_grid``'s convention.

    Each view zooms in by ``z ~ U[1, max_zoom]`` (it sees ``1/z`` of the image side), mirrors horizontally with
    probability 1/2 when ``flip``, and shifts its centre anywhere that keeps the view inside the image plus a
    margin of ``max_shift`` (in units of the half side); outside the image is padding, masked in the loss.
    """
    n = check_scalar(n, "n", "int", min=1)
    max_zoom = check_scalar(max_zoom, "max_zoom", "real", min=1.0)
    max_shift = check_scalar(max_shift, "max_shift", "real", min=0.0)
    check_instance(flip, "flip", bool, "True or False")
    g = torch_generator(seed)
    scale = 1.0 / (1.0 + (max_zoom - 1.0) * torch.rand(n, generator=g, dtype=torch.float64))
    mirror = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).double() if flip else torch.ones(n).double()
    reach = 1.0 - scale + max_shift
    shift = (2 * torch.rand(n, 2, generator=g, dtype=torch.float64) - 1) * reach[:, None]
    theta = torch.zeros(n, 2, 3, dtype=torch.float64)
    theta[:, 0, 0], theta[:, 1, 1] = mirror * scale, scale
    theta[:, :, 2] = shift
    return theta.float()


def warp(x: torch.Tensor, theta: torch.Tensor, size: tuple[int, int] | None = None) -> torch.Tensor:
    """Resample ``x`` (B, C, H, W) through the views ``theta`` (B, 2, 3) onto a ``size`` grid (default (H, W));
    bilinear, zeros outside."""
    check_tensor(x, "x", ndim=4, floating=True)
    if x.shape[0] == 0:
        raise ValueError("x must not be empty")
    check_tensor(theta, "theta", ndim=3, shape=(x.shape[0], 2, 3), floating=True)
    size = tuple(size) if size is not None else tuple(x.shape[-2:])
    grid = F.affine_grid(theta.to(x.dtype), [x.shape[0], x.shape[1], *size], align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


class BlurDownsampler(nn.Module):
    """Learned ``2s x 2s`` blur with stride ``s``, the same softplus-normalised kernel for every channel
    (FeatUp's simple downsampler); initialised close to an ``s x s`` box average."""

    def __init__(self, factor: int) -> None:
        super().__init__()
        self.factor = check_scalar(factor, "factor", "int", min=1)
        k = 2 * factor
        init = torch.full((k, k), -4.0)
        init[factor // 2:factor // 2 + factor, factor // 2:factor // 2 + factor] = 2.0
        self.logits = nn.Parameter(init)

    def kernel(self) -> torch.Tensor:
        """The current (2s, 2s) kernel, non-negative and summing to 1."""
        w = F.softplus(self.logits)
        return w / w.sum()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, s h, s w) -> (B, C, h, w)."""
        check_tensor(x, "x", ndim=4, floating=True)
        s, c = self.factor, x.shape[1]
        x = F.pad(x, (s // 2, s - s // 2, s // 2, s - s // 2), mode="replicate")
        weight = self.kernel().to(x.dtype)[None, None].expand(c, 1, 2 * s, 2 * s)
        return F.conv2d(x, weight, stride=s, groups=c)


class AttentionDownsampler(nn.Module):
    """FeatUp's attention downsampler, simplified: each output cell averages its ``s x s`` patch with weights
    ``softmax(a(H) + k)``, ``a`` a learned 1x1 conv saliency and ``k`` a learned spatial logit per patch position.
    Deterministic (no dropout), so eval and batch size 1 give the same numbers."""

    def __init__(self, dim: int, factor: int, seed: Seed = None) -> None:
        super().__init__()
        dim = check_scalar(dim, "dim", "int", min=1)
        self.factor = check_scalar(factor, "factor", "int", min=1)
        with init_rng(seed):
            self.saliency = nn.Conv2d(dim, 1, 1)
        nn.init.zeros_(self.saliency.weight)
        self.spatial = nn.Parameter(torch.zeros(factor * factor))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, s h, s w) -> (B, C, h, w)."""
        check_tensor(x, "x", ndim=4, floating=True)
        b, c, hh, ww = x.shape
        s = self.factor
        h, w = hh // s, ww // s
        patches = F.unfold(x, s, stride=s).view(b, c, s * s, h * w)
        logits = F.unfold(self.saliency(x), s, stride=s).view(b, 1, s * s, h * w) + self.spatial[:, None]
        return (patches * torch.softmax(logits, dim=2)).sum(2).view(b, c, h, w)


def _seam_weights(size: int, tiles: int, grid_weight: float, like: torch.Tensor) -> torch.Tensor:
    """(1, 1, size, size): ``grid_weight`` on the rows and columns next to an inner tile boundary, 1 elsewhere."""
    line = torch.ones(size, dtype=like.dtype, device=like.device)
    step = size // tiles
    for k in range(1, tiles):
        line[k * step - 1:k * step + 1] = grid_weight
    grid = torch.maximum(line[:, None], line[None, :])
    return grid[None, None]


def multiview_loss(upsampler: nn.Module, downsampler: nn.Module | None, images: torch.Tensor, thetas: torch.Tensor,
                   *, grid_weight: float = 1.0, tv_weight: float = 0.0) -> torch.Tensor:
    """The multi-view consistency loss (module docstring) of ``upsampler`` on ``images`` (B, 3, H, W) under the
    views ``thetas`` (B, V, 2, 3); ``downsampler=None`` is an ``s x s`` average. A scalar tensor."""
    check_tensor(images, "images", ndim=4, floating=True, finite=True)
    check_tensor(thetas, "thetas", ndim=4, shape=(images.shape[0], None, 2, 3), floating=True, finite=True)
    grid_weight = check_scalar(grid_weight, "grid_weight", "real", min=0.0, inclusive="neither")
    tv_weight = check_scalar(tv_weight, "tv_weight", "real", min=0.0)
    b, v = thetas.shape[:2]
    s = upsampler.factor
    hr = upsampler(images)
    theta = thetas.reshape(b * v, 2, 3).to(images.dtype)
    views = warp(images.repeat_interleave(v, 0), theta)
    target = upsampler.encode(views)
    warped = warp(hr.repeat_interleave(v, 0), theta)
    pred = downsampler(warped) if downsampler is not None else F.avg_pool2d(warped, s)
    ones = torch.ones(b * v, 1, *hr.shape[-2:], dtype=hr.dtype, device=hr.device)
    mask = (F.avg_pool2d(warp(ones, theta), s) > 0.999).to(hr.dtype)
    weight = F.avg_pool2d(warp(_seam_weights(hr.shape[-1], s, grid_weight, hr).expand_as(ones), theta), s) * mask
    weight = weight / (weight.sum() / mask.sum().clamp_min(1.0)).clamp_min(1e-12)
    err = ((pred - target) ** 2).mean(1, keepdim=True)
    loss = (err * weight).sum() / mask.sum().clamp_min(1.0)
    if tv_weight > 0:
        tv = (hr[..., 1:, :] - hr[..., :-1, :]).abs().mean() + (hr[..., :, 1:] - hr[..., :, :-1]).abs().mean()
        loss = loss + tv_weight * tv
    return loss


class MultiViewTrainer:
    """Train an upsampler (:class:`~icml25.vision.FeatSharp`, :class:`~icml25.vision.JBUUpsampler`, ...) by
    multi-view consistency with a learned downsampler; the encoder stays frozen.

    Parameters
    ----------
    upsampler : module with ``forward(image)``, ``encode(image)`` and ``factor``.
    downsampler : ``"blur"`` (:class:`BlurDownsampler`) or ``"attention"`` (:class:`AttentionDownsampler`).
    n_views : random views per image and step.
    grid_weight : weight of the tile-seam rows/columns in the loss grid (FeatSharp: 2.0).
    tv_weight : total-variation weight on the upsampled map (0: off).
    max_zoom, max_shift, flip : the view distribution (:func:`random_views`).
    seed : views, batches and the downsampler's initialisation.
    """

    def __init__(self, upsampler: nn.Module, downsampler: str = "blur", n_views: int = 4, grid_weight: float = 2.0,
                 tv_weight: float = 0.0, max_zoom: float = 1.5, max_shift: float = 0.1, flip: bool = True,
                 seed: Seed = 0) -> None:
        check_instance(upsampler, "upsampler", nn.Module, "an upsampler module")
        for attr in ("encode", "factor"):
            if not hasattr(upsampler, attr):
                raise TypeError(f"upsampler must have {attr!r} (an icml25.vision upsampler), got "
                                f"{type(upsampler).__name__}")
        self.upsampler = upsampler
        check_choice(downsampler, "downsampler", ("blur", "attention"))
        self.downsampler = (BlurDownsampler(upsampler.factor) if downsampler == "blur"
                            else AttentionDownsampler(upsampler.dim, upsampler.factor, seed=seed))
        self.n_views = check_scalar(n_views, "n_views", "int", min=1)
        self.grid_weight = check_scalar(grid_weight, "grid_weight", "real", min=0.0, inclusive="neither")
        self.tv_weight = check_scalar(tv_weight, "tv_weight", "real", min=0.0)
        self.view_args = {"max_zoom": check_scalar(max_zoom, "max_zoom", "real", min=1.0),
                          "max_shift": check_scalar(max_shift, "max_shift", "real", min=0.0),
                          "flip": check_instance(flip, "flip", bool, "True or False")}
        self.generator = torch_generator(seed)

    def fit(self, images: torch.Tensor, steps: int = 300, batch_size: int = 16, lr: float = 1e-3,
            weight_decay: float = 1e-4) -> list[float]:
        """Train on ``images`` (n, 3, H, W) for ``steps`` AdamW steps with cosine decay; return the losses."""
        check_tensor(images, "images", ndim=4, floating=True, finite=True)
        if images.shape[0] == 0:
            raise ValueError("images must not be empty")
        steps = check_scalar(steps, "steps", "int", min=1)
        batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
        lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
        weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
        self.downsampler.to(device=images.device, dtype=images.dtype)
        params = [p for p in (*self.upsampler.parameters(), *self.downsampler.parameters()) if p.requires_grad]
        if not params:
            raise ValueError("the upsampler has no trainable parameters")
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        self.upsampler.train()
        losses = []
        for _ in range(steps):
            idx = torch.randint(images.shape[0], (min(batch_size, images.shape[0]),), generator=self.generator)
            thetas = random_views(len(idx) * self.n_views, seed=int(torch.randint(2**62, (1,),
                                                                                    generator=self.generator)),
                                  **self.view_args).view(len(idx), self.n_views, 2, 3)
            loss = multiview_loss(self.upsampler, self.downsampler, images[idx], thetas,
                                  grid_weight=self.grid_weight, tv_weight=self.tv_weight)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        self.upsampler.eval()
        return losses

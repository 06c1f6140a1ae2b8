"""Evaluation of feature upsamplers (FeatSharp, arXiv:2502.16025, Sec. 4): multi-view fidelity, tile-seam
visibility and linear-probe semantic segmentation (mIoU and boundary F-score)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from icml25.utils import check_scalar, check_tensor, torch_generator
from icml25.utils.random import Seed
from icml25.vision.train import multiview_loss, random_views

__all__ = ["boundary_fscore", "linear_probe_miou", "multiview_fidelity", "seam_ratio"]


@torch.no_grad()
def multiview_fidelity(upsampler: nn.Module, images: torch.Tensor, *, n_views: int = 4,
                       downsampler: nn.Module | None = None, batch_size: int = 50, seed: Seed = 0,
                       max_zoom: float = 1.5, max_shift: float = 0.1) -> float:
    """Held-out multi-view reconstruction error: the masked MSE of :func:`~icml25.vision.multiview_loss`
    (no seam weighting) over ``n_views`` fixed random views per image (the same views for every upsampler
    given the same ``seed``). ``downsampler=None`` is an ``s x s`` average."""
    check_tensor(images, "images", ndim=4, floating=True, finite=True)
    n_views = check_scalar(n_views, "n_views", "int", min=1)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    if images.shape[0] == 0:
        raise ValueError("images must not be empty")
    thetas = random_views(images.shape[0] * n_views, max_zoom=max_zoom, max_shift=max_shift, seed=seed)
    thetas = thetas.view(images.shape[0], n_views, 2, 3)
    was_training = upsampler.training
    upsampler.eval()
    total = 0.0
    for start in range(0, images.shape[0], batch_size):
        chunk = images[start:start + batch_size]
        total += float(multiview_loss(upsampler, downsampler, chunk, thetas[start:start + batch_size])) * len(chunk)
    upsampler.train(was_training)
    return total / images.shape[0]


def seam_ratio(features: torch.Tensor, tiles: int) -> float:
    """Mean feature-gradient magnitude across the inner tile boundaries over the mean elsewhere.

    ``features`` (B, C, H, W) on a grid of ``tiles x tiles`` tiles; the gradient is the L2 norm over channels of
    the difference between neighbouring rows (columns). 1 means seams are as sharp as any other position.
    """
    check_tensor(features, "features", ndim=4, floating=True, finite=True)
    tiles = check_scalar(tiles, "tiles", "int", min=2)
    if features.numel() == 0:
        raise ValueError(f"features must not be empty, got shape {tuple(features.shape)}")
    h, w = features.shape[-2:]
    if h % tiles or w % tiles or min(h, w) < 2 * tiles:
        raise ValueError(f"features' grid {(h, w)} must split into {tiles} x {tiles} tiles of >= 2 cells")
    dy = (features[:, :, 1:] - features[:, :, :-1]).norm(dim=1)  # (B, H-1, W)
    dx = (features[..., 1:] - features[..., :-1]).norm(dim=1)  # (B, H, W-1)
    seam_y = torch.zeros(h - 1, dtype=torch.bool)
    seam_y[torch.arange(1, tiles) * (h // tiles) - 1] = True
    seam_x = torch.zeros(w - 1, dtype=torch.bool)
    seam_x[torch.arange(1, tiles) * (w // tiles) - 1] = True
    on = torch.cat([dy[:, seam_y].flatten(), dx[..., seam_x].flatten()])
    off = torch.cat([dy[:, ~seam_y].flatten(), dx[..., ~seam_x].flatten()])
    return float(on.mean() / off.mean().clamp_min(torch.finfo(features.dtype).tiny))


def _probe_inputs(features: torch.Tensor, masks: torch.Tensor, name: str) -> torch.Tensor:
    check_tensor(features, f"{name}_features", ndim=4, floating=True, finite=True)
    check_tensor(masks, f"{name}_masks", ndim=3)
    if masks.dtype not in (torch.int64, torch.int32, torch.uint8) or masks.shape[0] != features.shape[0]:
        raise ValueError(f"{name}_masks must be integer labels (n, H, W) with n = {features.shape[0]}, got "
                         f"{masks.dtype} {tuple(masks.shape)}")
    if features.shape[0] == 0:
        raise ValueError(f"{name}_features must not be empty")
    return F.interpolate(features, size=masks.shape[-2:], mode="bilinear", align_corners=False)


def linear_probe_miou(train_features: torch.Tensor, train_masks: torch.Tensor, test_features: torch.Tensor,
                      test_masks: torch.Tensor, *, n_classes: int | None = None, steps: int = 200, lr: float = 0.05,
                      weight_decay: float = 1e-4, max_pixels: int = 100_000, seed: Seed = 0,
                      return_predictions: bool = False) -> float | tuple[float, torch.Tensor]:
    """Linear-probe semantic segmentation on frozen features: mean IoU over the classes present in the test set.

    Features (n, C, h, w) are bilinearly resized to the masks' grid (n, H, W), standardised per channel with the
    training statistics, and a per-pixel linear classifier is fitted by full-batch Adam (cross-entropy) on at
    most ``max_pixels`` random training pixels. Returns mIoU in [0, 1] (and the test predictions (n, H, W)).
    """
    x_tr = _probe_inputs(train_features, train_masks, "train")
    x_te = _probe_inputs(test_features, test_masks, "test")
    if x_tr.shape[1] != x_te.shape[1]:
        raise ValueError(f"train and test features must have the same channels, got {x_tr.shape[1]} and "
                         f"{x_te.shape[1]}")
    n_classes = int(max(train_masks.max(), test_masks.max())) + 1 if n_classes is None else \
        check_scalar(n_classes, "n_classes", "int", min=2)
    steps = check_scalar(steps, "steps", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
    max_pixels = check_scalar(max_pixels, "max_pixels", "int", min=1)
    c = x_tr.shape[1]
    pix = x_tr.permute(0, 2, 3, 1).reshape(-1, c)
    lab = train_masks.reshape(-1).long()
    if int(lab.max()) >= n_classes:
        raise ValueError(f"train_masks has label {int(lab.max())} >= n_classes={n_classes}")
    g = torch_generator(seed)
    if pix.shape[0] > max_pixels:
        keep = torch.randperm(pix.shape[0], generator=g)[:max_pixels]
        pix, lab = pix[keep], lab[keep]
    mean, std = pix.mean(0), pix.std(0).clamp_min(1e-6)
    pix = (pix - mean) / std
    weight = torch.zeros(c, n_classes, dtype=pix.dtype, requires_grad=True)
    bias = torch.zeros(n_classes, dtype=pix.dtype, requires_grad=True)
    opt = torch.optim.Adam([weight, bias], lr=lr, weight_decay=weight_decay)
    for _ in range(steps):
        loss = F.cross_entropy(pix @ weight + bias, lab)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        test_pix = (x_te.permute(0, 2, 3, 1) - mean) / std
        pred = (test_pix @ weight + bias).argmax(-1)
    target = test_masks.long()
    ious = []
    for k in range(n_classes):
        union = ((pred == k) | (target == k)).sum()
        if bool((target == k).any()):
            ious.append(float(((pred == k) & (target == k)).sum() / union))
    miou = sum(ious) / len(ious)
    return (miou, pred) if return_predictions else miou


def _boundaries(labels: torch.Tensor) -> torch.Tensor:
    edge = torch.zeros_like(labels, dtype=torch.bool)
    edge[:, 1:] |= labels[:, 1:] != labels[:, :-1]
    edge[:, :, 1:] |= labels[:, :, 1:] != labels[:, :, :-1]
    return edge


def boundary_fscore(pred: torch.Tensor, target: torch.Tensor, tolerance: int = 1) -> float:
    """F-score of the label boundaries of ``pred`` against ``target`` (both (n, H, W) integer maps), a boundary
    pixel counting as matched when the other map has one within ``tolerance`` pixels (Chebyshev distance)."""
    check_tensor(pred, "pred", ndim=3)
    if pred.numel() == 0:
        raise ValueError(f"pred must not be empty, got shape {tuple(pred.shape)}")
    check_tensor(target, "target", ndim=3, shape=tuple(pred.shape))
    tolerance = check_scalar(tolerance, "tolerance", "int", min=0)
    bp, bt = _boundaries(pred), _boundaries(target)
    k = 2 * tolerance + 1
    near_t = F.max_pool2d(bt[:, None].float(), k, stride=1, padding=tolerance)[:, 0] > 0
    near_p = F.max_pool2d(bp[:, None].float(), k, stride=1, padding=tolerance)[:, 0] > 0
    precision = float((bp & near_t).sum() / bp.sum().clamp_min(1))
    recall = float((bt & near_p).sum() / bt.sum().clamp_min(1))
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)

"""Frozen vision encoders for feature upsampling: a tiny fixed-resolution ViT and a token-to-map adapter.

FeatSharp (Ranzinger et al., arXiv:2502.16025) upsamples the features of encoders that only work at their
native resolution (CLIP, SigLIP). :class:`TinyViT` is such an encoder at toy scale: learned absolute
position embeddings for one input size, so it rejects any other size, like a CLIP ViT without interpolation.
:class:`FeatureMapEncoder` turns a token-returning encoder (a ``timm`` ViT's ``forward_features``: prefix
tokens then patch tokens, ``(B, N, C)``) into the ``(B, C, h, w)`` map the upsamplers take.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from icml25.utils import check_bool, check_scalar, check_tensor, init_rng, torch_generator
from icml25.utils.random import Seed

__all__ = ["FeatureMapEncoder", "TinyViT", "train_tiny_vit"]


class TinyViT(nn.Module):
    """A small pre-norm ViT for one input size; ``forward(x)`` is the (B, dim, img_size/patch, img_size/patch)
    feature map after the final LayerNorm and ``logits(x)`` a mean-pooled linear head (multi-label training).

    Parameters
    ----------
    img_size, patch : native input side ``R`` and patch size ``p`` (``R`` divisible by ``p``).
    dim, depth, heads : width, number of blocks, attention heads (``dim`` divisible by ``heads``).
    n_classes : outputs of the head.
    conv_stem : embed patches with a small convolutional stem (3x3 convolutions, stride 2 each, then a
        ``patch / 4``-strided projection; Xiao et al., "Early Convolutions Help Transformers See Better",
        NeurIPS 2021) instead of one linear patch projection; needs ``patch`` divisible by 4.
    seed : weight initialisation (``None``: torch's global RNG).
    """

    def __init__(self, img_size: int = 32, patch: int = 4, dim: int = 64, depth: int = 4, heads: int = 4,
                 n_classes: int = 10, conv_stem: bool = False, seed: Seed = None) -> None:
        super().__init__()
        self.img_size = check_scalar(img_size, "img_size", "int", min=1)
        self.patch = check_scalar(patch, "patch", "int", min=1)
        self.dim = check_scalar(dim, "dim", "int", min=1)
        depth = check_scalar(depth, "depth", "int", min=1)
        heads = check_scalar(heads, "heads", "int", min=1)
        n_classes = check_scalar(n_classes, "n_classes", "int", min=1)
        if img_size % patch:
            raise ValueError(f"img_size must be divisible by patch, got {img_size} and {patch}")
        if dim % heads:
            raise ValueError(f"dim must be divisible by heads, got {dim} and {heads}")
        if check_bool(conv_stem, "conv_stem") and patch % 4:
            raise ValueError(f"conv_stem needs patch divisible by 4, got {patch}")
        self.grid = img_size // patch
        with init_rng(seed):
            stem = (nn.Conv2d(3, dim // 2, 3, 2, 1), nn.GELU(), nn.Conv2d(dim // 2, dim, 3, 2, 1), nn.GELU(),
                    nn.Conv2d(dim, dim, patch // 4, patch // 4))
            self.patch_embed = nn.Sequential(*stem) if conv_stem else nn.Conv2d(3, dim, patch, stride=patch)
            self.pos_embed = nn.Parameter(0.02 * torch.randn(1, self.grid**2, dim))
            layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Images (B, 3, R, R) -> feature map (B, dim, R/p, R/p)."""
        check_tensor(x, "x", ndim=4, floating=True)
        if tuple(x.shape[1:]) != (3, self.img_size, self.img_size):
            raise ValueError(f"x must be (B, 3, {self.img_size}, {self.img_size}) (the native resolution only), "
                             f"got {tuple(x.shape)}")
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2) + self.pos_embed
        tokens = self.norm(self.blocks(tokens))
        return tokens.transpose(1, 2).reshape(x.shape[0], self.dim, self.grid, self.grid)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """Class logits (B, n_classes) of the mean-pooled feature map."""
        return self.head(self(x).mean((2, 3)))


def train_tiny_vit(model: TinyViT, images: torch.Tensor, labels: torch.Tensor, *, steps: int = 1000,
                   batch_size: int = 64, lr: float = 2e-3, weight_decay: float = 0.05, balance_classes: bool = False,
                   seed: Seed = 0) -> list[float]:
    """Train ``model`` at its native resolution on ``images`` (n, 3, R, R).

    ``labels`` (n, K) in [0, 1] are multi-label targets of the mean-pooled head (binary cross-entropy, e.g. digit
    presence); ``labels`` (n, K, R/p, R/p) are per-patch class distributions (soft-label cross-entropy of the
    head applied to every token, e.g. the label fractions inside each patch), with ``balance_classes`` weighting
    each class by its inverse frequency (a background-dominated label map otherwise teaches little). AdamW with a
    linear warm-up (5 % of the steps) and cosine decay. Returns the loss of every step; the model is left in eval mode.
    """
    check_tensor(images, "images", ndim=4, floating=True, finite=True)
    check_tensor(labels, "labels", ndim=(2, 4), floating=True, finite=True)
    if labels.shape[0] != images.shape[0] or images.shape[0] == 0:
        raise ValueError(f"images and labels must have the same non-zero length, got {images.shape[0]} "
                         f"and {labels.shape[0]}")
    if labels.ndim == 4 and tuple(labels.shape[2:]) != (model.grid, model.grid):
        raise ValueError(f"per-patch labels must be (n, K, {model.grid}, {model.grid}), got {tuple(labels.shape)}")
    steps = check_scalar(steps, "steps", "int", min=1)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
    class_weight = None
    if check_bool(balance_classes, "balance_classes") and labels.ndim == 4:
        freq = labels.mean((0, 2, 3)).clamp_min(1e-3)
        class_weight = 1 / (freq * len(freq))
    generator = torch_generator(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, _warmup_cosine(steps))
    model.train()
    losses = []
    for _ in range(steps):
        idx = torch.randint(images.shape[0], (min(batch_size, images.shape[0]),), generator=generator)
        if labels.ndim == 2:
            loss = F.binary_cross_entropy_with_logits(model.logits(images[idx]), labels[idx])
        else:
            token_logits = model.head(model(images[idx]).permute(0, 2, 3, 1))  # (B, h, w, K)
            loss = F.cross_entropy(token_logits.permute(0, 3, 1, 2), labels[idx], weight=class_weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    model.eval()
    return losses


def _warmup_cosine(steps: int, warmup: float = 0.05) -> Callable[[int], float]:
    n_warm = max(1, int(warmup * steps))

    def factor(step: int) -> float:
        if step < n_warm:
            return (step + 1) / n_warm
        return 0.5 * (1 + torch.cos(torch.tensor(torch.pi * (step - n_warm) / max(1, steps - n_warm))).item())

    return factor


class FeatureMapEncoder(nn.Module):
    """Wrap a token encoder ``(B, 3, H, W) -> (B, N, C)`` into ``(B, 3, H, W) -> (B, C, h, w)``.

    ``model.<method>`` is called when the model has that method (``timm`` ViTs: ``forward_features``), else
    ``model`` itself. The first ``num_prefix_tokens`` tokens (CLS, registers; ``None``: the model's
    ``num_prefix_tokens`` attribute, else 0) are dropped and the rest reshaped to a square grid (or
    ``grid = (h, w)``). Outputs that already are (B, C, h, w) pass through.
    """

    def __init__(self, model: Callable[[torch.Tensor], torch.Tensor], num_prefix_tokens: int | None = None,
                 grid: tuple[int, int] | None = None, method: str = "forward_features") -> None:
        super().__init__()
        if not callable(model):
            raise TypeError(f"model must be callable (images -> tokens), got {type(model).__name__}")
        if not isinstance(method, str):
            raise TypeError(f"method must be a method name (str), got {type(method).__name__}")
        self.model = model
        self.method = method
        if num_prefix_tokens is None:
            num_prefix_tokens = getattr(model, "num_prefix_tokens", 0)
        self.num_prefix_tokens = check_scalar(num_prefix_tokens, "num_prefix_tokens", "int", min=0)
        if grid is not None:
            if not (isinstance(grid, (tuple, list)) and len(grid) == 2):
                raise TypeError(f"grid must be a pair (h, w) or None, got {grid!r}")
            grid = (check_scalar(grid[0], "grid[0]", "int", min=1), check_scalar(grid[1], "grid[1]", "int", min=1))
        self.grid = grid

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Images -> feature map (B, C, h, w)."""
        out = getattr(self.model, self.method, self.model)(x)
        if not isinstance(out, torch.Tensor) or out.ndim not in (3, 4):
            raise ValueError("the encoder must return tokens (B, N, C) or a map (B, C, h, w), got "
                             f"{getattr(out, 'shape', type(out).__name__)}")
        if out.ndim == 4:
            return out
        tokens = out[:, self.num_prefix_tokens:]
        n = tokens.shape[1]
        h, w = self.grid or (round(n**0.5), round(n**0.5))
        if h * w != n:
            raise ValueError(f"{n} patch tokens (after dropping {self.num_prefix_tokens} prefix tokens) do not "
                             f"fill a {h}x{w} grid; set num_prefix_tokens or grid")
        return tokens.transpose(1, 2).reshape(tokens.shape[0], tokens.shape[2], h, w)

"""Synthetic digit scenes with exact per-pixel labels, composed from scikit-learn's 8x8 digits.

Used by the FeatSharp reproduction (Ranzinger et al., "FeatSharp: Your Vision Model Features, Sharper",
arXiv:2502.16025) as an offline stand-in for dense-prediction benchmarks.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits

from icml25.utils import as_generator, check_scalar
from icml25.utils.random import Seed


def digit_scenes(n: int, size: int = 64, *, min_digits: int = 2, max_digits: int = 5, min_scale: int = 12,
                 max_scale: int = 28, seed: Seed = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` RGB scenes of 2-5 coloured digits on a noisy background, with their label maps.

    Returns ``images`` (n, 3, size, size) in [0, 1] and ``masks`` (n, size, size) int64 with 0 = background and
    ``d + 1`` for digit ``d`` (11 classes); later digits are drawn over earlier ones. A thin random line is added
    as a distractor (label background).
    """
    n = check_scalar(n, "n", "int", min=1)
    size = check_scalar(size, "size", "int", min=16)
    min_digits = check_scalar(min_digits, "min_digits", "int", min=1)
    max_digits = check_scalar(max_digits, "max_digits", "int", min=min_digits)
    min_scale = check_scalar(min_scale, "min_scale", "int", min=4, max=size)
    max_scale = check_scalar(max_scale, "max_scale", "int", min=min_scale, max=size)
    rng = as_generator(seed)
    digits = load_digits()
    glyphs = torch.as_tensor(digits.images / 16.0, dtype=torch.float32)
    images = torch.empty(n, 3, size, size)
    masks = torch.zeros(n, size, size, dtype=torch.int64)
    for i in range(n):
        bg = torch.as_tensor(rng.uniform(0.0, 0.4, 3), dtype=torch.float32)
        img = bg[:, None, None] + torch.as_tensor(rng.normal(0, 0.03, (3, size, size)), dtype=torch.float32)
        row = int(rng.integers(size))
        img[:, row, :] = torch.as_tensor(rng.uniform(0.5, 1.0, 3), dtype=torch.float32)[:, None]
        for _ in range(int(rng.integers(min_digits, max_digits + 1))):
            k = int(rng.integers(len(glyphs)))
            s = int(rng.integers(min_scale, max_scale + 1))
            g = F.interpolate(glyphs[k][None, None], size=(s, s), mode="bilinear", align_corners=False)[0, 0]
            y, x = (int(v) for v in rng.integers(0, size - s + 1, 2))
            on = g > 0.35
            color = torch.as_tensor(rng.uniform(0.5, 1.0, 3), dtype=torch.float32)
            patch = img[:, y:y + s, x:x + s]
            img[:, y:y + s, x:x + s] = torch.where(on[None], color[:, None, None] * g[None], patch)
            masks[i, y:y + s, x:x + s][on] = int(digits.target[k]) + 1
        images[i] = img.clamp(0, 1)
    return images, masks

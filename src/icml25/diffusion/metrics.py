"""Quality statistics for diffusion samplers and inversions: a kernel two-sample test, MSE / PSNR / SSIM.

``mmd_test`` is the permutation test of Gretton et al., "A Kernel Two-Sample Test" (JMLR 2012), with
the biased (V-statistic) MMD² and a Gaussian kernel whose bandwidth is the median pairwise distance
of the pooled sample. It answers "are these two batches of samples from the same law?", the
exactness question of a parallel sampler against its sequential target.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.utils import check_array, check_scalar
from icml25.utils.random import Seed, as_generator

__all__ = ["image_scores", "mmd_test"]


def mmd_test(x: Any, y: Any, n_permutations: int = 200, max_samples: int = 1000,
             seed: Seed = 0) -> tuple[float, float]:
    """``(MMD², p-value)`` of the permutation two-sample test between rows of ``x`` and ``y``.

    Each sample is first subsampled to at most ``max_samples`` rows (the kernel matrix is quadratic);
    the p-value is ``(1 + #{permuted MMD² >= observed}) / (1 + n_permutations)``.
    """
    a = check_array(x, "x", ndim=2, dtype=float, min_len=2)
    b = check_array(y, "y", ndim=2, dtype=float, min_len=2)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"x and y must have the same number of columns, got {a.shape[1]} and {b.shape[1]}")
    n_permutations = check_scalar(n_permutations, "n_permutations", "int", min=1)
    max_samples = check_scalar(max_samples, "max_samples", "int", min=2)
    rng = as_generator(seed)
    a = a[rng.permutation(len(a))[:max_samples]]
    b = b[rng.permutation(len(b))[:max_samples]]
    z = np.concatenate([a, b])
    sq = np.maximum((z**2).sum(1)[:, None] + (z**2).sum(1)[None] - 2 * z @ z.T, 0.0)
    off = sq[np.triu_indices(len(z), 1)]
    scale = np.median(off[off > 0]) if np.any(off > 0) else 1.0
    k = np.exp(-sq / scale)
    n, m = len(a), len(b)
    # MMD² of a split is w'Kw with w = 1/n on one side and -1/m on the other: one product for all permutations
    w = np.r_[np.full(n, 1 / n), np.full(m, -1 / m)]
    splits = np.column_stack([w] + [w[rng.permutation(n + m)] for _ in range(n_permutations)])
    values = np.einsum("ij,ij->j", splits, k @ splits)
    observed = float(values[0])
    exceed = int(np.sum(values[1:] >= observed - 1e-12 * abs(observed)))
    return observed, (1 + exceed) / (1 + n_permutations)


def image_scores(reference: Any, estimate: Any, data_range: float = 2.0) -> dict[str, np.ndarray]:
    """Per image: ``mse``, ``psnr`` (dB) and ``ssim`` of ``estimate`` against ``reference`` (B, H, W) or (B, 1, H, W).

    PSNR and SSIM are scikit-image's (``skimage.metrics``; SSIM with a 7x7 window, or the image size
    if smaller and odd), with ``data_range`` the span of the pixel values (2 for images in [-1, 1]).
    """
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity

    ref = check_array(reference, "reference", ndim=(3, 4), dtype=float, min_len=1)
    est = check_array(estimate, "estimate", ndim=(3, 4), dtype=float)
    if ref.shape != est.shape:
        raise ValueError(f"estimate must have the shape of reference {ref.shape}, got {est.shape}")
    data_range = check_scalar(data_range, "data_range", "real", min=0.0, inclusive="neither")
    if ref.ndim == 4:
        if ref.shape[1] != 1:
            raise ValueError(f"reference must have one channel, got shape {ref.shape}")
        ref, est = ref[:, 0], est[:, 0]
    win = min(7, min(ref.shape[1:]) - (1 - min(ref.shape[1:]) % 2))
    mse = ((ref - est) ** 2).mean(axis=(1, 2))
    psnr = np.array([peak_signal_noise_ratio(r, e, data_range=data_range) for r, e in zip(ref, est, strict=True)])
    ssim = np.array([structural_similarity(r, e, data_range=data_range, win_size=win)
                     for r, e in zip(ref, est, strict=True)])
    return {"mse": mse, "psnr": psnr, "ssim": ssim}

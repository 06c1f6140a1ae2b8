"""Vision: sharper features from frozen low-resolution encoders (FeatSharp, arXiv:2502.16025).

:class:`FeatSharp` upsamples any encoder's (B, C, h, w) feature map by fusing FeatUp's joint bilateral upsampler
with native-resolution tiles; :class:`JBUUpsampler`, :class:`TilesUpsampler` and :class:`BilinearUpsampler` are
the baselines; :class:`MultiViewTrainer` trains them from unlabeled images; :mod:`icml25.vision.metrics` scores
them. :class:`TinyViT` is a small fixed-resolution encoder to try it on. Everything here needs the ``torch``
extra; the names are imported lazily, so ``import icml25.vision`` itself works without PyTorch.
"""

from importlib import import_module

_EXPORTS = {
    "JBULayer": "icml25.vision.jbu",
    "JBUStack": "icml25.vision.jbu",
    "joint_bilateral_upsample": "icml25.vision.jbu",
    "TinyViT": "icml25.vision.encoders",
    "train_tiny_vit": "icml25.vision.encoders",
    "FeatureMapEncoder": "icml25.vision.encoders",
    "BiasBuffer": "icml25.vision.featsharp",
    "make_tiles": "icml25.vision.featsharp",
    "FusionBlock": "icml25.vision.featsharp",
    "FeatSharp": "icml25.vision.featsharp",
    "JBUUpsampler": "icml25.vision.featsharp",
    "TilesUpsampler": "icml25.vision.featsharp",
    "BilinearUpsampler": "icml25.vision.featsharp",
    "random_views": "icml25.vision.train",
    "warp": "icml25.vision.train",
    "BlurDownsampler": "icml25.vision.train",
    "AttentionDownsampler": "icml25.vision.train",
    "multiview_loss": "icml25.vision.train",
    "MultiViewTrainer": "icml25.vision.train",
    "multiview_fidelity": "icml25.vision.metrics",
    "seam_ratio": "icml25.vision.metrics",
    "linear_probe_miou": "icml25.vision.metrics",
    "boundary_fscore": "icml25.vision.metrics",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'icml25.vision' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

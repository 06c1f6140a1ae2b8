"""Valid calls of ``icml25.vision`` (FeatSharp, its baselines, the multi-view trainer and the metrics)."""

from functools import cache

import torch

from api_examples._core import Example
from icml25 import vision as v

_FWD = {"feats": "a torch forward pass", "guidance": "a forward pass", "image": "a torch forward pass",
        "x": "a torch forward pass", "return_lr": "a flag of the forward pass"}


@cache
def _vit():
    return v.TinyViT(16, 4, 8, depth=1, heads=2, n_classes=3, seed=0)


@cache
def _featsharp():
    return v.FeatSharp(_vit(), 16, 2, heads=2, seed=0)


def _feats():
    return {"feats": torch.randn(1, 4, 4, 4), "guidance": torch.rand(1, 3, 8, 8)}


def _image():
    return {"image": torch.rand(2, 3, 32, 32)}


def _up_kwargs():
    return {"encoder": _vit(), "native_res": 16}


def _thetas():
    return torch.tensor([[1.0, 0, 0], [0, 1.0, 0]]).expand(2, 2, 2, 3).clone()


def _probe():
    masks = torch.zeros(4, 8, 8, dtype=torch.int64)
    masks[:, :, 4:] = 1
    feats = torch.nn.functional.one_hot(masks, 2).permute(0, 3, 1, 2).float()
    return {"train_features": feats, "train_masks": masks, "test_features": feats, "test_masks": masks,
            "steps": 5}


_ENC = {"encoder": "any callable image -> feature map; checked (callable, 4-d output)"}

EXAMPLES = {
    "icml25.vision.JBULayer": Example(v.JBULayer, {"dim": 4, "seed": 0}, positive=("dim", "radius", "guidance_dim")),
    "icml25.vision.JBULayer.forward": Example(lambda **kw: v.JBULayer(4, seed=0)(**kw), _feats, skip=_FWD),
    "icml25.vision.JBUStack": Example(v.JBUStack, {"dim": 4, "seed": 0}, positive=("dim", "factor", "radius",
                                                                                   "guidance_dim")),
    "icml25.vision.JBUStack.forward": Example(lambda **kw: v.JBUStack(4, seed=0)(**kw), _feats, skip=_FWD),
    "icml25.vision.joint_bilateral_upsample": Example(v.joint_bilateral_upsample, lambda: {**_feats(), "factor": 2},
                                                      positive=("factor", "sigma_spatial", "sigma_range", "radius"),
                                                      allow={"feats": "nan"}),
    "icml25.vision.TinyViT": Example(v.TinyViT, {"img_size": 16, "patch": 4, "dim": 8, "depth": 1, "heads": 2,
                                                 "seed": 0},
                                     positive=("img_size", "patch", "dim", "depth", "heads", "n_classes")),
    "icml25.vision.TinyViT.forward": Example(lambda **kw: _vit()(**kw), lambda: {"x": torch.rand(2, 3, 16, 16)},
                                             allow={"x": ("nan", "empty")}),
    "icml25.vision.TinyViT.logits": Example(lambda **kw: _vit().logits(**kw), lambda: {"x": torch.rand(2, 3, 16, 16)},
                                            allow={"x": ("nan", "empty")}),
    "icml25.vision.train_tiny_vit": Example(
        lambda **kw: v.train_tiny_vit(v.TinyViT(16, 4, 8, 1, 2, n_classes=3, seed=0), **kw),
        lambda: {"images": torch.rand(4, 3, 16, 16), "labels": torch.rand(4, 3), "steps": 2},
        paired=[("images", "labels")], positive=("steps", "batch_size", "lr"), skip={"model": "fixed here"}),
    "icml25.vision.FeatureMapEncoder": Example(v.FeatureMapEncoder, lambda: {"model": _vit()},
                                               skip={"method": "a method name, looked up with a fallback"}),
    "icml25.vision.FeatureMapEncoder.forward": Example(lambda **kw: v.FeatureMapEncoder(_vit())(**kw),
                                                       lambda: {"x": torch.rand(1, 3, 16, 16)}, skip=_FWD),
    "icml25.vision.BiasBuffer": Example(v.BiasBuffer, {"dim": 4, "grid": (2, 2)}, positive=("dim",)),
    "icml25.vision.BiasBuffer.forward": Example(lambda **kw: v.BiasBuffer(4, (2, 2))(**kw),
                                                lambda: {"feats": torch.rand(1, 4, 4, 4), "tiles": 2},
                                                positive=("tiles",), allow={"feats": ("nan", "empty")}),
    "icml25.vision.make_tiles": Example(v.make_tiles, lambda: {**_image(), "encoder": _vit(), "native_res": 16,
                                                               "factor": 2},
                                        positive=("native_res", "factor"), allow={"image": "nan"}),
    "icml25.vision.FusionBlock": Example(v.FusionBlock, {"dim": 4, "window": 3, "heads": 2, "seed": 0},
                                         positive=("dim", "window", "heads"), nonneg=("layerscale_init",)),
    "icml25.vision.FusionBlock.forward": Example(lambda **kw: v.FusionBlock(4, 3, 2, seed=0)(**kw),
                                                 lambda: {"upsampled": torch.rand(1, 4, 4, 4),
                                                          "tiles": torch.rand(1, 4, 4, 4)},
                                                 allow={"upsampled": "nan", "tiles": "nan"}),
    "icml25.vision.FeatSharp": Example(v.FeatSharp, lambda: {**_up_kwargs(), "heads": 2, "seed": 0},
                                       positive=("native_res", "factor", "window", "heads", "radius"), skip=_ENC),
    "icml25.vision.FeatSharp.forward": Example(lambda **kw: _featsharp()(**kw), _image, skip=_FWD),
    "icml25.vision.BilinearUpsampler.train": Example(lambda **kw: v.BilinearUpsampler(_vit(), 16).train(**kw),
                                                     {"mode": True}, skip={"mode": "torch's train(mode) flag"}),
    "icml25.vision.BilinearUpsampler.encode": Example(lambda **kw: _featsharp().encode(**kw), _image, skip=_FWD),
    "icml25.vision.JBUUpsampler": Example(v.JBUUpsampler, lambda: {**_up_kwargs(), "seed": 0},
                                          positive=("native_res", "factor", "radius"), skip=_ENC),
    "icml25.vision.JBUUpsampler.forward": Example(lambda **kw: v.JBUUpsampler(_vit(), 16, seed=0)(**kw), _image,
                                                  skip=_FWD),
    "icml25.vision.TilesUpsampler": Example(v.TilesUpsampler, _up_kwargs, positive=("native_res", "factor"),
                                            skip=_ENC),
    "icml25.vision.TilesUpsampler.forward": Example(lambda **kw: v.TilesUpsampler(_vit(), 16)(**kw), _image,
                                                    skip=_FWD),
    "icml25.vision.BilinearUpsampler": Example(v.BilinearUpsampler, _up_kwargs, positive=("native_res", "factor"),
                                               skip=_ENC),
    "icml25.vision.BilinearUpsampler.forward": Example(lambda **kw: v.BilinearUpsampler(_vit(), 16)(**kw), _image,
                                                       skip=_FWD),
    "icml25.vision.random_views": Example(v.random_views, {"n": 3, "seed": 0}, positive=("n",),
                                          nonneg=("max_shift",)),
    "icml25.vision.warp": Example(v.warp, lambda: {"x": torch.rand(2, 3, 8, 8), "theta": _thetas()[0]},
                                  allow={"x": "nan", "theta": "nan"}, skip={"size": "an output grid size or None"}),
    "icml25.vision.BlurDownsampler": Example(v.BlurDownsampler, {"factor": 2}, positive=("factor",)),
    "icml25.vision.BlurDownsampler.forward": Example(lambda **kw: v.BlurDownsampler(2)(**kw),
                                                     lambda: {"x": torch.rand(1, 3, 8, 8)},
                                                     allow={"x": ("nan", "empty")}),
    "icml25.vision.AttentionDownsampler": Example(v.AttentionDownsampler, {"dim": 3, "factor": 2, "seed": 0},
                                                  positive=("dim", "factor")),
    "icml25.vision.AttentionDownsampler.forward": Example(lambda **kw: v.AttentionDownsampler(3, 2, seed=0)(**kw),
                                                          lambda: {"x": torch.rand(1, 3, 8, 8)},
                                                          allow={"x": ("nan", "empty")}),
    "icml25.vision.multiview_loss": Example(v.multiview_loss, lambda: {"upsampler": _featsharp(), "downsampler": None,
                                                                       **{"images": torch.rand(2, 3, 32, 32)},
                                                                       "thetas": _thetas()},
                                            paired=[("images", "thetas")],
                                            skip={"upsampler": "an upsampler module", "downsampler": "a module"}),
    "icml25.vision.MultiViewTrainer": Example(v.MultiViewTrainer, lambda: {"upsampler": _featsharp()},
                                              positive=("n_views", "grid_weight"), nonneg=("tv_weight", "max_shift")),
    "icml25.vision.MultiViewTrainer.fit": Example(
        lambda **kw: v.MultiViewTrainer(v.BilinearUpsampler(_vit(), 16, debias=True), n_views=1).fit(**kw),
        lambda: {"images": torch.rand(2, 3, 32, 32), "steps": 1, "batch_size": 2},
        positive=("steps", "batch_size", "lr"), timeout=30.0),
    "icml25.vision.multiview_fidelity": Example(v.multiview_fidelity, lambda: {"upsampler": _featsharp(),
                                                                               "images": torch.rand(2, 3, 32, 32),
                                                                               "n_views": 1},
                                                positive=("n_views", "batch_size"), nonneg=("max_shift",),
                                                skip={"upsampler": "an upsampler module", "downsampler": "a module"}),
    "icml25.vision.seam_ratio": Example(v.seam_ratio, lambda: {"features": torch.rand(1, 2, 8, 8), "tiles": 2},
                                        positive=("tiles",)),
    "icml25.vision.linear_probe_miou": Example(v.linear_probe_miou, _probe,
                                               positive=("steps", "lr", "max_pixels"), nonneg=("weight_decay",),
                                               paired=[("train_features", "train_masks"),
                                                       ("test_features", "test_masks")],
                                               skip={"return_predictions": "a flag"}),
    "icml25.vision.boundary_fscore": Example(v.boundary_fscore, lambda: {
        "pred": torch.zeros(2, 4, 4, dtype=torch.int64), "target": torch.ones(2, 4, 4, dtype=torch.int64)}),
}

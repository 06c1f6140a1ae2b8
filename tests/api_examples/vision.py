"""Valid calls of ``icml25.vision`` (FeatUp's JBU layers used by FeatSharp)."""

import torch

from api_examples._core import Example
from icml25 import vision as v


def _feats():
    return {"feats": torch.randn(1, 4, 4, 4), "guidance": torch.rand(1, 3, 8, 8)}


EXAMPLES = {
    "icml25.vision.JBULayer": Example(v.JBULayer, {"dim": 4}, positive=("dim", "radius", "guidance_dim")),
    "icml25.vision.JBULayer.forward": Example(lambda **kw: v.JBULayer(4)(**kw), _feats,
                                              skip={"feats": "a torch forward pass", "guidance": "a forward pass"}),
    "icml25.vision.JBUStack": Example(v.JBUStack, {"dim": 4}, positive=("dim", "factor", "radius")),
    "icml25.vision.JBUStack.forward": Example(lambda **kw: v.JBUStack(4)(**kw), _feats,
                                              skip={"feats": "a torch forward pass", "guidance": "a forward pass"}),
}

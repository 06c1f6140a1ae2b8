import pytest
import torch

from icml25.data.digit_scenes import digit_scenes
from icml25.vision import JBULayer, JBUStack


def test_jbu_shapes_and_constant_preserved():
    stack = JBUStack(4, factor=4)
    const = torch.ones(1, 4, 6, 6) * 2.5
    out = stack(const, torch.rand(1, 3, 24, 24))
    assert out.shape == (1, 4, 24, 24)
    assert torch.allclose(out, const.new_full(out.shape, 2.5), atol=1e-5)


def test_jbu_rejects_bad_factor():
    with pytest.raises(ValueError, match="factor"):
        JBUStack(4, factor=3)
    with pytest.raises(ValueError, match="dim"):
        JBULayer(0)


def test_digit_scenes_seeded():
    a, ma = digit_scenes(2, 32, max_scale=16, seed=1)
    b, mb = digit_scenes(2, 32, max_scale=16, seed=1)
    assert torch.equal(a, b) and torch.equal(ma, mb) and int(ma.max()) <= 10

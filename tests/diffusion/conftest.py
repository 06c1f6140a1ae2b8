"""A tiny randomly initialised diffusers ``UNet2DModel`` (8x8, one channel) for the interop tests."""

import pytest

from icml25.utils import seeded


@pytest.fixture
def tiny_unet():
    diffusers = pytest.importorskip("diffusers")
    with seeded(0):
        return diffusers.UNet2DModel(sample_size=8, in_channels=1, out_channels=1, layers_per_block=1,
                                     block_out_channels=(8, 16), norm_num_groups=4,
                                     down_block_types=("DownBlock2D", "DownBlock2D"),
                                     up_block_types=("UpBlock2D", "UpBlock2D")).eval()

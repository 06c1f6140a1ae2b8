"""FeatSharp and its baselines: JBU exactness, tiling layout, fusion block, multi-view loss, metrics, bad input."""

import pytest
import torch
import torch.nn.functional as F

from icml25.data.digit_scenes import digit_scenes
from icml25.vision import (
    BiasBuffer,
    BilinearUpsampler,
    BlurDownsampler,
    FeatSharp,
    FeatureMapEncoder,
    FusionBlock,
    JBULayer,
    JBUStack,
    JBUUpsampler,
    MultiViewTrainer,
    TilesUpsampler,
    TinyViT,
    boundary_fscore,
    joint_bilateral_upsample,
    linear_probe_miou,
    make_tiles,
    multiview_fidelity,
    multiview_loss,
    random_views,
    seam_ratio,
    train_tiny_vit,
    warp,
)


def _vit(seed=0):
    return TinyViT(16, 4, 8, depth=1, heads=2, n_classes=11, seed=seed)


class _PixelEncoder(torch.nn.Module):
    """A position-aware toy encoder: 4x4 average pooling of RGB plus a fixed ramp (a "position artefact")."""

    def forward(self, x):
        pooled = F.avg_pool2d(x, 4)
        ramp = torch.linspace(0, 1, pooled.shape[-1], dtype=x.dtype).expand_as(pooled[:, :1])
        return torch.cat([pooled, ramp], 1)


def test_jbu_shapes_and_constant_preserved():
    stack = JBUStack(4, factor=4, seed=0)
    const = torch.ones(1, 4, 6, 6) * 2.5
    out = stack(const, torch.rand(1, 3, 24, 24))
    assert out.shape == (1, 4, 24, 24)
    assert torch.allclose(out, const.new_full(out.shape, 2.5), atol=1e-5)


def test_classical_jbu_with_flat_range_kernel_is_a_normalised_gaussian_filter():
    feats = torch.randn(1, 2, 4, 4, dtype=torch.float64)
    guide = torch.zeros(1, 3, 8, 8, dtype=torch.float64)
    out = joint_bilateral_upsample(feats, guide, 2, sigma_spatial=1.0, sigma_range=1.0, radius=2)
    # hand-computed weight of hr pixel (0, 0): lr centres at 2j + 1, hr centre at 0.5 -> offsets 2j + 0.5
    d = torch.tensor([0.5, 2.5, 4.5], dtype=torch.float64)
    w = torch.exp(-(d[:, None] ** 2 + d[None] ** 2) / 2)
    expected = (feats[0, :, :3, :3] * w).sum((1, 2)) / w.sum()
    assert torch.allclose(out[0, :, 0, 0], expected)


def test_classical_jbu_follows_the_guidance_edge():
    feats = torch.zeros(1, 1, 4, 4)
    feats[..., 2:] = 1.0
    guide = torch.zeros(1, 3, 8, 8)
    guide[..., 4:] = 1.0
    out = joint_bilateral_upsample(feats, guide, 2, sigma_spatial=2.0, sigma_range=0.05)
    assert out[..., :4].max() < 1e-3 and out[..., 4:].min() > 1 - 1e-3
    blurred = F.interpolate(feats, scale_factor=2, mode="bilinear", align_corners=False)
    assert blurred[..., 3].min() > 0.1  # bilinear leaks across the edge; the bilateral filter does not


def test_make_tiles_layout_matches_encoding_each_tile():
    enc = _PixelEncoder()
    image = torch.rand(2, 3, 32, 32)
    lr, tiled = make_tiles(image, enc, 16, 2)
    assert lr.shape == (2, 4, 4, 4) and tiled.shape == (2, 4, 8, 8)
    assert torch.allclose(tiled[:, :, 4:, :4], enc(image[:, :, 16:, :16]))  # tile (row 1, col 0)
    assert torch.allclose(lr, enc(F.interpolate(image, size=16, mode="bilinear", antialias=True)))


def test_bias_buffer_repeats_over_tiles_and_debias_targets():
    buf = BiasBuffer(2, (2, 2))
    with torch.no_grad():
        buf.bias.copy_(torch.arange(8.0).view(1, 2, 2, 2))
    out = buf(torch.zeros(1, 2, 4, 4), tiles=2)
    assert torch.equal(out[..., :2, :2], out[..., 2:, 2:]) and torch.equal(out[..., :2, :2], buf.bias)
    with pytest.raises(ValueError, match="tiles"):
        buf(torch.zeros(1, 2, 5, 5), tiles=2)


def test_fusion_block_starts_as_the_jbu_branch_and_is_local():
    block = FusionBlock(4, window=3, heads=2, seed=0)
    up, tiles = torch.randn(1, 4, 6, 6), torch.randn(1, 4, 6, 6)
    assert torch.allclose(block(up, tiles), up, atol=1e-4)  # LayerScale 1e-6
    with torch.no_grad():
        block.gamma1.fill_(1.0)
        block.gamma2.fill_(1.0)
    base = block(up, tiles)
    moved = tiles.clone()
    moved[..., 5, 5] += 10.0
    # one attention hop reaches 1 cell: (0, 0) is 5 cells from (5, 5) and must not change
    assert torch.allclose(block(up, moved)[..., 0, 0], base[..., 0, 0])
    assert not torch.allclose(block(up, moved)[..., 4, 4], base[..., 4, 4])
    no_ln = FusionBlock(4, window=3, heads=2, use_ln=False, seed=0)
    assert isinstance(no_ln.norm1, torch.nn.Identity)


def _dense_neighbourhood_attention(q, k, v, height, width, window):
    """Reference: dense attention over all tokens under the 2-D ALiBi bias, -inf outside each window."""
    heads, r = q.shape[1], window // 2
    rows = torch.arange(height).repeat_interleave(width)
    cols = torch.arange(width).repeat(height)
    d_row, d_col = (rows[:, None] - rows[None]).abs(), (cols[:, None] - cols[None]).abs()
    slopes = [2.0 ** -((h + 2) // 2) for h in range(heads)]
    bias = torch.stack([-slopes[h] * (d_row if h % 2 == 0 else d_col) for h in range(heads)]).to(q.dtype)
    bias = bias.masked_fill((d_row > r) | (d_col > r), float("-inf"))
    logits = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5 + bias
    return torch.softmax(logits, -1) @ v


@pytest.mark.parametrize(("height", "width", "window"), [(6, 6, 3), (5, 9, 5), (3, 4, 7), (8, 8, 7), (1, 5, 3)])
def test_local_attention_equals_dense_windowed_attention(height, width, window):
    from icml25.vision.featsharp import _local_attention

    gen = torch.Generator().manual_seed(height * 100 + width * 10 + window)
    q, k, v = (torch.randn(2, 4, height * width, 3, generator=gen, dtype=torch.float64) for _ in range(3))
    out = _local_attention(q, k, v, height, width, window)
    assert torch.allclose(out, _dense_neighbourhood_attention(q, k, v, height, width, window), atol=1e-12)


def test_fusion_block_switches_to_local_attention_on_large_grids_with_the_same_result(monkeypatch):
    import icml25.vision.featsharp as fs

    block = FusionBlock(4, window=3, heads=2, seed=0)
    with torch.no_grad():
        block.gamma1.fill_(1.0)
    up, tiles = torch.randn(1, 4, 12, 12), torch.randn(1, 4, 12, 12)
    assert fs.DENSE_TOKENS_PER_WINDOW * 3 * 3 < 12 * 12
    calls = []
    monkeypatch.setattr(fs, "_local_attention", lambda *a: calls.append(1) or _dense_neighbourhood_attention(*a))
    dense = block(up, tiles)
    monkeypatch.undo()
    assert calls == [1] and torch.allclose(block(up, tiles), dense, atol=1e-5)


def test_featsharp_shapes_passes_and_determinism():
    vit = _vit()
    up = FeatSharp(vit, 16, 2, heads=2, seed=0)
    image = torch.rand(2, 3, 32, 32)
    hr, lr = up(image, return_lr=True)
    assert hr.shape == (2, 8, 8, 8) and lr.shape == (2, 8, 4, 4) and up.encoder_passes == 5
    assert torch.equal(up(image[:1]), up(image[:1]))
    assert torch.allclose(up(image[:1]), hr[:1], atol=1e-5)  # batch-size independent
    prog = FeatSharp(vit, 16, 4, heads=2, progressive=True, seed=0)
    assert prog(image[:1]).shape == (1, 8, 16, 16) and prog.encoder_passes == 21
    assert not any(p.requires_grad for p in vit.parameters()) and not vit.training
    up.train()
    assert not vit.training


def test_featsharp_is_seeded_and_leaves_global_rng_alone_and_runs_in_float64():
    state = torch.random.get_rng_state()
    a, b = FeatSharp(_vit(), 16, 2, heads=2, seed=3), FeatSharp(_vit(), 16, 2, heads=2, seed=3)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    a = a.to(torch.float64)
    assert a(torch.rand(1, 3, 16, 16, dtype=torch.float64)).dtype == torch.float64


def test_upsamplers_accept_any_feature_map_module():
    enc = _PixelEncoder()
    image = torch.rand(1, 3, 32, 32)
    for up in (FeatSharp(enc, 16, 2, heads=2, seed=0), JBUUpsampler(enc, 16, 2, seed=0),
               TilesUpsampler(enc, 16, 2), BilinearUpsampler(enc, 16, 2)):
        assert up(image).shape == (1, 4, 8, 8)


def test_token_encoder_adapter_drops_prefix_tokens():
    grid = torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).view(2, 3, 4, 4)
    tokens = torch.cat([torch.zeros(2, 1, 3), grid.flatten(2).transpose(1, 2)], 1)
    enc = FeatureMapEncoder(lambda x: tokens, num_prefix_tokens=1)
    assert torch.equal(enc(torch.zeros(2, 3, 16, 16)), grid)
    with pytest.raises(ValueError, match="prefix"):
        FeatureMapEncoder(lambda x: tokens)(torch.zeros(2, 3, 16, 16))


def test_timm_vit_works_through_the_adapter():
    timm = pytest.importorskip("timm")
    vit = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, depth=1,
                            num_classes=0)
    up = FeatSharp(FeatureMapEncoder(vit), 32, 2, heads=4, seed=0)
    assert up(torch.rand(1, 3, 64, 64)).shape == (1, vit.embed_dim, 8, 8)


def test_tiny_vit_rejects_other_resolutions_and_learns():
    vit = _vit()
    with pytest.raises(ValueError, match="native resolution"):
        vit(torch.rand(1, 3, 32, 32))
    x = torch.rand(32, 3, 16, 16)
    y = (x.mean(1, keepdim=True) > 0.5).float()
    labels = torch.cat([1 - y, y], 1).view(32, 2, 4, 4, 4, 4).mean((3, 5))
    losses = train_tiny_vit(TinyViT(16, 4, 8, 1, 2, n_classes=2, seed=0), x, labels, steps=60, lr=1e-2, seed=0)
    assert sum(losses[-5:]) < sum(losses[:5])


def test_views_warp_identity_and_flip():
    x = torch.rand(2, 3, 8, 8)
    eye = torch.tensor([[[1.0, 0, 0], [0, 1.0, 0]]]).repeat(2, 1, 1)
    assert torch.allclose(warp(x, eye), x, atol=1e-6)
    flip = eye.clone()
    flip[:, 0, 0] = -1
    assert torch.allclose(warp(x, flip), x.flip(-1), atol=1e-6)
    th = random_views(100, max_zoom=1.5, max_shift=0.0, seed=0)
    assert torch.equal(th, random_views(100, max_zoom=1.5, max_shift=0.0, seed=0))
    assert (th[:, 1, 1] >= 1 / 1.5 - 1e-6).all() and (th[:, :, 2].abs() <= 1 - th[:, 1, 1:2] + 1e-6).all()


def test_multiview_loss_is_zero_for_a_consistent_upsampler_and_masks_the_outside():
    class Exact(BilinearUpsampler):
        def forward(self, image):  # the encoder at twice its resolution
            return F.avg_pool2d(image, 4) + self.offset

    class Pool(torch.nn.Module):
        def forward(self, x):
            return F.avg_pool2d(x, 4)

    up = Exact(Pool(), 16, 2)
    up.offset = 0.0
    image = torch.rand(2, 3, 1, 1).expand(2, 3, 32, 32).contiguous()  # flat colours: every view sees the same
    views = random_views(6, max_shift=0.5, seed=0).view(2, 3, 2, 3)
    assert float(multiview_loss(up, None, image, views)) < 1e-10  # padded (out-of-image) cells are masked
    assert float(multiview_loss(up, BlurDownsampler(2), image, views, grid_weight=2.0).detach()) < 1e-6
    up.offset = 0.1
    assert float(multiview_loss(up, None, image, views)) == pytest.approx(0.01, rel=1e-4)


def test_blur_downsampler_is_normalised_and_shape_correct():
    down = BlurDownsampler(2)
    assert torch.isclose(down.kernel().sum(), torch.tensor(1.0))
    assert down(torch.ones(1, 3, 16, 16)).shape == (1, 3, 8, 8)
    assert torch.allclose(down(torch.ones(1, 3, 16, 16)), torch.ones(1, 3, 8, 8))


def test_trainer_lowers_the_loss_of_featsharp_and_jbu():
    images, _ = digit_scenes(16, 32, max_scale=14, min_scale=6, seed=0)
    for up in (FeatSharp(_vit(), 16, 2, heads=2, seed=0), JBUUpsampler(_vit(), 16, 2, seed=0)):
        before = multiview_fidelity(up, images[:8], seed=1)
        MultiViewTrainer(up, n_views=2, seed=0).fit(images, steps=25, batch_size=8, lr=1e-2)
        assert multiview_fidelity(up, images[:8], seed=1) < before
    MultiViewTrainer(up, downsampler="attention", seed=0).fit(images, steps=1, batch_size=2)


def test_seam_ratio_detects_tile_seams():
    smooth = torch.linspace(0, 1, 8).expand(1, 1, 8, 8).clone()
    assert seam_ratio(smooth, 2) == pytest.approx(1.0, rel=1e-5)  # a ramp: the seam is like any other column
    seams = torch.zeros(1, 1, 8, 8)
    seams[..., 4:] = 1.0
    seams[..., 4:, :] += 1.0
    assert seam_ratio(seams, 2) > 10


def test_linear_probe_and_boundary_score():
    masks = torch.zeros(20, 8, 8, dtype=torch.int64)
    masks[:, :, 4:] = 1
    feats = F.one_hot(masks, 2).permute(0, 3, 1, 2).float()
    miou, pred = linear_probe_miou(feats[:10], masks[:10], feats[10:], masks[10:], steps=50, return_predictions=True)
    assert miou == 1.0 and torch.equal(pred, masks[10:])
    assert boundary_fscore(pred, masks[10:]) == 1.0
    assert boundary_fscore(torch.zeros_like(pred), masks[10:]) == 0.0


def test_bad_input():
    with pytest.raises(ValueError, match="factor"):
        JBUStack(4, factor=3)
    with pytest.raises(ValueError, match="dim"):
        JBULayer(0)
    with pytest.raises(ValueError, match="factor"):
        FeatSharp(_vit(), 16, 3)
    with pytest.raises(TypeError, match="encoder"):
        FeatSharp("not a model", 16, 2)
    with pytest.raises(ValueError, match="feature map"):
        FeatSharp(torch.nn.Flatten(), 16, 2)
    up = FeatSharp(_vit(), 16, 2, heads=2, seed=0)
    with pytest.raises(ValueError, match="square"):
        up(torch.rand(1, 3, 16, 32))
    with pytest.raises(ValueError, match="RGB"):
        up(torch.rand(1, 1, 16, 16))
    with pytest.warns(UserWarning, match="multiple"):
        up(torch.rand(1, 3, 24, 24))
    with pytest.raises(ValueError, match="downsampler"):
        MultiViewTrainer(up, downsampler="nearest")
    with pytest.raises(ValueError, match="window"):
        FusionBlock(4, window=4)
    with pytest.raises(ValueError, match="tiles"):
        seam_ratio(torch.rand(1, 2, 6, 6), 4)


def test_digit_scenes_seeded():
    a, ma = digit_scenes(2, 32, max_scale=16, seed=1)
    b, mb = digit_scenes(2, 32, max_scale=16, seed=1)
    assert torch.equal(a, b) and torch.equal(ma, mb) and int(ma.max()) <= 10
    assert a.shape == (2, 3, 32, 32) and float(a.min()) >= 0 and float(a.max()) <= 1

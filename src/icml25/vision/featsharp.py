"""FeatSharp (Ranzinger et al., "FeatSharp: Your Vision Model Features, Sharper", ICML 2025, arXiv:2502.16025).

A frozen encoder that only works at its native resolution ``R`` gives a coarse map ``F_lr`` (B, C, h, w). FeatSharp
(Sec. 3) upsamples it by ``s`` with FeatUp's joint bilateral upsampler (JBU) and fuses the result with the
features of ``s x s`` tiles of the image resized to ``sR`` (real detail, but tile-inconsistent) in one windowed
attention block; a learned per-tile position embedding tells the block which tile a token came from, and a
learned per-position bias buffer removes the encoder's fixed-pattern position artefacts from every encoder
output ("de-biasing", Sec. 3.1). The cost is ``1 + s²`` encoder passes plus the block.

All upsamplers here share one interface: ``up(image) -> (B, C, s h, s w)``, ``up.encode(image)`` (the de-biased
native-resolution features, the multi-view training target), ``factor``, ``dim``, ``grid`` and
``encoder_passes``. The encoder is any callable mapping (B, 3, R, R) images to a (B, C, h, w) map; an
``nn.Module`` encoder is registered, frozen and kept in eval mode.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from icml25.utils import check_bool, check_instance, check_scalar, check_tensor, init_rng
from icml25.utils.random import Seed
from icml25.vision.jbu import JBUStack

__all__ = ["BiasBuffer", "BilinearUpsampler", "FeatSharp", "FusionBlock", "JBUUpsampler", "TilesUpsampler",
           "make_tiles"]

Encoder = Callable[[torch.Tensor], torch.Tensor]
DENSE_TOKENS_PER_WINDOW = 12


def _resize(image: torch.Tensor, size: int) -> torch.Tensor:
    if image.shape[-2:] == (size, size):
        return image
    return F.interpolate(image, size=(size, size), mode="bilinear", align_corners=False,
                         antialias=image.shape[-1] > size)


def _check_image(image: torch.Tensor, name: str = "image") -> torch.Tensor:
    check_tensor(image, name, ndim=4, floating=True)
    if image.shape[1] != 3 or image.shape[0] == 0 or image.shape[-1] == 0:
        raise ValueError(f"{name} must be a non-empty RGB batch (B, 3, H, W), got {tuple(image.shape)}")
    if image.shape[-2] != image.shape[-1]:
        raise ValueError(f"{name} must be square (H == W): tiles and views are square here, got {tuple(image.shape)}")
    return image


def _encode_views(encoder: Encoder, image: torch.Tensor, native_res: int,
                  factors: tuple[int, ...]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """One encoder batch: the global view at ``R`` and, per factor ``s``, the ``s x s`` tiles of the image at ``sR``.

    Returns the raw low-resolution map (B, C, h, w) and per factor the tile maps (B, s, s, C, h, w) (tile row,
    tile column) as the encoder gave them.
    """
    b = image.shape[0]
    views = [_resize(image, native_res)]
    for s in factors:
        big = _resize(image, s * native_res)
        views.append(big.view(b, 3, s, native_res, s, native_res).permute(0, 2, 4, 1, 3, 5)
                     .reshape(b * s * s, 3, native_res, native_res))
    with torch.no_grad():
        feats = encoder(torch.cat(views))
    check_tensor(feats, "encoder output", ndim=4)
    lr, start, tiles = feats[:b], b, []
    for s in factors:
        tiles.append(feats[start:start + b * s * s].view(b, s, s, *feats.shape[1:]))
        start += b * s * s
    return lr, tiles


def _stitch(tiles: torch.Tensor) -> torch.Tensor:
    """(B, s, s, C, h, w) tile maps -> (B, C, s h, s w)."""
    b, s, _, c, h, w = tiles.shape
    return tiles.permute(0, 3, 1, 4, 2, 5).reshape(b, c, s * h, s * w)


def make_tiles(image: torch.Tensor, encoder: Encoder, native_res: int, factor: int) -> tuple[torch.Tensor,
                                                                                             torch.Tensor]:
    """Encode the image at ``native_res`` and its ``factor x factor`` tiles of the image resized to
    ``factor * native_res`` in one batch (FeatSharp Sec. 3, "tiling").

    Returns ``(lr, tiled)``: the low-resolution map (B, C, h, w) and the stitched tile features
    (B, C, factor h, factor w), neither de-biased.
    """
    _check_image(image)
    if not callable(encoder):
        raise TypeError(f"encoder must be callable (images -> feature map), got {type(encoder).__name__}")
    native_res = check_scalar(native_res, "native_res", "int", min=1)
    factor = check_scalar(factor, "factor", "int", min=1)
    lr, (tiles,) = _encode_views(encoder, image, native_res, (factor,))
    return lr, _stitch(tiles)


class BiasBuffer(nn.Module):
    """A learned per-position bias ``b`` (1, C, h, w), zero at first, added to every encoder output
    (FeatSharp Sec. 3.1, de-biasing). ``forward(feats, tiles=s)`` adds it to each tile of a stitched
    (B, C, s h, s w) map; a map of another size gets ``b`` bilinearly resized."""

    def __init__(self, dim: int, grid: tuple[int, int]) -> None:
        super().__init__()
        dim = check_scalar(dim, "dim", "int", min=1)
        if not (isinstance(grid, (tuple, list)) and len(grid) == 2):
            raise TypeError(f"grid must be a pair (h, w), got {grid!r}")
        h, w = (check_scalar(g, "grid", "int", min=1) for g in grid)
        self.bias = nn.Parameter(torch.zeros(1, dim, h, w))

    def forward(self, feats: torch.Tensor, tiles: int = 1) -> torch.Tensor:
        """``feats`` (B, C, tiles·h', tiles·w') plus the bias, repeated over the ``tiles x tiles`` tiles."""
        check_tensor(feats, "feats", ndim=4, floating=True)
        tiles = check_scalar(tiles, "tiles", "int", min=1)
        if feats.shape[1] != self.bias.shape[1]:
            raise ValueError(f"feats must have {self.bias.shape[1]} channels, got {feats.shape[1]}")
        if feats.shape[-2] % tiles or feats.shape[-1] % tiles:
            raise ValueError(f"feats' grid {tuple(feats.shape[-2:])} must be divisible by tiles={tiles}")
        size = (feats.shape[-2] // tiles, feats.shape[-1] // tiles)
        bias = self.bias if size == self.bias.shape[-2:] else F.interpolate(self.bias, size=size, mode="bilinear",
                                                                             align_corners=False)
        return feats + bias.repeat(1, 1, tiles, tiles)


class _FrozenEncoderUpsampler(nn.Module):
    """The shared part: a frozen encoder at its native resolution, the upsampling factor and the bias buffer."""

    def __init__(self, encoder: Encoder, native_res: int, factor: int, debias: bool) -> None:
        super().__init__()
        if not callable(encoder):
            raise TypeError(f"encoder must be a module or callable mapping (B, 3, R, R) images to a (B, C, h, w) "
                            f"feature map, got {type(encoder).__name__}")
        self.native_res = check_scalar(native_res, "native_res", "int", min=1)
        self.factor = check_scalar(factor, "factor", "int", min=1)
        debias = check_bool(debias, "debias")
        if isinstance(encoder, nn.Module):
            encoder.requires_grad_(False).eval()
        self.encoder = encoder
        param = next(iter(encoder.parameters()), None) if isinstance(encoder, nn.Module) else None
        with torch.no_grad():
            probe = encoder(torch.zeros(1, 3, native_res, native_res,
                                        dtype=param.dtype if param is not None else torch.float32,
                                        device=param.device if param is not None else None))
        if not isinstance(probe, torch.Tensor) or probe.ndim != 4:
            raise ValueError("encoder must map (B, 3, R, R) images to a (B, C, h, w) feature map, got "
                             f"{getattr(probe, 'shape', type(probe).__name__)}; wrap token encoders in "
                             "FeatureMapEncoder")
        self.dim = int(probe.shape[1])
        self.grid = (int(probe.shape[2]), int(probe.shape[3]))
        self.bias = BiasBuffer(self.dim, self.grid) if debias else None

    def train(self, mode: bool = True) -> _FrozenEncoderUpsampler:
        super().train(mode)
        if isinstance(self.encoder, nn.Module):
            self.encoder.eval()
        return self

    @property
    def encoder_passes(self) -> int:
        """Encoder evaluations at the native resolution per image."""
        return 1

    def _debias(self, feats: torch.Tensor, tiles: int = 1) -> torch.Tensor:
        return feats if self.bias is None else self.bias(feats, tiles)

    def encode(self, image: torch.Tensor) -> torch.Tensor:
        """The (de-biased) native-resolution features ``b + f(resize(image, R))``, (B, C, h, w)."""
        _check_image(image)
        with torch.no_grad():
            feats = self.encoder(_resize(image, self.native_res))
        return self._debias(feats)


class BilinearUpsampler(_FrozenEncoderUpsampler):
    """Bilinear interpolation of the native-resolution features by ``factor`` (no learning unless ``debias``)."""

    def __init__(self, encoder: Encoder, native_res: int, factor: int = 2, debias: bool = False) -> None:
        super().__init__(encoder, native_res, factor, debias)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        """``image`` (B, 3, H, W) -> (B, C, factor h, factor w)."""
        return F.interpolate(self.encode(image), scale_factor=self.factor, mode="bilinear", align_corners=False)


class TilesUpsampler(_FrozenEncoderUpsampler):
    """Tiles only: the stitched features of the ``factor x factor`` native-resolution tiles of the image at
    ``factor * R``, de-biased by ``bias`` (e.g. a trained :class:`FeatSharp`'s buffer) when given."""

    def __init__(self, encoder: Encoder, native_res: int, factor: int = 2, bias: BiasBuffer | None = None) -> None:
        super().__init__(encoder, native_res, factor, debias=False)
        if bias is not None:
            self.bias = check_instance(bias, "bias", BiasBuffer, "a BiasBuffer or None")

    @property
    def encoder_passes(self) -> int:
        return 1 + self.factor**2

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        """``image`` (B, 3, H, W) -> (B, C, factor h, factor w)."""
        _check_image(image)
        _, (tiles,) = _encode_views(self.encoder, image, self.native_res, (self.factor,))
        return self._debias(_stitch(tiles), self.factor)


class JBUUpsampler(_FrozenEncoderUpsampler):
    """FeatUp's JBU upsampler: ``log2(factor)`` learned 2x joint bilateral layers guided by the image
    (:class:`icml25.vision.JBUStack`), trained by multi-view consistency; FeatUp has no de-biasing
    (``debias=False``)."""

    def __init__(self, encoder: Encoder, native_res: int, factor: int = 2, radius: int = 3, debias: bool = False,
                 seed: Seed = None) -> None:
        super().__init__(encoder, native_res, factor, debias)
        self.jbu = JBUStack(self.dim, factor, radius, seed=seed)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        """``image`` (B, 3, H, W) -> (B, C, factor h, factor w)."""
        return self.jbu(self.encode(image), image)


def _alibi_window_bias(height: int, width: int, heads: int, window: int, dtype: torch.dtype,
                       device: torch.device) -> torch.Tensor:
    """(heads, N, N) attention bias: 2-D ALiBi ``-slope_h |Δrow|`` (even heads) or ``-slope_h |Δcol|`` (odd
    heads), slopes ``2^-floor((h + 2) / 2)``, and ``-inf`` outside each token's ``window x window`` neighbourhood."""
    r = torch.arange(height, device=device).repeat_interleave(width)
    c = torch.arange(width, device=device).repeat(height)
    d_row, d_col = (r[:, None] - r[None]).abs(), (c[:, None] - c[None]).abs()
    dist = torch.stack([d_row if h % 2 == 0 else d_col for h in range(heads)]).to(dtype)
    outside = (d_row > window // 2) | (d_col > window // 2)
    return (-_alibi_slopes(heads, dtype, device)[:, None, None] * dist).masked_fill(outside, float("-inf"))


def _alibi_slopes(heads: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.tensor([2.0 ** -((h + 2) // 2) for h in range(heads)], dtype=dtype, device=device)


def _local_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, height: int, width: int,
                     window: int) -> torch.Tensor:
    """The same neighbourhood attention as the dense masked form, computed one window offset at a time.

    ``q``, ``k``, ``v``: (B, heads, N, d), ``N = height * width`` tokens in row-major order; returns (B, heads, N, d).
    Each of the ``window²`` offsets compares every token with its shifted neighbour (zero padding, masked out), so
    time and memory grow as ``N window² d``, linearly in the number of tokens.
    """
    b, heads, n, d = q.shape
    r = window // 2

    def padded_grid(t: torch.Tensor, pad: int) -> torch.Tensor:  # (B, heads, N, d) -> (B, heads, d, H + 2p, W + 2p)
        return F.pad(t.transpose(-1, -2).reshape(b, heads, d, height, width), (pad, pad, pad, pad))

    qg, kp, vp = padded_grid(q, 0), padded_grid(k, r), padded_grid(v, r)
    on_grid = F.pad(torch.ones(height, width, dtype=torch.bool, device=q.device), (r, r, r, r))
    slopes = _alibi_slopes(heads, q.dtype, q.device)
    offsets = [(i, j) for i in range(window) for j in range(window)]
    logits = []
    for i, j in offsets:
        dist = torch.tensor([abs(i - r) if h % 2 == 0 else abs(j - r) for h in range(heads)], dtype=q.dtype,
                            device=q.device)
        score = (qg * kp[..., i:i + height, j:j + width]).sum(2) * d ** -0.5 - (slopes * dist)[:, None, None]
        logits.append(score.masked_fill(~on_grid[i:i + height, j:j + width], float("-inf")))
    attn = torch.softmax(torch.stack(logits, -1), -1)
    out = sum(attn[..., p].unsqueeze(2) * vp[..., i:i + height, j:j + width] for p, (i, j) in enumerate(offsets))
    return out.reshape(b, heads, d, n).transpose(-1, -2)


class FusionBlock(nn.Module):
    """FeatSharp's fusion block (Sec. 3.2): one pre-norm transformer block on the high-resolution token grid.

    Input ``X = [JBU(F_lr), T + P]`` (B, 2C, H, W); ``X <- X + γ1 Attn(LN(X))``, ``Y = γ2 FFN(LN(X))`` and the
    output is ``X[:, :C] + Y`` (a residual onto the JBU channels), (B, C, H, W). ``Attn``: self-attention within
    a ``window x window`` neighbourhood (clamped to the grid) with a 2-D ALiBi bias; ``FFN``: SwiGLU with hidden
    width ``4C``; LayerScale ``γ`` initialised to ``layerscale_init``; ``use_ln=False`` drops both LayerNorms
    (the paper's "no-ln" variant).
    """

    def __init__(self, dim: int, window: int = 7, heads: int = 4, use_ln: bool = True,
                 layerscale_init: float = 1e-6, seed: Seed = None) -> None:
        super().__init__()
        self.dim = check_scalar(dim, "dim", "int", min=1)
        self.window = check_scalar(window, "window", "int", min=1)
        if window % 2 == 0:
            raise ValueError(f"window must be odd (centred on each token), got {window}")
        self.heads = check_scalar(heads, "heads", "int", min=1)
        if (2 * dim) % heads:
            raise ValueError(f"heads must divide the fused width 2 * dim = {2 * dim}, got {heads}")
        use_ln = check_bool(use_ln, "use_ln")
        layerscale_init = check_scalar(layerscale_init, "layerscale_init", "real", min=0.0)
        width = 2 * dim
        with init_rng(seed):
            self.norm1 = nn.LayerNorm(width) if use_ln else nn.Identity()
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.norm2 = nn.LayerNorm(width) if use_ln else nn.Identity()
            self.w12 = nn.Linear(width, 2 * 4 * dim)
            self.w3 = nn.Linear(4 * dim, dim)
        self.gamma1 = nn.Parameter(torch.full((width,), layerscale_init))
        self.gamma2 = nn.Parameter(torch.full((dim,), layerscale_init))

    def _attention(self, x: torch.Tensor, height: int, width: int) -> torch.Tensor:
        """Neighbourhood attention: on small grids (at most ``DENSE_TOKENS_PER_WINDOW`` tokens per window cell)
        as dense attention under the windowed bias, which is faster there; on larger ones offset by offset
        (:func:`_local_attention`), linear in the number of tokens. Both compute the same attention."""
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        window = min(self.window, 2 * max(height, width) - 1)
        if n > DENSE_TOKENS_PER_WINDOW * window * window:
            return self.proj(_local_attention(q, k, v, height, width, window).transpose(1, 2).reshape(b, n, d))
        logits = q @ k.transpose(-1, -2) * (d // self.heads) ** -0.5
        attn = torch.softmax(logits + _alibi_window_bias(height, width, self.heads, window, x.dtype, x.device), -1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, d))

    def forward(self, upsampled: torch.Tensor, tiles: torch.Tensor) -> torch.Tensor:
        """``upsampled`` and ``tiles`` (B, C, H, W) each -> fused (B, C, H, W)."""
        check_tensor(upsampled, "upsampled", ndim=4, floating=True)
        check_tensor(tiles, "tiles", ndim=4, floating=True)
        if upsampled.shape != tiles.shape or upsampled.shape[1] != self.dim:
            raise ValueError(f"upsampled and tiles must both be (B, {self.dim}, H, W), got "
                             f"{tuple(upsampled.shape)} and {tuple(tiles.shape)}")
        b, c, h, w = upsampled.shape
        x = torch.cat([upsampled, tiles], 1).flatten(2).transpose(1, 2)  # (B, N, 2C)
        x = x + self.gamma1 * self._attention(self.norm1(x), h, w)
        a, g = self.w12(self.norm2(x)).chunk(2, dim=-1)
        y = self.gamma2 * self.w3(F.silu(a) * g)
        return (x[..., :c] + y).transpose(1, 2).reshape(b, c, h, w)


class _Level(nn.Module):
    """One upsampling level: a JBU stack, the tile position embedding and a fusion block."""

    def __init__(self, dim: int, factor: int, tiles: int, radius: int, window: int, heads: int, use_ln: bool) -> None:
        super().__init__()
        self.jbu = JBUStack(dim, factor, radius)
        self.tile_pos = nn.Parameter(0.02 * torch.randn(1, dim, tiles, tiles))
        self.fuse = FusionBlock(dim, window, heads, use_ln)


class FeatSharp(_FrozenEncoderUpsampler):
    """FeatSharp upsampler (Sec. 3): de-biased JBU-upsampled features fused with de-biased tile features.

    Parameters
    ----------
    encoder : module or callable, (B, 3, R, R) images -> (B, C, h, w); frozen here.
    native_res : the encoder's input side ``R``; images of any square size are resized to ``R`` and ``factor R``.
    factor : upsampling factor ``s`` (a power of 2: the JBU stacks 2x layers); the output is (B, C, s h, s w).
    window, heads : the fusion block's attention neighbourhood and heads (paper: 7, 16; 4 at tiny scale).
    radius : JBU window radius.
    progressive : ``s = 4`` as two 2x levels, each with its own JBU, ``2^l x 2^l`` tiles and fusion block
        (``1 + 4 + 16`` encoder passes) instead of one 4x level (``1 + 16``).
    use_ln : LayerNorms in the fusion block (False: the "no-ln" variant).
    debias : learn the bias buffer (Sec. 3.1).
    seed : weight initialisation (``None``: torch's global RNG).
    """

    def __init__(self, encoder: Encoder, native_res: int, factor: int = 2, *, window: int = 7, heads: int = 4,
                 radius: int = 3, progressive: bool = False, use_ln: bool = True, debias: bool = True,
                 seed: Seed = None) -> None:
        super().__init__(encoder, native_res, factor, debias)
        if factor < 2 or factor & (factor - 1):
            raise ValueError(f"factor must be a power of 2 >= 2 (stacked 2x JBU layers), got {factor}")
        self.progressive = check_bool(progressive, "progressive")
        check_scalar(radius, "radius", "int", min=1)
        steps = [2] * int(math.log2(factor)) if self.progressive else [factor]
        self.level_factors = tuple(2 ** (i + 1) for i in range(len(steps))) if self.progressive else (factor,)
        with init_rng(seed):
            self.levels = nn.ModuleList(_Level(self.dim, step, tiles, radius, window, heads, use_ln)
                                        for step, tiles in zip(steps, self.level_factors, strict=True))

    @property
    def encoder_passes(self) -> int:
        return 1 + sum(s * s for s in self.level_factors)

    def forward(self, image: torch.Tensor, return_lr: bool = False) -> torch.Tensor | tuple[torch.Tensor,
                                                                                            torch.Tensor]:
        """``image`` (B, 3, H, W) -> (B, C, s h, s w); with ``return_lr`` also the de-biased low-res map."""
        _check_image(image)
        if image.shape[-1] % self.native_res:
            warnings.warn(f"image side {image.shape[-1]} is not a multiple of native_res={self.native_res}; "
                          "it is resized for the global view and the tiles", stacklevel=2)
        lr_raw, tiles = _encode_views(self.encoder, image, self.native_res, self.level_factors)
        lr = self._debias(lr_raw)
        feats = lr
        for level, s, tile in zip(self.levels, self.level_factors, tiles, strict=True):
            up = level.jbu(feats, image)
            pos = level.tile_pos.repeat_interleave(self.grid[0], 2).repeat_interleave(self.grid[1], 3)
            feats = level.fuse(up, self._debias(_stitch(tile), s) + pos)
        return (feats, lr) if return_lr else feats

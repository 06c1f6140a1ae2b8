"""Quantizers, low-bit layers and BitOPs accounting of LBI-FL (Sections 3.1-3.2 of the paper).

Weights and activations: symmetric uniform quantization with round-to-nearest,
``s = max|x| / (2^(b-1) - 1)``, ``q = clamp(round(x / s))``.  Gradients (the error signal flowing
backward): asymmetric uniform quantization with stochastic rounding, ``s = (max - min) / (2^b - 1)``,
``q = floor((x - min) / s + u)``, ``u ~ U[0, 1)``, which is unbiased.  The layers fake-quantize
(integers on the grid times a float scale); :func:`integer_linear` does the same product in int32.

Randomness (stochastic rounding) is torch-native, so the ``seed`` arguments here accept, besides the
project's ``int | numpy.random.Generator | None``, a ``torch.Generator`` (used as is, on its own device, and
advanced by every draw).  An int or a NumPy Generator becomes a fresh ``torch.Generator``
(:func:`icml25.utils.random.torch_generator`); ``None`` draws from torch's global RNG, as ``torch.rand`` does.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml25.utils.random import Seed, seeded, torch_generator
from icml25.utils.validation import check_bool, check_choice, check_instance, check_scalar, check_sequence, check_tensor

__all__ = [
    "BITS", "COMPONENTS", "TorchSeed", "BitConfig", "check_bits", "quantize_symmetric", "quantize_stochastic_asym",
    "dequantize", "fake_quant", "quant_error", "LowBitMixin", "QLinear", "QConv2d", "quantize_model",
    "integer_linear", "count_macs", "bitops_per_sample", "training_bitops", "message_bits",
]

#: The randomness argument of the stochastic quantizers: the project's ``Seed`` or a ``torch.Generator``.
TorchSeed = Seed | torch.Generator

BITS = (4, 6, 8)
COMPONENTS = ("w", "a", "g")


def check_bits(bits: object, what: str = "bits") -> int:
    """Return ``bits`` if it is one of :data:`BITS` (4, 6, 8): a TypeError for a non-integer, else a ValueError."""
    return check_choice(check_scalar(bits, what, "int"), what, BITS)


def bit_tuple(bits: object, name: str = "bits") -> tuple[int | None, int | None, int | None]:
    """``(b_w, b_a, b_g)`` of a :class:`BitConfig` or of three bit-widths (each in :data:`BITS` or None)."""
    if isinstance(bits, BitConfig):
        return bits.as_tuple()
    values = check_sequence(bits, name)
    if len(values) != 3:
        raise ValueError(f"{name} must give three bit-widths (w, a, g), got {bits!r}")
    return tuple(None if v is None else check_bits(v, f"{name}[{i}]") for i, v in enumerate(values))


def _float_tensor(x: object) -> torch.Tensor:
    check_instance(x, "x", torch.Tensor, "a torch.Tensor")
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got dtype {x.dtype}")
    return x


def _finite_extremes(*extremes: torch.Tensor) -> None:
    """NaN and Inf propagate to max/min, so finite extremes mean a finite tensor (one cheap check)."""
    if not all(bool(torch.isfinite(e).all()) for e in extremes):
        raise ValueError("x must contain only finite values, got NaN or inf")


def _torch_rng(seed: TorchSeed, device: torch.device | str = "cpu") -> torch.Generator | None:
    """``None`` (torch's global RNG), a ``torch.Generator`` as is, or a new one on ``device`` from an int / NumPy
    Generator."""
    return None if seed is None else torch_generator(seed, device=device)


def _int_dtype(bits: int) -> torch.dtype:
    return torch.int8 if bits <= 8 else torch.int16


def quantize_symmetric(x: torch.Tensor, bits: int, per_channel: bool = False, rounding: str = "nearest",
                       seed: TorchSeed = None,
                       _float_q: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric quantization: ``(q, scale)`` with ``x ~ scale * q``, ``|q| <= 2^(b-1) - 1``.

    ``rounding="nearest"`` (the paper's W/A quantizer) or ``"stochastic"`` (unbiased, drawn with
    ``seed``, see the module docstring).  ``per_channel`` gives one scale per slice along dim 0 (output channels); the
    scale then has shape ``(C, 1, ..., 1)``.  An all-zero tensor (or slice) gets scale 0 and q = 0.
    """
    check_choice(rounding, "rounding", ("nearest", "stochastic"))
    bits = check_scalar(bits, "bits", "int", min=2, max=16)
    per_channel, _float_q = check_bool(per_channel, "per_channel"), check_bool(_float_q, "_float_q")
    _float_tensor(x)
    qmax = 2 ** (bits - 1) - 1
    if per_channel and x.ndim >= 1:
        amax = x.detach().abs().reshape(x.shape[0], -1).amax(dim=1).reshape((-1,) + (1,) * (x.ndim - 1))
    else:
        amax = x.detach().abs().amax() if x.numel() else torch.zeros((), dtype=x.dtype, device=x.device)
    _finite_extremes(amax)
    scale = amax / qmax
    t = x.detach() / scale.clamp_min(torch.finfo(x.dtype).tiny)
    if rounding == "stochastic":
        q = torch.floor(t + torch.rand(x.shape, generator=_torch_rng(seed, x.device), dtype=x.dtype, device=x.device))
    else:
        q = torch.round(t)
    q = torch.clamp(q, -qmax, qmax)
    return (q if _float_q else q.to(_int_dtype(bits))), scale


def quantize_stochastic_asym(x: torch.Tensor, bits: int, seed: TorchSeed = None,
                             rounding: str = "stochastic",
                             _float_q: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Asymmetric quantization ``(q, scale, zero)`` with ``x ~ zero + scale * q``, ``0 <= q <= 2^b - 1``.

    ``rounding="stochastic"`` (default, the paper's gradient quantizer): ``q = floor((x - min)/s + u)``,
    unbiased, drawn with ``seed`` (see the module docstring); ``"nearest"``: round-to-nearest (biased, for
    comparison).  A constant tensor gets scale 0.
    """
    check_choice(rounding, "rounding", ("stochastic", "nearest"))
    bits = check_scalar(bits, "bits", "int", min=1, max=16)
    _float_q = check_bool(_float_q, "_float_q")
    _float_tensor(x)
    x = x.detach()
    if x.numel() == 0:
        zero = torch.zeros((), dtype=x.dtype, device=x.device)
        return torch.zeros_like(x, dtype=torch.int32), zero, zero
    lo, hi = x.amin(), x.amax()
    _finite_extremes(lo, hi)
    levels = 2 ** bits - 1
    scale = (hi - lo) / levels
    t = (x - lo) / scale.clamp_min(torch.finfo(x.dtype).tiny)  # a constant tensor gives t = 0, so q = 0
    if rounding == "stochastic":
        t = t + torch.rand(x.shape, generator=_torch_rng(seed, x.device), dtype=x.dtype, device=x.device)
        q = torch.clamp(torch.floor(t), 0, levels)
    else:
        q = torch.clamp(torch.round(t), 0, levels)
    return (q if _float_q else q.to(torch.int32)), scale, lo


def dequantize(q: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor | None = None) -> torch.Tensor:
    """``scale * q`` (symmetric) or ``zero + scale * q`` (asymmetric), in the scale's dtype.

    ``scale`` (floating) and ``zero`` are 0-d tensors or have ``q``'s dimensions and broadcast to its shape
    (one scale per tensor, or per output channel).
    """
    check_tensor(q, "q")
    check_tensor(scale, "scale", floating=True)
    for name, value in (("scale", scale), ("zero", zero)):
        if value is None and name == "zero":
            continue
        check_tensor(value, name, floating=True)
        ok = value.ndim == 0
        if value.ndim == q.ndim:
            try:
                ok = tuple(torch.broadcast_shapes(value.shape, q.shape)) == tuple(q.shape)
            except RuntimeError:
                ok = False
        if not ok:
            raise ValueError(f"{name} must be 0-d or broadcast to q's shape {tuple(q.shape)} with q's dimensions, "
                             f"got shape {tuple(value.shape)}")
    out = q.to(scale.dtype) * scale
    return out if zero is None else out + zero


def fake_quant(x: torch.Tensor, bits: int, mode: str = "nearest", seed: TorchSeed = None,
               per_channel: bool = False) -> torch.Tensor:
    """Quantize and dequantize: ``mode="nearest"`` is the symmetric W/A quantizer, ``"stochastic"`` the
    asymmetric stochastic gradient quantizer (drawn with ``seed``), ``"asym_nearest"`` the asymmetric one with
    round-to-nearest."""
    check_choice(mode, "mode", ("nearest", "stochastic", "asym_nearest"))
    per_channel = check_bool(per_channel, "per_channel")
    if mode == "nearest":
        return dequantize(*quantize_symmetric(x, bits, per_channel))
    rounding = "stochastic" if mode == "stochastic" else "nearest"
    return dequantize(*quantize_stochastic_asym(x, bits, seed, rounding))


def _rel_error(x_hat: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return ((x_hat - x) ** 2).sum() / (x ** 2).sum().clamp_min(torch.finfo(x.dtype).tiny)


def quant_error(x: torch.Tensor, bits: int, mode: str = "nearest", seed: TorchSeed = None) -> float:
    """Relative quantization error ``||Q(x) - x||^2 / ||x||^2`` (our instantiation of the paper's Eq. 5).

    ``x`` is a non-empty floating tensor of finite values.
    """
    if _float_tensor(x).numel() == 0:
        raise ValueError("x must be a non-empty tensor: the relative error of nothing is undefined")
    return float(_rel_error(fake_quant(x, bits, mode, seed), x.detach()))


@dataclass
class BitConfig:
    """Bit-widths of weights ``w``, activations ``a`` and gradients ``g``, each in {4, 6, 8} or None (FP32).

    A bit-width can only go up (LBI-FL never lowers it); :meth:`raise_` adds 2 bits.  One object is
    shared by all the low-bit layers of a model, so changing it changes the whole model.
    """

    w: int | None = 4
    a: int | None = 4
    g: int | None = 4

    def __setattr__(self, name: str, value: object) -> None:
        if name in COMPONENTS:
            if value is not None:
                check_bits(value, f"bit-width {name}")
            old = self.__dict__.get(name)
            if name in self.__dict__ and (32 if value is None else value) < (32 if old is None else old):
                raise ValueError(f"bit-width {name} can only increase: {old} -> {value}")
        super().__setattr__(name, value)

    def raise_(self, component: str) -> None:
        """Add 2 bits to ``component`` ('w', 'a' or 'g'); it must be at 4 or 6."""
        check_choice(component, "component", COMPONENTS)
        value = getattr(self, component)
        if value is None or value >= 8:
            raise ValueError(f"bit-width {component} is {value}: cannot be raised")
        setattr(self, component, value + 2)

    def as_tuple(self) -> tuple[int | None, int | None, int | None]:
        return (self.w, self.a, self.g)


class LowBitMixin:
    """Shared quantize-with-checks helpers of :class:`QLinear` and :class:`QConv2d` (``isinstance`` finds both).

    ``generator`` is the layer's ``torch.Generator`` for the stochastic rounding of gradients (None: torch's
    global RNG).
    """

    bits: BitConfig
    per_channel: bool
    generator: torch.Generator | None
    grad_rounding: str
    layer_name: str

    def _init_lowbit(self, bits: BitConfig | None, per_channel: bool, seed: TorchSeed, grad_rounding: str) -> None:
        if bits is not None:
            check_instance(bits, "bits", BitConfig)
        check_choice(grad_rounding, "grad_rounding", ("stochastic", "nearest"))
        self.bits = bits if bits is not None else BitConfig()
        self.per_channel, self.grad_rounding = check_bool(per_channel, "per_channel"), grad_rounding
        self.generator = _torch_rng(seed)
        self.layer_name = type(self).__name__
        self._last: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    @property
    def errors(self) -> dict[str, float]:
        """Relative quantization errors ``||Q(x) - x||^2 / ||x||^2`` of W, A, G at the last forward/backward."""
        return {c: float(_rel_error(x_hat, x)) for c, (x_hat, x) in self._last.items()}

    def _quantize(self, x: torch.Tensor, what: str, component: str) -> torch.Tensor:
        bits = getattr(self.bits, component)
        if bits is None:
            return x.detach()
        try:
            if component == "g":
                gen = self.generator if self.generator is not None and self.generator.device == x.device else None
                q, scale, zero = quantize_stochastic_asym(x, bits, gen, self.grad_rounding, _float_q=True)
                x_hat = q * scale + zero
            else:
                q, scale = quantize_symmetric(x, bits, self.per_channel and component == "w", _float_q=True)
                x_hat = q * scale
        except ValueError as exc:
            raise ValueError(f"layer {self.layer_name!r}: {what}: {exc}") from exc
        self._last[component] = (x_hat, x.detach())
        return x_hat

    def _q_weight(self, w: torch.Tensor) -> torch.Tensor:
        return self._quantize(w, "weight", "w")

    def _q_act(self, x: torch.Tensor) -> torch.Tensor:
        return self._quantize(x, "input activation", "a")

    def _q_grad(self, g: torch.Tensor) -> torch.Tensor:
        return self._quantize(g, "output gradient", "g")


class _LinearFn(torch.autograd.Function):
    """y = A_hat W_hat^T + b; backward with G_hat = Q_g(dL/dy): dx = G_hat W_hat, dW = G_hat^T A_hat (STE)."""

    @staticmethod
    def forward(ctx, x, weight, bias, layer):
        a_hat, w_hat = layer._q_act(x), layer._q_weight(weight)
        ctx.save_for_backward(a_hat, w_hat)
        ctx.layer, ctx.has_bias = layer, bias is not None
        return F.linear(a_hat, w_hat, bias)

    @staticmethod
    def backward(ctx, grad):
        a_hat, w_hat = ctx.saved_tensors
        g_hat = ctx.layer._q_grad(grad)
        g2 = g_hat.reshape(-1, g_hat.shape[-1])
        grad_x = g_hat @ w_hat
        grad_w = g2.T @ a_hat.reshape(-1, a_hat.shape[-1])
        grad_b = g2.sum(0) if ctx.has_bias else None
        return grad_x, grad_w, grad_b, None


class _Conv2dFn(torch.autograd.Function):
    """The convolutional version of :class:`_LinearFn`."""

    @staticmethod
    def forward(ctx, x, weight, bias, layer):
        a_hat, w_hat = layer._q_act(x), layer._q_weight(weight)
        ctx.save_for_backward(a_hat, w_hat)
        ctx.layer, ctx.has_bias = layer, bias is not None
        return F.conv2d(a_hat, w_hat, bias, layer.stride, layer.padding, layer.dilation, layer.groups)

    @staticmethod
    def backward(ctx, grad):
        a_hat, w_hat = ctx.saved_tensors
        layer = ctx.layer
        g_hat = layer._q_grad(grad)
        args = (layer.stride, layer.padding, layer.dilation, layer.groups)
        grad_x = torch.nn.grad.conv2d_input(a_hat.shape, w_hat, g_hat, *args)
        grad_w = torch.nn.grad.conv2d_weight(a_hat, w_hat.shape, g_hat, *args)
        grad_b = g_hat.sum(dim=(0, 2, 3)) if ctx.has_bias else None
        return grad_x, grad_w, grad_b, None


class QLinear(LowBitMixin, nn.Linear):
    """Drop-in ``nn.Linear`` whose forward and backward run on quantized W, A and G (fake quantization).

    ``bits`` is a shared :class:`BitConfig`; ``per_channel`` gives weights one scale per output unit;
    ``seed`` drives the stochastic rounding of gradients (see the module docstring); ``errors`` holds
    the last relative quantization errors of W, A and G.  ``init_seed`` initialises the weights (as
    ``nn.Linear`` does) without touching the caller's global torch RNG.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, bits: BitConfig | None = None,
                 per_channel: bool = False, seed: TorchSeed = None,
                 grad_rounding: str = "stochastic", device=None, dtype=None, init_seed: Seed = 0) -> None:
        for name, value in (("in_features", in_features), ("out_features", out_features)):
            check_scalar(value, name, "int", min=1)
        bias = check_bool(bias, "bias")
        with seeded(init_seed, "init_seed"):
            nn.Linear.__init__(self, in_features, out_features, bias, device=device, dtype=dtype)
        self._init_lowbit(bits, per_channel, seed, grad_rounding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", floating=True)
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(f"x must have {self.in_features} features in its last dimension, got shape "
                             f"{tuple(x.shape)}")
        return _LinearFn.apply(x, self.weight, self.bias, self)


class QConv2d(LowBitMixin, nn.Conv2d):
    """Drop-in ``nn.Conv2d`` with quantized W, A and G (see :class:`QLinear`); zero padding only."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, bits: BitConfig | None = None, per_channel: bool = False,
                 seed: TorchSeed = None, grad_rounding: str = "stochastic",
                 device=None, dtype=None, init_seed: Seed = 0) -> None:
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels), ("groups", groups)):
            check_scalar(value, name, "int", min=1)
        if isinstance(padding, str):
            raise ValueError(f"padding must be numeric for a QConv2d, got {padding!r}")
        for name, value, low in (("kernel_size", kernel_size, 1), ("stride", stride, 1), ("padding", padding, 0),
                                 ("dilation", dilation, 1)):
            for v in (value if isinstance(value, (tuple, list)) else (value,)):
                check_scalar(v, name, "int", min=low)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"groups must divide in_channels and out_channels, got {groups} for "
                             f"{in_channels}, {out_channels}")
        bias = check_bool(bias, "bias")
        with seeded(init_seed, "init_seed"):
            nn.Conv2d.__init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                               device=device, dtype=dtype)
        self._init_lowbit(bits, per_channel, seed, grad_rounding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", ndim=(3, 4), floating=True)
        if x.shape[-3] != self.in_channels:
            raise ValueError(f"x must have {self.in_channels} channels, got shape {tuple(x.shape)}")
        return _Conv2dFn.apply(x, self.weight, self.bias, self)


def _swap(child: nn.Module, bits: BitConfig, per_channel: bool, generator: torch.Generator | None,
          grad_rounding: str) -> nn.Module | None:
    kw = dict(bits=bits, per_channel=per_channel, seed=generator, grad_rounding=grad_rounding,
              device="meta", dtype=child.weight.dtype)  # no initialisation (and no global RNG draw): assigned below
    if type(child) is nn.Linear:
        new = QLinear(child.in_features, child.out_features, child.bias is not None, **kw)
    elif type(child) is nn.Conv2d and child.padding_mode == "zeros" and not isinstance(child.padding, str):
        new = QConv2d(child.in_channels, child.out_channels, child.kernel_size, child.stride, child.padding,
                      child.dilation, child.groups, child.bias is not None, **kw)
    else:
        return None
    new.load_state_dict(child.state_dict(), assign=True)
    return new


def quantize_model(model: nn.Module, bits: BitConfig, per_channel: bool = False,
                   seed: TorchSeed = None, grad_rounding: str = "stochastic",
                   strict: bool = False) -> nn.Module:
    """Replace every ``nn.Linear`` / ``nn.Conv2d`` of ``model`` in place by :class:`QLinear` / :class:`QConv2d`.

    All low-bit layers share ``bits`` and one ``torch.Generator`` made from ``seed`` (see the module
    docstring).  Other layers that hold parameters stay in FP32 and are listed in a warning
    (``strict=True`` raises TypeError instead).  A bare ``nn.Linear`` / ``nn.Conv2d`` cannot be
    replaced in place and raises TypeError.  Returns the model.
    """
    check_instance(model, "model", nn.Module, "an nn.Module")
    check_instance(bits, "bits", BitConfig)
    per_channel, strict = check_bool(per_channel, "per_channel"), check_bool(strict, "strict")
    check_choice(grad_rounding, "grad_rounding", ("stochastic", "nearest"))
    generator = _torch_rng(seed)
    if type(model) in (nn.Linear, nn.Conv2d):
        raise TypeError(f"a bare {type(model).__name__} cannot be replaced in place: wrap it in nn.Sequential "
                        f"or build a QLinear / QConv2d directly")
    unsupported = []
    for parent_name, parent in list(model.named_modules()):
        for name, child in list(parent.named_children()):
            full = f"{parent_name}.{name}" if parent_name else name
            if isinstance(child, LowBitMixin):
                child.bits = bits
                child.layer_name = full
                continue
            new = _swap(child, bits, per_channel, generator, grad_rounding) if hasattr(child, "weight") else None
            if new is not None:
                new.layer_name = full
                setattr(parent, name, new)
            elif any(True for _ in child.parameters(recurse=False)):
                unsupported.append(f"{full} ({type(child).__name__})")
    if unsupported:
        message = f"layers left in FP32 (not supported by the low-bit quantizer): {', '.join(unsupported)}"
        if strict:
            raise TypeError(message)
        warnings.warn(message, stacklevel=2)
    return model


@torch.no_grad()
def integer_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, w_bits: int,
                   a_bits: int) -> torch.Tensor:
    """The quantized linear layer computed with integers: int32 product of q_a and q_w, then rescaled.

    Matches :class:`QLinear`'s forward (fake quantization) to float tolerance.  ``x`` is ``(..., in)``,
    ``weight`` ``(out, in)``, ``bias`` ``(out,)`` or None, all floating and finite; ``w_bits``, ``a_bits`` in [2, 16].
    """
    check_tensor(x, "x", floating=True, finite=True)
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension (..., in), got a 0-d tensor")
    check_tensor(weight, "weight", ndim=2, floating=True, finite=True)
    if weight.numel() == 0:
        raise ValueError(f"weight must be a non-empty (out, in) matrix, got shape {tuple(weight.shape)}")
    if x.shape[-1] != weight.shape[1]:
        raise ValueError(f"x and weight must share the input size, got shapes {tuple(x.shape)}, "
                         f"{tuple(weight.shape)}")
    if bias is not None:
        check_tensor(bias, "bias", shape=(weight.shape[0],), floating=True, finite=True)
    w_bits = check_scalar(w_bits, "w_bits", "int", min=2, max=16)
    a_bits = check_scalar(a_bits, "a_bits", "int", min=2, max=16)
    q_a, s_a = quantize_symmetric(x, a_bits)
    q_w, s_w = quantize_symmetric(weight, w_bits)
    acc = q_a.to(torch.int64).reshape(-1, x.shape[-1]) @ q_w.to(torch.int64).T
    if acc.numel() and acc.abs().max() >= 2 ** 31:
        raise OverflowError("int32 accumulator overflow")
    y = acc.to(torch.int32).to(x.dtype) * (s_a * s_w)
    y = y.reshape(*x.shape[:-1], weight.shape[0])
    return y if bias is None else y + bias


def count_macs(model: nn.Module, input_shape: tuple[int, ...]) -> dict[str, int]:
    """Multiply-accumulates per sample of every Linear / Conv2d layer, from one forward of a zero input.

    ``input_shape`` (positive sizes) excludes the batch dimension and must fit the model.
    """
    check_instance(model, "model", nn.Module, "an nn.Module")
    input_shape = tuple(check_sequence(input_shape, "input_shape", min_len=1,
                                       item=lambda v, n: check_scalar(v, n, "int", min=1)))
    macs: dict[str, int] = {}
    hooks = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            hooks.append(module.register_forward_hook(
                lambda m, i, o, n=name: macs.__setitem__(n, int(o[0].numel() * m.in_features))))
        elif isinstance(module, nn.Conv2d):
            k = module.in_channels // module.groups * module.kernel_size[0] * module.kernel_size[1]
            hooks.append(module.register_forward_hook(
                lambda m, i, o, n=name, k=k: macs.__setitem__(n, int(o[0].numel() * k))))
    param = next(model.parameters(), None)
    x = torch.zeros((1, *input_shape), device=param.device if param is not None else "cpu",
                    dtype=param.dtype if param is not None else torch.float32)
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            try:
                model(x)
            except RuntimeError as exc:
                raise ValueError(f"input_shape {input_shape} does not fit the model: {exc}") from exc
    finally:
        model.train(was_training)
        for h in hooks:
            h.remove()
    return macs


def bitops_per_sample(total_macs: int, bits: BitConfig | tuple[int | None, int | None, int | None]) -> int:
    """Training BitOPs of one sample: forward m b_w b_a + input gradient m b_w b_g + weight gradient m b_a b_g.

    ``total_macs`` is an int >= 0; ``bits`` a :class:`BitConfig` or ``(b_w, b_a, b_g)``.  A component at None
    (FP32) counts as 32 bits.
    """
    total_macs = check_scalar(total_macs, "total_macs", "int", min=0)
    w, a, g = (32 if b is None else b for b in bit_tuple(bits))
    return int(total_macs) * (w * a + w * g + a * g)


def training_bitops(macs_per_layer: dict[str, int], bits: BitConfig | tuple, n_samples: int) -> int:
    """Training BitOPs of ``n_samples`` sample passes (forward and backward) at ``bits``."""
    n_samples = check_scalar(n_samples, "n_samples", "int", min=0)
    check_instance(macs_per_layer, "macs_per_layer", Mapping, "a mapping layer name -> MACs")
    total = sum(check_scalar(v, f"macs_per_layer[{k!r}]", "int", min=0) for k, v in macs_per_layer.items())
    return bitops_per_sample(total, bits) * n_samples


def message_bits(arrays: dict, b_w: int | None) -> int:
    """The analytic message size: sum over tensors of ``numel * b_w + 32`` (FP32: ``numel * 32``).

    For reference only: the reproduction reads the bits actually serialized from the ledger.
    """
    check_instance(arrays, "arrays", Mapping, "a mapping name -> array")
    if b_w is not None:
        check_bits(b_w, "b_w")
    sizes = [int(v.numel()) if torch.is_tensor(v) else int(np.asarray(v).size) for v in arrays.values()]
    return sum(n * 32 for n in sizes) if b_w is None else sum(n * b_w + 32 for n in sizes)

"""A small pre-norm transformer block shared by the attention and reasoning papers.

One block is ``x + attn(norm(x))`` followed by ``x + mlp(norm(x))`` (pre-LayerNorm, as in GPT-2
and in the models of the dual-attention, modular-arithmetic and grokking papers).  Attention uses
:func:`torch.nn.functional.scaled_dot_product_attention`, so it is fast on CPU and runs on CUDA
tensors unchanged.

Example
-------
>>> import torch
>>> from icml25.attention.transformer import TransformerStack
>>> stack = TransformerStack(n_layers=2, d_model=32, n_heads=4, causal=True)
>>> stack(torch.randn(8, 5, 32)).shape
torch.Size([8, 5, 32])
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from icml25.utils.random import Seed, init_rng
from icml25.utils.validation import check_bool, check_choice, check_instance, check_scalar, check_tensor

__all__ = ["SelfAttention", "MLP", "TransformerBlock", "TransformerStack", "init_gpt_weights", "check_tokens"]

_ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU, "silu": nn.SiLU}


def check_tokens(x: torch.Tensor, d_model: int, name: str = "x") -> None:
    """Raise a clear error unless ``x`` is a float tensor of shape (batch, length, d_model).

    NaN entries pass (a forward pass propagates them); an empty batch is a valid batch.
    """
    d_model = check_scalar(d_model, "d_model", "int", min=1)
    check_tensor(x, name)
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"{name} must have shape (batch, length, {d_model}), got {tuple(x.shape)}")
    check_tensor(x, name, floating=True)




def _head_split(d_model: int, n_heads: int) -> tuple[int, int]:
    d_model = check_scalar(d_model, "d_model", "int", min=1)
    n_heads = check_scalar(n_heads, "n_heads", "int", min=1)
    if d_model % n_heads:
        raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
    return d_model, n_heads


class SelfAttention(nn.Module):
    """Multi-head softmax self-attention (the *sensory* attention of the dual-attention paper).

    ``mask`` (optional) is a boolean tensor broadcastable to (batch, heads, length, length) where
    True marks the pairs that may attend; ``causal=True`` adds the lower-triangular mask.
    ``seed`` fixes the initial weights without touching the caller's global torch RNG; ``seed=None``
    draws them from the global RNG, as ``nn`` layers do (the same holds for every module here).
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                 causal: bool = False, seed: Seed = None) -> None:
        super().__init__()
        d_model, n_heads = _head_split(d_model, n_heads)
        dropout = check_scalar(dropout, "dropout", "real", min=0.0, max=1.0, inclusive="left")
        self.d_model, self.n_heads, self.dropout, self.causal = d_model, n_heads, dropout, check_bool(causal, "causal")
        bias = check_bool(bias, "bias")
        with init_rng(seed):
            self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
            self.out = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        check_tokens(x, self.d_model)
        if mask is not None:
            check_tensor(mask, "mask")
        B, n, _ = x.shape
        q, k, v = self.qkv(x).view(B, n, 3, self.n_heads, self.d_model // self.n_heads).permute(2, 0, 3, 1, 4)
        p = self.dropout if self.training else 0.0
        if mask is not None and self.causal:
            mask = mask & torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p,
                                           is_causal=self.causal and mask is None)
        return self.out(y.transpose(1, 2).reshape(B, n, self.d_model))


class MLP(nn.Module):
    """Position-wise feed-forward network ``Linear -> activation -> Linear`` on inputs ``(..., d_model)``."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "gelu", bias: bool = True,
                 dropout: float = 0.0, seed: Seed = None) -> None:
        super().__init__()
        check_choice(activation, "activation", sorted(_ACTIVATIONS))
        d_model, d_ff = check_scalar(d_model, "d_model", "int", min=1), check_scalar(d_ff, "d_ff", "int", min=1)
        dropout = check_scalar(dropout, "dropout", "real", min=0.0, max=1.0, inclusive="left")
        bias = check_bool(bias, "bias")
        self.d_model = d_model
        with init_rng(seed):
            self.net = nn.Sequential(nn.Linear(d_model, d_ff, bias=bias), _ACTIVATIONS[activation](),
                                     nn.Linear(d_ff, d_model, bias=bias), nn.Dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", floating=True)
        if x.ndim == 0 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (..., {self.d_model}), got shape {tuple(x.shape)}")
        return self.net(x)


class TransformerBlock(nn.Module):
    """Pre-norm transformer block: ``x + attn(norm1(x))``, then ``x + mlp(norm2(x))``.

    ``attention`` replaces the default :class:`SelfAttention` by any module mapping
    (x, mask) -> tensor of x's shape (the dual-attention paper plugs its dual attention in here).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int | None = None, dropout: float = 0.0,
                 causal: bool = False, bias: bool = True, activation: str = "gelu",
                 attention: nn.Module | None = None, seed: Seed = None) -> None:
        super().__init__()
        d_model, n_heads = _head_split(d_model, n_heads)
        d_ff = check_scalar(4 * d_model if d_ff is None else d_ff, "d_ff", "int", min=1)
        dropout = check_scalar(dropout, "dropout", "real", min=0.0, max=1.0, inclusive="left")
        bias = check_bool(bias, "bias")
        if attention is not None:
            check_instance(attention, "attention", nn.Module, "an nn.Module")
        self.d_model = d_model
        with init_rng(seed):
            self.norm1 = nn.LayerNorm(d_model, bias=bias)
            self.attn = attention if attention is not None else SelfAttention(d_model, n_heads, dropout, bias, causal)
            self.drop = nn.Dropout(dropout)
            self.norm2 = nn.LayerNorm(d_model, bias=bias)
            self.mlp = MLP(d_model, d_ff, activation, bias, dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        check_tokens(x, self.d_model)
        x = x + self.drop(self.attn(self.norm1(x), mask))
        return x + self.mlp(self.norm2(x))


class TransformerStack(nn.Module):
    """``n_layers`` pre-norm blocks followed by a final LayerNorm (GPT-2 layout)."""

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int | None = None,
                 dropout: float = 0.0, causal: bool = False, bias: bool = True, activation: str = "gelu",
                 seed: Seed = None) -> None:
        super().__init__()
        n_layers = check_scalar(n_layers, "n_layers", "int", min=1)
        with init_rng(seed):
            self.blocks = nn.ModuleList(TransformerBlock(d_model, n_heads, d_ff, dropout, causal, bias, activation)
                                        for _ in range(n_layers))
            self.norm = nn.LayerNorm(d_model, bias=check_bool(bias, "bias"))
        self.d_model = self.blocks[0].d_model

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        check_tokens(x, self.d_model)
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x)


def init_gpt_weights(model: nn.Module, n_layers: int, std: float = 0.02) -> None:
    """GPT-2 initialisation: linear and embedding weights ~ N(0, std), biases 0, and the output
    projections of attention and MLP (the residual branches) ~ N(0, std / sqrt(2 n_layers))."""
    check_instance(model, "model", nn.Module, "an nn.Module")
    n_layers = check_scalar(n_layers, "n_layers", "int", min=1)
    std = check_scalar(std, "std", "real", min=0.0, inclusive="neither")
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, 0.0, std)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)
    residual_std = std / math.sqrt(2 * n_layers)
    for module in model.modules():
        if isinstance(module, SelfAttention):
            nn.init.normal_(module.out.weight, 0.0, residual_std)
        elif isinstance(module, MLP):
            nn.init.normal_(module.net[2].weight, 0.0, residual_std)

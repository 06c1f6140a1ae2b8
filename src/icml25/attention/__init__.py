"""Attention architectures: the shared pre-norm transformer block and the dual-attention transformer."""

from icml25.attention.transformer import (
    MLP,
    SelfAttention,
    TransformerBlock,
    TransformerStack,
    check_tokens,
    init_gpt_weights,
)

__all__ = ["MLP", "SelfAttention", "TransformerBlock", "TransformerStack", "check_tokens", "init_gpt_weights"]

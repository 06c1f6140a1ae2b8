"""Attention architectures: the shared pre-norm transformer block and the dual-attention transformer."""

from icml25.attention.dual_attention import (
    Attention,
    DATEncoderClassifier,
    DualAttention,
    DualAttnDecoderBlock,
    DualAttnEncoderBlock,
    DualAttnTransformerLM,
    PositionalSymbolRetriever,
    PositionRelativeSymbolRetriever,
    RelationalAttention,
    SymbolicAttention,
    make_symbol_retriever,
)
from icml25.attention.transformer import (
    MLP,
    SelfAttention,
    TransformerBlock,
    TransformerStack,
    check_tokens,
    init_gpt_weights,
)

__all__ = [
    "MLP", "SelfAttention", "TransformerBlock", "TransformerStack", "check_tokens", "init_gpt_weights",
    "Attention", "RelationalAttention", "DualAttention", "SymbolicAttention", "PositionalSymbolRetriever",
    "PositionRelativeSymbolRetriever", "make_symbol_retriever", "DualAttnEncoderBlock", "DualAttnDecoderBlock",
    "DATEncoderClassifier", "DualAttnTransformerLM",
]

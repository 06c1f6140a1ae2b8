"""Valid calls of ``icml25.attention`` (the shared transformer and the dual-attention transformer)."""

import functools

from api_examples._core import Example
from icml25 import attention

# A forward pass propagates NaN as torch does, and a batch of zero sequences is a valid (empty) batch.
_FORWARD = ("nan", "empty")
_SEED = {"seed": 0}


def _torch():
    import torch

    return torch


def _t(*shape, seed=0):
    torch = _torch()
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _tokens(seed=0):
    return _t(2, 3, 8, seed=seed)


def _forward(build, kwargs, allow=None, method="forward", **extra):
    """``Class.<method>`` on one cached instance (the forward pass does not change the module)."""
    module = functools.cache(build)
    return Example(lambda **kw: getattr(module(), method)(**kw), kwargs, allow=allow or {}, **extra)


def _ids():
    torch = _torch()
    return torch.randint(0, 11, (2, 5), generator=torch.Generator().manual_seed(0))


_LM = {"vocab_size": 11, "d_model": 8, "n_layers": 1, "n_heads_sa": 1, "n_heads_ra": 1, "dff": 8,
       "max_block_size": 8, "symbol_retrieval_kwargs": {"n_heads": 2, "n_symbols": 4}, **_SEED}
_DAT = {"d_in": 4, "n_classes": 2, "d_model": 8, "n_layers": 1, "n_heads_sa": 1, "n_heads_ra": 1, "dff": 8,
        "max_len": 4, **_SEED}
_ENC = {"d_model": 8, "n_heads_sa": 1, "n_heads_ra": 1, "dff": 8, **_SEED}
_DEC = {"d_model": 8, "n_heads_sa": 1, "n_heads_ra": 1, "n_heads_cross": 2, "dff": 8, **_SEED}
_SIZES = ("d_model", "n_heads", "d_ff", "dff", "n_layers", "n_symbols", "symbol_dim", "max_length", "max_len",
          "max_block_size", "vocab_size", "d_in", "n_classes", "n_heads_cross")


def _positive(kwargs):
    return [k for k in kwargs if k in _SIZES]


def _module(cls, kwargs, nonneg=(), positive=(), **extra):
    return Example(cls, kwargs, positive=[*_positive(kwargs), *positive], nonneg=["dropout", "dropout_rate", *nonneg],
                   **extra)


EXAMPLES = {
    "icml25.attention.check_tokens": Example(attention.check_tokens,
                                             lambda: {"x": _tokens(), "d_model": 8, "name": "x"},
                                             positive=["d_model"], skip={"name": "a free-text label used in messages"},
                                             allow={"x": _FORWARD}),
    "icml25.attention.init_gpt_weights": Example(
        attention.init_gpt_weights, lambda: {"model": attention.TransformerStack(1, 8, 2, seed=0), "n_layers": 1,
                                             "std": 0.02},
        positive=["n_layers", "std"]),
    "icml25.attention.make_symbol_retriever": Example(
        attention.make_symbol_retriever, {"symbol_retrieval": "positional_symbols", "d_model": 8, "max_length": 4},
        positive=["d_model", "max_length"]),
    # ---------------------------------------------------------------- the shared transformer
    "icml25.attention.SelfAttention": _module(attention.SelfAttention, {"d_model": 8, "n_heads": 2, **_SEED}),
    "icml25.attention.SelfAttention.forward": _forward(lambda: attention.SelfAttention(8, 2, seed=0),
                                                       lambda: {"x": _tokens()}, allow={"x": _FORWARD}),
    "icml25.attention.MLP": _module(attention.MLP, {"d_model": 8, "d_ff": 16, **_SEED}),
    # position-wise: any leading dimensions, as nn.Linear
    "icml25.attention.MLP.forward": _forward(lambda: attention.MLP(8, 16, seed=0), lambda: {"x": _tokens()},
                                             allow={"x": (*_FORWARD, "ndim")}),
    "icml25.attention.TransformerBlock": _module(attention.TransformerBlock,
                                                 {"d_model": 8, "n_heads": 2, "d_ff": 16, **_SEED}),
    "icml25.attention.TransformerBlock.forward": _forward(lambda: attention.TransformerBlock(8, 2, 16, seed=0),
                                                          lambda: {"x": _tokens()}, allow={"x": _FORWARD}),
    "icml25.attention.TransformerStack": _module(attention.TransformerStack,
                                                 {"n_layers": 1, "d_model": 8, "n_heads": 2, "d_ff": 16, **_SEED}),
    "icml25.attention.TransformerStack.forward": _forward(lambda: attention.TransformerStack(1, 8, 2, 16, seed=0),
                                                          lambda: {"x": _tokens()}, allow={"x": _FORWARD}),
    # ---------------------------------------------------------------- dual attention
    "icml25.attention.Attention": _module(attention.Attention, {"d_model": 8, "n_heads": 2, **_SEED}),
    "icml25.attention.Attention.forward": _forward(
        lambda: attention.Attention(8, 2, seed=0),
        lambda: {"query": _tokens(0), "key": _t(2, 4, 8, seed=1), "value": _t(2, 4, 8, seed=2), "is_causal": False,
                 "need_weights": True},
        allow={"query": "nan", "key": "nan", "value": "nan"}),
    "icml25.attention.Attention.attention_scores": _forward(
        lambda: attention.Attention(8, 2, seed=0),
        lambda: {"query": _tokens(0), "key": _t(2, 4, 8, seed=1), "is_causal": True},
        allow={"query": "nan", "key": "nan"}, method="attention_scores"),
    "icml25.attention.RelationalAttention": _module(attention.RelationalAttention,
                                                    {"d_model": 8, "n_heads": 2, "n_relations": 4, **_SEED},
                                                    positive=["n_relations"]),
    "icml25.attention.RelationalAttention.forward": _forward(
        lambda: attention.RelationalAttention(8, 2, seed=0), lambda: {"x": _tokens(0), "symbols": _tokens(1),
                                                                      "is_causal": True},
        allow={"x": "nan", "symbols": "nan"}),
    "icml25.attention.RelationalAttention.relations": _forward(lambda: attention.RelationalAttention(8, 2, seed=0),
                                                               lambda: {"x": _tokens()}, allow={"x": _FORWARD},
                                                               method="relations"),
    "icml25.attention.DualAttention": _module(attention.DualAttention,
                                              {"d_model": 8, "n_heads_sa": 1, "n_heads_ra": 1, **_SEED},
                                              nonneg=["n_heads_sa", "n_heads_ra"]),
    "icml25.attention.DualAttention.forward": _forward(
        lambda: attention.DualAttention(8, 1, 1, seed=0),
        lambda: {"x": _tokens(0), "symbols": _tokens(1), "is_causal": False, "need_weights": True},
        allow={"x": "nan", "symbols": "nan"}),
    "icml25.attention.PositionalSymbolRetriever": _module(attention.PositionalSymbolRetriever,
                                                          {"symbol_dim": 8, "max_length": 4, **_SEED}),
    "icml25.attention.PositionalSymbolRetriever.forward": _forward(
        lambda: attention.PositionalSymbolRetriever(8, 4, seed=0), lambda: {"x": _tokens()}, allow={"x": _FORWARD}),
    "icml25.attention.PositionRelativeSymbolRetriever": _module(attention.PositionRelativeSymbolRetriever,
                                                                {"symbol_dim": 8, "max_rel_pos": 2, **_SEED},
                                                                nonneg=["max_rel_pos"]),
    "icml25.attention.PositionRelativeSymbolRetriever.forward": _forward(
        lambda: attention.PositionRelativeSymbolRetriever(8, 2, seed=0), lambda: {"x": _tokens()},
        allow={"x": _FORWARD}),
    "icml25.attention.SymbolicAttention": _module(attention.SymbolicAttention,
                                                  {"d_model": 8, "n_heads": 2, "n_symbols": 4, "scale": 0.5,
                                                   "trainable_symbols": True, **_SEED},
                                                  positive=["scale"]),
    "icml25.attention.SymbolicAttention.forward": _forward(lambda: attention.SymbolicAttention(8, 2, 4, seed=0),
                                                           lambda: {"x": _tokens()}, allow={"x": _FORWARD}),
    "icml25.attention.DualAttnEncoderBlock": _module(attention.DualAttnEncoderBlock, _ENC,
                                                     nonneg=["n_heads_sa", "n_heads_ra"]),
    "icml25.attention.DualAttnEncoderBlock.forward": _forward(
        lambda: attention.DualAttnEncoderBlock(**_ENC), lambda: {"x": _tokens(0), "symbols": _tokens(1)},
        allow={"x": "nan", "symbols": "nan"}),
    "icml25.attention.DualAttnDecoderBlock": _module(attention.DualAttnDecoderBlock, _DEC,
                                                     nonneg=["n_heads_sa", "n_heads_ra"]),
    "icml25.attention.DualAttnDecoderBlock.forward": _forward(
        lambda: attention.DualAttnDecoderBlock(**_DEC),
        lambda: {"x": _tokens(0), "context": _t(2, 4, 8, seed=2), "symbols": _tokens(1)},
        allow={"x": "nan", "context": "nan", "symbols": "nan"}),
    "icml25.attention.DATEncoderClassifier": _module(attention.DATEncoderClassifier, _DAT,
                                                     nonneg=["n_heads_sa", "n_heads_ra"],
                                                     allow={"pos_enc": "none"}),  # None: no positional embedding
    "icml25.attention.DATEncoderClassifier.forward": _forward(
        lambda: attention.DATEncoderClassifier(**_DAT), lambda: {"x": _t(2, 3, 4)}, allow={"x": _FORWARD}),
    "icml25.attention.DualAttnTransformerLM": _module(attention.DualAttnTransformerLM, _LM,
                                                      nonneg=["n_heads_sa", "n_heads_ra"]),
    "icml25.attention.DualAttnTransformerLM.forward": _forward(
        lambda: attention.DualAttnTransformerLM(**_LM), lambda: {"idx": _ids(), "targets": _ids()}),
}

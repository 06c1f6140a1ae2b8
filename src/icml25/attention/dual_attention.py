"""Dual attention (Altabaa & Lafferty, ICML 2025): relational attention and the Dual Attention Transformer.

Example
-------
>>> import torch
>>> from icml25.attention import DATEncoderClassifier
>>> model = DATEncoderClassifier(d_in=32, n_classes=2, d_model=64, n_layers=2, n_heads_sa=2, n_heads_ra=2,
...                              max_len=6, ra_kwargs={"symmetric_rels": True})
>>> logits = model(torch.randn(8, 6, 32))                     # (batch, objects, features) -> (8, 2)
>>> block = model.blocks[0]                                   # a DualAttnEncoderBlock
>>> out, sa_scores, (ra_scores, relations) = block.dual_attn(torch.randn(8, 6, 64), torch.randn(8, 6, 64))

Paper: "Disentangling and Integrating Relational and Sensory Information in Transformer Architectures"
(arXiv 2405.16727).  The layers keep the class and argument names of the official package ``dual-attention``
(``Awni00/dual-attention``), re-implemented here:

- :class:`RelationalAttention` (Sec. 2): ``A_i^h = sum_j alpha_ij^h (r(x_i, x_j) W_r^h + s_j W_s^h)`` with
  softmax attention ``alpha``, learned relations ``r_l(x_i, x_j) = <x_i W_q^{rel,l}, x_j W_k^{rel,l}> / sqrt(p)``
  and symbols ``s_j`` that identify the sender without carrying its features.  Computed in the memory-efficient
  order (attend to the n x n x n_r relation tensor, then project), never materialising an n x n x d tensor;
- :class:`Attention`: multi-head (sensory) attention whose output width is ``n_heads * d_model / total_n_heads``;
- :class:`DualAttention` (Sec. 3): ``concat(SelfAttn_{n_sa}(X), RelAttn_{n_ra}(X, S))``, width ``d_model``;
- symbol retrievers (Sec. 3): :class:`PositionalSymbolRetriever`, :class:`PositionRelativeSymbolRetriever`,
  :class:`SymbolicAttention`;
- :class:`DualAttnEncoderBlock`, :class:`DualAttnDecoderBlock` (pre-norm by default; the MLP is the shared
  :class:`icml25.attention.transformer.MLP`), and the models :class:`DATEncoderClassifier` (vector objects, e.g.
  relational games) and :class:`DualAttnTransformerLM` (causal language model).  ``n_heads_ra = 0`` gives the
  standard Transformer with the same code, the baseline of the paper.

Masks are boolean with True = may attend (the official convention); a query whose row is fully masked gets a
zero output, never NaN.  Every module takes ``seed``: given, the initial weights come from it and the caller's
global torch RNG is left alone; ``None`` (the default) draws them from the global RNG, as ``nn`` layers do.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from icml25.attention.transformer import MLP, check_tokens
from icml25.utils.random import Seed, init_rng
from icml25.utils.validation import check_bool, check_choice, check_instance, check_scalar, check_tensor

__all__ = [
    "Attention",
    "RelationalAttention",
    "DualAttention",
    "SymbolicAttention",
    "PositionalSymbolRetriever",
    "PositionRelativeSymbolRetriever",
    "make_symbol_retriever",
    "DualAttnEncoderBlock",
    "DualAttnDecoderBlock",
    "DATEncoderClassifier",
    "DualAttnTransformerLM",
]

_REL_ACTIVATIONS = {"identity": lambda t: t, "relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
                    "softmax": lambda t: torch.softmax(t, dim=-1)}
SYMBOL_RETRIEVERS = ("positional_symbols", "position_relative", "symbolic_attention")


def _attention_mask(attn_mask: torch.Tensor | None, is_causal: bool, n_q: int, n_k: int,
                    device: torch.device) -> torch.Tensor | None:
    """A boolean mask of shape (1 or batch, 1, n_q, n_k), True = may attend, or None."""
    if attn_mask is not None and is_causal:
        raise ValueError("give either attn_mask or is_causal=True, not both")
    if is_causal:
        return torch.ones(n_q, n_k, dtype=torch.bool, device=device).tril().view(1, 1, n_q, n_k)
    if attn_mask is None:
        return None
    if not isinstance(attn_mask, torch.Tensor) or attn_mask.dtype != torch.bool:
        raise TypeError(f"attn_mask must be a boolean torch.Tensor (True = may attend), got "
                        f"{getattr(attn_mask, 'dtype', type(attn_mask).__name__)}")
    if attn_mask.dim() not in (2, 3) or tuple(attn_mask.shape[-2:]) != (n_q, n_k):
        raise ValueError(f"attn_mask must have shape ({n_q}, {n_k}) or (batch, {n_q}, {n_k}), "
                         f"got {tuple(attn_mask.shape)}")
    return attn_mask.to(device).view(-1, 1, n_q, n_k)




def _kwargs(value: dict | None, name: str) -> dict:
    """Optional keyword arguments for a sub-module: ``None`` or a dict."""
    if value is None:
        return {}
    return dict(check_instance(value, name, dict, "a dict of keyword arguments or None"))


def _softmax_scores(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over the last axis; masked entries get weight 0 and a fully masked row is all zeros."""
    if mask is None:
        return torch.softmax(scores, dim=-1)
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) * mask


class Attention(nn.Module):
    """Multi-head softmax attention (the *sensory* heads of dual attention; official ``Attention``).

    ``head_dim = d_model // total_n_heads`` and the output has ``n_heads * head_dim`` features, so that inside
    :class:`DualAttention` the self-attention and relational heads concatenate to ``d_model``.  ``n_kv_heads``
    < ``n_heads`` gives grouped-query attention (1 = multi-query).  ``forward(query, key, value, attn_mask,
    is_causal, need_weights)`` returns ``(out, weights or None)``.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, key_dim: int | None = None,
                 n_kv_heads: int | None = None, add_bias_kv: bool = False, add_bias_out: bool = False,
                 total_n_heads: int | None = None, seed: Seed = None) -> None:
        super().__init__()
        self.d_model = check_scalar(d_model, "d_model", "int", min=1)
        self.n_heads = check_scalar(n_heads, "n_heads", "int", min=1)
        self.total_n_heads = check_scalar(n_heads if total_n_heads is None else total_n_heads, "total_n_heads", "int",
                                          min=n_heads)
        self.n_kv_heads = check_scalar(n_heads if n_kv_heads is None else n_kv_heads, "n_kv_heads", "int", min=1)
        if d_model % self.total_n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by the total number of heads "
                             f"({self.total_n_heads})")
        if n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads ({n_heads}) must be divisible by n_kv_heads ({self.n_kv_heads})")
        self.head_dim = d_model // self.total_n_heads
        self.key_dim = check_scalar(self.head_dim if key_dim is None else key_dim, "key_dim", "int", min=1)
        self.dropout = check_scalar(dropout, "dropout", "real", min=0.0, max=1.0, inclusive="left")
        add_bias_kv, add_bias_out = check_bool(add_bias_kv, "add_bias_kv"), check_bool(add_bias_out, "add_bias_out")
        with init_rng(seed):
            self.wq = nn.Linear(d_model, n_heads * self.key_dim, bias=False)
            self.wk = nn.Linear(d_model, self.n_kv_heads * self.key_dim, bias=add_bias_kv)
            self.wv = nn.Linear(d_model, self.n_kv_heads * self.head_dim, bias=add_bias_kv)
            self.wo = nn.Linear(n_heads * self.head_dim, n_heads * self.head_dim, bias=add_bias_out)
            self.attn_dropout = nn.Dropout(self.dropout)

    def attention_scores(self, query: torch.Tensor, key: torch.Tensor, attn_mask: torch.Tensor | None = None,
                         is_causal: bool = False) -> torch.Tensor:
        """Softmax attention weights of shape (batch, n_heads, n_q, n_k) (before dropout)."""
        check_tokens(query, self.d_model, "query")
        check_tokens(key, self.d_model, "key")
        if key.shape[0] != query.shape[0]:
            raise ValueError(f"query and key must share the batch size, got {tuple(query.shape)} and "
                             f"{tuple(key.shape)}")
        is_causal = check_bool(is_causal, "is_causal")
        B, n_q, _ = query.shape
        n_k = key.shape[1]
        mask = _attention_mask(attn_mask, is_causal, n_q, n_k, query.device)
        q = self.wq(query).view(B, n_q, self.n_heads, self.key_dim).transpose(1, 2)
        k = self.wk(key).view(B, n_k, self.n_kv_heads, self.key_dim).transpose(1, 2)
        k = k.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
        return _softmax_scores(q @ k.transpose(-1, -2) / math.sqrt(self.key_dim), mask)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                attn_mask: torch.Tensor | None = None, is_causal: bool = False,
                need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        check_tokens(query, self.d_model, "query")
        check_tokens(key, self.d_model, "key")
        check_tokens(value, self.d_model, "value")
        if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
            raise ValueError(f"query, key, value must share the batch size and key/value the length; got "
                             f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
        need_weights = check_bool(need_weights, "need_weights")
        B, n_q, _ = query.shape
        weights = self.attention_scores(query, key, attn_mask, is_causal)
        v = self.wv(value).view(B, value.shape[1], self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = v.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
        out = (self.attn_dropout(weights) @ v).transpose(1, 2).reshape(B, n_q, self.n_heads * self.head_dim)
        return self.wo(out), (weights if need_weights else None)


class RelationalAttention(nn.Module):
    """Relational attention (Sec. 2 of the paper; official ``RelationalAttention``).

    ``A_i^h = sum_j alpha_ij^h (r(x_i, x_j) W_r^h + s_j W_s^h)``: the attention weights ``alpha^h`` select
    senders as in self-attention, but the message from ``j`` is the relation vector ``r(x_i, x_j)`` (``n_relations``
    inner products of learned projections of size ``rel_proj_dim``) plus the symbol ``s_j``.  With
    ``symmetric_rels=True`` the relation projections are tied so ``r(x_i, x_j) = r(x_j, x_i)`` exactly.  With
    ``use_relative_positional_symbols=True`` the symbols have shape (n, n, d_model) and ``s_{j-i}`` is used.

    ``forward(x, symbols, attn_mask, is_causal)`` returns ``(out, attn_scores, relations)`` with shapes
    (B, n, n_heads * head_dim), (B, n_heads, n, n), (B, n, n, n_relations).
    """

    def __init__(self, d_model: int, n_heads: int, n_relations: int | None = None, dropout: float = 0.0,
                 key_dim: int | None = None, n_kv_heads: int | None = None, rel_activation: str = "identity",
                 rel_proj_dim: int | None = None, add_bias_kv: bool = False, add_bias_out: bool = False,
                 total_n_heads: int | None = None, symmetric_rels: bool = False,
                 use_relative_positional_symbols: bool = False, seed: Seed = None) -> None:
        super().__init__()
        self.d_model = check_scalar(d_model, "d_model", "int", min=1)
        self.n_heads = check_scalar(n_heads, "n_heads", "int", min=1)
        self.n_relations = check_scalar(n_heads if n_relations is None else n_relations, "n_relations", "int", min=1)
        self.total_n_heads = check_scalar(n_heads if total_n_heads is None else total_n_heads, "total_n_heads", "int",
                                          min=n_heads)
        self.n_kv_heads = check_scalar(n_heads if n_kv_heads is None else n_kv_heads, "n_kv_heads", "int", min=1)
        if d_model % self.total_n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by the total number of heads "
                             f"({self.total_n_heads})")
        if n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads ({n_heads}) must be divisible by n_kv_heads ({self.n_kv_heads})")
        check_choice(rel_activation, "rel_activation", sorted(_REL_ACTIVATIONS))
        self.head_dim = d_model // self.total_n_heads
        self.key_dim = check_scalar(self.head_dim if key_dim is None else key_dim, "key_dim", "int", min=1)
        default_proj = (self.head_dim * n_heads) // self.n_relations
        self.rel_proj_dim = check_scalar(default_proj if rel_proj_dim is None else rel_proj_dim, "rel_proj_dim", "int",
                                         min=1)
        if rel_proj_dim is None and self.rel_proj_dim * self.n_relations != self.head_dim * n_heads:
            raise ValueError(f"rel_proj_dim * n_relations must equal head_dim * n_heads = {self.head_dim * n_heads}; "
                             f"n_relations = {self.n_relations} does not divide it (give rel_proj_dim)")
        self.rel_activation = rel_activation
        self.symmetric_rels = check_bool(symmetric_rels, "symmetric_rels")
        self.use_relative_positional_symbols = check_bool(use_relative_positional_symbols,
                                                          "use_relative_positional_symbols")
        self.dropout = check_scalar(dropout, "dropout", "real", min=0.0, max=1.0, inclusive="left")
        add_bias_kv, add_bias_out = check_bool(add_bias_kv, "add_bias_kv"), check_bool(add_bias_out, "add_bias_out")
        with init_rng(seed):
            self.wq_attn = nn.Linear(d_model, n_heads * self.key_dim, bias=False)
            self.wk_attn = nn.Linear(d_model, self.n_kv_heads * self.key_dim, bias=add_bias_kv)
            self.wq_rel = nn.Linear(d_model, self.n_relations * self.rel_proj_dim, bias=False)
            self.wk_rel = self.wq_rel if self.symmetric_rels else nn.Linear(
                d_model, self.n_relations * self.rel_proj_dim, bias=False)
            self.wr = nn.Parameter(torch.empty(n_heads, self.head_dim, self.n_relations))  # W_r^h
            nn.init.kaiming_uniform_(self.wr, a=math.sqrt(5))
            self.wv = nn.Linear(d_model, self.n_kv_heads * self.head_dim, bias=add_bias_kv)  # W_s^h, on the symbols
            self.wo = nn.Linear(n_heads * self.head_dim, n_heads * self.head_dim, bias=add_bias_out)
            self.attn_dropout = nn.Dropout(self.dropout)

    def relations(self, x: torch.Tensor) -> torch.Tensor:
        """The relation tensor ``R[b, i, j, l] = act(<x_i W_q^{rel,l}, x_j W_k^{rel,l}> / sqrt(rel_proj_dim))``."""
        check_tokens(x, self.d_model)
        B, n, _ = x.shape
        q = self.wq_rel(x).view(B, n, self.n_relations, self.rel_proj_dim)
        k = q if self.symmetric_rels else self.wk_rel(x).view(B, n, self.n_relations, self.rel_proj_dim)
        rel = torch.einsum("birp,bjrp->bijr", q, k) / math.sqrt(self.rel_proj_dim)
        if self.symmetric_rels:  # a blocked matmul need not round (i, j) and (j, i) alike: make R = R^T exactly
            rel = 0.5 * (rel + rel.transpose(1, 2))
        return _REL_ACTIVATIONS[self.rel_activation](rel)

    def _check_symbols(self, x: torch.Tensor, symbols: torch.Tensor) -> None:
        if not isinstance(symbols, torch.Tensor) or not symbols.is_floating_point():
            raise TypeError(f"symbols must be a floating-point torch.Tensor, got "
                            f"{getattr(symbols, 'dtype', type(symbols).__name__)}")
        B, n, _ = x.shape
        want = (n, n, self.d_model) if self.use_relative_positional_symbols else (B, n, self.d_model)
        if tuple(symbols.shape) != want:
            kind = "relative symbols (n, n, d_model)" if self.use_relative_positional_symbols else \
                "symbols (batch, n, d_model)"
            raise ValueError(f"{kind} must have shape {want} to match x of shape {tuple(x.shape)}, "
                             f"got {tuple(symbols.shape)}")

    def forward(self, x: torch.Tensor, symbols: torch.Tensor, attn_mask: torch.Tensor | None = None,
                is_causal: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        check_tokens(x, self.d_model)
        self._check_symbols(x, symbols)
        is_causal = check_bool(is_causal, "is_causal")
        B, n, _ = x.shape
        mask = _attention_mask(attn_mask, is_causal, n, n, x.device)
        q = self.wq_attn(x).view(B, n, self.n_heads, self.key_dim).transpose(1, 2)
        k = self.wk_attn(x).view(B, n, self.n_kv_heads, self.key_dim).transpose(1, 2)
        k = k.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
        attn_scores = _softmax_scores(q @ k.transpose(-1, -2) / math.sqrt(self.key_dim), mask)
        alpha = self.attn_dropout(attn_scores)
        relations = self.relations(x)                                              # (B, n, n, n_r)
        attended_rel = torch.einsum("bhij,bijr->bihr", alpha, relations)          # (B, n, H, n_r)
        out = torch.einsum("bihr,hdr->bihd", attended_rel, self.wr)                # (B, n, H, head_dim)
        sv = self.wv(symbols).unflatten(-1, (self.n_kv_heads, self.head_dim))
        sv = sv.repeat_interleave(self.n_heads // self.n_kv_heads, dim=-2)
        pattern = "bhij,ijhd->bihd" if self.use_relative_positional_symbols else "bhij,bjhd->bihd"
        out = out + torch.einsum(pattern, alpha, sv)
        return self.wo(out.reshape(B, n, self.n_heads * self.head_dim)), attn_scores, relations


class DualAttention(nn.Module):
    """Dual attention (Sec. 3; official ``DualAttention``): ``n_heads_sa`` self-attention heads and
    ``n_heads_ra`` relational heads, concatenated to ``d_model`` features.

    Either head count may be 0 (a pure Transformer / a pure relational model).  ``share_attn_params=True``
    uses the self-attention's query/key projections for the relational heads' attention (needs equal head
    counts).  ``forward(x, symbols, attn_mask, is_causal, need_weights)`` returns
    ``(out, sa_scores or None, (ra_scores, relations) or None)``.
    """

    def __init__(self, d_model: int, n_heads_sa: int, n_heads_ra: int, dropout: float = 0.0,
                 sa_kwargs: dict | None = None, ra_kwargs: dict | None = None,
                 share_attn_params: bool = False, seed: Seed = None) -> None:
        super().__init__()
        self.d_model = check_scalar(d_model, "d_model", "int", min=1)
        self.n_heads_sa = check_scalar(n_heads_sa, "n_heads_sa", "int", min=0)
        self.n_heads_ra = check_scalar(n_heads_ra, "n_heads_ra", "int", min=0)
        self.total_n_heads = n_heads_sa + n_heads_ra
        if self.total_n_heads == 0:
            raise ValueError("n_heads_sa and n_heads_ra cannot both be 0")
        if d_model % self.total_n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads_sa + n_heads_ra "
                             f"({n_heads_sa} + {n_heads_ra} = {self.total_n_heads})")
        if share_attn_params and n_heads_sa != n_heads_ra:
            raise ValueError(f"share_attn_params=True needs n_heads_sa == n_heads_ra, "
                             f"got {n_heads_sa} and {n_heads_ra}")
        self.share_attn_params = check_bool(share_attn_params, "share_attn_params")
        sa_kwargs, ra_kwargs = _kwargs(sa_kwargs, "sa_kwargs"), _kwargs(ra_kwargs, "ra_kwargs")
        with init_rng(seed):
            self.self_attention = Attention(d_model, n_heads_sa, dropout, total_n_heads=self.total_n_heads,
                                            **sa_kwargs) if n_heads_sa else None
            self.relational_attention = RelationalAttention(d_model, n_heads_ra, dropout=dropout,
                                                            total_n_heads=self.total_n_heads,
                                                            **ra_kwargs) if n_heads_ra else None
        if share_attn_params:
            self.relational_attention.wq_attn = self.self_attention.wq
            self.relational_attention.wk_attn = self.self_attention.wk

    def forward(self, x: torch.Tensor, symbols: torch.Tensor | None, attn_mask: torch.Tensor | None = None,
                is_causal: bool = False, need_weights: bool = False
                ) -> tuple[torch.Tensor, torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
        check_tokens(x, self.d_model)
        is_causal, need_weights = check_bool(is_causal, "is_causal"), check_bool(need_weights, "need_weights")
        parts, sa_scores, ra_out = [], None, None
        if self.self_attention is not None:
            out, sa_scores = self.self_attention(x, x, x, attn_mask, is_causal, need_weights)
            parts.append(out)
        if self.relational_attention is not None:
            if symbols is None:
                raise ValueError("relational heads need symbols (batch, n, d_model); got None")
            out, ra_scores, relations = self.relational_attention(x, symbols, attn_mask, is_causal)
            parts.append(out)
            ra_out = (ra_scores, relations)
        return torch.cat(parts, dim=-1), sa_scores, ra_out


class PositionalSymbolRetriever(nn.Module):
    """Positional symbols (official ``PositionalSymbolRetriever``): ``s_j = E[j]``, a learned table of
    ``max_length`` symbols.  ``forward(x)`` returns (batch, n, symbol_dim)."""

    def __init__(self, symbol_dim: int, max_length: int, seed: Seed = None) -> None:
        super().__init__()
        self.symbol_dim = check_scalar(symbol_dim, "symbol_dim", "int", min=1)
        self.max_length = check_scalar(max_length, "max_length", "int", min=1)
        with init_rng(seed):
            self.symbol_library = nn.Embedding(max_length, symbol_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", ndim=3, floating=True)
        B, n, _ = x.shape
        if n > self.max_length:
            raise ValueError(f"sequence length {n} exceeds max_length={self.max_length} of the positional symbols")
        pos = torch.arange(n, device=x.device)
        return self.symbol_library(pos).unsqueeze(0).expand(B, n, self.symbol_dim)


class PositionRelativeSymbolRetriever(nn.Module):
    """Position-relative symbols (official ``PositionRelativeSymbolRetriever``): ``s_{ij} = E[clip(j - i)]``
    with relative positions clipped to ``[-max_rel_pos, max_rel_pos]``.  ``forward(x)`` returns (n, n, symbol_dim);
    use with ``RelationalAttention(..., use_relative_positional_symbols=True)``."""

    def __init__(self, symbol_dim: int, max_rel_pos: int, seed: Seed = None) -> None:
        super().__init__()
        self.symbol_dim = check_scalar(symbol_dim, "symbol_dim", "int", min=1)
        self.max_rel_pos = check_scalar(max_rel_pos, "max_rel_pos", "int", min=0)
        self.rel_pos_embeddings = nn.Parameter(torch.empty(2 * max_rel_pos + 1, symbol_dim))
        with init_rng(seed):
            nn.init.xavier_uniform_(self.rel_pos_embeddings)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", ndim=3, floating=True)
        pos = torch.arange(x.shape[1], device=x.device)
        rel = (pos.view(1, -1) - pos.view(-1, 1)).clamp(-self.max_rel_pos, self.max_rel_pos) + self.max_rel_pos
        return self.rel_pos_embeddings[rel]


class SymbolicAttention(nn.Module):
    """Symbolic attention (official ``SymbolicAttention``): ``s_i = MultiHeadAttn(q = x_i W_q + b, K_s, V_s)`` over
    a learned library of ``n_symbols`` template features ``K_s`` and symbols ``V_s`` (both init N(0, 1)).
    ``forward(x)`` returns (batch, n, d_model)."""

    def __init__(self, d_model: int, n_heads: int, n_symbols: int, dropout: float = 0.0,
                 scale: float | None = None, trainable_symbols: bool = True, seed: Seed = None) -> None:
        super().__init__()
        self.d_model = check_scalar(d_model, "d_model", "int", min=1)
        self.n_heads = check_scalar(n_heads, "n_heads", "int", min=1)
        self.n_symbols = check_scalar(n_symbols, "n_symbols", "int", min=1)
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.dropout = check_scalar(dropout, "dropout", "real", min=0.0, max=1.0, inclusive="left")
        self.scale = None if scale is None else check_scalar(scale, "scale", "real", min=0.0, inclusive="neither")
        trainable_symbols = check_bool(trainable_symbols, "trainable_symbols")
        with init_rng(seed):
            self.q_proj = nn.Linear(d_model, d_model)
            self.template_features = nn.Parameter(torch.randn(n_symbols, d_model))
            self.symbol_library = nn.Parameter(torch.randn(n_symbols, d_model), requires_grad=trainable_symbols)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tokens(x, self.d_model)
        B, n, d = x.shape
        hd = d // self.n_heads
        q = self.q_proj(x).view(B, n, self.n_heads, hd).transpose(1, 2)
        k = self.template_features.view(self.n_symbols, self.n_heads, hd).transpose(0, 1).unsqueeze(0)
        v = self.symbol_library.view(self.n_symbols, self.n_heads, hd).transpose(0, 1).unsqueeze(0)
        out = F.scaled_dot_product_attention(q, k.expand(B, -1, -1, -1), v.expand(B, -1, -1, -1), scale=self.scale,
                                             dropout_p=self.dropout if self.training else 0.0)
        return out.transpose(1, 2).reshape(B, n, d)


def make_symbol_retriever(symbol_retrieval: str, d_model: int, **kwargs: Any) -> nn.Module:
    """Build a symbol retriever by its official name: ``"positional_symbols"`` (kwargs ``max_length``),
    ``"position_relative"`` (``max_rel_pos``) or ``"symbolic_attention"`` (``n_heads``, ``n_symbols``, ...)."""
    check_choice(symbol_retrieval, "symbol_retrieval", SYMBOL_RETRIEVERS)
    d_model = check_scalar(d_model, "d_model", "int", min=1)
    retriever = {"positional_symbols": PositionalSymbolRetriever, "position_relative": PositionRelativeSymbolRetriever,
                 "symbolic_attention": SymbolicAttention}[symbol_retrieval]
    return retriever(d_model, **kwargs)


def _norm(d_model: int, norm_type: str, bias: bool) -> nn.Module:
    if check_choice(norm_type, "norm_type", ("layernorm", "rmsnorm")) == "layernorm":
        return nn.LayerNorm(d_model, bias=bias)
    return nn.RMSNorm(d_model)


class DualAttnEncoderBlock(nn.Module):
    """A Transformer block with dual attention in place of multi-head attention (official ``DualAttnEncoderBlock``).

    Pre-norm (``norm_first=True``): ``x + Dropout(DualAttn(LN(x), S))`` then ``x + MLP(LN(x))``; post-norm otherwise.
    With ``n_heads_ra = 0`` it equals the shared :class:`icml25.attention.transformer.TransformerBlock` (same
    weights up to how q, k, v are stored).  ``forward(x, symbols, attn_mask=None)``.
    """

    def __init__(self, d_model: int, n_heads_sa: int, n_heads_ra: int, dff: int | None = None,
                 activation: str = "gelu", dropout_rate: float = 0.0, norm_first: bool = True,
                 norm_type: str = "layernorm", sa_kwargs: dict | None = None, ra_kwargs: dict | None = None,
                 share_attn_params: bool = False, bias: bool = True, causal: bool = False,
                 seed: Seed = None) -> None:
        super().__init__()
        self.d_model = check_scalar(d_model, "d_model", "int", min=1)
        self.dff = check_scalar(4 * d_model if dff is None else dff, "dff", "int", min=1)
        self.norm_first, self.causal = check_bool(norm_first, "norm_first"), check_bool(causal, "causal")
        bias = check_bool(bias, "bias")
        check_choice(norm_type, "norm_type", ("layernorm", "rmsnorm"))
        check_choice(activation, "activation", ("gelu", "relu", "silu"))
        self.dropout = nn.Dropout(check_scalar(dropout_rate, "dropout_rate", "real", min=0.0, max=1.0,
                                               inclusive="left"))
        with init_rng(seed):
            self.norm1 = _norm(d_model, norm_type, bias)
            self.dual_attn = DualAttention(d_model, n_heads_sa, n_heads_ra, dropout_rate, sa_kwargs, ra_kwargs,
                                           share_attn_params)
            self.norm2 = _norm(d_model, norm_type, bias)
            self.ff_block = MLP(d_model, self.dff, activation, bias, dropout_rate)

    def forward(self, x: torch.Tensor, symbols: torch.Tensor | None,
                attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        check_tokens(x, self.d_model)
        causal = self.causal and attn_mask is None
        if self.norm_first:
            x = x + self.dropout(self.dual_attn(self.norm1(x), symbols, attn_mask, causal)[0])
            return x + self.ff_block(self.norm2(x))
        x = self.norm1(x + self.dropout(self.dual_attn(x, symbols, attn_mask, causal)[0]))
        return self.norm2(x + self.ff_block(x))


class DualAttnDecoderBlock(nn.Module):
    """Decoder block (official ``DualAttnDecoderBlock``): causal dual attention, cross-attention to an encoder's
    ``context`` with ``n_heads_cross`` heads, then the MLP, each with a residual and (pre- or post-) norm.
    ``forward(x, context, symbols)``."""

    def __init__(self, d_model: int, n_heads_sa: int, n_heads_ra: int, n_heads_cross: int, dff: int | None = None,
                 activation: str = "gelu", dropout_rate: float = 0.0, norm_first: bool = True,
                 norm_type: str = "layernorm", sa_kwargs: dict | None = None, ra_kwargs: dict | None = None,
                 cross_kwargs: dict | None = None, share_attn_params: bool = False, bias: bool = True,
                 causal: bool = True, seed: Seed = None) -> None:
        super().__init__()
        self.d_model = check_scalar(d_model, "d_model", "int", min=1)
        self.dff = check_scalar(4 * d_model if dff is None else dff, "dff", "int", min=1)
        self.norm_first, self.causal = check_bool(norm_first, "norm_first"), check_bool(causal, "causal")
        bias = check_bool(bias, "bias")
        check_choice(norm_type, "norm_type", ("layernorm", "rmsnorm"))
        check_choice(activation, "activation", ("gelu", "relu", "silu"))
        check_scalar(n_heads_cross, "n_heads_cross", "int", min=1)
        cross_kwargs = _kwargs(cross_kwargs, "cross_kwargs")
        self.dropout = nn.Dropout(check_scalar(dropout_rate, "dropout_rate", "real", min=0.0, max=1.0,
                                               inclusive="left"))
        with init_rng(seed):
            self.norm1 = _norm(d_model, norm_type, bias)
            self.dual_attn = DualAttention(d_model, n_heads_sa, n_heads_ra, dropout_rate, sa_kwargs, ra_kwargs,
                                           share_attn_params)
            self.norm2 = _norm(d_model, norm_type, bias)
            self.cross_attn = Attention(d_model, n_heads_cross, dropout_rate, **cross_kwargs)
            self.norm3 = _norm(d_model, norm_type, bias)
            self.ff_block = MLP(d_model, self.dff, activation, bias, dropout_rate)

    def forward(self, x: torch.Tensor, context: torch.Tensor, symbols: torch.Tensor | None) -> torch.Tensor:
        check_tokens(x, self.d_model)
        check_tokens(context, self.d_model, "context")
        if context.shape[0] != x.shape[0]:
            raise ValueError(f"context batch size {context.shape[0]} differs from x batch size {x.shape[0]}")
        if self.norm_first:
            x = x + self.dropout(self.dual_attn(self.norm1(x), symbols, is_causal=self.causal)[0])
            h = self.norm2(x)
            x = x + self.dropout(self.cross_attn(h, context, context)[0])
            return x + self.ff_block(self.norm3(x))
        x = self.norm1(x + self.dropout(self.dual_attn(x, symbols, is_causal=self.causal)[0]))
        x = self.norm2(x + self.dropout(self.cross_attn(x, context, context)[0]))
        return self.norm3(x + self.ff_block(x))


def _retriever_and_ra_kwargs(symbol_retrieval: str, d_model: int, n_heads_ra: int, kwargs: dict | None,
                             ra_kwargs: dict | None, defaults: dict) -> tuple[nn.Module | None, dict]:
    ra_kwargs = _kwargs(ra_kwargs, "ra_kwargs")
    kwargs = _kwargs(kwargs, "symbol_retrieval_kwargs")
    check_choice(symbol_retrieval, "symbol_retrieval", SYMBOL_RETRIEVERS)
    if n_heads_ra == 0:
        return None, ra_kwargs
    if symbol_retrieval == "position_relative":
        ra_kwargs.setdefault("use_relative_positional_symbols", True)
    return make_symbol_retriever(symbol_retrieval, d_model, **{**defaults, **kwargs}), ra_kwargs


class DATEncoderClassifier(nn.Module):
    """Dual Attention Transformer encoder for sets/sequences of vector objects (the relational-games model).

    Objects (B, n, d_in) are embedded by a linear map (the ViT patch embedding), a learned positional embedding
    is added (``pos_enc="learned"``; ``None`` for none), then ``n_layers`` :class:`DualAttnEncoderBlock` s with
    symbols from ``symbol_retrieval`` (re-retrieved from each layer's input, as in the official models), a final
    norm, ``pool`` (``"mean"`` or ``"flatten"``) and a linear head.  ``n_heads_ra = 0`` is the Transformer baseline.
    """

    def __init__(self, d_in: int, n_classes: int, d_model: int, n_layers: int, n_heads_sa: int, n_heads_ra: int,
                 dff: int | None = None, max_len: int = 64, dropout_rate: float = 0.0, activation: str = "gelu",
                 norm_first: bool = True, symbol_retrieval: str = "positional_symbols",
                 symbol_retrieval_kwargs: dict | None = None, sa_kwargs: dict | None = None,
                 ra_kwargs: dict | None = None, share_attn_params: bool = False, pool: str = "mean",
                 pos_enc: str | None = "learned", seed: Seed = None) -> None:
        super().__init__()
        self.d_in = check_scalar(d_in, "d_in", "int", min=1)
        self.n_classes = check_scalar(n_classes, "n_classes", "int", min=1)
        self.max_len = check_scalar(max_len, "max_len", "int", min=1)
        n_layers = check_scalar(n_layers, "n_layers", "int", min=1)
        self.pool = check_choice(pool, "pool", ("mean", "flatten"))
        check_choice(pos_enc, "pos_enc", ("learned", None))
        self.d_model = d_model = check_scalar(d_model, "d_model", "int", min=1)
        n_heads_sa = check_scalar(n_heads_sa, "n_heads_sa", "int", min=0)
        n_heads_ra = check_scalar(n_heads_ra, "n_heads_ra", "int", min=0)
        with init_rng(seed):
            self._build(d_model, n_layers, n_heads_sa, n_heads_ra, dff, max_len, dropout_rate, activation, norm_first,
                        symbol_retrieval, symbol_retrieval_kwargs, sa_kwargs, ra_kwargs, share_attn_params, pool,
                        pos_enc)

    def _build(self, d_model: int, n_layers: int, n_heads_sa: int, n_heads_ra: int, dff: int | None, max_len: int,
               dropout_rate: float, activation: str, norm_first: bool, symbol_retrieval: str,
               symbol_retrieval_kwargs: dict | None, sa_kwargs: dict | None, ra_kwargs: dict | None,
               share_attn_params: bool, pool: str, pos_enc: str | None) -> None:
        d_in, n_classes = self.d_in, self.n_classes
        self.embed = nn.Linear(d_in, d_model)
        self.pos_embedding = nn.Embedding(max_len, d_model) if pos_enc == "learned" else None
        self.symbol_retriever, ra_kwargs = _retriever_and_ra_kwargs(
            symbol_retrieval, d_model, n_heads_ra, symbol_retrieval_kwargs, ra_kwargs,
            {"max_length": max_len} if symbol_retrieval == "positional_symbols" else {})
        self.blocks = nn.ModuleList(
            DualAttnEncoderBlock(d_model, n_heads_sa, n_heads_ra, dff, activation, dropout_rate, norm_first,
                                 sa_kwargs=sa_kwargs, ra_kwargs=ra_kwargs, share_attn_params=share_attn_params)
            for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model * (max_len if pool == "flatten" else 1), n_classes)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        check_tokens(x, self.d_in)
        n = x.shape[1]
        if n > self.max_len:
            raise ValueError(f"sequence length {n} exceeds max_len={self.max_len}")
        if self.pool == "flatten" and n != self.max_len:
            raise ValueError(f"pool='flatten' needs sequences of exactly max_len={self.max_len}, got {n}")
        h = self.embed(x)
        if self.pos_embedding is not None:
            h = h + self.pos_embedding(torch.arange(n, device=x.device))
        for block in self.blocks:
            symbols = self.symbol_retriever(h) if self.symbol_retriever is not None else None
            h = block(h, symbols, attn_mask)
        h = self.norm(h)
        return self.head(h.mean(1) if self.pool == "mean" else h.flatten(1))


class DualAttnTransformerLM(nn.Module):
    """Causal Dual Attention Transformer language model (official ``DualAttnTransformerLM``).

    Token + learned positional embeddings, ``n_layers`` causal :class:`DualAttnEncoderBlock` s (symbolic attention
    by default, ``symbol_retrieval_kwargs`` e.g. ``{"n_heads": 4, "n_symbols": 64}``), final norm, a linear head
    tied to the token embedding.  ``forward(idx, targets=None)`` returns ``(logits, loss or None)``;
    ``n_heads_ra = 0`` is the Transformer LM baseline.
    """

    def __init__(self, vocab_size: int, d_model: int, n_layers: int, n_heads_sa: int, n_heads_ra: int,
                 dff: int | None = None, max_block_size: int = 256, dropout_rate: float = 0.0,
                 activation: str = "gelu", norm_first: bool = True, symbol_retrieval: str = "symbolic_attention",
                 symbol_retrieval_kwargs: dict | None = None, sa_kwargs: dict | None = None,
                 ra_kwargs: dict | None = None, share_attn_params: bool = False, bias: bool = True,
                 seed: Seed = None) -> None:
        super().__init__()
        self.vocab_size = check_scalar(vocab_size, "vocab_size", "int", min=1)
        self.max_block_size = check_scalar(max_block_size, "max_block_size", "int", min=1)
        n_layers = check_scalar(n_layers, "n_layers", "int", min=1)
        self.d_model = d_model = check_scalar(d_model, "d_model", "int", min=1)
        n_heads_sa = check_scalar(n_heads_sa, "n_heads_sa", "int", min=0)
        n_heads_ra = check_scalar(n_heads_ra, "n_heads_ra", "int", min=0)
        bias = check_bool(bias, "bias")
        with init_rng(seed):
            self._build(vocab_size, d_model, n_layers, n_heads_sa, n_heads_ra, dff, max_block_size, dropout_rate,
                        activation, norm_first, symbol_retrieval, symbol_retrieval_kwargs, sa_kwargs, ra_kwargs,
                        share_attn_params, bias)

    def _build(self, vocab_size: int, d_model: int, n_layers: int, n_heads_sa: int, n_heads_ra: int,
               dff: int | None, max_block_size: int, dropout_rate: float, activation: str, norm_first: bool,
               symbol_retrieval: str, symbol_retrieval_kwargs: dict | None, sa_kwargs: dict | None,
               ra_kwargs: dict | None, share_attn_params: bool, bias: bool) -> None:
        defaults = {"positional_symbols": {"max_length": max_block_size}, "position_relative": {"max_rel_pos": 16},
                    "symbolic_attention": {"n_heads": max(1, n_heads_sa + n_heads_ra), "n_symbols": 64}}
        self.symbol_retriever, ra_kwargs = _retriever_and_ra_kwargs(
            symbol_retrieval, d_model, n_heads_ra, symbol_retrieval_kwargs, ra_kwargs,
            defaults.get(symbol_retrieval, {}))
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.pos_embedding = nn.Embedding(max_block_size, d_model)
        self.dropout = nn.Dropout(check_scalar(dropout_rate, "dropout_rate", "real", min=0.0, max=1.0,
                                               inclusive="left"))
        self.blocks = nn.ModuleList(
            DualAttnEncoderBlock(d_model, n_heads_sa, n_heads_ra, dff, activation, dropout_rate, norm_first,
                                 sa_kwargs=sa_kwargs, ra_kwargs=ra_kwargs, share_attn_params=share_attn_params,
                                 bias=bias, causal=True)
            for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model, bias=bias)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.head.weight = self.token_embedding.weight
        nn.init.normal_(self.token_embedding.weight, 0.0, 0.02)
        nn.init.normal_(self.pos_embedding.weight, 0.0, 0.02)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        check_instance(idx, "idx", torch.Tensor, "an integer torch.Tensor of shape (batch, length)")
        if idx.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"idx must be an integer torch.Tensor of shape (batch, length), got {idx.dtype}")
        if idx.dim() != 2:
            raise ValueError(f"idx must have shape (batch, length), got {tuple(idx.shape)}")
        B, n = idx.shape
        if n > self.max_block_size:
            raise ValueError(f"sequence length {n} exceeds max_block_size={self.max_block_size}")
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= self.vocab_size):
            raise ValueError(f"token ids must lie in [0, {self.vocab_size})")
        h = self.dropout(self.token_embedding(idx) + self.pos_embedding(torch.arange(n, device=idx.device)))
        for block in self.blocks:
            symbols = self.symbol_retriever(h) if self.symbol_retriever is not None else None
            h = block(h, symbols)
        logits = self.head(self.norm(h))
        if targets is None:
            return logits, None
        check_tensor(targets, "targets")
        if targets.shape != idx.shape:
            raise ValueError(f"targets must have the shape of idx {tuple(idx.shape)}, got {tuple(targets.shape)}")
        if targets.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"targets must be an integer tensor of token ids, got {targets.dtype}")
        if targets.numel() and (int(targets.min()) < -100 or int(targets.max()) >= self.vocab_size):
            raise ValueError(f"targets must lie in [0, {self.vocab_size}) (or be the ignore index -100)")
        return logits, F.cross_entropy(logits.reshape(-1, self.vocab_size), targets.reshape(-1))

"""A tiny large-multimodal-model (LMM) for serving experiments: a ViT encoder and a GPT-style decoder with a KV cache.

The weights are random but seeded, so greedy outputs are meaningless text yet fully deterministic, which is what
the serving experiments need (Singh et al., "Efficiently Serving Large Multimodal Models Using EPD
Disaggregation", ICML 2025, arXiv 2501.05460, Section 3: the three phases encode, prefill and decode).

The three phases are separate methods so that each can live on its own worker:

* :meth:`TinyLMM.encode` — images ``[n, 3, H, W]`` -> multimodal (MM) tokens ``[n, tokens_per_image, dim]``;
* :meth:`TinyLMM.prefill` — prompt tokens and MM tokens -> last logits and the KV cache ``[layers, 2, heads, T, hd]``;
* :meth:`TinyLMM.decode_step` — one token for each request of a batch, each with its own KV cache.

Images come before the text in the sequence (LLaVA's ``<image>\\n prompt`` layout).  The default dtype is
float64: batched and unbatched matrix products then agree to ~1e-15, so greedy outputs do not depend on how
requests were batched (float32 kernels are not batch invariant).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.nn import functional as F

from icml25.utils.validation import check_scalar

if TYPE_CHECKING:
    from icml25.utils.random import Seed


def _tensor(x: object, name: str, ndim: int, integer: bool = False) -> torch.Tensor:
    """``x`` as a tensor of ``ndim`` dimensions: integer ids (>= 0) or finite floats; one clear error otherwise."""
    if not isinstance(x, torch.Tensor):
        if not isinstance(x, (list, tuple)) and not (hasattr(x, "__array__") and not isinstance(x, str)):
            raise TypeError(f"{name} must be a tensor or a sequence, got {type(x).__name__}")
        try:
            x = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"{name} must hold numbers, got {x!r:.60}") from None
    if x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(x.shape)}")
    if integer:
        if x.numel() and (x.is_floating_point() or x.is_complex() or x.dtype == torch.bool):
            raise TypeError(f"{name} must hold integer token ids, got {x.dtype}")
        if x.numel() and int(x.min()) < 0:
            raise ValueError(f"{name} must hold token ids >= 0")
        return x.long()
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, got {x.dtype}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return x


@dataclass(frozen=True)
class EncoderConfig:
    """The vision encoder: ``image_size`` px images in ``patch`` px patches -> ``(image_size/patch)^2`` MM tokens."""

    image_size: int = 64
    patch: int = 8
    dim: int = 256
    layers: int = 6
    heads: int = 4

    def __post_init__(self) -> None:
        for name in ("image_size", "patch", "dim", "layers", "heads"):
            check_scalar(getattr(self, name), name, "int", min=1)
        if self.image_size % self.patch:
            raise ValueError(f"image_size must be a multiple of patch, got {self.image_size} and {self.patch}")
        if self.dim % self.heads:
            raise ValueError(f"dim must be a multiple of heads, got {self.dim} and {self.heads}")

    @property
    def tokens_per_image(self) -> int:
        return (self.image_size // self.patch) ** 2


@dataclass(frozen=True)
class LMConfig:
    """The decoder LM: ``vocab`` tokens, ``layers`` blocks of width ``dim``, positions up to ``max_len``."""

    vocab: int = 512
    dim: int = 128
    layers: int = 2
    heads: int = 4
    max_len: int = 1024

    def __post_init__(self) -> None:
        for name in ("vocab", "dim", "layers", "heads", "max_len"):
            check_scalar(getattr(self, name), name, "int", min=1)
        if self.dim % self.heads:
            raise ValueError(f"dim must be a multiple of heads, got {self.dim} and {self.heads}")

    def kv_bytes_per_token(self, dtype: torch.dtype = torch.float64) -> int:
        """Bytes of KV cache per token: 2 (K and V) x layers x dim x element size."""
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"dtype must be a torch.dtype, got {type(dtype).__name__}")
        return 2 * self.layers * self.dim * torch.empty((), dtype=dtype).element_size()


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int, causal: bool) -> None:
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def _split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        return q, k, v  # each [b, heads, t, hd]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Full-sequence pass; returns the output and this block's K and V ``[b, heads, t, hd]``."""
        q, k, v = self._split(x)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.out(a.transpose(1, 2).reshape(x.shape))
        return x + self.mlp(self.ln2(x)), k, v


class VisionEncoder(nn.Module):
    """A ViT: patch embedding, learned positions, pre-norm blocks, projection to the LM width."""

    def __init__(self, cfg: EncoderConfig, lm_dim: int) -> None:
        super().__init__()
        self.cfg = cfg
        self.patch = nn.Conv2d(3, cfg.dim, cfg.patch, stride=cfg.patch)
        self.pos = nn.Parameter(torch.randn(1, cfg.tokens_per_image, cfg.dim) * 0.02)
        self.blocks = nn.ModuleList(_Block(cfg.dim, cfg.heads, causal=False) for _ in range(cfg.layers))
        self.proj = nn.Linear(cfg.dim, lm_dim)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patch(images).flatten(2).transpose(1, 2) + self.pos
        for block in self.blocks:
            x = block(x)[0]
        return self.proj(x)


class TinyLMM(nn.Module):
    """A seeded toy LMM with separable encode / prefill / decode phases.

    Parameters
    ----------
    enc_cfg, llm_cfg : the encoder and LM sizes (:class:`EncoderConfig`, :class:`LMConfig`).
    seed : weight initialisation seed (torch's global RNG is left untouched); None uses it.
    dtype : parameter dtype, float64 by default (batch-invariant greedy outputs, see the module docstring).
    """

    def __init__(self, enc_cfg: EncoderConfig | None = None, llm_cfg: LMConfig | None = None, seed: Seed = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        enc_cfg = EncoderConfig() if enc_cfg is None else enc_cfg
        llm_cfg = LMConfig() if llm_cfg is None else llm_cfg
        if not isinstance(enc_cfg, EncoderConfig):
            raise TypeError(f"enc_cfg must be an EncoderConfig, got {type(enc_cfg).__name__}")
        if not isinstance(llm_cfg, LMConfig):
            raise TypeError(f"llm_cfg must be an LMConfig, got {type(llm_cfg).__name__}")
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
        self.enc_cfg, self.llm_cfg = enc_cfg, llm_cfg
        if seed is None:  # worker processes: the weights are loaded afterwards (keeps scikit-learn out of them)
            rng = nullcontext()
        else:
            from icml25.utils.random import init_rng

            rng = init_rng(seed)
        with rng:
            self.vision = VisionEncoder(enc_cfg, llm_cfg.dim)
            self.tok = nn.Embedding(llm_cfg.vocab, llm_cfg.dim)
            self.pos = nn.Embedding(llm_cfg.max_len, llm_cfg.dim)
            self.blocks = nn.ModuleList(_Block(llm_cfg.dim, llm_cfg.heads, causal=True) for _ in range(llm_cfg.layers))
            self.ln_f = nn.LayerNorm(llm_cfg.dim)
            self.head = nn.Linear(llm_cfg.dim, llm_cfg.vocab, bias=False)
        self.to(dtype)
        self.requires_grad_(False)

    @property
    def dtype(self) -> torch.dtype:
        """The parameter dtype (follows ``.to(dtype)``)."""
        return next(self.parameters()).dtype

    def config(self) -> dict:
        """The sizes as plain data (what a worker process needs to rebuild the same model)."""
        return {"enc_cfg": asdict(self.enc_cfg), "llm_cfg": asdict(self.llm_cfg)}

    def encoder_bytes(self) -> int:
        """Parameter bytes of the vision encoder (what an E worker holds)."""
        return sum(p.numel() * p.element_size() for p in self.vision.parameters())

    def lm_bytes(self) -> int:
        """Parameter bytes of the LM (what a P or D worker holds)."""
        return sum(p.numel() * p.element_size() for n, p in self.named_parameters() if not n.startswith("vision."))

    @torch.no_grad()
    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Images ``[n, 3, H, W]`` -> MM tokens ``[n, tokens_per_image, lm_dim]`` (encode phase)."""
        s = self.enc_cfg.image_size
        images = _tensor(images, "images", 4)
        if images.shape[0] < 1 or tuple(images.shape[1:]) != (3, s, s):
            raise ValueError(f"images must have shape [n >= 1, 3, {s}, {s}], got {tuple(images.shape)}")
        return self.vision(images.to(self.dtype))

    def _ids(self, tokens: object, name: str) -> torch.Tensor:
        tokens = _tensor(tokens, name, 1, integer=True)
        if tokens.numel() and int(tokens.max()) >= self.llm_cfg.vocab:
            raise ValueError(f"{name} must hold ids < vocab={self.llm_cfg.vocab}")
        return tokens

    def _check_len(self, total: int) -> None:
        if total > self.llm_cfg.max_len:
            raise ValueError(f"sequence of {total} tokens exceeds max_len={self.llm_cfg.max_len}")

    @torch.no_grad()
    def prefill(self, tokens: torch.Tensor, mm_tokens: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Prefill phase: MM tokens ``[m, lm_dim]`` (images first) then text ``tokens`` ``[t]``.

        ``mm_tokens`` is ``[m, lm_dim]`` (the images' tokens concatenated, as :meth:`encode` gives them flattened).
        Returns the logits of the last position ``[vocab]`` and the KV cache ``[layers, 2, heads, m + t, hd]``.
        """
        tokens = self._ids(tokens, "tokens")
        parts = []
        if mm_tokens is not None:
            mm_tokens = _tensor(mm_tokens, "mm_tokens", 2)
            if mm_tokens.shape[1] != self.llm_cfg.dim:
                raise ValueError(f"mm_tokens must have shape [m, {self.llm_cfg.dim}], got {tuple(mm_tokens.shape)}")
            parts.append(mm_tokens.to(self.dtype))
        x = torch.cat(parts + [self.tok(tokens)], 0)
        if x.shape[0] == 0:
            raise ValueError("prefill needs at least one of tokens or mm_tokens to be non-empty")
        self._check_len(x.shape[0])
        x = (x + self.pos(torch.arange(x.shape[0])))[None]
        kv = []
        for block in self.blocks:
            x, k, v = block(x)
            kv.append(torch.stack([k[0], v[0]]))
        return self.head(self.ln_f(x[0, -1])), torch.stack(kv)

    @torch.no_grad()
    def decode_step(self, tokens: torch.Tensor, kvs: list[torch.Tensor],
                    lengths: list[int]) -> torch.Tensor:
        """Decode phase for a batch: ``tokens[b]`` is request b's last token, ``kvs[b]`` its KV cache buffer
        ``[layers, 2, heads, capacity, hd]`` of which the first ``lengths[b]`` positions are filled.

        Writes the new K, V at position ``lengths[b]`` in place and returns the logits ``[b, vocab]``.
        The dense layers run batched; attention runs per request over its own cache (no padding).
        """
        tokens = self._ids(tokens, "tokens")
        c = self.llm_cfg
        if not isinstance(kvs, (list, tuple)) or not all(isinstance(k, torch.Tensor) and k.ndim == 5 and
                                                         k.shape[:3] == (c.layers, 2, c.heads) for k in kvs):
            raise TypeError(f"kvs must be a list of KV buffers [{c.layers}, 2, {c.heads}, capacity, head_dim]")
        if not isinstance(lengths, (list, tuple)) or not all(isinstance(n, int) and not isinstance(n, bool)
                                                             for n in lengths):
            raise TypeError("lengths must be a list of ints")
        if not len(tokens) == len(kvs) == len(lengths) or not len(tokens):
            raise ValueError(f"tokens, kvs and lengths must have one entry per request (>= 1), got "
                             f"{len(tokens)}, {len(kvs)}, {len(lengths)}")
        for n, k in zip(lengths, kvs, strict=True):
            if not 0 <= n < k.shape[3]:
                raise ValueError(f"lengths must be in [0, capacity) of each KV buffer, got {n} for {k.shape[3]}")
            self._check_len(n + 1)
        pos = torch.as_tensor(lengths, dtype=torch.long)
        x = (self.tok(tokens) + self.pos(pos))[:, None]  # [b, 1, d]
        for layer, block in enumerate(self.blocks):
            q, k, v = block._split(x)  # [b, heads, 1, hd]
            outs = []
            for b, (cache, n) in enumerate(zip(kvs, lengths, strict=True)):
                cache[layer, 0, :, n] = k[b, :, 0]
                cache[layer, 1, :, n] = v[b, :, 0]
                outs.append(F.scaled_dot_product_attention(q[b:b + 1], cache[layer, 0, None, :, :n + 1],
                                                           cache[layer, 1, None, :, :n + 1]))
            a = torch.cat(outs, 0)
            x = x + block.out(a.transpose(1, 2).reshape(x.shape))
            x = x + block.mlp(block.ln2(x))
        return self.head(self.ln_f(x[:, 0]))

    @torch.no_grad()
    def generate(self, tokens: torch.Tensor, images: torch.Tensor | None = None, max_new_tokens: int = 16) -> list[int]:
        """Greedy generation for one request in this process (the reference the serving modes must match)."""
        check_scalar(max_new_tokens, "max_new_tokens", "int", min=1)
        tokens = self._ids(tokens, "tokens")
        mm = None if images is None else self.encode(images).flatten(0, 1)
        logits, kv = self.prefill(tokens, mm)
        out = [int(logits.argmax())]
        n = kv.shape[3]
        cache = grow_cache(kv, n + max_new_tokens)
        while len(out) < max_new_tokens:
            logits = self.decode_step(torch.tensor([out[-1]]), [cache], [n])
            out.append(int(logits[0].argmax()))
            n += 1
        return out


def grow_cache(kv: torch.Tensor, capacity: int) -> torch.Tensor:
    """A KV buffer ``[layers, 2, heads, capacity, hd]`` holding ``kv`` in its first positions."""
    layers, two, heads, n, hd = kv.shape
    out = kv.new_zeros(layers, two, heads, max(capacity, n), hd)
    out[:, :, :, :n] = kv
    return out


def model_from_config(config: dict, state_path: str) -> TinyLMM:
    """Rebuild a :class:`TinyLMM` from :meth:`TinyLMM.config` and weights saved with ``torch.save`` (workers)."""
    state = torch.load(state_path, weights_only=True)
    model = TinyLMM(EncoderConfig(**config["enc_cfg"]), LMConfig(**config["llm_cfg"]), seed=None,
                    dtype=next(iter(state.values())).dtype)
    model.load_state_dict(state)
    return model



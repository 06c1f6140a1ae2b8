"""STAR's two stages (Li et al., ICML 2025, arXiv:2506.03863, Sections 3.2-3.3) and the chunked behaviour-cloning
baseline: :class:`RaRSQ` (stage 0: action chunk -> ``D`` residual codes -> chunk), :class:`CausalSkillTransformer`
(stage 1: observation history and task -> codes, depth-autoregressive, plus an offset head) and
:class:`ChunkMLPPolicy`; :class:`ChunkDataset` and the two training loops :func:`train_rarsq` and
:func:`train_policy` (AdamW with a cosine schedule, seeded mini-batches).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from icml25.rl.star_skills.quantizer import ResidualSkillQuantizer
from icml25.utils.random import Seed, init_rng, torch_generator
from icml25.utils.validation import check_bool, check_instance, check_scalar, check_sequence, check_tensor

__all__ = ["CausalSkillTransformer", "ChunkDataset", "ChunkMLPPolicy", "RaRSQ", "make_chunks", "train_policy",
           "train_rarsq"]


def _mlp(sizes: Sequence[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.GELU())
    return nn.Sequential(*layers)


def _check_chunks(chunks, chunk: int, action_dim: int, n_rows: int | None = None) -> torch.Tensor:
    check_tensor(chunks, "chunks", ndim=3, floating=True)
    if chunks.shape[1] != chunk or chunks.shape[2] != action_dim:
        raise ValueError(f"chunks must have shape [B, {chunk}, {action_dim}] (the trained chunk length and action "
                         f"size), got {tuple(chunks.shape)}")
    if len(chunks) == 0 or (n_rows is not None and len(chunks) != n_rows):
        raise ValueError(f"chunks must hold one chunk per row of obs ({n_rows}) and at least one, got {len(chunks)}")
    return chunks


def _masked_mse(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    err = ((pred - target) ** 2).mean(-1)
    if mask is None:
        return err.mean()
    check_tensor(mask, "mask", ndim=2, shape=tuple(err.shape))
    m = mask.to(err.dtype)
    return (err * m).sum() / m.sum().clamp_min(1.0)


class RaRSQ(nn.Module):
    """Stage 0: an MLP encoder ``phi`` of a chunk ``[T, action_dim]`` to ``z ∈ R^latent``, a
    :class:`ResidualSkillQuantizer` and an MLP decoder ``psi`` back to the chunk (the paper's encoder is a
    1-D convolution stack; an MLP is our choice for low-dimensional state actions).

    Parameters
    ----------
    action_dim : action size.
    chunk : chunk length ``T`` (paper: 8).
    latent : latent size ``m``.
    hidden : hidden width of encoder and decoder.
    seed : weight and codebook initialisation.
    **quantizer_kw : :class:`ResidualSkillQuantizer` options (``codebook_size``, ``depth``, ``rotation``, ...).
    """

    def __init__(self, action_dim: int, chunk: int = 8, latent: int = 32, hidden: int = 256, *, seed: Seed = None,
                 **quantizer_kw) -> None:
        super().__init__()
        self.action_dim = check_scalar(action_dim, "action_dim", "int", min=1)
        self.chunk = check_scalar(chunk, "chunk", "int", min=1)
        self.latent = check_scalar(latent, "latent", "int", min=1)
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        with init_rng(seed):
            self.encoder = _mlp([self.chunk * self.action_dim, hidden, hidden, self.latent])
            self.decoder = _mlp([self.latent, hidden, hidden, self.chunk * self.action_dim])
        self.quantizer = ResidualSkillQuantizer(self.latent, seed=seed, **quantizer_kw)

    @property
    def signature(self) -> tuple[int, int, int, int, int]:
        """``(action_dim, chunk, latent, codebook_size, depth)``: what a stage-1 policy depends on."""
        return (self.action_dim, self.chunk, self.latent, self.quantizer.codebook_size, self.quantizer.depth)

    def forward(self, chunks: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(reconstruction [B, T, A], indices [B, D], quantizer loss)``."""
        chunks = _check_chunks(chunks, self.chunk, self.action_dim)
        z_hat, indices, vq_loss = self.quantizer(self.encoder(chunks.flatten(1)))
        return self.decoder(z_hat).view_as(chunks), indices, vq_loss

    def loss(self, chunks: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, dict]:
        """``|a - psi(z_hat)|² + quantizer loss`` (masked over padded steps) and its parts."""
        recon, indices, vq_loss = self(chunks)
        mse = _masked_mse(recon, chunks, mask)
        return mse + vq_loss, {"mse": float(mse.detach()), "vq_loss": float(vq_loss.detach()), "indices": indices}

    @torch.no_grad()
    def encode(self, chunks: torch.Tensor) -> torch.Tensor:
        """The codes ``[B, D]`` of ``chunks [B, T, A]``."""
        chunks = _check_chunks(chunks, self.chunk, self.action_dim)
        return self.quantizer(self.encoder(chunks.flatten(1)))[1]

    def decode(self, indices: torch.Tensor) -> torch.Tensor:
        """``psi(sum_d e_{d, k_d})`` as chunks ``[B, T, A]``."""
        z_hat = self.quantizer.codes_from_indices(indices)
        return self.decoder(z_hat).view(-1, self.chunk, self.action_dim)


@dataclass
class ChunkDataset:
    """Training windows: ``obs [N, history, obs_dim]``, ``tasks [N]`` (int64), ``chunks [N, T, A]`` and
    ``mask [N, T]`` (False on steps padded past an episode's end by repeating its last action)."""

    obs: torch.Tensor
    tasks: torch.Tensor
    chunks: torch.Tensor
    mask: torch.Tensor

    def __len__(self) -> int:
        return len(self.obs)


def make_chunks(episodes: Sequence[dict], chunk: int = 8, history: int = 1, stride: int = 1) -> ChunkDataset:
    """Cut episodes (dicts with ``obs [L, obs_dim]``, ``actions [L, A]`` and an int ``task``) into windows of
    ``history`` observations (the first repeated before the start) and the next ``chunk`` actions (the last
    repeated past the end, masked), every ``stride`` steps."""
    episodes = check_sequence(episodes, "episodes", min_len=1)
    chunk = check_scalar(chunk, "chunk", "int", min=1)
    history = check_scalar(history, "history", "int", min=1)
    stride = check_scalar(stride, "stride", "int", min=1)
    obs, tasks, chunks, mask = [], [], [], []
    for i, ep in enumerate(episodes):
        check_instance(ep, f"episodes[{i}]", dict)
        o, a = np.asarray(ep["obs"], dtype=np.float32), np.asarray(ep["actions"], dtype=np.float32)
        if o.ndim != 2 or a.ndim != 2 or len(o) != len(a) or len(o) == 0:
            raise ValueError(f"episodes[{i}] must hold obs [L, obs_dim] and actions [L, A] of one length L >= 1, "
                             f"got {o.shape} and {a.shape}")
        o_pad = np.concatenate([np.repeat(o[:1], history - 1, 0), o])
        a_pad = np.concatenate([a, np.repeat(a[-1:], chunk - 1, 0)])
        for t in range(0, len(o), stride):
            obs.append(o_pad[t:t + history])
            chunks.append(a_pad[t:t + chunk])
            mask.append(np.arange(t, t + chunk) < len(a))
            tasks.append(int(ep["task"]))
    return ChunkDataset(torch.from_numpy(np.stack(obs)), torch.tensor(tasks, dtype=torch.int64),
                        torch.from_numpy(np.stack(chunks)), torch.from_numpy(np.stack(mask)))


class _Normalised(nn.Module):
    """Observation standardisation stored with the policy (set from the training data by :func:`train_policy`)."""

    def __init__(self, obs_dim: int) -> None:
        super().__init__()
        self.register_buffer("obs_mean", torch.zeros(obs_dim))
        self.register_buffer("obs_std", torch.ones(obs_dim))

    def set_obs_stats(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        """Standardise observations with ``mean`` and ``std`` (``[obs_dim]``; std floored at 1e-3)."""
        check_tensor(mean, "mean", ndim=1, shape=tuple(self.obs_mean.shape))
        check_tensor(std, "std", ndim=1, shape=tuple(self.obs_std.shape))
        self.obs_mean.copy_(mean)
        self.obs_std.copy_(std.clamp_min(1e-3))

    def _check_inputs(self, obs: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        check_tensor(obs, "obs", ndim=3, floating=True, shape=(None, self.history, self.obs_dim), finite=True)
        check_tensor(tasks, "tasks", ndim=1)
        if len(tasks) != len(obs):
            raise ValueError(f"tasks must hold one task id per row of obs ({len(obs)}), got {len(tasks)}")
        if tasks.is_floating_point() or (len(tasks) and (tasks.min() < 0 or tasks.max() >= self.n_tasks)):
            raise ValueError(f"tasks must be integers in [0, {self.n_tasks}), got {tasks.tolist()[:8]}")
        return (obs - self.obs_mean.to(obs.dtype)) / self.obs_std.to(obs.dtype)


class CausalSkillTransformer(_Normalised):
    """Stage 1 (CST): a transformer over ``[task, o_{t-h+1}, ..., o_t]`` gives the context ``g_t``; a causal
    decoder over ``[g_t, emb(k_1), ..., emb(k_{D-1})]`` predicts ``P(k_d | k_<d, g_t)`` (Eq. 7); an offset head
    ``zeta(g_t)`` adds a continuous ``T x A`` correction to the decoded chunk. The stage-0 :class:`RaRSQ` is
    frozen inside.

    Parameters
    ----------
    obs_dim : observation size (low-dimensional state; the paper encodes images and proprioception).
    n_tasks : number of tasks (a learned task embedding stands in for the paper's CLIP text embedding).
    rarsq : the trained stage-0 model.
    autoregressive : depth-autoregressive codes (True) or ``D`` independent heads on ``g_t`` (the "w/o AR" ablation).
    offset : the offset head (False: the "w/o offset" ablation).
    d_model, n_layers, n_heads : transformer sizes.
    history : observations per input window.
    code_weights : per-depth cross-entropy weights ``w_d`` (paper: (2, 1) for ``D = 2``); ``None``: all 1.
    offset_weight : ``lambda`` of the chunk reconstruction term (paper: 20).
    seed : weight initialisation.
    """

    def __init__(self, obs_dim: int, n_tasks: int, rarsq: RaRSQ, *, autoregressive: bool = True, offset: bool = True,
                 d_model: int = 128, n_layers: int = 2, n_heads: int = 4, history: int = 1,
                 code_weights: Sequence[float] | None = None, offset_weight: float = 20.0, seed: Seed = None) -> None:
        self.obs_dim = check_scalar(obs_dim, "obs_dim", "int", min=1)
        super().__init__(self.obs_dim)
        self.n_tasks = check_scalar(n_tasks, "n_tasks", "int", min=1)
        check_instance(rarsq, "rarsq", RaRSQ)
        self.autoregressive = check_bool(autoregressive, "autoregressive")
        self.offset = check_bool(offset, "offset")
        d_model = check_scalar(d_model, "d_model", "int", min=1)
        n_layers = check_scalar(n_layers, "n_layers", "int", min=1)
        n_heads = check_scalar(n_heads, "n_heads", "int", min=1)
        if d_model % n_heads:
            raise ValueError(f"d_model must be divisible by n_heads={n_heads}, got {d_model}")
        self.history = check_scalar(history, "history", "int", min=1)
        self.depth, self.codebook_size = rarsq.quantizer.depth, rarsq.quantizer.codebook_size
        weights = (2.0,) + (1.0,) * (self.depth - 1) if code_weights is None else code_weights
        weights = check_sequence(weights, "code_weights", min_len=1,
                                 item=lambda w, name: check_scalar(w, name, "real", min=0.0))
        if len(weights) != self.depth:
            raise ValueError(f"code_weights must hold one weight per depth ({self.depth}), got {len(weights)}")
        self.register_buffer("code_weights", torch.tensor(weights, dtype=torch.float32))
        self.offset_weight = check_scalar(offset_weight, "offset_weight", "real", min=0.0)
        self.rarsq = rarsq.requires_grad_(False).eval()
        self.signature = rarsq.signature
        with init_rng(seed):
            layer = dict(d_model=d_model, nhead=n_heads, dim_feedforward=2 * d_model, dropout=0.0, batch_first=True)
            self.obs_proj = nn.Linear(self.obs_dim, d_model)
            self.task_emb = nn.Embedding(self.n_tasks, d_model)
            self.pos = nn.Parameter(0.02 * torch.randn(self.history + 1, d_model))
            self.context = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer), n_layers,
                                                 enable_nested_tensor=False)
            self.code_emb = nn.Embedding(self.depth * self.codebook_size, d_model)
            self.depth_pos = nn.Parameter(0.02 * torch.randn(self.depth, d_model))
            self.decoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer), 1, enable_nested_tensor=False)
            self.heads = nn.ModuleList(nn.Linear(d_model, self.codebook_size) for _ in range(self.depth))
            self.offset_head = _mlp([d_model, d_model, rarsq.chunk * rarsq.action_dim])

    def train(self, mode: bool = True) -> CausalSkillTransformer:
        """``nn.Module.train``; the stage-0 model stays in evaluation mode (frozen)."""
        super().train(check_bool(mode, "mode"))
        self.rarsq.eval()
        return self

    def _context(self, obs: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        x = self._check_inputs(obs, tasks)
        tokens = torch.cat([self.task_emb(tasks).unsqueeze(1), self.obs_proj(x)], dim=1) + self.pos.to(x.dtype)
        return self.context(tokens)[:, -1]

    def _logits(self, g: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, D, K]`` given codes ``prefix [B, <D]`` (teacher forcing: the first D-1 targets)."""
        if not self.autoregressive:
            return torch.stack([head(g) for head in self.heads], dim=1)
        offsets = torch.arange(prefix.shape[1], device=g.device) * self.codebook_size
        tokens = torch.cat([g.unsqueeze(1), self.code_emb(prefix + offsets)], dim=1)
        n = tokens.shape[1]
        tokens = tokens + self.depth_pos[:n].to(g.dtype)
        causal = torch.triu(torch.full((n, n), float("-inf"), device=g.device, dtype=g.dtype), diagonal=1)
        h = self.decoder(tokens, mask=causal)
        return torch.stack([self.heads[d](h[:, d]) for d in range(n)], dim=1)

    def loss(self, obs: torch.Tensor, tasks: torch.Tensor, chunks: torch.Tensor | None = None,
             mask: torch.Tensor | None = None, codes: torch.Tensor | None = None) -> tuple[torch.Tensor, dict]:
        """``-sum_d w_d log P(k*_d | k*_<d, g_t) + lambda |a - (psi(sum_d e_{k*_d}) + zeta(g_t))|²`` with ``k*``
        the stage-0 codes of ``chunks`` (or the given ``codes [B, D]``; the second term needs ``chunks``)."""
        g = self._context(obs, tasks)
        if chunks is not None:
            chunks = _check_chunks(chunks, self.rarsq.chunk, self.rarsq.action_dim, len(obs))
        if codes is None:
            if chunks is None:
                raise ValueError("chunks must be given when codes is None")
            codes = self.rarsq.encode(chunks)
        check_tensor(codes, "codes", ndim=2, shape=(obs.shape[0], self.depth))
        logits = self._logits(g, codes[:, :-1])
        ce = F.cross_entropy(logits.flatten(0, 1), codes.flatten(), reduction="none").view(-1, self.depth)
        loss = (ce.mean(0) * self.code_weights.to(ce.dtype)).sum()
        metrics = {"ce": ce.mean(0).tolist()}
        if self.offset and chunks is not None:
            pred = self.rarsq.decode(codes) + self.offset_head(g).view_as(chunks)
            mse = _masked_mse(pred, chunks, mask)
            loss = loss + self.offset_weight * mse
            metrics["mse"] = float(mse.detach())
        return loss, metrics

    @torch.no_grad()
    def sample_codes(self, obs: torch.Tensor, tasks: torch.Tensor, *, top_p: float = 0.9, temperature: float = 1.0,
                     greedy: bool = False, seed: Seed = None) -> torch.Tensor:
        """Codes ``[B, D]`` drawn depth by depth from nucleus(``top_p``, ``temperature``) or greedily."""
        top_p = check_scalar(top_p, "top_p", "real", min=0.0, max=1.0, inclusive="right")
        temperature = check_scalar(temperature, "temperature", "real", min=0.0, inclusive="neither")
        greedy = check_bool(greedy, "greedy")
        g = self._context(obs, tasks)
        gen = torch_generator(seed, device=obs.device)
        codes = torch.zeros(len(g), 0, dtype=torch.int64, device=g.device)
        for d in range(self.depth):
            logits = self._logits(g, codes)[:, d]
            codes = torch.cat([codes, _nucleus(logits, top_p, temperature, greedy, gen).unsqueeze(1)], dim=1)
        return codes

    @torch.no_grad()
    def act(self, obs: torch.Tensor, tasks: torch.Tensor, *, top_p: float = 0.9, temperature: float = 1.0,
            greedy: bool = False, seed: Seed = None) -> torch.Tensor:
        """An action chunk ``[B, T, A]``: ``psi(sum_d e_{d, k_d}) + zeta(g_t)`` with sampled codes (Section 3.3)."""
        codes = self.sample_codes(obs, tasks, top_p=top_p, temperature=temperature, greedy=greedy, seed=seed)
        chunk = self.rarsq.decode(codes)
        if self.offset:
            chunk = chunk + self.offset_head(self._context(obs, tasks)).view_as(chunk)
        return chunk


def _nucleus(logits: torch.Tensor, top_p: float, temperature: float, greedy: bool,
             gen: torch.Generator) -> torch.Tensor:
    if greedy:
        return logits.argmax(-1)
    probs = torch.softmax(logits.double() / temperature, -1)
    sorted_p, order = probs.sort(-1, descending=True)
    keep = sorted_p.cumsum(-1) - sorted_p < top_p  # the smallest prefix with mass >= top_p
    sorted_p = sorted_p * keep
    pick = torch.multinomial(sorted_p / sorted_p.sum(-1, keepdim=True), 1, generator=gen)
    return order.gather(-1, pick).squeeze(-1)


class ChunkMLPPolicy(_Normalised):
    """Behaviour cloning with action chunking: an MLP from ``[task one-hot, o_{t-h+1..t}]`` to a ``T x A`` chunk
    (the continuous baseline; no codes)."""

    def __init__(self, obs_dim: int, n_tasks: int, action_dim: int, chunk: int = 8, *, hidden: int = 256,
                 history: int = 1, seed: Seed = None) -> None:
        self.obs_dim = check_scalar(obs_dim, "obs_dim", "int", min=1)
        super().__init__(self.obs_dim)
        self.n_tasks = check_scalar(n_tasks, "n_tasks", "int", min=1)
        self.action_dim = check_scalar(action_dim, "action_dim", "int", min=1)
        self.chunk = check_scalar(chunk, "chunk", "int", min=1)
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        self.history = check_scalar(history, "history", "int", min=1)
        with init_rng(seed):
            self.net = _mlp([self.n_tasks + self.history * self.obs_dim, hidden, hidden, self.chunk * self.action_dim])

    def forward(self, obs: torch.Tensor, tasks: torch.Tensor) -> torch.Tensor:
        x = self._check_inputs(obs, tasks)
        inp = torch.cat([F.one_hot(tasks, self.n_tasks).to(x.dtype), x.flatten(1)], dim=1)
        return self.net(inp).view(-1, self.chunk, self.action_dim)

    def loss(self, obs: torch.Tensor, tasks: torch.Tensor, chunks: torch.Tensor,
             mask: torch.Tensor | None = None) -> tuple[torch.Tensor, dict]:
        """Masked chunk MSE."""
        pred = self(obs, tasks)
        chunks = _check_chunks(chunks, self.chunk, self.action_dim, len(obs))
        mse = _masked_mse(pred, chunks, mask)
        return mse, {"mse": float(mse.detach())}

    @torch.no_grad()
    def act(self, obs: torch.Tensor, tasks: torch.Tensor, *, seed: Seed = None) -> torch.Tensor:
        """The predicted chunk ``[B, T, A]`` (deterministic; ``seed`` is accepted for a common interface)."""
        return self(obs, tasks)


def _batches(n: int, steps: int, batch_size: int, seed: Seed):
    gen = torch_generator(seed)
    for _ in range(steps):
        yield torch.randint(n, (min(batch_size, n),), generator=gen)


def _optimiser(params, lr: float, steps: int, weight_decay: float):
    opt = torch.optim.AdamW([p for p in params if p.requires_grad], lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    return opt, sched


def train_rarsq(model: RaRSQ, chunks: torch.Tensor, mask: torch.Tensor | None = None, *, steps: int = 2000,
                batch_size: int = 256, lr: float = 1e-3, weight_decay: float = 0.0, seed: Seed = None) -> list[dict]:
    """Train stage 0 on ``chunks [N, T, A]`` (AdamW, cosine schedule); the per-step metrics (``mse``, ``vq_loss``)."""
    check_instance(model, "model", RaRSQ)
    _check_chunks(chunks, model.chunk, model.action_dim)
    if mask is not None:
        check_tensor(mask, "mask", ndim=2, shape=tuple(chunks.shape[:2]))
    steps = check_scalar(steps, "steps", "int", min=1)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
    opt, sched = _optimiser(model.parameters(), lr, steps, weight_decay)
    model.train()
    history = []
    for idx in _batches(len(chunks), steps, batch_size, seed):
        loss, metrics = model.loss(chunks[idx], None if mask is None else mask[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        history.append({k: v for k, v in metrics.items() if k != "indices"})
    model.eval()
    return history


def train_policy(policy: CausalSkillTransformer | ChunkMLPPolicy, data: ChunkDataset, *, steps: int = 3000,
                 batch_size: int = 256, lr: float = 8e-4, weight_decay: float = 1e-4, seed: Seed = None) -> list[dict]:
    """Train a stage-1 policy on ``data`` (observation statistics set from it first); the per-step metrics."""
    check_instance(policy, "policy", (CausalSkillTransformer, ChunkMLPPolicy))
    check_instance(data, "data", ChunkDataset)
    steps = check_scalar(steps, "steps", "int", min=1)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    weight_decay = check_scalar(weight_decay, "weight_decay", "real", min=0.0)
    flat = data.obs.flatten(0, 1)
    policy.set_obs_stats(flat.mean(0), flat.std(0))
    opt, sched = _optimiser(policy.parameters(), lr, steps, weight_decay)
    policy.train()
    history = []
    for idx in _batches(len(data), steps, batch_size, seed):
        loss, metrics = policy.loss(data.obs[idx], data.tasks[idx], data.chunks[idx], data.mask[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        history.append(metrics)
    policy.eval()
    return history

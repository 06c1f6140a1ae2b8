"""A compact DreamerV3 core (Hafner et al., "Mastering Diverse Domains through World Models", arXiv:2301.04104).

The pieces a world-model agent on vector observations needs, each readable on its own:

- :func:`symlog` / :func:`symexp` (DreamerV3 eq. 1) for inputs and regression targets;
- :func:`symlog_bins`, :func:`twohot`, :func:`twohot_loss`, :func:`twohot_mean`: discrete regression over
  exponentially spaced bins (DreamerV3 eqs. 9-10), used for rewards, costs and values;
- :class:`RSSM`: the recurrent state-space model with ``G`` categorical latents of ``C`` classes, straight-through
  one-hot samples and a 1 % uniform mix; a model state is one tensor ``[h, z]`` (deterministic then stochastic);
- :func:`kl_balance`: the dynamics / representation KL losses with free bits (DreamerV3 eq. 5);
- :class:`ReturnNormalizer`: the 5-95 percentile return scale with an EMA (DreamerV3 eq. 7);
- :func:`lambda_returns`: the bootstrapped lambda-returns of imagined trajectories;
- :class:`Actor` and :class:`Critic`: the imagination actor (REINFORCE with normalised advantages and an entropy
  bonus) and the two-hot critic with its slow (EMA) copy;
- :class:`SequenceReplay`: a uniform replay of fixed-length sequences.

Sizes default to a small vector-observation scale (MLP 2 x 128, LayerNorm, SiLU); nothing here knows about costs
or privileged information, so other world-model code can reuse it (see :mod:`icml25.rl.pigdreamer`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from icml25.utils.random import Seed, as_generator, init_rng
from icml25.utils.validation import check_bool, check_instance, check_scalar, check_tensor

__all__ = [
    "RSSM",
    "Actor",
    "Critic",
    "ReturnNormalizer",
    "SequenceReplay",
    "kl_balance",
    "lambda_returns",
    "mix_uniform",
    "sample_onehot",
    "symexp",
    "symlog",
    "symlog_bins",
    "twohot",
    "twohot_loss",
    "twohot_mean",
]


def symlog(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * log(1 + |x|)`` (DreamerV3 eq. 1), the squashing of inputs and regression targets."""
    check_tensor(x, "x", floating=True)
    return torch.sign(x) * torch.log1p(torch.abs(x))


def symexp(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * (exp(|x|) - 1)``, the inverse of :func:`symlog`."""
    check_tensor(x, "x", floating=True)
    return torch.sign(x) * torch.expm1(torch.abs(x))


def symlog_bins(n_bins: int = 255, low: float = -20.0, high: float = 20.0) -> torch.Tensor:
    """``n_bins`` equally spaced bin centres in symlog space from ``low`` to ``high`` (DreamerV3: 255 in [-20, 20])."""
    n_bins = check_scalar(n_bins, "n_bins", "int", min=2)
    low = check_scalar(low, "low", "real")
    high = check_scalar(high, "high", "real")
    if not high > low:
        raise ValueError(f"high must be > low, got low={low} and high={high}")
    return torch.linspace(low, high, n_bins)


def _check_bins(bins: torch.Tensor) -> torch.Tensor:
    check_tensor(bins, "bins", ndim=1, floating=True, finite=True)
    if bins.numel() < 2 or not bool((bins[1:] > bins[:-1]).all()):
        raise ValueError("bins must be a 1-d tensor of at least 2 strictly increasing values")
    return bins


def twohot(y: torch.Tensor, bins: torch.Tensor) -> torch.Tensor:
    """The two-hot encoding of ``y`` (already in bin space) over ``bins``: weight on the two nearest bins such that
    ``(twohot(y) * bins).sum(-1) == y`` exactly inside ``[bins[0], bins[-1]]`` (values outside are clipped)."""
    check_tensor(y, "y", floating=True, finite=True)
    bins = _check_bins(bins).to(y)
    y = y.clamp(bins[0], bins[-1])
    above = torch.searchsorted(bins, y.contiguous(), right=True).clamp(1, len(bins) - 1)
    below = above - 1
    lo, hi = bins[below], bins[above]
    w_hi = (y - lo) / (hi - lo)
    out = torch.zeros(*y.shape, len(bins), dtype=y.dtype, device=y.device)
    out.scatter_(-1, below.unsqueeze(-1), (1 - w_hi).unsqueeze(-1))
    out.scatter_add_(-1, above.unsqueeze(-1), w_hi.unsqueeze(-1))
    return out


def twohot_loss(logits: torch.Tensor, target: torch.Tensor, bins: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of ``logits`` (``[..., K]``) against the two-hot encoding of ``symlog(target)`` (``[...]``)."""
    check_tensor(logits, "logits", floating=True)
    check_tensor(target, "target", floating=True, finite=True)
    bins = _check_bins(bins)
    if logits.shape[:-1] != target.shape or logits.shape[-1] != len(bins):
        raise ValueError(f"logits must have shape target.shape + (len(bins),) = {(*target.shape, len(bins))}, "
                         f"got {tuple(logits.shape)}")
    return -(twohot(symlog(target.detach()), bins) * F.log_softmax(logits, -1)).sum(-1)


def twohot_mean(logits: torch.Tensor, bins: torch.Tensor) -> torch.Tensor:
    """The predicted value of two-hot ``logits``: ``symexp(softmax(logits) @ bins)``."""
    check_tensor(logits, "logits", floating=True)
    bins = _check_bins(bins)
    if logits.ndim < 1 or logits.shape[-1] != len(bins):
        raise ValueError(f"logits must end with len(bins) = {len(bins)} entries, got shape {tuple(logits.shape)}")
    return symexp((F.softmax(logits, -1) * bins.to(logits)).sum(-1))


def kl_balance(post_logits: torch.Tensor, prior_logits: torch.Tensor, *, dyn_scale: float = 0.5,
               rep_scale: float = 0.1, free_nats: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """DreamerV3's KL balancing with free bits (eq. 5), per position: ``(loss, kl)`` each of shape ``[...]``.

    ``loss = dyn_scale * max(free, KL[sg(q) || p]) + rep_scale * max(free, KL[q || sg(p)])`` for categorical
    logits of shape ``[..., groups, classes]`` (the KL is summed over groups).  The same form serves the
    privileged alignment of :mod:`icml25.rl.pigdreamer` with ``q`` the oracle and ``p`` the naive posterior.
    """
    check_tensor(post_logits, "post_logits", floating=True)
    check_tensor(prior_logits, "prior_logits", floating=True)
    if post_logits.shape != prior_logits.shape or post_logits.ndim < 2:
        raise ValueError(f"post_logits and prior_logits must share a shape [..., groups, classes], got "
                         f"{tuple(post_logits.shape)} and {tuple(prior_logits.shape)}")
    dyn_scale = check_scalar(dyn_scale, "dyn_scale", "real", min=0.0)
    rep_scale = check_scalar(rep_scale, "rep_scale", "real", min=0.0)
    free_nats = check_scalar(free_nats, "free_nats", "real", min=0.0)

    def kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        lp, lq = F.log_softmax(p, -1), F.log_softmax(q, -1)
        return (lp.exp() * (lp - lq)).sum((-2, -1))

    dyn = kl(post_logits.detach(), prior_logits)
    rep = kl(post_logits, prior_logits.detach())
    loss = dyn_scale * dyn.clamp(min=free_nats) + rep_scale * rep.clamp(min=free_nats)
    return loss, dyn.detach()


def lambda_returns(reward: torch.Tensor, value: torch.Tensor, cont: torch.Tensor, *, gamma: float = 0.99,
                   lam: float = 0.95) -> torch.Tensor:
    """Bootstrapped lambda-returns, time-major: ``reward``, ``cont`` ``[H, N]`` and ``value`` ``[H + 1, N]``.

    ``R_k = r_k + gamma * c_k * ((1 - lam) * v_{k+1} + lam * R_{k+1})`` with ``R_H = v_H``, where ``r_k`` and
    ``c_k`` are the reward and continuation of the transition from step ``k`` to ``k + 1``.
    """
    check_tensor(reward, "reward", ndim=2, floating=True)
    check_tensor(value, "value", ndim=2, floating=True)
    check_tensor(cont, "cont", ndim=2, floating=True)
    if reward.shape != cont.shape or value.shape != (reward.shape[0] + 1, reward.shape[1]):
        raise ValueError(f"reward and cont must be [H, N] and value [H + 1, N], got {tuple(reward.shape)}, "
                         f"{tuple(cont.shape)} and {tuple(value.shape)}")
    gamma = check_scalar(gamma, "gamma", "real", min=0.0, max=1.0)
    lam = check_scalar(lam, "lam", "real", min=0.0, max=1.0)
    out = [value[-1]]
    for k in reversed(range(reward.shape[0])):
        out.append(reward[k] + gamma * cont[k] * ((1 - lam) * value[k + 1] + lam * out[-1]))
    return torch.stack(out[1:][::-1])


def _mlp(n_in: int, n_out: int, hidden: int, layers: int = 2) -> nn.Sequential:
    mods: list[nn.Module] = []
    for i in range(layers):
        mods += [nn.Linear(n_in if i == 0 else hidden, hidden), nn.LayerNorm(hidden), nn.SiLU()]
    mods.append(nn.Linear(hidden if layers else n_in, n_out))
    return nn.Sequential(*mods)


def _check_generator(generator: torch.Generator | None) -> torch.Generator | None:
    if generator is not None:
        check_instance(generator, "generator", torch.Generator)
    return generator


def _check_flags(flags: torch.Tensor, name: str, shape: tuple[int, ...]) -> torch.Tensor:
    check_tensor(flags, name, shape=shape)
    if not bool(((flags == 0) | (flags == 1)).all()):
        raise ValueError(f"{name} must hold only 0 and 1 (or False and True)")
    return flags


def mix_uniform(logits: torch.Tensor, unimix: float = 0.01) -> torch.Tensor:
    """Log-probabilities of ``(1 - unimix) * softmax(logits) + unimix / C`` (DreamerV3's 1 % uniform mix)."""
    check_tensor(logits, "logits", floating=True)
    if logits.ndim < 1 or logits.shape[-1] < 2:
        raise ValueError(f"logits must be [..., C] with C >= 2, got shape {tuple(logits.shape)}")
    unimix = check_scalar(unimix, "unimix", "real", min=0.0, max=1.0, inclusive="left")
    if unimix == 0:
        return F.log_softmax(logits, -1)
    return torch.log((1 - unimix) * F.softmax(logits, -1) + unimix / logits.shape[-1])


def sample_onehot(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """A straight-through one-hot sample of categorical ``logits`` (``[..., C]``): the forward value is one-hot,
    the gradient that of the probabilities (DreamerV3's latent sampling)."""
    check_tensor(logits, "logits", floating=True, finite=True)
    if logits.ndim < 1 or logits.shape[-1] < 2 or logits.numel() == 0:
        raise ValueError(f"logits must be [..., C] with C >= 2 and at least one row, got {tuple(logits.shape)}")
    _check_generator(generator)
    probs = F.softmax(logits, -1)
    flat = probs.reshape(-1, probs.shape[-1]).detach().float()
    idx = torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])
    onehot = F.one_hot(idx, probs.shape[-1]).to(probs)
    return onehot + probs - probs.detach()


class RSSM(nn.Module):
    """Recurrent state-space model (DreamerV3 Sec. 2): ``h_t = GRU(h_{t-1}, [z_{t-1}, a_{t-1}])``, prior
    ``p(z_t | h_t)``, posterior ``q(z_t | h_t, e_t)`` with ``z_t`` ``stoch`` one-hot groups of ``classes``.

    A model state is one tensor ``[..., deter + stoch * classes]`` (``h`` then the flattened ``z``), the
    feature the heads read.  Logits are mixed with ``unimix`` uniform probability, as in DreamerV3.
    """

    def __init__(self, embed_dim: int, act_dim: int, deter: int = 128, stoch: int = 16, classes: int = 16,
                 hidden: int = 128, unimix: float = 0.01, seed: Seed = None) -> None:
        super().__init__()
        self.embed_dim = check_scalar(embed_dim, "embed_dim", "int", min=1)
        self.act_dim = check_scalar(act_dim, "act_dim", "int", min=1)
        self.deter = check_scalar(deter, "deter", "int", min=1)
        self.stoch = check_scalar(stoch, "stoch", "int", min=1)
        self.classes = check_scalar(classes, "classes", "int", min=2)
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        self.unimix = check_scalar(unimix, "unimix", "real", min=0.0, max=1.0, inclusive="left")
        with init_rng(seed):
            self.img_in = nn.Sequential(nn.Linear(self.stoch * self.classes + self.act_dim, hidden),
                                        nn.LayerNorm(hidden), nn.SiLU())
            self.gru = nn.GRUCell(hidden, self.deter)
            self.prior_net = _mlp(self.deter, self.stoch * self.classes, hidden, 1)
            self.post_net = _mlp(self.deter + self.embed_dim, self.stoch * self.classes, hidden, 1)

    @property
    def feat_dim(self) -> int:
        """Size of a model state ``[h, z]``."""
        return self.deter + self.stoch * self.classes

    def _logits(self, raw: torch.Tensor) -> torch.Tensor:
        return mix_uniform(raw.reshape(*raw.shape[:-1], self.stoch, self.classes), self.unimix)

    def _check_state(self, state: torch.Tensor, name: str = "state") -> torch.Tensor:
        check_tensor(state, name, ndim=2, floating=True, shape=(None, self.feat_dim), finite=True)
        if state.shape[0] == 0:
            raise ValueError(f"{name} must hold at least one state, got shape {tuple(state.shape)}")
        return state

    def _check_action(self, action: torch.Tensor, batch: int, name: str = "action") -> torch.Tensor:
        check_tensor(action, name, ndim=2, floating=True, shape=(batch, self.act_dim), finite=True)
        return action

    def initial(self, batch_size: int) -> torch.Tensor:
        """The zero state of ``batch_size`` sequences (``h = 0``, ``z = 0``), in the module's dtype."""
        batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
        p = next(self.parameters())
        return torch.zeros(batch_size, self.feat_dim, dtype=p.dtype, device=p.device)

    def _deter_step(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        h, z = state[:, :self.deter], state[:, self.deter:]
        return self.gru(self.img_in(torch.cat([z, action], -1)), h)

    def img_step(self, state: torch.Tensor, action: torch.Tensor,
                 generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """One prior step ``[B, F], [B, A] -> (next state [B, F], prior logits [B, stoch, classes])``."""
        self._check_state(state)
        self._check_action(action, state.shape[0])
        h = self._deter_step(state, action)
        logits = self._logits(self.prior_net(h))
        z = sample_onehot(logits, _check_generator(generator)).flatten(-2)
        return torch.cat([h, z], -1), logits

    def obs_step(self, state: torch.Tensor, action: torch.Tensor, embed: torch.Tensor,
                 is_first: torch.Tensor | None = None,
                 generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One filtering step: ``(posterior state [B, F], posterior logits, prior logits)``; where ``is_first``
        (``[B]`` bool) is set, ``state`` and ``action`` are reset to zero first."""
        self._check_state(state)
        batch = state.shape[0]
        self._check_action(action, batch)
        check_tensor(embed, "embed", ndim=2, floating=True, shape=(batch, self.embed_dim), finite=True)
        if is_first is not None:
            _check_flags(is_first, "is_first", (batch,))
            keep = (~is_first.bool()).to(state).unsqueeze(-1)
            state, action = state * keep, action * keep
        generator = _check_generator(generator)
        h = self._deter_step(state, action)
        prior = self._logits(self.prior_net(h))
        post = self._logits(self.post_net(torch.cat([h, embed], -1)))
        z = sample_onehot(post, generator).flatten(-2)
        return torch.cat([h, z], -1), post, prior

    def forward(self, embed: torch.Tensor, action: torch.Tensor, is_first: torch.Tensor,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Filter sequences: ``embed [B, T, E]``, ``action [B, T, A]`` (the action *into* step ``t``),
        ``is_first [B, T]`` -> ``(states [B, T, F], posterior logits, prior logits [B, T, stoch, classes])``."""
        check_tensor(embed, "embed", ndim=3, floating=True, finite=True)
        batch, length = embed.shape[:2]
        if embed.shape[-1] != self.embed_dim or batch == 0 or length == 0:
            raise ValueError(f"embed must be [B > 0, T > 0, {self.embed_dim}], got shape {tuple(embed.shape)}")
        check_tensor(action, "action", ndim=3, floating=True, shape=(batch, length, self.act_dim), finite=True)
        _check_flags(is_first, "is_first", (batch, length))
        state = self.initial(batch).to(embed)
        states, posts, priors = [], [], []
        for t in range(length):
            state, post, prior = self.obs_step(state, action[:, t], embed[:, t], is_first[:, t], generator)
            states.append(state)
            posts.append(post)
            priors.append(prior)
        return torch.stack(states, 1), torch.stack(posts, 1), torch.stack(priors, 1)


class Actor(nn.Module):
    """Gaussian policy over ``[-1, 1]^act_dim`` actions: mean ``tanh(.)``, std in ``[min_std, max_std]``.

    Trained by REINFORCE on imagined trajectories with normalised advantages and an entropy bonus (DreamerV3's
    actor loss); samples are clipped to the action box when acting.
    """

    def __init__(self, feat_dim: int, act_dim: int, hidden: int = 128, min_std: float = 0.1, max_std: float = 1.0,
                 seed: Seed = None) -> None:
        super().__init__()
        self.feat_dim = check_scalar(feat_dim, "feat_dim", "int", min=1)
        self.act_dim = check_scalar(act_dim, "act_dim", "int", min=1)
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        self.min_std = check_scalar(min_std, "min_std", "real", min=0.0, inclusive="neither")
        self.max_std = check_scalar(max_std, "max_std", "real", min=self.min_std)
        with init_rng(seed):
            self.net = _mlp(self.feat_dim, 2 * self.act_dim, hidden)

    def forward(self, feat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean, std)`` of the action distribution for features ``[..., feat_dim]``."""
        check_tensor(feat, "feat", floating=True)
        if feat.ndim < 1 or feat.shape[-1] != self.feat_dim:
            raise ValueError(f"feat must end with {self.feat_dim} features, got shape {tuple(feat.shape)}")
        mean, raw = self.net(feat).chunk(2, -1)
        std = self.min_std + (self.max_std - self.min_std) * torch.sigmoid(raw + 2.0)
        return torch.tanh(mean), std

    def sample(self, feat: torch.Tensor,
               generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(action, log_prob, entropy)``; the action is a detached sample, log_prob and entropy carry gradients."""
        check_tensor(feat, "feat", floating=True, finite=True)
        mean, std = self(feat)
        noise = torch.randn(mean.shape, generator=_check_generator(generator), dtype=mean.dtype, device=mean.device)
        action = (mean + std * noise).detach()
        dist = torch.distributions.Normal(mean, std)
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1)


class Critic(nn.Module):
    """Two-hot value head (symlog bins) with a slow copy updated by EMA (DreamerV3: decay 0.98)."""

    def __init__(self, feat_dim: int, hidden: int = 128, n_bins: int = 255, slow_decay: float = 0.98,
                 seed: Seed = None) -> None:
        super().__init__()
        self.feat_dim = check_scalar(feat_dim, "feat_dim", "int", min=1)
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        self.slow_decay = check_scalar(slow_decay, "slow_decay", "real", min=0.0, max=1.0)
        self.register_buffer("bins", symlog_bins(n_bins))
        with init_rng(seed):
            self.net = _mlp(self.feat_dim, n_bins, hidden)
            nn.init.zeros_(self.net[-1].weight)
            nn.init.zeros_(self.net[-1].bias)
        self.slow = copy.deepcopy(self.net).requires_grad_(False)

    def _check(self, feat: torch.Tensor) -> torch.Tensor:
        check_tensor(feat, "feat", floating=True)
        if feat.ndim < 1 or feat.shape[-1] != self.feat_dim:
            raise ValueError(f"feat must end with {self.feat_dim} features, got shape {tuple(feat.shape)}")
        return feat

    def forward(self, feat: torch.Tensor, slow: bool = False) -> torch.Tensor:
        """The value ``[...]`` of features ``[..., feat_dim]`` (from the slow copy when ``slow``)."""
        self._check(feat)
        slow = check_bool(slow, "slow")
        net = self.slow if slow else self.net
        return twohot_mean(net(feat), self.bins)

    def loss(self, feat: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Two-hot cross-entropy to ``target`` plus a regulariser towards the slow critic's prediction, ``[...]``."""
        check_tensor(self._check(feat), "feat", finite=True)
        check_tensor(target, "target", floating=True)
        if target.shape != feat.shape[:-1]:
            raise ValueError(f"target must have shape feat.shape[:-1] = {tuple(feat.shape[:-1])}, got "
                             f"{tuple(target.shape)} (feat {tuple(feat.shape)})")
        logits = self.net(feat)
        return twohot_loss(logits, target, self.bins) + twohot_loss(logits, self(feat, slow=True).detach(), self.bins)

    @torch.no_grad()
    def update_slow(self) -> None:
        """``slow <- decay * slow + (1 - decay) * fast``."""
        for s, p in zip(self.slow.parameters(), self.net.parameters(), strict=True):
            s.mul_(self.slow_decay).add_(p, alpha=1 - self.slow_decay)


class ReturnNormalizer:
    """DreamerV3's return scale (eq. 7): an EMA of the 5th-95th percentile range, at least ``1``.

    ``update(returns)`` folds one batch in and returns the scale ``S``; advantages are divided by ``S``.
    """

    def __init__(self, decay: float = 0.99, low: float = 0.05, high: float = 0.95) -> None:
        self.decay = check_scalar(decay, "decay", "real", min=0.0, max=1.0)
        self.low = check_scalar(low, "low", "real", min=0.0, max=1.0)
        self.high = check_scalar(high, "high", "real", min=0.0, max=1.0)
        if not self.high > self.low:
            raise ValueError(f"high must be > low, got low={self.low} and high={self.high}")
        self.range_: float | None = None

    def update(self, returns: torch.Tensor) -> float:
        """Fold the percentile range of ``returns`` into the EMA and return ``max(1, range)``."""
        check_tensor(returns, "returns", floating=True, finite=True)
        if returns.numel() == 0:
            raise ValueError("returns must not be empty")
        flat = returns.detach().flatten().double()
        spread = float(torch.quantile(flat, self.high) - torch.quantile(flat, self.low))
        self.range_ = spread if self.range_ is None else self.decay * self.range_ + (1 - self.decay) * spread
        return max(1.0, self.range_)

    @property
    def scale(self) -> float:
        """The current scale ``max(1, range)`` (1 before any update)."""
        return 1.0 if self.range_ is None else max(1.0, self.range_)


class SequenceReplay:
    """Uniform replay of fixed-length sequences from one stream of steps (episodes are marked by ``is_first``).

    ``add(step)`` appends one step (a mapping of arrays or numbers with the same keys every time);
    ``sample(batch_size, seq_len)`` returns a dict of float32 tensors ``[batch_size, seq_len, ...]``.
    """

    def __init__(self, capacity: int = 100_000, seed: Seed = None) -> None:
        self.capacity = check_scalar(capacity, "capacity", "int", min=1)
        self._rng = as_generator(seed)
        self._data: dict[str, np.ndarray] = {}
        self._size = 0
        self._pos = 0

    def __len__(self) -> int:
        return self._size

    def add(self, step: Mapping[str, object]) -> None:
        """Append one step; every value must be finite and have the shape it had in the first step."""
        check_instance(step, "step", Mapping, "a mapping of arrays")
        if not step:
            raise ValueError("step must not be empty")
        if self._data and set(step) != set(self._data):
            raise ValueError(f"step must have the keys {sorted(self._data)}, got {sorted(step)}")
        for key, value in step.items():
            arr = np.asarray(value, dtype=np.float32)
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"step[{key!r}] must be finite, got {value!r}")
            if key not in self._data:
                self._data[key] = np.zeros((self.capacity, *arr.shape), np.float32)
            elif arr.shape != self._data[key].shape[1:]:
                raise ValueError(f"step[{key!r}] must have shape {self._data[key].shape[1:]}, got {arr.shape}")
            self._data[key][self._pos] = arr
        self._pos = (self._pos + 1) % self.capacity
        self._size = min(self._size + 1, self.capacity)

    def sample(self, batch_size: int, seq_len: int) -> dict[str, torch.Tensor]:
        """``batch_size`` random windows of ``seq_len`` consecutive steps (oldest-first, never across the write
        position); the first step of each window is marked ``is_first`` when the key exists."""
        batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
        seq_len = check_scalar(seq_len, "seq_len", "int", min=1)
        if seq_len > self._size:
            raise ValueError(f"seq_len must be <= the number of stored steps ({self._size}), got {seq_len}")
        oldest = self._pos if self._size == self.capacity else 0
        starts = self._rng.integers(0, self._size - seq_len + 1, size=batch_size)
        idx = (oldest + starts[:, None] + np.arange(seq_len)[None]) % self.capacity
        out = {k: torch.from_numpy(v[idx].copy()) for k, v in self._data.items()}
        if "is_first" in out:
            out["is_first"][:, 0] = 1.0
        return out

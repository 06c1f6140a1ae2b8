"""PIGDreamer: privileged-information-guided world models for safe RL under partial observability.

Huang, Wang, Li, Xia, Zhang & Zhang, "PIGDreamer: Privileged Information Guided World Models for Safe Partially
Observable Reinforcement Learning" (ICML 2025, arXiv:2508.02159).  Built on the DreamerV3 core of
:mod:`icml25.rl.dreamer`:

- :class:`AsymWorldModel`: a naive world model on observations ``o_t`` and a privileged one on ``i_t`` (Sec. 4.1),
  the *privileged representation alignment* (Sec. 4.2): an oracle posterior ``q*(z | h^-, e^-, e^+)`` and
  ``L_align = alpha KL[q* || sg(q^-)] + beta KL[sg(q*) || q^-]`` pulling the naive posterior toward it, and
  asymmetric reward / cost heads on ``(s^-, s^+)`` (Sec. 4.3);
- :class:`AugmentedLagrangian`: SafeDreamer's augmented-Lagrangian cost constraint with the budget as a
  constructor argument;
- :class:`PIGDreamer`: the agent: twisted imagination (both models rolled forward under the actor's actions),
  asymmetric reward / cost critics on ``(s^-, s^+)``, an actor on ``s^-`` only; ``train`` reports OmniSafe's
  ``EpRet`` / ``EpCost`` per episode;
- :class:`DeployablePolicy`: what is deployed: the naive encoder and RSSM and the actor, nothing privileged.

``variant`` selects the agent of the paper's ablations: ``"pig"`` (the method), ``"norep"`` (no alignment),
``"unprivileged"`` (SafeDreamer-style, no privileged information) and ``"informed"`` (privileged state only as a
reconstruction target from the naive latent).
"""

from __future__ import annotations

import math
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from icml25.rl.dreamer import (
    RSSM,
    Actor,
    Critic,
    ReturnNormalizer,
    SequenceReplay,
    kl_balance,
    lambda_returns,
    mix_uniform,
    sample_onehot,
    symlog,
    symlog_bins,
    twohot_loss,
    twohot_mean,
)
from icml25.utils.random import Seed, as_generator, init_rng, int_seed, torch_generator
from icml25.utils.validation import check_array, check_bool, check_choice, check_instance, check_scalar, check_tensor

__all__ = ["AsymWorldModel", "AugmentedLagrangian", "DeployablePolicy", "PIGDreamer"]

VARIANTS = ("pig", "norep", "unprivileged", "informed")
PRIVILEGED_VARIANTS = ("pig", "norep", "informed")
BATCH_KEYS = ("obs", "action", "reward", "cost", "is_first", "is_terminal")


def _mlp(n_in: int, n_out: int, hidden: int, layers: int = 2) -> nn.Sequential:
    mods: list[nn.Module] = []
    for i in range(layers):
        mods += [nn.Linear(n_in if i == 0 else hidden, hidden), nn.LayerNorm(hidden), nn.SiLU()]
    mods.append(nn.Linear(hidden, n_out))
    return nn.Sequential(*mods)


class AugmentedLagrangian:
    """SafeDreamer's augmented Lagrangian for ``E[episode cost] <= cost_limit``.

    ``penalty(J_c) = lambda (J_c - d) + mu / 2 (J_c - d)^2`` if ``lambda + mu (J_c - d) >= 0``, else
    ``-lambda^2 / (2 mu)``; ``weight(J_c)`` is its derivative ``max(0, lambda + mu (J_c - d))``, the factor on
    the cost advantage.  ``update(J_c)`` sets ``lambda <- max(0, lambda + mu (J_c - d))`` and
    ``mu <- min(mu (1 + nu), mu_max)``.
    """

    def __init__(self, cost_limit: float = 5.0, multiplier: float = 0.0, mu: float = 1e-3, nu: float = 1e-3,
                 mu_max: float = 1.0) -> None:
        self.cost_limit = check_scalar(cost_limit, "cost_limit", "real", min=0.0)
        self.multiplier = check_scalar(multiplier, "multiplier", "real", min=0.0)
        self.mu = check_scalar(mu, "mu", "real", min=0.0, inclusive="neither")
        self.nu = check_scalar(nu, "nu", "real", min=0.0)
        self.mu_max = check_scalar(mu_max, "mu_max", "real", min=self.mu)

    def _gap(self, cost_return: float) -> float:
        """``J_c - d`` (``cost_return`` must be a finite number >= 0)."""
        return check_scalar(cost_return, "cost_return", "real", min=0.0) - self.cost_limit

    def penalty(self, cost_return: float) -> float:
        """``Psi(J_c; lambda, mu)`` at the current multiplier and penalty coefficient."""
        gap = self._gap(cost_return)
        if self.multiplier + self.mu * gap >= 0:
            return self.multiplier * gap + 0.5 * self.mu * gap ** 2
        return -self.multiplier ** 2 / (2 * self.mu)

    def weight(self, cost_return: float) -> float:
        """``dPsi / dJ_c = max(0, lambda + mu (J_c - d))``."""
        return max(0.0, self.multiplier + self.mu * self._gap(cost_return))

    def update(self, cost_return: float) -> float:
        """One multiplier step from an episode-cost estimate; returns the new multiplier (always ``>= 0``)."""
        self.multiplier = self.weight(cost_return)
        self.mu = min(self.mu * (1 + self.nu), self.mu_max)
        return self.multiplier


class AsymWorldModel(nn.Module):
    """The naive and privileged world models with privileged representation alignment (Secs. 4.1-4.2).

    ``loss(batch)`` takes a dict of ``[B, T, ...]`` float tensors with keys ``obs``, ``action`` (the action into
    step ``t``), ``reward``, ``cost``, ``is_first``, ``is_terminal`` and, for privileged variants, ``priv``; it
    returns ``(total, metrics, (naive states, privileged states or None))``.  The total is
    ``L_dyn^- + L_dyn^+ + L_align + L_dec^- + L_dec^+ + L_pred`` (symlog MSE decoders, two-hot reward and cost,
    Bernoulli continuation), averaged over the batch and summed over time.
    """

    def __init__(self, obs_dim: int, act_dim: int, priv_dim: int = 0, variant: str = "pig", deter: int = 128,
                 stoch: int = 16, classes: int = 16, hidden: int = 128, align_alpha: float = 0.1,
                 align_beta: float = 0.5, align_free_nats: float = 1.0, seed: Seed = None) -> None:
        super().__init__()
        self.obs_dim = check_scalar(obs_dim, "obs_dim", "int", min=1)
        self.act_dim = check_scalar(act_dim, "act_dim", "int", min=1)
        self.variant = check_choice(variant, "variant", VARIANTS)
        self.priv_dim = check_scalar(priv_dim, "priv_dim", "int", min=1 if self.privileged else 0)
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        self.align_alpha = check_scalar(align_alpha, "align_alpha", "real", min=0.0)
        self.align_beta = check_scalar(align_beta, "align_beta", "real", min=0.0)
        self.align_free_nats = check_scalar(align_free_nats, "align_free_nats", "real", min=0.0)
        self.bins = symlog_bins()
        seeds = [int_seed(g) for g in as_generator(seed).spawn(8)] if seed is not None else [None] * 8
        with init_rng(seeds[0]):
            self.encoder = _mlp(self.obs_dim, hidden, hidden, 1)
        self.rssm = RSSM(hidden, self.act_dim, deter, stoch, classes, hidden, seed=seeds[1])
        feat = self.rssm.feat_dim
        two_latents = self.variant in ("pig", "norep")
        self.head_dim = 2 * feat if two_latents else feat
        with init_rng(seeds[2]):
            self.decoder = _mlp(feat, self.obs_dim, hidden)
            self.reward_head = _mlp(self.head_dim, len(self.bins), hidden)
            self.cost_head = _mlp(self.head_dim, len(self.bins), hidden)
            self.cont_head = _mlp(feat, 1, hidden)
            for head in (self.reward_head, self.cost_head):
                nn.init.zeros_(head[-1].weight)
                nn.init.zeros_(head[-1].bias)
        if two_latents:
            with init_rng(seeds[3]):
                self.priv_encoder = _mlp(self.priv_dim, hidden, hidden, 1)
                self.priv_decoder = _mlp(feat, self.priv_dim, hidden)
                self.oracle = _mlp(self.rssm.deter + 2 * hidden, stoch * classes, hidden, 1)
                self.oracle_decoder = _mlp(feat, self.priv_dim, hidden)
            self.priv_rssm = RSSM(hidden, self.act_dim, deter, stoch, classes, hidden, seed=seeds[4])
        if self.variant == "informed":
            with init_rng(seeds[5]):
                self.aux_decoder = _mlp(feat, self.priv_dim, hidden)

    @property
    def privileged(self) -> bool:
        """Whether this variant reads the privileged state during training."""
        return self.variant in PRIVILEGED_VARIANTS

    def _check_batch(self, batch: Any) -> dict[str, torch.Tensor]:
        check_instance(batch, "batch", dict, "a dict of [B, T, ...] tensors")
        keys = BATCH_KEYS + (("priv",) if self.privileged else ())
        missing = [k for k in keys if k not in batch]
        if missing:
            raise KeyError(f"batch is missing {missing} (variant {self.variant!r} needs {list(keys)})")
        obs = check_tensor(batch["obs"], "batch['obs']", ndim=3, floating=True, finite=True)
        b, t = obs.shape[:2]
        if b == 0 or t == 0 or obs.shape[-1] != self.obs_dim:
            raise ValueError(f"batch['obs'] must be [B > 0, T > 0, {self.obs_dim}], got {tuple(obs.shape)}")
        check_tensor(batch["action"], "batch['action']", floating=True, finite=True, shape=(b, t, self.act_dim))
        for key in ("reward", "cost", "is_first", "is_terminal"):
            check_tensor(batch[key], f"batch[{key!r}]", floating=True, finite=True, shape=(b, t))
        if bool((batch["cost"] < 0).any()):
            raise ValueError("batch['cost'] must be non-negative")
        if self.privileged:
            check_tensor(batch["priv"], "batch['priv']", floating=True, finite=True, shape=(b, t, self.priv_dim))
        return batch

    def _heads_input(self, naive: torch.Tensor, priv: torch.Tensor | None) -> torch.Tensor:
        return torch.cat([naive, priv], -1) if priv is not None else naive

    def predict(self, naive: torch.Tensor, priv: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Reward, cost and continuation probability from model states ``[..., F]`` (``priv`` for ``pig``/``norep``)."""
        feat = self.rssm.feat_dim
        check_tensor(naive, "naive", floating=True)
        if naive.ndim < 1 or naive.shape[-1] != feat:
            raise ValueError(f"naive must end with {feat} features, got shape {tuple(naive.shape)}")
        if (priv is not None) != (self.variant in ("pig", "norep")):
            raise ValueError(f"priv must be given exactly for the variants 'pig' and 'norep', got variant "
                             f"{self.variant!r} and priv={'a tensor' if priv is not None else None}")
        if priv is not None:
            check_tensor(priv, "priv", floating=True, shape=naive.shape)
        x = self._heads_input(naive, priv)
        return {"reward": twohot_mean(self.reward_head(x), self.bins.to(x)),
                "cost": twohot_mean(self.cost_head(x), self.bins.to(x)).clamp(min=0),
                "cont": torch.sigmoid(self.cont_head(naive)).squeeze(-1)}

    def loss(self, batch: dict[str, torch.Tensor], generator: torch.Generator | None = None
             ) -> tuple[torch.Tensor, dict[str, float], tuple[torch.Tensor, torch.Tensor | None]]:
        """The world-model loss of one batch; see the class docstring."""
        batch = self._check_batch(batch)
        if generator is not None:
            check_instance(generator, "generator", torch.Generator)
        bins = self.bins.to(batch["obs"])
        embed = self.encoder(symlog(batch["obs"]))
        states, post, prior = self.rssm(embed, batch["action"], batch["is_first"], generator)
        dyn, kl = kl_balance(post, prior)
        terms = {"dyn": dyn, "dec": ((self.decoder(states) - symlog(batch["obs"])) ** 2).sum(-1)}
        metrics = {"kl": float(kl.mean())}
        priv_states = None
        if self.variant in ("pig", "norep"):
            p_embed = self.priv_encoder(symlog(batch["priv"]))
            priv_states, p_post, p_prior = self.priv_rssm(p_embed, batch["action"], batch["is_first"], generator)
            terms["dyn_priv"] = kl_balance(p_post, p_prior)[0]
            terms["dec_priv"] = ((self.priv_decoder(priv_states) - symlog(batch["priv"])) ** 2).sum(-1)
            if self.variant == "pig":
                h = states[..., :self.rssm.deter]
                raw = self.oracle(torch.cat([h, embed, p_embed], -1))
                oracle = mix_uniform(raw.reshape(post.shape), self.rssm.unimix)
                oracle_state = torch.cat([h, sample_onehot(oracle, generator).flatten(-2)], -1)
                terms["oracle"] = (kl_balance(oracle, prior)[0]
                                   + ((self.decoder(oracle_state) - symlog(batch["obs"])) ** 2).sum(-1)
                                   + ((self.oracle_decoder(oracle_state) - symlog(batch["priv"])) ** 2).sum(-1))
                align, align_kl = kl_balance(oracle, post, dyn_scale=self.align_beta, rep_scale=self.align_alpha,
                                             free_nats=self.align_free_nats)
                terms["align"] = align
                metrics["align_kl"] = float(align_kl.mean())
        elif self.variant == "informed":
            terms["aux_priv"] = ((self.aux_decoder(states) - symlog(batch["priv"])) ** 2).sum(-1)
        x = self._heads_input(states, priv_states)
        terms["reward"] = twohot_loss(self.reward_head(x), batch["reward"], bins)
        terms["cost"] = twohot_loss(self.cost_head(x), batch["cost"], bins)
        terms["cont"] = F.binary_cross_entropy_with_logits(self.cont_head(states).squeeze(-1),
                                                           1.0 - batch["is_terminal"], reduction="none")
        total = sum(v.sum(1).mean() for v in terms.values())
        metrics.update({k: float(v.detach().mean()) for k, v in terms.items()})
        return total, metrics, (states, priv_states)


class DeployablePolicy(nn.Module):
    """The deployed agent: the naive encoder, the naive RSSM and the actor, nothing that reads privileged input.

    ``act(obs, state)`` filters one observation and returns ``(action, state)``; pass ``state=None`` at the
    start of an episode.  Passing ``privileged`` raises: the deployed filter must not see it.
    """

    def __init__(self, encoder: nn.Module, rssm: RSSM, actor: Actor) -> None:
        super().__init__()
        self.encoder = check_instance(encoder, "encoder", nn.Module)
        self.rssm = check_instance(rssm, "rssm", RSSM)
        self.actor = check_instance(actor, "actor", Actor)

    @torch.no_grad()
    def act(self, obs: np.ndarray, state: tuple[torch.Tensor, torch.Tensor] | None = None,
            privileged: Any = None, explore: bool = False,
            generator: torch.Generator | None = None) -> tuple[np.ndarray, tuple[torch.Tensor, torch.Tensor]]:
        """One step of the deployed policy (``explore`` samples the action, else its mean)."""
        if privileged is not None:
            raise ValueError("privileged must be None: the deployed policy never reads privileged information")
        explore = check_bool(explore, "explore")
        p = next(self.parameters())
        x = torch.as_tensor(check_array(obs, "obs", ndim=1, dtype=float, shape=(self.rssm_obs_dim,)),
                            dtype=p.dtype).unsqueeze(0)
        if state is None:
            state = (self.rssm.initial(1), torch.zeros(1, self.rssm.act_dim, dtype=p.dtype))
        check_instance(state, "state", tuple, "a (model state, previous action) tuple or None")
        feat, _, _ = self.rssm.obs_step(state[0], state[1], self.encoder(symlog(x)), generator=generator)
        if explore:
            action = self.actor.sample(feat, generator)[0]
        else:
            action = self.actor(feat)[0]
        action = action.clamp(-1, 1)
        return action[0].numpy().astype(np.float32), (feat, action)

    @property
    def rssm_obs_dim(self) -> int:
        """The observation size the encoder takes."""
        return self.encoder[0].in_features


class PIGDreamer:
    """The PIGDreamer agent (and its ablations via ``variant``) for continuous actions in ``[-1, 1]^act_dim``.

    ``train(env, total_steps)`` collects with the actor (the naive filter online), stores
    ``(o_t, i_t, a_t, r_t, c_t)`` with ``c_t = info["cost"]`` and ``i_t = info["privileged"]``, and every
    ``train_every`` steps runs one world-model update and one twisted-imagination actor-critic update
    (horizon ``horizon``; reward and cost lambda-returns; the actor maximises the normalised reward advantage
    minus the augmented-Lagrangian weight times the normalised cost advantage).  ``cost_limit`` is the
    per-episode cost budget ``d``; the imagined episode cost ``(1 - gamma) * episode_len * J_c`` drives the
    multiplier.  Returns OmniSafe-style logs: ``EpRet``, ``EpCost`` per episode, update seconds, multiplier.
    """

    def __init__(self, obs_dim: int, act_dim: int, priv_dim: int = 0, cost_limit: float = 5.0, variant: str = "pig",
                 episode_len: int = 200, horizon: int = 15, gamma: float = 0.99, lam: float = 0.95, deter: int = 128,
                 stoch: int = 16, classes: int = 16, hidden: int = 128, batch_size: int = 16, seq_len: int = 32,
                 train_every: int = 4, prefill: int = 1000, model_lr: float = 3e-4, ac_lr: float = 1e-4,
                 entropy: float = 3e-4, seed: Seed = None) -> None:
        self.cost_limit = check_scalar(cost_limit, "cost_limit", "real", min=0.0)
        self.variant = check_choice(variant, "variant", VARIANTS)
        self.episode_len = check_scalar(episode_len, "episode_len", "int", min=1)
        self.horizon = check_scalar(horizon, "horizon", "int", min=1)
        self.gamma = check_scalar(gamma, "gamma", "real", min=0.0, max=1.0, inclusive="left")
        self.lam = check_scalar(lam, "lam", "real", min=0.0, max=1.0)
        self.batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
        self.seq_len = check_scalar(seq_len, "seq_len", "int", min=1)
        self.train_every = check_scalar(train_every, "train_every", "int", min=1)
        self.prefill = check_scalar(prefill, "prefill", "int", min=0)
        model_lr = check_scalar(model_lr, "model_lr", "real", min=0.0, inclusive="neither")
        ac_lr = check_scalar(ac_lr, "ac_lr", "real", min=0.0, inclusive="neither")
        self.entropy = check_scalar(entropy, "entropy", "real", min=0.0)
        rng = as_generator(seed)
        seeds = [int_seed(g) for g in rng.spawn(5)]
        self.world_model = AsymWorldModel(obs_dim, act_dim, priv_dim, variant, deter, stoch, classes, hidden,
                                          seed=seeds[0])
        feat = self.world_model.rssm.feat_dim
        self.actor = Actor(feat, act_dim, hidden, seed=seeds[1])
        self.reward_critic = Critic(self.world_model.head_dim, hidden, seed=seeds[2])
        self.cost_critic = Critic(self.world_model.head_dim, hidden, seed=seeds[3])
        self.lagrangian = AugmentedLagrangian(self.cost_limit)
        self.reward_norm, self.cost_norm = ReturnNormalizer(), ReturnNormalizer()
        self._gen = torch_generator(seeds[4])
        self._rng = rng
        self._model_opt = torch.optim.Adam(self.world_model.parameters(), lr=model_lr, eps=1e-8)
        self._actor_opt = torch.optim.Adam(self.actor.parameters(), lr=ac_lr, eps=1e-5)
        self._critic_opt = torch.optim.Adam([*self.reward_critic.net.parameters(), *self.cost_critic.net.parameters()],
                                            lr=ac_lr, eps=1e-5)

    @property
    def two_latents(self) -> bool:
        return self.variant in ("pig", "norep")

    def policy(self) -> DeployablePolicy:
        """The deployable policy (shares parameters with this agent; holds no privileged branch)."""
        return DeployablePolicy(self.world_model.encoder, self.world_model.rssm, self.actor)

    def act(self, obs: np.ndarray, state: tuple[torch.Tensor, torch.Tensor] | None = None,
            explore: bool = False) -> tuple[np.ndarray, tuple[torch.Tensor, torch.Tensor]]:
        """One step of the naive filter and the actor (see :meth:`DeployablePolicy.act`)."""
        return self.policy().act(obs, state, explore=explore, generator=self._gen)

    def _imagine(self, naive: torch.Tensor, priv: torch.Tensor | None) -> dict[str, torch.Tensor]:
        """Twisted imagination: both RSSMs step under the same actor action; returns time-major tensors."""
        wm = self.world_model
        s, p = naive.detach().reshape(-1, naive.shape[-1]), None
        if priv is not None:
            p = priv.detach().reshape(-1, priv.shape[-1])
        feats, pfeats, logps, ents = [s], [p], [], []
        for _ in range(self.horizon):
            action, logp, ent = self.actor.sample(s.detach(), self._gen)
            with torch.no_grad():
                s = wm.rssm.img_step(s, action, self._gen)[0]
                if p is not None:
                    p = wm.priv_rssm.img_step(p, action, self._gen)[0]
            feats.append(s)
            pfeats.append(p)
            logps.append(logp)
            ents.append(ent)
        naive_traj = torch.stack(feats)
        priv_traj = torch.stack(pfeats) if p is not None else None
        return {"naive": naive_traj, "priv": priv_traj, "logp": torch.stack(logps), "ent": torch.stack(ents)}

    def update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """One world-model update and one imagination actor-critic update on a replayed batch ``[B, T, ...]``."""
        wm = self.world_model
        loss, metrics, (naive, priv) = wm.loss(batch, self._gen)
        self._model_opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(wm.parameters(), 100.0)
        self._model_opt.step()
        traj = self._imagine(naive, priv if self.two_latents else None)
        with torch.no_grad():
            pred = wm.predict(traj["naive"][1:], traj["priv"][1:] if traj["priv"] is not None else None)
            x = wm._heads_input(traj["naive"], traj["priv"])
            cont = pred["cont"]
            weight = torch.cumprod(torch.cat([torch.ones_like(cont[:1]), cont[:-1]]), 0)
            values = {"r": self.reward_critic(x), "c": self.cost_critic(x)}
            ret_r = lambda_returns(pred["reward"], values["r"], cont, gamma=self.gamma, lam=self.lam)
            ret_c = lambda_returns(pred["cost"], values["c"], cont, gamma=self.gamma, lam=self.lam)
            adv_r = (ret_r - values["r"][:-1]) / self.reward_norm.update(ret_r)
            adv_c = (ret_c - values["c"][:-1]) / self.cost_norm.update(ret_c)
            ep_cost = float(ret_c[0].mean()) * (1 - self.gamma) * self.episode_len
            penalty = self.lagrangian.weight(max(ep_cost, 0.0))
            adv = (adv_r - penalty * adv_c) / (1.0 + penalty)
        actor_loss = -(weight * (traj["logp"] * adv + self.entropy * traj["ent"])).mean()
        self._actor_opt.zero_grad()
        actor_loss.backward()
        nn.utils.clip_grad_norm_(self.actor.parameters(), 100.0)
        self._actor_opt.step()
        xs = x[:-1].detach()
        critic_loss = (weight * (self.reward_critic.loss(xs, ret_r) + self.cost_critic.loss(xs, ret_c))).mean()
        self._critic_opt.zero_grad()
        critic_loss.backward()
        self._critic_opt.step()
        self.reward_critic.update_slow()
        self.cost_critic.update_slow()
        multiplier = self.lagrangian.update(max(ep_cost, 0.0))
        metrics.update({"actor_loss": float(actor_loss.detach()), "critic_loss": float(critic_loss.detach()),
                        "imagined_ep_cost": ep_cost, "multiplier": multiplier})
        return metrics

    def _record(self, obs: np.ndarray, action: np.ndarray, reward: float, cost: Any, info: dict, is_first: bool,
                terminal: bool) -> dict[str, Any]:
        cost = float(cost)
        if not math.isfinite(cost) or cost < 0:
            raise ValueError(f"the env's info['cost'] must be a non-negative finite number, got {cost}")
        rec = {"obs": obs, "action": action, "reward": float(reward), "cost": cost, "is_first": float(is_first),
               "is_terminal": float(terminal)}
        if self.world_model.privileged:
            if "privileged" not in info:
                raise KeyError(f"variant {self.variant!r} needs info['privileged'] from the env; use "
                               "variant='unprivileged' for envs without it")
            priv = np.asarray(info["privileged"], dtype=np.float32)
            if priv.shape != (self.world_model.priv_dim,):
                raise ValueError(f"info['privileged'] must have the fixed shape ({self.world_model.priv_dim},), "
                                 f"got {priv.shape}; pad a variable-size state to a fixed size")
            rec["priv"] = priv
        return rec

    def train(self, env: gym.Env, total_steps: int) -> dict[str, list[float]]:
        """Interact with ``env`` for ``total_steps`` steps, training as it goes; per-episode ``EpRet`` / ``EpCost``
        and per-update seconds, world-model loss and multiplier."""
        check_instance(env, "env", gym.Env)
        total_steps = check_scalar(total_steps, "total_steps", "int", min=1)
        replay = SequenceReplay(total_steps + 1, seed=self._rng)
        log: dict[str, list[float]] = {"EpRet": [], "EpCost": [], "EpStep": [], "update_seconds": [],
                                       "model_loss": [], "multiplier": []}
        no_action = np.zeros(self.world_model.act_dim, np.float32)
        obs, info = env.reset(seed=int(self._rng.integers(2**31)))
        replay.add(self._record(obs, no_action, 0.0, 0.0, info, True, False))
        state, ep_ret, ep_cost = None, 0.0, 0.0
        for step in range(1, total_steps + 1):
            if step <= self.prefill:
                action = self._rng.uniform(-1, 1, self.world_model.act_dim).astype(np.float32)
            else:
                action, state = self.act(obs, state, explore=True)
            obs, reward, terminated, truncated, info = env.step(action)
            if "cost" not in info:
                raise KeyError("the env must report each step's cost in info['cost'] (Safety-Gymnasium's convention)")
            record = self._record(obs, action, reward, info["cost"], info, False, bool(terminated))
            replay.add(record)
            ep_ret += record["reward"]
            ep_cost += record["cost"]
            if terminated or truncated:
                log["EpRet"].append(ep_ret)
                log["EpCost"].append(ep_cost)
                log["EpStep"].append(step)
                obs, info = env.reset()
                replay.add(self._record(obs, no_action, 0.0, 0.0, info, True, False))
                state, ep_ret, ep_cost = None, 0.0, 0.0
            if step > self.prefill and step % self.train_every == 0 and len(replay) >= self.seq_len:
                start = time.perf_counter()
                metrics = self.update(replay.sample(self.batch_size, self.seq_len))
                log["update_seconds"].append(time.perf_counter() - start)
                log["model_loss"].append(sum(metrics[k] for k in ("dyn", "dec", "reward", "cost")))
                log["multiplier"].append(metrics["multiplier"])
        return log

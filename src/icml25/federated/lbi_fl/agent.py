"""The bit-width agent of LBI-FL (Section 3.3): state, actions, reward, policies and policy-gradient training.

Every ``itv`` rounds the agent looks at each client's state (training stage, current bit-widths,
quantization errors, rounds since the last change) and picks one of four actions: keep, or raise
the bit-width of weights, activations or gradients by 2 bits (never lowering; capped at 8).
The reward (our instantiation of the paper's Eqs. 6-8, whose exact form is not public) is
``r = QI * AI * tau`` with ``QI = (BitOPs_INT8 / BitOPs)^theta``,
``AI = exp(-max(0, acc_ref - acc) / delta)`` and ``tau = t / T``.
The agent is trained with REINFORCE (moving-average baseline) plus a behaviour-cloning term
``KL(pi_teacher || pi)`` toward :class:`TeacherSchedulePolicy`, whose weight decays over episodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from icml25.federated.lbi_fl.quant import BitConfig, bit_tuple
from icml25.utils.random import Seed, as_generator, check_seed, seeded
from icml25.utils.validation import (
    check_bool,
    check_callable,
    check_instance,
    check_scalar,
    check_sequence,
    check_tensor,
)

__all__ = [
    "ACTIONS", "STATE_DIM", "BitWidthState", "action_mask", "apply_action", "lbi_reward", "Policy", "FixedPolicy",
    "RandomPolicy", "TeacherSchedulePolicy", "RLPolicy", "Decision", "train_agent", "PRETRAINED_PATH",
    "pretrained_policy",
]

ACTIONS = ("keep", "w", "a", "g")
STATE_DIM = 8
PRETRAINED_PATH = Path(__file__).with_name("agent_policy.npz")


def _squash(err: float) -> float:
    """Map a relative error in [0, inf) to [0, 1) (gradients' errors can exceed 1)."""
    err = max(float(err), 0.0)
    return err / (1.0 + err)


@dataclass(frozen=True)
class BitWidthState:
    """What the agent observes for one client (the paper's state, Section 3.3).

    ``t`` is the training progress t / T in [0, 1]; ``bits`` the current (b_w, b_a, b_g); ``errors``
    the relative quantization errors of W, A, G on the client's last local batch (our reading of
    Eq. 5); ``since_change`` the rounds since the client's last bit change divided by T.
    """

    t: float
    bits: tuple[int, int, int]
    errors: tuple[float, float, float]
    since_change: float

    def vector(self) -> np.ndarray:
        """The 8 features: t, bits normalized to [0, 1] over {4, 6, 8}, squashed errors, since_change."""
        return np.array([self.t, *((b - 4) / 4 for b in self.bits), *(_squash(e) for e in self.errors),
                         self.since_change], dtype=np.float32)


def action_mask(bits: tuple[int, int, int] | BitConfig) -> np.ndarray:
    """Valid actions: keep always; raising a component only when it is below 8 (and not FP32)."""
    values = bit_tuple(bits)
    return np.array([True, *(b is not None and b < 8 for b in values)])


def apply_action(bits: BitConfig, action: int) -> bool:
    """Apply ``action`` (index into :data:`ACTIONS`) to ``bits`` in place; True if a bit-width changed."""
    check_instance(bits, "bits", BitConfig)
    action = check_scalar(action, "action", "int", min=0, max=len(ACTIONS) - 1)
    if not action_mask(bits)[action]:
        raise ValueError(f"action {ACTIONS[action]!r} is masked out at bits {bits.as_tuple()}")
    if action == 0:
        return False
    bits.raise_(ACTIONS[action])
    return True


def lbi_reward(bitops: float, bitops_int8: float, acc: float, acc_ref: float, t: float, theta: float = 1.0,
               delta: float = 0.02) -> float:
    """Our instantiation of the reward: ``(BitOPs_INT8 / BitOPs)^theta * exp(-max(0, acc_ref - acc)/delta) * t``.

    ``bitops``, ``bitops_int8``, ``delta`` > 0; ``acc``, ``acc_ref``, ``t`` in [0, 1]; ``theta`` >= 0.
    """
    for name, value in (("bitops", bitops), ("bitops_int8", bitops_int8), ("delta", delta)):
        check_scalar(value, name, "real", min=0.0, inclusive="neither")
    for name, value in (("acc", acc), ("acc_ref", acc_ref), ("t", t)):
        check_scalar(value, name, "real", min=0.0, max=1.0)
    check_scalar(theta, "theta", "real", min=0.0)
    return float((bitops_int8 / bitops) ** theta * math.exp(-max(0.0, acc_ref - acc) / delta) * t)


class Policy:
    """A bit-width policy: ``act(state, seed) -> action index`` (must be a valid action for the state).

    ``seed`` is the caller's randomness (an int, ``None`` or a ``numpy.random.Generator``, drawn from as is).
    """

    def act(self, state: BitWidthState, seed: Seed = None) -> int:
        raise NotImplementedError


class FixedPolicy(Policy):
    """Never changes the bit-widths (UI4 / UI8 baselines, depending on the initial bits)."""

    def act(self, state: BitWidthState, seed: Seed = None) -> int:
        check_instance(state, "state", BitWidthState)
        check_seed(seed)
        return 0


class RandomPolicy(Policy):
    """At each decision, raises a uniformly chosen valid component with probability ``p_raise``, else keeps."""

    def __init__(self, p_raise: float = 0.5) -> None:
        self.p_raise = check_scalar(p_raise, "p_raise", "real", min=0.0, max=1.0)

    def act(self, state: BitWidthState, seed: Seed = None) -> int:
        check_instance(state, "state", BitWidthState)
        rng = as_generator(seed)
        raises = np.flatnonzero(action_mask(state.bits)[1:]) + 1
        if raises.size == 0 or rng.random() >= self.p_raise:
            return 0
        return int(rng.choice(raises))


class TeacherSchedulePolicy(Policy):
    """The hand-made prior of behaviour cloning: raise gradients early, activations late, keep weights at 4.

    Targets over training progress t: b_g = 6 from ``g_at[0]``, 8 from ``g_at[1]``; b_a = 6 from ``a_at``.
    One raise per decision (gradients first).  ``g_at`` is two non-decreasing fractions in [0, 1],
    ``a_at`` one fraction in [0, 1].
    """

    def __init__(self, g_at: tuple[float, float] = (0.1, 0.2), a_at: float = 0.7) -> None:
        g_at = check_sequence(g_at, "g_at", item=lambda v, n: check_scalar(v, n, "real", min=0.0, max=1.0))
        if len(g_at) != 2 or g_at[0] > g_at[1]:
            raise ValueError(f"g_at must be two non-decreasing fractions in [0, 1], got {g_at}")
        self.g_at, self.a_at = tuple(g_at), check_scalar(a_at, "a_at", "real", min=0.0, max=1.0)

    def target(self, t: float) -> tuple[int, int, int]:
        """The target (b_w, b_a, b_g) at training progress ``t`` in [0, 1]."""
        t = check_scalar(t, "t", "real", min=0.0, max=1.0)
        return (4, 6 if t >= self.a_at - 1e-9 else 4, 4 + 2 * sum(t >= x - 1e-9 for x in self.g_at))

    def act(self, state: BitWidthState, seed: Seed = None) -> int:
        check_instance(state, "state", BitWidthState)
        check_seed(seed)
        target = self.target(state.t)
        for action, component in ((3, 2), (2, 1), (1, 0)):
            if state.bits[component] < target[component]:
                return action
        return 0


class RLPolicy(nn.Module, Policy):
    """The agent: MLP state(8) -> hidden -> hidden -> 4 logits, softmax over the unmasked actions.

    ``greedy=True`` (deployment) takes the most likely valid action; ``greedy=False`` samples (training).
    """

    def __init__(self, hidden: int = 32, seed: Seed = 0, greedy: bool = True) -> None:
        super().__init__()
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        with seeded(seed):
            self.net = nn.Sequential(nn.Linear(STATE_DIM, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                     nn.Linear(hidden, len(ACTIONS)))
        self.hidden, self.greedy = hidden, check_bool(greedy, "greedy")

    def forward(self, states: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """Log-probabilities over actions (masked actions get -inf).

        ``states`` is ``(n, STATE_DIM)`` floating, ``masks`` ``(n, 4)`` boolean.
        """
        check_tensor(states, "states", ndim=2, floating=True)
        check_tensor(masks, "masks", ndim=2)
        if masks.dtype != torch.bool:
            raise TypeError(f"masks must be a boolean tensor, got dtype {masks.dtype}")
        if states.shape[1] != STATE_DIM or tuple(masks.shape) != (states.shape[0], len(ACTIONS)):
            raise ValueError(f"states and masks must have shapes (n, {STATE_DIM}) and (n, {len(ACTIONS)}), got "
                             f"{tuple(states.shape)} and {tuple(masks.shape)}")
        logits = self.net(states).masked_fill(~masks, float("-inf"))
        return torch.log_softmax(logits, dim=-1)

    def probabilities(self, state: BitWidthState) -> np.ndarray:
        """The policy's distribution over :data:`ACTIONS` at ``state`` (masked actions get 0)."""
        check_instance(state, "state", BitWidthState)
        with torch.no_grad():
            logp = self(torch.as_tensor(state.vector())[None], torch.as_tensor(action_mask(state.bits))[None])[0]
        return logp.exp().numpy().astype(np.float64)

    def act(self, state: BitWidthState, seed: Seed = None) -> int:
        p = self.probabilities(state)
        check_seed(seed)
        if self.greedy:
            return int(np.argmax(p))
        return int(as_generator(seed).choice(len(ACTIONS), p=p / p.sum()))

    def save(self, path: str | Path) -> None:
        """Write the weights as plain NumPy arrays (.npz) to ``path`` (a str or Path)."""
        check_instance(path, "path", (str, Path), "a str or pathlib.Path")
        arrays = {f"p{i}": t.detach().cpu().numpy() for i, t in enumerate(self.net.state_dict().values())}
        np.savez(path, state_dim=STATE_DIM, n_actions=len(ACTIONS), hidden=self.hidden, **arrays)

    @classmethod
    def load(cls, path: str | Path) -> RLPolicy:
        """Read weights written by :meth:`save` from ``path`` (a str or Path); reject a file of another state or
        action size (a missing file raises FileNotFoundError)."""
        check_instance(path, "path", (str, Path), "a str or pathlib.Path")
        with np.load(path) as f:
            if int(f["state_dim"]) != STATE_DIM or int(f["n_actions"]) != len(ACTIONS):
                raise ValueError(f"policy file {path} has state/action size ({int(f['state_dim'])}, "
                                 f"{int(f['n_actions'])}), expected ({STATE_DIM}, {len(ACTIONS)})")
            policy = cls(hidden=int(f["hidden"]))
            keys = list(policy.net.state_dict())
            if sorted(k for k in f.files if k.startswith("p")) != sorted(f"p{i}" for i in range(len(keys))):
                raise ValueError(f"policy file {path} does not hold the {len(keys)} tensors of the agent")
            state = {k: torch.as_tensor(f[f"p{i}"]) for i, k in enumerate(keys)}
        policy.net.load_state_dict(state)
        return policy


def pretrained_policy() -> RLPolicy:
    """The agent shipped with the package (trained by ``python -m icml25.federated.lbi_fl.train``)."""
    if not PRETRAINED_PATH.exists():
        raise FileNotFoundError(f"{PRETRAINED_PATH} is missing: run python -m icml25.federated.lbi_fl.train")
    return RLPolicy.load(PRETRAINED_PATH)


@dataclass(frozen=True)
class Decision:
    """One decision of one client in an episode: state features, action mask, action taken, reward."""

    client: int
    state: np.ndarray
    mask: np.ndarray
    action: int
    reward: float


def train_agent(proxy_task_fn: Callable[[Policy, int], Sequence[Decision]], episodes: int, bc_weight: float = 1.0,
                bc_decay: float = 0.95, lr: float = 1e-2, hidden: int = 32, teacher: Policy | None = None,
                baseline_momentum: float = 0.9, seed: int = 0,
                log: Callable[[int, float, float], None] | None = None) -> RLPolicy:
    """Train an :class:`RLPolicy` with REINFORCE and decaying behaviour cloning.

    ``proxy_task_fn(policy, episode_seed)`` runs one short FL training of the proxy task with the
    (sampling) policy and returns its decisions with their rewards.  The loss of an episode is
    ``-sum (G - b) log pi(a|s) + bc_weight * bc_decay^e * sum KL(pi_teacher || pi)`` where G is the
    client's return from that decision on and b a moving average of G per decision index.
    ``log(episode, mean_return, bc_loss)`` is called after each episode.
    """
    check_callable(proxy_task_fn, "proxy_task_fn")
    episodes = check_scalar(episodes, "episodes", "int", min=1)
    baseline_momentum = check_scalar(baseline_momentum, "baseline_momentum", "real", min=0.0, max=1.0)
    if teacher is not None:
        check_instance(teacher, "teacher", Policy)
    if log is not None:
        check_callable(log, "log")
    bc_weight = check_scalar(bc_weight, "bc_weight", "real", min=0.0)
    bc_decay = check_scalar(bc_decay, "bc_decay", "real", min=0.0, max=1.0, inclusive="right")
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    seed = check_scalar(seed, "seed", "int", min=0)
    teacher = teacher or TeacherSchedulePolicy()
    policy = RLPolicy(hidden=hidden, seed=seed, greedy=False)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    baselines: dict[int, float] = {}
    dummy = np.random.default_rng(0)
    for episode in range(episodes):
        policy.greedy = False
        decisions = list(proxy_task_fn(policy, seed * 100_003 + episode))
        if not decisions:
            raise ValueError("the proxy task returned no decisions")
        by_client: dict[int, list[Decision]] = {}
        for d in decisions:
            by_client.setdefault(d.client, []).append(d)
        states, masks, actions, advantages, teacher_actions = [], [], [], [], []
        returns_at: dict[int, list[float]] = {}
        for trajectory in by_client.values():
            g = np.cumsum([d.reward for d in trajectory][::-1])[::-1]
            for k, (d, ret) in enumerate(zip(trajectory, g, strict=True)):
                returns_at.setdefault(k, []).append(float(ret))
                states.append(d.state)
                masks.append(d.mask)
                actions.append(d.action)
                advantages.append(float(ret) - baselines.get(k, float(ret)))
                t, bits = float(d.state[0]), tuple(int(round(4 + 4 * b)) for b in d.state[1:4])
                teacher_actions.append(teacher.act(BitWidthState(t, bits, (0.0, 0.0, 0.0), 0.0), dummy))
        for k, values in returns_at.items():
            baselines[k] = float(np.mean(values)) if k not in baselines else \
                baseline_momentum * baselines[k] + (1 - baseline_momentum) * float(np.mean(values))
        s, m = torch.as_tensor(np.stack(states)), torch.as_tensor(np.stack(masks))
        logp = policy(s, m)
        a = torch.as_tensor(actions)
        adv = torch.as_tensor(advantages, dtype=torch.float32)
        pg_loss = -(adv * logp.gather(1, a[:, None])[:, 0]).mean()
        bc_loss = -logp.gather(1, torch.as_tensor(teacher_actions)[:, None])[:, 0].mean()  # KL to a one-hot teacher
        loss = pg_loss + bc_weight * bc_decay ** episode * bc_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if log is not None:
            log(episode, float(np.mean(returns_at[0])), float(bc_loss.detach()))
    policy.greedy = True
    return policy

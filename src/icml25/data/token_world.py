"""An enumerable synthetic token world with a known reward and an exact optimum, for reward-guided
generation (Rashid et al., "Towards Cost-Effective Reward Guided Text Generation", ICML 2025,
arXiv:2502.04517, Sec. 4: prior reward models prefer sub-optimal sequences).

Tokens ``0 .. vocab-1`` are content, ``vocab`` is EOS and ``vocab + 1`` is BOS. A response is ``length``
content tokens. The reward is ``R*(y) = sum_t a[y_t] + bonus * 1[setup token before a payoff token]``;
the setup token has a negative immediate value (a trap for myopic choices). The reference policy is a
sparse bigram chain. All ``vocab ** length`` responses are enumerable, so ``Q*`` (max-consistent), the
full-sequence reward applied to prefixes and ``Q^{pi_ref}`` are exact tables.
"""

from __future__ import annotations

import numpy as np

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_scalar


class TokenWorld:
    """The trap token world (content vocabulary ``vocab``, response length ``length``).

    Parameters
    ----------
    vocab, length : content tokens and response length (``vocab ** length`` <= 2**22 sequences).
    bonus : reward of the setup -> payoff pattern; ``setup_value`` the setup token's immediate value.
    payoff_prob : reference probability of the payoff token after any token.
    seed : seeds the token values and the bigram chain.
    """

    def __init__(self, vocab: int = 8, length: int = 6, *, bonus: float = 4.0, setup_value: float = -1.0,
                 payoff_prob: float = 0.1, seed: Seed = 0) -> None:
        self.vocab = check_scalar(vocab, "vocab", "int", min=3)
        self.length = check_scalar(length, "length", "int", min=2)
        if self.vocab ** self.length > 2 ** 22:
            raise ValueError(f"vocab ** length must be <= 2**22 to enumerate, got {self.vocab}**{self.length}")
        self.bonus = check_scalar(bonus, "bonus", "real", min=0.0)
        self.setup_value = check_scalar(setup_value, "setup_value", "real", max=0.0)
        self.payoff_prob = check_scalar(payoff_prob, "payoff_prob", "real", min=0.0, max=1.0, inclusive="neither")
        rng = as_generator(seed)
        self.setup, self.payoff = 0, 1
        self.values = rng.uniform(-0.5, 0.5, self.vocab)
        self.values[self.setup] = self.setup_value
        self.values[self.payoff] = 0.0
        mask = rng.random((self.vocab, self.vocab)) < 0.6
        mask[np.arange(self.vocab), rng.integers(0, self.vocab, self.vocab)] = True
        raw = rng.gamma(1.0, 1.0, (self.vocab, self.vocab)) * mask
        raw[:, self.payoff] = 0.0
        raw /= raw.sum(1, keepdims=True)
        self.transition = raw * (1 - self.payoff_prob)
        self.transition[:, self.payoff] = self.payoff_prob
        self.initial = np.full(self.vocab, 1.0 / self.vocab)

    @property
    def eos_id(self) -> int:
        return self.vocab

    @property
    def bos_id(self) -> int:
        return self.vocab + 1

    @property
    def n_tokens(self) -> int:
        """Model vocabulary size (content + EOS + BOS)."""
        return self.vocab + 2

    def reward(self, y: np.ndarray) -> np.ndarray:
        """``R*`` of responses ``y`` [N, L] (L <= length; tokens from the first EOS/BOS on are ignored)."""
        y = check_array(y, "y", ndim=2, dtype=np.int64)
        if y.size and y.min() < 0:
            raise ValueError(f"y must hold non-negative token ids, got min {int(y.min())}")
        valid = np.cumprod(y < self.vocab, axis=1).astype(bool)
        safe = np.where(valid, y, 0)
        total = (self.values[safe] * valid).sum(1)
        is_setup = (safe == self.setup) & valid
        seen_setup = np.cumsum(is_setup, axis=1) - is_setup > 0
        hit = ((safe == self.payoff) & valid & seen_setup).any(1)
        return total + self.bonus * hit

    def with_bos(self, y: np.ndarray) -> np.ndarray:
        """Model inputs: responses ``y`` [N, L] with the BOS id prepended, [N, L + 1]."""
        y = check_array(y, "y", ndim=2, dtype=np.int64)
        return np.concatenate([np.full((len(y), 1), self.bos_id, dtype=np.int64), y], 1)

    def sample(self, n: int, seed: Seed = None) -> np.ndarray:
        """``n`` responses [n, length] from the reference bigram chain."""
        n = check_scalar(n, "n", "int", min=0)
        rng = as_generator(seed)
        out = np.empty((n, self.length), dtype=np.int64)
        cum = np.cumsum(self.transition, 1)
        out[:, 0] = rng.choice(self.vocab, n, p=self.initial)
        for t in range(1, self.length):
            u = rng.random(n)[:, None]
            out[:, t] = np.minimum((u > cum[out[:, t - 1]]).sum(1), self.vocab - 1)
        return out

    def sample_pairs(self, n: int, seed: Seed = None) -> tuple[np.ndarray, np.ndarray]:
        """``n`` preference pairs (chosen, rejected) of reference samples labelled by a BT draw from ``R*``;
        pairs with identical responses are dropped (so fewer than ``n`` may return)."""
        n = check_scalar(n, "n", "int", min=0)
        rng = as_generator(seed)
        a, b = self.sample(n, rng), self.sample(n, rng)
        keep = (a != b).any(1)
        a, b = a[keep], b[keep]
        p = 1.0 / (1.0 + np.exp(-(self.reward(a) - self.reward(b))))
        first = rng.random(len(a)) < p
        return np.where(first[:, None], a, b), np.where(first[:, None], b, a)

    def all_sequences(self) -> np.ndarray:
        """Every response, [vocab ** length, length], in lexicographic order."""
        grids = np.indices((self.vocab,) * self.length).reshape(self.length, -1).T
        return grids.astype(np.int64)

    def reward_table(self) -> np.ndarray:
        """``R*`` of every response as an array of shape ``(vocab,) * length``."""
        return self.reward(self.all_sequences()).reshape((self.vocab,) * self.length)

    def optimal_value(self) -> float:
        """``max_y R*(y)`` by enumeration."""
        return float(self.reward_table().max())

    def q_max(self) -> list[np.ndarray]:
        """Max-consistent values: ``q[t]`` has shape ``(vocab,) * (t + 1)``, the best reward reachable
        after the prefix ``y_{<=t}`` (``q[-1]`` is ``R*``)."""
        tables = [self.reward_table()]
        for _ in range(self.length - 1):
            tables.insert(0, tables[0].max(-1))
        return tables

    def q_full_prefix(self) -> list[np.ndarray]:
        """The full-sequence reward applied to prefixes: ``q[t] = R*(y_{<=t})`` (the ARGS reading)."""
        seqs = self.all_sequences()
        return [self.reward(seqs[:: self.vocab ** (self.length - t - 1), : t + 1]).reshape((self.vocab,) * (t + 1))
                for t in range(self.length)]

    def q_expected(self) -> list[np.ndarray]:
        """Expected reward under the reference chain: ``q[t] = E_{pi_ref}[R* | y_{<=t}]``."""
        tables = [self.reward_table()]
        for _ in range(self.length - 1):
            nxt = tables[0]
            tables.insert(0, np.einsum("av,...av->...a", self.transition, nxt))
        return tables

    def greedy(self, q: list[np.ndarray]) -> np.ndarray:
        """Greedy (RM-only argmax, ``beta -> inf``) decoding with value tables ``q`` (one per position, as
        :meth:`q_max` returns them): the chosen response [length]."""
        if not isinstance(q, (list, tuple)) or len(q) != self.length:
            raise ValueError(f"q must be a list of {self.length} value tables, got {type(q).__name__}")
        for t, table in enumerate(q):
            check_array(table, f"q[{t}]", ndim=t + 1, shape=(self.vocab,) * (t + 1))
        prefix: list[int] = []
        for t in range(self.length):
            prefix.append(int(np.argmax(q[t][tuple(prefix)])))
        return np.array(prefix, dtype=np.int64)

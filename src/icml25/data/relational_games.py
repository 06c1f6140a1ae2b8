"""Relational games with vector objects (after Shanahan et al. 2020, "An Explicitly Relational Neural Network
Architecture"), for testing whether a model learns relations that transfer to unseen objects.

Example
-------
>>> from icml25.data.relational_games import RelationalGamesLite
>>> games = RelationalGamesLite("same_different", seed=0)
>>> X, y = games.sample(100, split="train", seed=1)   # X: (100, 2, 32) float32, y: (100,) int64
>>> X_ood, y_ood = games.sample(100, split="test", seed=2)   # objects from a disjoint bank

Objects are rows of a bank of ``n_objects_bank`` Gaussian vectors (entries N(0, 1)); each appearance of an
object gets fresh Gaussian noise of standard deviation ``noise``.  With ``split_banks=True`` the ``"test"``
split draws its objects from a second, disjoint bank, so only the *relation* learned on the training bank can
transfer.  Labels are balanced (exactly half 1 for even sizes, shuffled).  Tasks:

- ``same_different``: two objects; 1 iff they are the same object;
- ``match_pattern``: two triples, each following one of the equality patterns AAA, AAB, ABA, ABB, ABC;
  1 iff both triples follow the same pattern (the two triples use distinct objects);
- ``occurs``: one top object followed by ``n_bottom`` bottom objects; 1 iff the top object occurs among them;
- ``between``: three distinct objects; 1 iff the middle one lies between the two ends in a hidden 1-D order
  (the projection of the objects on a fixed random direction, so the order extends to unseen objects).
"""

from __future__ import annotations

import numpy as np

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_bool, check_choice, check_scalar

__all__ = ["RelationalGamesLite", "PATTERNS", "TASKS"]

TASKS = ("same_different", "match_pattern", "occurs", "between")
PATTERNS = ("AAA", "AAB", "ABA", "ABB", "ABC")


class RelationalGamesLite:
    """Generator of one relational game over vector objects; ``sample(n, split, seed) -> (X, y)``.

    ``X`` has shape (n, n_tokens, d_obj) (float32) and ``y`` shape (n,) (int64, 0/1).  ``n_tokens`` is 2, 6,
    ``1 + n_bottom`` and 3 for the four tasks.  The banks (and the hidden direction of ``between``) are fixed
    by ``seed``; each ``sample`` call draws its own instances from ``sample``'s ``seed``.
    """

    def __init__(self, task: str = "match_pattern", n_objects_bank: int = 64, d_obj: int = 32, noise: float = 0.1,
                 split_banks: bool = True, n_bottom: int = 3, seed: Seed = 0) -> None:
        task = check_choice(task, "task", TASKS)
        n_bottom = check_scalar(n_bottom, "n_bottom", "int", min=1)
        needed = {"same_different": 2, "match_pattern": 6, "occurs": n_bottom + 1, "between": 3}[task]
        n_objects_bank = check_scalar(n_objects_bank, "n_objects_bank", "int", min=needed)
        d_obj = check_scalar(d_obj, "d_obj", "int", min=1)
        self.task, self.n_objects_bank, self.d_obj = task, n_objects_bank, d_obj
        self.noise = check_scalar(noise, "noise", "real", min=0.0)
        self.split_banks, self.n_bottom = check_bool(split_banks, "split_banks"), n_bottom
        rng = as_generator(seed)
        train = rng.standard_normal((n_objects_bank, d_obj))
        test = rng.standard_normal((n_objects_bank, d_obj))
        self.banks = {"train": train, "test": test if split_banks else train}
        self.direction = rng.standard_normal(d_obj)

    @property
    def n_tokens(self) -> int:
        """Number of objects per instance."""
        return {"same_different": 2, "match_pattern": 6, "occurs": self.n_bottom + 1, "between": 3}[self.task]

    def sample(self, n_samples: int, split: str = "train", seed: Seed = None) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n_samples`` balanced instances from the ``"train"`` or ``"test"`` object bank."""
        n_samples = check_scalar(n_samples, "n_samples", "int", min=1)
        split = check_choice(split, "split", ("train", "test"))
        rng = as_generator(seed)
        bank = self.banks[split]
        y = rng.permutation(np.arange(n_samples) % 2)
        index = np.stack([getattr(self, f"_{self.task}")(int(label), bank, rng) for label in y])
        X = bank[index] + self.noise * rng.standard_normal((n_samples, index.shape[1], self.d_obj))
        return X.astype(np.float32), y.astype(np.int64)

    def _distinct(self, k: int, rng: np.random.Generator) -> np.ndarray:
        return rng.choice(self.n_objects_bank, size=k, replace=False)

    def _same_different(self, label: int, bank: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        a, b = self._distinct(2, rng)
        return np.array([a, a if label else b])

    def _match_pattern(self, label: int, bank: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        first = int(rng.integers(len(PATTERNS)))
        second = first if label else int(rng.choice([p for p in range(len(PATTERNS)) if p != first]))
        objects = self._distinct(6, rng)
        rows = []
        for pattern, objs in ((PATTERNS[first], objects[:3]), (PATTERNS[second], objects[3:])):
            rows.extend(objs["ABC".index(letter)] for letter in pattern)
        return np.array(rows)

    def _occurs(self, label: int, bank: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        objs = self._distinct(self.n_bottom + 1, rng)
        top, bottom = objs[0], objs[1:].copy()
        if label:
            bottom[rng.integers(self.n_bottom)] = top
        return np.concatenate([[top], bottom])

    def _between(self, label: int, bank: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        objs = self._distinct(3, rng)
        lo, mid, hi = objs[np.argsort(bank[objs] @ self.direction)]
        order = [lo, mid, hi] if label else [[mid, lo, hi], [lo, hi, mid]][int(rng.integers(2))]
        return np.array(order[::-1] if rng.integers(2) else order)

"""Class-incremental task streams split over federated clients (NumPy only).

A stream is a list of :class:`Task`: task ``t`` holds a disjoint class set ``C_t`` (global class
ids) with its own train/test samples.  :func:`split_task_across_clients` deals a task's training
samples to clients with a per-task Dirichlet label skew (``alpha=None``: IID shards).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml25.data.partition import dirichlet_partition
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_consistent_length, check_instance, check_scalar

__all__ = ["Task", "class_incremental_tasks", "split_task_across_clients", "digits_tasks", "gaussian_mixture"]


@dataclass(frozen=True)
class Task:
    """One task of a class-incremental stream: its classes and its train/test samples."""

    index: int
    classes: tuple[int, ...]
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def _check_xy(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = check_array(X, "X", ndim=2, dtype=np.float32, min_len=1)
    y = check_array(y, "y", ndim=1, dtype=None)
    check_consistent_length(X, y, names=("X", "y"))
    if not np.issubdtype(y.dtype, np.integer):
        raise TypeError(f"y must hold integer class ids, got dtype {y.dtype}")
    if y.min() < 0:
        raise ValueError(f"y must hold non-negative class ids, got min {y.min()}")
    return X, y.astype(np.int64)


def class_incremental_tasks(X: np.ndarray, y: np.ndarray, n_tasks: int | None = None, *,
                            task_classes: Sequence[Sequence[int]] | None = None, order_seed: Seed = None,
                            test_fraction: float = 0.2, seed: Seed = 0) -> list[Task]:
    """Split ``(X, y)`` into class-incremental tasks with a per-class train/test split.

    Either ``n_tasks`` (the classes, shuffled by ``order_seed`` or sorted when it is None, are
    dealt into ``n_tasks`` near-equal groups) or an explicit ``task_classes`` list.  A class may
    appear in one task only.  ``test_fraction`` of every class goes to the test split (seeded).
    """
    X, y = _check_xy(X, y)
    present = np.unique(y)
    if task_classes is None:
        n_tasks = check_scalar(n_tasks, "n_tasks", "int", min=1, max=present.size)
        order = present if order_seed is None else as_generator(order_seed, "order_seed").permutation(present)
        task_classes = [part.tolist() for part in np.array_split(order, int(n_tasks))]
    groups = [[int(c) for c in group] for group in task_classes]
    flat = [c for g in groups for c in g]
    if not groups or any(not g for g in groups):
        raise ValueError("task_classes must be a non-empty list of non-empty class lists")
    if len(set(flat)) != len(flat):
        repeated = sorted({c for c in flat if flat.count(c) > 1})
        raise ValueError(f"classes {repeated} appear in more than one task; tasks must have disjoint classes")
    missing = sorted(set(flat) - set(present.tolist()))
    if missing:
        raise ValueError(f"task_classes name classes with no samples: {missing}")
    test_fraction = check_scalar(test_fraction, "test_fraction", "real", min=0.0, max=1.0, inclusive="neither")
    rng = as_generator(seed)
    train_idx, test_idx = {}, {}
    for c in flat:
        idx = rng.permutation(np.flatnonzero(y == c))
        n_test = max(1, int(round(test_fraction * idx.size))) if idx.size > 1 else 0
        test_idx[c], train_idx[c] = np.sort(idx[:n_test]), np.sort(idx[n_test:])
    tasks = []
    for t, group in enumerate(groups):
        tr = np.concatenate([train_idx[c] for c in group])
        te = np.concatenate([test_idx[c] for c in group])
        tasks.append(Task(t, tuple(group), X[tr], y[tr], X[te], y[te]))
    return tasks


def split_task_across_clients(task: Task, n_clients: int, alpha: float | None, seed: Seed = 0) -> list[np.ndarray]:
    """Indices of ``task.X_train`` per client: Dirichlet(``alpha``) label skew, or IID when ``alpha`` is None.

    A client may receive no sample of a task (it then takes part in replay only).
    """
    check_instance(task, "task", Task)
    n_clients = check_scalar(n_clients, "n_clients", "int", min=1)
    if alpha is None:
        order = as_generator(seed).permutation(task.y_train.size)
        return [np.sort(part) for part in np.array_split(order, n_clients)]
    return dirichlet_partition(task.y_train, n_clients, alpha, seed=seed, min_size=0)


def digits_tasks(n_tasks: int = 5, *, order_seed: Seed = 0, test_fraction: float = 0.2,
                 seed: Seed = 0) -> list[Task]:
    """scikit-learn's bundled 8x8 digits as a class-incremental stream, pixels scaled to [-1, 1]."""
    from sklearn.datasets import load_digits

    data = load_digits()
    X = (data.data / 16.0 * 2.0 - 1.0).astype(np.float32)
    return class_incremental_tasks(X, data.target, n_tasks, order_seed=order_seed, test_fraction=test_fraction,
                                   seed=seed)


def gaussian_mixture(n_classes: int, dim: int, n_per_class: int, *, separation: float = 3.0,
                     seed: Seed = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n_classes`` isotropic unit Gaussians in R^dim with means ``separation`` apart on average (for tests)."""
    n_classes = check_scalar(n_classes, "n_classes", "int", min=1)
    dim = check_scalar(dim, "dim", "int", min=1)
    n_per_class = check_scalar(n_per_class, "n_per_class", "int", min=1)
    separation = check_scalar(separation, "separation", "real", min=0.0)
    rng = as_generator(seed)
    means = rng.normal(size=(n_classes, dim)) * separation / np.sqrt(2 * dim)
    X = np.concatenate([means[c] + rng.normal(size=(n_per_class, dim)) for c in range(n_classes)])
    y = np.repeat(np.arange(n_classes), n_per_class)
    return X.astype(np.float32), y

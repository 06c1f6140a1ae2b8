"""CAN's two navigation rules (NumPy only): teaching clients per class, and forgetting-driven buffer shares.

:func:`select_teachers` picks, for every class, the client(s) holding most of its samples
("client expertise superiority").  :func:`allocate_buffer` splits a client's replay buffer over
old classes in proportion to how much the client forgets each of them ("client forgetting
variance"), with largest-remainder rounding so the shares sum exactly to the buffer size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from icml25.utils.validation import check_array, check_choice, check_instance, check_scalar, check_sequence


def _class_id(value: object, name: str) -> int:
    return check_scalar(value, name, "int", min=0)

__all__ = ["select_teachers", "allocate_buffer", "uniform_allocation"]


def select_teachers(class_counts: np.ndarray, classes: Sequence[int] | None = None, k: int = 1) -> dict[int, list[int]]:
    """Teaching clients per class: the top-``k`` clients by local sample count ``n_{i,c}``.

    ``class_counts`` is (N clients, C classes).  Ties go to the lower client id; clients with no
    sample of ``c`` are never teachers, so a class held by nobody maps to ``[]`` (the caller then
    lets the global model teach it).  ``classes`` defaults to every column.
    """
    counts = check_array(class_counts, "class_counts", ndim=2, min_len=1)
    if (counts < 0).any():
        raise ValueError(f"class_counts must be non-negative, got min {counts.min()}")
    k = check_scalar(k, "k", "int", min=1)
    classes = range(counts.shape[1]) if classes is None else check_sequence(classes, "classes", item=_class_id)
    teachers = {}
    for c in classes:
        if not 0 <= c < counts.shape[1]:
            raise ValueError(f"classes must be column ids in [0, {counts.shape[1]}), got {c}")
        order = np.lexsort((np.arange(counts.shape[0]), -counts[:, c]))
        teachers[c] = [int(i) for i in order[:k] if counts[i, c] > 0]
    return teachers


def _largest_remainder(weights: np.ndarray, total: int) -> np.ndarray:
    quotas = total * weights / weights.sum()
    base = np.floor(quotas).astype(np.int64)
    remainder = quotas - base
    order = np.lexsort((np.arange(weights.size), -remainder))  # largest remainder first, then lower index
    base[order[:total - int(base.sum())]] += 1
    return base


def allocate_buffer(per_class_acc: Mapping[int, float], buffer_size: int, *, eps: float = 0.05,
                    min_per_class: int = 1, rule: str = "linear", temperature: float = 1.0) -> dict[int, int]:
    """Replay samples per old class, ``B_i(c)``, summing exactly to ``buffer_size``.

    Shares follow the client's forgetting: ``w_c ∝ (1 - a_c) + eps`` (``rule="linear"``) or
    ``w_c ∝ exp((1 - a_c) / temperature)`` (``rule="softmax"``).  Every class first gets
    ``min_per_class`` samples when the buffer allows it; the rest is split by ``w`` with
    largest-remainder rounding (ties to the lower class id).  When the buffer is smaller than
    ``min_per_class`` per class, the classes with the largest ``w`` (then the lower id) get one
    sample each and the others none.  Accuracies must be finite (a class without a test sample has no
    accuracy: the caller decides what it counts as); equal accuracies give the uniform allocation.
    """
    check_instance(per_class_acc, "per_class_acc", Mapping, "a mapping class id -> accuracy")
    buffer_size = check_scalar(buffer_size, "buffer_size", "int", min=0)
    check_choice(rule, "rule", ("linear", "softmax"))
    eps = check_scalar(eps, "eps", "real", min=0.0)
    temperature = check_scalar(temperature, "temperature", "real", min=0.0, inclusive="neither")
    min_per_class = check_scalar(min_per_class, "min_per_class", "int", min=0)
    classes = sorted(_class_id(c, "per_class_acc class id") for c in per_class_acc)
    if not classes:
        if buffer_size:
            raise ValueError("per_class_acc is empty: there is no old class to give buffer space to")
        return {}
    acc = np.array([check_scalar(per_class_acc[c], f"per_class_acc[{c}]", "real", min=0.0, max=1.0)
                    for c in classes])
    if ((acc < 0) | (acc > 1)).any():
        raise ValueError(f"per_class_acc must hold accuracies in [0, 1], got {acc.tolist()}")
    gap = 1.0 - acc
    weights = gap + eps if rule == "linear" else np.exp((gap - gap.max()) / temperature)
    if weights.sum() == 0:
        weights = np.ones_like(weights)
    n = len(classes)
    if buffer_size < n * min_per_class:
        counts = np.zeros(n, dtype=np.int64)
        counts[np.lexsort((np.arange(n), -weights))[:buffer_size]] = 1
    else:
        counts = min_per_class + _largest_remainder(weights, int(buffer_size) - n * min_per_class)
    return {c: int(v) for c, v in zip(classes, counts, strict=True)}


def uniform_allocation(classes: Sequence[int], buffer_size: int) -> dict[int, int]:
    """The baseline: ``buffer_size / |classes|`` samples per class (largest remainder, lower ids first)."""
    classes = check_sequence(classes, "classes", item=_class_id)
    buffer_size = check_scalar(buffer_size, "buffer_size", "int", min=0)
    if not classes and buffer_size:
        raise ValueError("classes is empty: there is no old class to give buffer space to")
    return allocate_buffer({int(c): 0.0 for c in classes}, buffer_size, eps=1.0, min_per_class=0)

"""Argument checks shared by every module: one place states each rule.

Modelled on scikit-learn's ``sklearn.utils.validation`` (``check_scalar``, ``check_array``,
``check_consistent_length``).  One convention everywhere: a wrong *type* raises ``TypeError``,
a wrong *value* raises ``ValueError``, and the message reads ``"<name> must be <rule>, got <value>"``.

>>> check_scalar(3, "n_iter", "int", min=1)
3
>>> check_scalar(0.0, "alpha", "real", min=0.0, inclusive="neither")
Traceback (most recent call last):
...
ValueError: alpha must be a real number in (0, inf), got 0.0
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import numpy as np

__all__ = [
    "NotFittedError",
    "check_array",
    "check_bool",
    "check_callable",
    "check_choice",
    "check_consistent_length",
    "check_instance",
    "check_is_fitted",
    "check_probability_vector",
    "check_scalar",
    "check_sequence",
    "check_tensor",
    "named_errors",
]

Kind = Literal["int", "real"]
Inclusive = Literal["both", "left", "right", "neither"]

try:  # scikit-learn's own exception, so ``except NotFittedError`` works for both libraries' estimators
    from sklearn.exceptions import NotFittedError
except ImportError:  # pragma: no cover - scikit-learn is a base dependency
    class NotFittedError(ValueError, AttributeError):
        """Raised when an estimator is used before ``fit``."""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _interval(low: float | None, high: float | None, inclusive: Inclusive, allow_inf: bool = False) -> str:
    left = "[" if (inclusive in ("both", "left") and low is not None) or (low is None and allow_inf) else "("
    right = "]" if (inclusive in ("both", "right") and high is not None) or (high is None and allow_inf) else ")"
    lo = "-inf" if low is None else f"{low:g}" if isinstance(low, float) else str(low)
    hi = "inf" if high is None else f"{high:g}" if isinstance(high, float) else str(high)
    return f"{left}{lo}, {hi}{right}"


def _bounds_rule(kind: Kind, low: float | None, high: float | None, inclusive: Inclusive,
                 allow_inf: bool = False) -> str:
    noun = "an integer" if kind == "int" else "a real number"
    if low is None and high is None:
        return noun if kind == "int" or allow_inf else "a finite real number"
    if kind == "int" and high is None and inclusive in ("both", "left"):
        return f"{noun} >= {low}"
    if kind == "int" and low is None and inclusive in ("both", "right"):
        return f"{noun} <= {high}"
    return f"{noun} in {_interval(low, high, inclusive, allow_inf)}"


def check_scalar(x: Any, name: str, kind: Kind, *, min: float | None = None, max: float | None = None,
                 inclusive: Inclusive = "both", allow_inf: bool = False) -> Any:
    """Validate one number and return it as a Python ``int`` (``kind="int"``) or ``float`` (``"real"``).

    Parameters
    ----------
    x : the value to check; ``bool`` is never a number here.
    name : the argument's name, used in the message.
    kind : ``"int"`` (any integral number, NumPy integers included) or ``"real"`` (any real number).
    min, max : optional bounds; ``inclusive`` says which of them are allowed values.
    allow_inf : for ``"real"``, accept +-inf (within the bounds); NaN is always rejected.

    Raises
    ------
    TypeError if ``x`` is not a number of ``kind``; ValueError if it is NaN, infinite or out of bounds.
    """
    if kind not in ("int", "real"):
        raise ValueError(f"kind must be one of 'int', 'real', got {kind!r}")
    if inclusive not in ("both", "left", "right", "neither"):
        raise ValueError(f"inclusive must be one of 'both', 'left', 'right', 'neither', got {inclusive!r}")
    rule = _bounds_rule(kind, min, max, inclusive, allow_inf and kind == "real")
    wanted = numbers.Integral if kind == "int" else numbers.Real
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, wanted):
        raise TypeError(f"{name} must be {rule}, got {_show(x)}")
    value = int(x) if kind == "int" else float(x)
    if kind == "real" and (math.isnan(value) or (math.isinf(value) and not allow_inf)):
        raise ValueError(f"{name} must be {rule}, got {_show(x)}")
    low_ok = min is None or (value >= min if inclusive in ("both", "left") else value > min)
    high_ok = max is None or (value <= max if inclusive in ("both", "right") else value < max)
    if not (low_ok and high_ok):
        raise ValueError(f"{name} must be {rule}, got {_show(x)}")
    return value


def check_bool(x: Any, name: str) -> bool:
    """``x`` as a ``bool``; a ``TypeError`` for anything but ``True``/``False`` (NumPy booleans included)."""
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {_show(x)}")
    return bool(x)


def check_choice(x: Any, name: str, choices: Iterable[Any]) -> Any:
    """``x`` if it is one of ``choices``; else a ``ValueError`` listing what is allowed."""
    options = tuple(choices)
    try:
        ok = x in options
    except TypeError:  # unhashable/incomparable input
        ok = False
    if not ok:
        allowed = ", ".join(repr(c) for c in options)
        raise ValueError(f"{name} must be one of {allowed}, got {_show(x)}")
    return x


def check_instance(x: Any, name: str, types: type | tuple[type, ...], rule: str | None = None) -> Any:
    """``x`` if ``isinstance(x, types)``; else a ``TypeError`` (``rule`` words the expectation)."""
    if not isinstance(x, types):
        if rule is None:
            names = types if isinstance(types, tuple) else (types,)
            rule = "a " + " or ".join(t.__name__ for t in names)
        raise TypeError(f"{name} must be {rule}, got {type(x).__name__} {_show(x)}")
    return x


def check_callable(x: Any, name: str) -> Callable[..., Any]:
    """``x`` if it is callable; else a ``TypeError``."""
    if not callable(x):
        raise TypeError(f"{name} must be callable, got {_show(x)}")
    return x


def _check_shape(actual: tuple[int, ...], shape: Sequence[int | None], name: str) -> None:
    """A ValueError unless ``actual`` matches ``shape`` (``None`` entries match any size)."""
    if len(actual) != len(shape) or any(s is not None and s != a for s, a in zip(shape, actual, strict=False)):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name} must have shape {want}, got shape {actual}")


def check_array(x: Any, name: str, *, ndim: int | Sequence[int] | None = None, dtype: Any = "numeric",
                finite: bool = True, min_len: int | None = None, shape: Sequence[int | None] | None = None,
                copy: bool = False) -> np.ndarray:
    """``x`` as a NumPy array after checking its type, dimensions, length and values.

    Parameters
    ----------
    x : array-like (list, tuple, NumPy array, or anything ``np.asarray`` accepts; a torch tensor is
        moved to the CPU first).
    name : the argument's name, used in the message.
    ndim : required number of dimensions (an int or a tuple of allowed ones).
    dtype : ``"numeric"`` (bool/int/float arrays; converted to float when not numeric-looking fails),
        ``None`` (keep whatever ``np.asarray`` gives), or a NumPy dtype to convert to (``float`` etc.).
    finite : reject NaN and +-inf (default) for numeric arrays.
    min_len : minimum length of the first axis.
    shape : required shape; ``None`` entries match any size.
    copy : return a copy even if ``x`` already is a suitable array.

    Raises
    ------
    TypeError if ``x`` is ``None``, a string or has non-numeric entries where numbers are needed;
    ValueError for a wrong number of dimensions, shape, length, or non-finite entries.
    """
    if x is None or isinstance(x, (str, bytes, dict)):
        raise TypeError(f"{name} must be an array-like of numbers, got {_show(x)}")
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor
        x = x.detach().cpu().numpy()
    try:
        if dtype is None:
            arr = np.array(x, copy=True) if copy else np.asarray(x)
        elif isinstance(dtype, str) and dtype == "numeric":
            arr = np.array(x, copy=True) if copy else np.asarray(x)
            if arr.dtype.kind not in "biuf":
                arr = arr.astype(float)
        else:
            arr = np.array(x, dtype=dtype, copy=True) if copy else np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array-like of numbers, got {_show(x)} ({exc})") from None
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(str(d) for d in allowed)
            raise ValueError(f"{name} must be a {want}-d array, got shape {arr.shape}")
    if shape is not None:
        _check_shape(tuple(arr.shape), shape, name)
    if min_len is not None:
        length = arr.shape[0] if arr.ndim else 0
        if length < min_len:
            raise ValueError(f"{name} must have at least {min_len} entries, got {length}")
    if finite and arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values, got NaN or inf")
    return arr


def check_consistent_length(*arrays: Any, names: Sequence[str] | None = None) -> int:
    """The common length of ``arrays`` (first axis); a ``ValueError`` naming them if they differ."""
    lengths = [len(a) for a in arrays]
    if len(set(lengths)) > 1:
        labels = list(names) if names is not None else [f"argument {i}" for i in range(len(arrays))]
        listed = ", ".join(labels[:-1]) + f" and {labels[-1]}"
        raise ValueError(f"{listed} must have the same length, got {', '.join(map(str, lengths))}")
    return lengths[0] if lengths else 0


def check_sequence(x: Any, name: str, *, min_len: int = 0,
                   item: Callable[[Any, str], Any] | None = None) -> list[Any]:
    """``x`` as a list (any non-string iterable), each entry passed through ``item(entry, f"{name}[i]")``."""
    if x is None or isinstance(x, (str, bytes)) or not isinstance(x, Iterable):
        raise TypeError(f"{name} must be a sequence, got {_show(x)}")
    out = list(x)
    if len(out) < min_len:
        raise ValueError(f"{name} must have at least {min_len} entries, got {len(out)}")
    if item is not None:
        out = [item(v, f"{name}[{i}]") for i, v in enumerate(out)]
    return out


def check_probability_vector(p: Any, name: str, *, atol: float = 1e-8, ndim: int = 1) -> np.ndarray:
    """``p`` as a float array of non-negative finite entries summing to 1 along the last axis (to ``atol``)."""
    arr = check_array(p, name, ndim=ndim, dtype=float, min_len=1)
    if arr.shape[-1] == 0:
        raise ValueError(f"{name} must have at least 1 entry, got shape {arr.shape}")
    if np.any(arr < 0):
        raise ValueError(f"{name} must have non-negative entries, got min {arr.min():g}")
    total = arr.sum(axis=-1)
    if not np.allclose(total, 1.0, atol=atol, rtol=0.0):
        raise ValueError(f"{name} must sum to 1, got {_show(np.round(total, 12).tolist())}")
    return arr


def check_is_fitted(estimator: Any, attributes: str | Sequence[str]) -> None:
    """Raise :class:`NotFittedError` unless ``estimator`` has every attribute of ``attributes`` (set by ``fit``)."""
    names = (attributes,) if isinstance(attributes, str) else tuple(attributes)
    if not all(hasattr(estimator, a) for a in names):
        raise NotFittedError(f"this {type(estimator).__name__} instance is not fitted yet; call fit before using it")


def check_tensor(x: Any, name: str, *, ndim: int | Sequence[int] | None = None, floating: bool = False,
                 shape: Sequence[int | None] | None = None, finite: bool = False) -> Any:
    """``x`` if it is a ``torch.Tensor`` of the required dimensions (and, optionally, a floating dtype).

    ``finite=False`` (the default) lets NaN through, as a torch forward pass propagates it; pass
    ``finite=True`` where the result is a statistic or a decision.
    """
    import torch

    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__} {_show(x)}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if x.ndim not in allowed:
            want = " or ".join(str(d) for d in allowed)
            raise ValueError(f"{name} must be a {want}-d tensor, got shape {tuple(x.shape)}")
    if shape is not None:
        _check_shape(tuple(x.shape), shape, name)
    if floating and not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if finite and x.is_floating_point() and not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must contain only finite values, got NaN or inf")
    return x


def named_errors(label: str, validate: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``validate(*args, **kwargs)`` (e.g. a scikit-learn validator); a ``TypeError``/``ValueError`` whose
    message does not name the argument is raised again as ``"<label>: <message>"`` (same type)."""
    check_callable(validate, "validate")
    try:
        return validate(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        if re.search(rf"(?<!\w){re.escape(label)}(?!\w)", str(exc)):
            raise
        raise (TypeError if isinstance(exc, TypeError) else ValueError)(f"{label}: {exc}") from exc

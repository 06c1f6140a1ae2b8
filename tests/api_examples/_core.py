"""The public-API property suite's machinery: discovery of public names, examples, mutations, outcomes.

Every public name of every field package (the ``__all__`` of each ``icml25`` package except the
harness and the reproductions) is a function, a class (its constructor) or a public method defined
on one of our classes. Each has one entry in a registry file next to this one
(``tests/api_examples/<package>.py``, a dict ``EXAMPLES``): an :class:`Example` (one valid call), or
an :class:`Exempt` with the reason it takes no user input worth mutating.

From the valid call, :func:`mutations` derives the bad inputs of the issue that introduced the suite
(None, NaN, empty, wrong ndim, wrong length against another argument, zero or negative sizes, a
string for a number, a bad choice, a non-callable, a wrong type), one argument at a time, and
:func:`outcome` classifies what the call does with each:

``clear``  a ``ValueError``/``TypeError`` whose message names the argument (what we want);
``deep``   a ``ValueError``/``TypeError`` that does not name it (raised from inside a library);
``crash``  any other exception;
``silent`` the call returned (it accepted an invalid value);
``hang``   it ran past the example's time bound.

A mutation listed in ``Example.allow`` is a documented degenerate-but-valid input: the call must then
return normally (``ok``).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import numbers
import pkgutil
import re
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SKIP_PACKAGES = ("icml25.harness", "icml25.reproductions")
EXEMPT_REASONS = {
    "record": "a result record the library builds and returns; users do not construct it",
    "exception": "an exception class",
    "abstract": "an abstract method or protocol hook that only raises NotImplementedError",
    "alias": "a type alias or constant, not a callable",
}
SEED_NAMES = ("seed", "random_state")  # None is a valid seed everywhere (icml25.utils.random.Seed)
STR_VALUE = "abc"
BAD_CHOICE = "no-such-option"


@dataclass(frozen=True)
class Example:
    """One valid call of a public name, the seed of its mutations.

    Parameters
    ----------
    call : called as ``call(**kwargs)``; for a method, a function that builds (or reuses) an object
        and calls the method, e.g. ``lambda **kw: fitted().predict(**kw)``.
    kwargs : the valid keyword arguments, or a zero-argument function returning them (built afresh
        for each mutation, so a mutation never leaks into the next). Parameters of the signature
        left out are filled with their defaults and mutated too.
    allow : argument -> mutation names that are documented valid inputs (the call must succeed).
    skip : argument -> why it is not mutated at all (free text, any object accepted, ...).
    paired : pairs of arguments whose first axes must agree (the second is shortened by one).
    positive : numeric arguments that must be > 0 (zero and -1 are tried).
    nonneg : real arguments that must be >= 0 (-1 is tried; integers always get -1).
    labels : argument -> the name its messages use instead (``check_array(x, "X")`` says ``X``).
    timeout : seconds one call may take before it counts as a hang.
    """

    call: Callable[..., Any]
    kwargs: Mapping[str, Any] | Callable[[], Mapping[str, Any]] = field(default_factory=dict)
    allow: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    skip: Mapping[str, str] = field(default_factory=dict)
    paired: Sequence[tuple[str, str]] = ()
    positive: Sequence[str] = ()
    nonneg: Sequence[str] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 10.0

    def build(self) -> dict[str, Any]:
        return dict(self.kwargs() if callable(self.kwargs) else self.kwargs)

    def allowed(self, arg: str) -> set[str]:
        value = self.allow.get(arg, ())
        return {value} if isinstance(value, str) else set(value)


@dataclass(frozen=True)
class Exempt:
    """A public name with nothing to mutate; ``reason`` is a key of ``EXEMPT_REASONS``."""

    reason: str

    def __post_init__(self) -> None:
        if self.reason not in EXEMPT_REASONS:
            raise ValueError(f"Exempt reason must be one of {sorted(EXEMPT_REASONS)}, got {self.reason!r}")


@dataclass(frozen=True)
class PublicName:
    key: str  # "icml25.<package>.<Name>" or "icml25.<package>.<Class>.<method>"
    obj: Any  # the function, class or (unbound) method
    kind: str  # "function" | "class" | "method"
    module: str  # where it is defined

    @property
    def signature(self) -> inspect.Signature | None:
        try:
            return inspect.signature(self.obj)
        except (TypeError, ValueError):
            return None

    def parameters(self) -> list[inspect.Parameter]:
        sig = self.signature
        if sig is None:
            return []
        return [p for p in sig.parameters.values() if p.name not in ("self", "cls")
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


# ---------------------------------------------------------------- discovery


def field_packages() -> list[str]:
    """Every field package, and every paper module (``Paper.module``) whose names no package exports."""
    import icml25
    from icml25.harness.registry import catalogue

    packages = [m.name for m in pkgutil.walk_packages(icml25.__path__, "icml25.")
                if m.ispkg and not m.name.startswith(SKIP_PACKAGES)]
    papers = sorted({e.declared.get("module") for e in catalogue().values() if e.implemented} - {None})
    return packages + [m for m in papers if m not in packages]


def _own_methods(cls: type) -> Iterator[tuple[str, Any]]:
    """Public methods of ``cls`` defined in our code: the most derived definition of each name."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("icml25"):
            continue
        for name, value in vars(klass).items():
            if isinstance(value, (classmethod, staticmethod)):
                value = value.__func__
            if name.startswith("_") or not inspect.isfunction(value) or name in names:
                continue
            names.add(name)
            yield name, value


def public_names() -> dict[str, PublicName]:
    """Every public name, keyed by its shortest exporting package (ties: alphabetical)."""
    exporters: dict[int, tuple[str, str, Any]] = {}
    for package in field_packages():
        mod = importlib.import_module(package)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if not (inspect.isclass(obj) or callable(obj)):
                continue
            candidate = (package, name, obj)
            best = exporters.get(id(obj))
            if best is None or (package.count("."), package) < (best[0].count("."), best[0]):
                exporters[id(obj)] = candidate
    out: dict[str, PublicName] = {}
    seen_methods: set[int] = set()
    for package, name, obj in sorted(exporters.values(), key=lambda t: (t[0], t[1])):
        key = f"{package}.{name}"
        module = getattr(obj, "__module__", package) or package
        if inspect.isclass(obj):
            out[key] = PublicName(key, obj, "class", module)
            for meth_name, fn in _own_methods(obj):
                if id(fn) in seen_methods:
                    continue
                seen_methods.add(id(fn))
                entry = PublicName(f"{key}.{meth_name}", fn, "method", fn.__module__)
                if entry.parameters():  # a method without arguments has nothing to mutate
                    out[entry.key] = entry
        else:
            out[key] = PublicName(key, obj, "function", module)
    return out


def auto_exempt(name: PublicName) -> str | None:
    """The reason a name needs no registered example, if it is evident from the object itself."""
    if name.kind == "class" and issubclass(name.obj, BaseException):
        return "exception"
    return None


# ---------------------------------------------------------------- registry


def load_registry(strict: bool = True) -> dict[str, Example | Exempt]:
    """All registry files merged; a key registered twice is an error. ``strict=False`` (the audit of an
    older checkout) skips a registry file that cannot be imported there."""
    from pathlib import Path

    here = Path(__file__).resolve().parent
    merged: dict[str, Example | Exempt] = {}
    for path in sorted(here.glob("[a-z]*.py")):
        if path.stem == "audit":
            continue
        try:
            module = importlib.import_module(f"api_examples.{path.stem}")
        except ImportError:
            if strict:
                raise
            continue
        for key, entry in module.EXAMPLES.items():
            if key in merged:
                raise ValueError(f"{key} is registered twice (again in {path.name})")
            merged[key] = entry
    return merged


# ---------------------------------------------------------------- mutations


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach") and hasattr(x, "shape")


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def _float_like(x: Any) -> bool:
    if _is_tensor(x):
        return bool(x.is_floating_point())
    return np.asarray(x).dtype.kind == "f"


def _with_nan(x: Any) -> Any:
    """A copy of ``x`` with its first entry NaN (indexed, so a non-contiguous layout keeps the NaN)."""
    y = x.detach().clone() if _is_tensor(x) else np.array(x, dtype=float, copy=True)
    y[(0,) * y.ndim] = float("nan")
    return y


def mutations(example: Example, name: PublicName, kwargs: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """``(argument, mutation, bad value)`` for every argument of one valid call."""
    defaults = {p.name: p.default for p in name.parameters()}
    for arg, value in kwargs.items():
        if arg in example.skip:
            continue
        none_ok = (arg in defaults and defaults[arg] is None) or arg in SEED_NAMES
        cases: list[tuple[str, Any]] = []
        if value is None:
            pass
        elif isinstance(value, (bool, np.bool_)):
            cases = [("str", STR_VALUE)]
        elif isinstance(value, numbers.Integral):
            cases = [("str", STR_VALUE), ("nan", float("nan")), ("neg", -1)]
            if arg in example.positive:
                cases.append(("zero", 0))
        elif _is_number(value):
            cases = [("str", STR_VALUE), ("nan", float("nan"))]
            if arg in example.positive:
                cases += [("zero", 0.0), ("neg", -1.0)]
            elif arg in example.nonneg:
                cases.append(("neg", -1.0))
        elif isinstance(value, str):
            cases = [("choice", BAD_CHOICE)]
        elif isinstance(value, np.ndarray) or _is_tensor(value):
            cases = [("str", STR_VALUE)]
            if value.ndim >= 1:
                cases.append(("empty", value[:0]))
            cases.append(("ndim", value[None]))
            if value.size and _float_like(value):
                cases.append(("nan", _with_nan(value)))
        elif isinstance(value, (list, tuple)):
            cases = [("str", STR_VALUE), ("empty", type(value)())]
            if value and all(_is_number(v) for v in value) and any(isinstance(v, float) for v in value):
                cases.append(("nan", type(value)([float("nan"), *value[1:]])))
        elif isinstance(value, Mapping):
            cases = [("str", STR_VALUE)]
        elif inspect.isfunction(value) or inspect.ismethod(value) or inspect.isbuiltin(value):
            cases = [("noncallable", 3)]
        else:
            cases = [("wrongtype", STR_VALUE)]
        if value is not None and not none_ok:
            cases.append(("none", None))
        for mutation, bad in cases:
            yield arg, mutation, bad
    for _first, second in example.paired:
        value = kwargs[second]
        yield second, "short", value[:-1]


# ---------------------------------------------------------------- calling


class HangError(Exception):
    """Raised by the alarm when one call runs past its time bound."""


@contextlib.contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    def _alarm(signum: int, frame: Any) -> None:
        raise HangError(f"ran past {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def complete_kwargs(example: Example, name: PublicName) -> dict[str, Any]:
    """The example's kwargs with every omitted parameter filled with its default."""
    kwargs = example.build()
    params = {p.name: p for p in name.parameters()}
    unknown = set(kwargs) - set(params) if name.signature is not None and not _has_var_kw(name) else set()
    if unknown:
        raise ValueError(f"{name.key}: example passes arguments not in the signature: {sorted(unknown)}")
    for pname, p in params.items():
        if pname not in kwargs and p.default is not inspect.Parameter.empty:
            kwargs[pname] = p.default
    return kwargs


def _has_var_kw(name: PublicName) -> bool:
    """Whether the signature takes ``*args`` or ``**kwargs`` (the example's own names then stand)."""
    sig = name.signature
    return sig is not None and any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in sig.parameters.values())


def names_argument(message: str, args: Sequence[str]) -> bool:
    return any(re.search(rf"(?<![\w]){re.escape(a)}(?![\w])", message) for a in args)


def outcome(example: Example, kwargs: dict[str, Any], args: Sequence[str]) -> tuple[str, str]:
    """``(category, detail)`` of one call; see the module docstring for the categories."""
    try:
        with time_bound(example.timeout):
            example.call(**kwargs)
    except HangError as exc:
        return "hang", str(exc)
    except (ValueError, TypeError) as exc:
        text = f"{type(exc).__name__}: {exc}"
        return ("clear" if names_argument(str(exc), args) else "deep"), text[:200]
    except Exception as exc:  # noqa: BLE001 - classifying every failure is the point
        return "crash", f"{type(exc).__name__}: {exc}"[:200]
    return "silent", ""


def judge(example: Example, name: PublicName) -> list[dict[str, str]]:
    """Every mutation of one name with its outcome and whether that outcome is acceptable."""
    base = complete_kwargs(example, name)
    rows = []
    for arg, mutation, bad in mutations(example, name, base):
        kwargs = complete_kwargs(example, name)
        kwargs[arg] = bad
        partners = [arg] + [a for pair in example.paired if arg in pair for a in pair]
        partners += [example.labels[a] for a in partners if a in example.labels]
        category, detail = outcome(example, kwargs, partners)
        allowed = mutation in example.allowed(arg)
        ok = (category == "silent") if allowed else (category == "clear")
        rows.append({"arg": arg, "mutation": mutation, "category": "ok" if allowed and ok else category,
                     "detail": detail, "passed": ok})
    return rows


"""Every public name keeps its contract: a valid call works, and each bad argument gets one clear error.

The registry of valid calls lives in ``tests/api_examples/<package>.py``; the machinery (discovery,
mutations, outcome categories) in ``tests/api_examples/_core.py``. A public name without an entry
fails :func:`test_every_public_name_is_registered`, so a new paper cannot skip the suite.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

from api_examples._core import (  # noqa: E402 - the registry sits next to this file
    Example,
    Exempt,
    auto_exempt,
    complete_kwargs,
    judge,
    load_registry,
    outcome,
    public_names,
)

NAMES = public_names()
REGISTRY = load_registry()
EXAMPLES = sorted(k for k, v in REGISTRY.items() if isinstance(v, Example) and k in NAMES)


def test_every_public_name_is_registered():
    missing = sorted(k for k, n in NAMES.items() if k not in REGISTRY and auto_exempt(n) is None)
    stale = sorted(k for k in REGISTRY if k not in NAMES)
    assert missing == [], f"public names without an example in tests/api_examples: {missing}"
    assert stale == [], f"registry entries that are not public names: {stale}"


def _evidently_abstract(obj) -> bool:
    """An abstract class or Protocol, an ``abstractmethod``, a Protocol's method, or a NotImplementedError body."""
    import inspect

    if inspect.isclass(obj):
        return inspect.isabstract(obj) or getattr(obj, "_is_protocol", False)
    owner = getattr(inspect.getmodule(obj), obj.__qualname__.split(".")[0], None)
    return (getattr(obj, "__isabstractmethod__", False) or getattr(owner, "_is_protocol", False)
            or "NotImplementedError" in inspect.getsource(obj))


def test_exemptions_are_evident():
    """An exempt record is a dataclass, a NamedTuple or a built-in container subclass; an exempt abstract
    name is evidently abstract (see :func:`_evidently_abstract`)."""
    import dataclasses

    wrong = []
    for key, entry in REGISTRY.items():
        if not isinstance(entry, Exempt) or key not in NAMES:
            continue
        obj = NAMES[key].obj
        if entry.reason == "record" and not (dataclasses.is_dataclass(obj) or hasattr(obj, "_fields")
                                             or issubclass(obj, (list, dict, tuple))):
            wrong.append(key)
        if entry.reason == "abstract" and not _evidently_abstract(obj):
            wrong.append(key)
    assert wrong == []


@pytest.mark.parametrize("key", EXAMPLES)
def test_valid_example_runs(key):
    example = REGISTRY[key]
    category, detail = outcome(example, complete_kwargs(example, NAMES[key]), [])
    assert category == "silent", f"the valid example of {key} fails: {category} {detail}"


@pytest.mark.parametrize("key", EXAMPLES)
def test_bad_input_gets_a_clear_error(key):
    rows = judge(REGISTRY[key], NAMES[key])
    failures = [f"{r['arg']}={r['mutation']}: {r['category']} {r['detail']}" for r in rows if not r["passed"]]
    assert failures == [], f"{key}:\n  " + "\n  ".join(failures)


def _numeric_arguments(key: str) -> list[str]:
    example = REGISTRY[key]
    kwargs = complete_kwargs(example, NAMES[key])
    return sorted(a for a, v in kwargs.items() if a not in example.skip
                  and isinstance(v, (int, float, np.ndarray)) and not isinstance(v, bool))


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_out_of_domain_numbers_are_rejected(data):
    """Hypothesis draws a name, one numeric argument and a value outside every numeric domain."""
    key = data.draw(st.sampled_from(EXAMPLES), label="name")
    example, name = REGISTRY[key], NAMES[key]
    numeric = _numeric_arguments(key)
    if not numeric:
        return
    kwargs = complete_kwargs(example, name)
    arg = data.draw(st.sampled_from(numeric), label="argument")
    value = kwargs[arg]
    if isinstance(value, np.ndarray):
        if value.dtype.kind != "f" or not value.size or "nan" in example.allowed(arg):
            return
        bad = np.array(value, copy=True)
        finite = np.flatnonzero(np.isfinite(bad))  # an entry that is already NaN or inf is no mutation
        if not finite.size:
            return
        index = int(data.draw(st.sampled_from(finite), label="index"))
        bad.flat[index] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]), label="value")
        if np.isinf(bad.flat[index]) and "inf" in example.allowed(arg):
            return
    else:
        choices = [st.just(float("nan")), st.text(min_size=1, max_size=4)]
        if isinstance(value, int) and "neg" not in example.allowed(arg):
            choices.append(st.integers(max_value=-1))
        bad = data.draw(st.one_of(choices), label="value")
        if isinstance(bad, float) and "nan" in example.allowed(arg):
            return
    kwargs[arg] = bad
    category, detail = outcome(example, kwargs, [arg] + ([example.labels[arg]] if arg in example.labels else []))
    assert category == "clear", f"{key}({arg}={bad!r}): {category} {detail}"

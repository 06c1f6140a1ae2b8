"""The field's own contracts, checked with the field's own tools, on every public class they apply to.

scikit-learn estimators go through ``parametrize_with_checks``; PyTorch optimizers round-trip their
``state_dict`` through ``torch.save``/``torch.load`` and continue identically; PyTorch modules move
with ``.to(dtype)``, follow their input's dtype and leave the global RNG alone; gymnasium environments
pass ``check_env``. Instances come from the constructor examples of the public-API registry
(``tests/api_examples``), so a new class is covered as soon as it is registered.
"""

from __future__ import annotations

import copy
import io
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from api_examples._core import Example, complete_kwargs, load_registry, public_names  # noqa: E402

NAMES = public_names()
REGISTRY = load_registry()

# The multi-view estimators take X as a list of 2-D arrays, one per view; these checks pass a single 2-D
# array (or a sparse matrix), which they reject with a TypeError before any other validation.
_ONE_ARRAY_CHECKS = (
    "check_complex_data",
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_dtype_object",
    "check_estimator_sparse_array",
    "check_estimator_sparse_matrix",
    "check_estimator_sparse_tag",
    "check_estimators_dtypes",
    "check_estimators_empty_data_messages",
    "check_estimators_fit_returns_self",
    "check_estimators_nan_inf",
    "check_estimators_overwrite_params",
    "check_estimators_pickle",
    "check_estimators_pickle(readonly_memmap=True)",
    "check_f_contiguous_array_estimator",
    "check_fit1d",
    "check_fit2d_1feature",
    "check_fit2d_1sample",
    "check_fit2d_predict1d",
    "check_fit_check_is_fitted",
    "check_fit_idempotent",
    "check_fit_score_takes_y",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_n_features_in",
    "check_n_features_in_after_fitting",
    "check_pipeline_consistency",
    "check_positive_only_tag_during_fit",
    "check_readonly_memmap_input",
)
_VIEWS = "fit/predict take a list of views (one 2-D array each); the check passes one array"

# estimator class -> {check name: reason} for checks whose input type the estimator cannot take
SKLEARN_EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    name: dict.fromkeys(_ONE_ARRAY_CHECKS, _VIEWS) for name in ("ConcatRidge", "LowRankRidge", "MultiLabelKNN", "TMvML")
}


def _classes(base: type) -> list[str]:
    return sorted(k for k, n in NAMES.items() if n.kind == "class" and isinstance(n.obj, type)
                  and issubclass(n.obj, base) and isinstance(REGISTRY.get(k), Example))


def _instance(key: str):
    example = REGISTRY[key]
    return example.call(**complete_kwargs(example, NAMES[key]))


# ---------------------------------------------------------------- scikit-learn

from sklearn.base import BaseEstimator  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

ESTIMATORS = _classes(BaseEstimator)


def _expected(estimator):
    return SKLEARN_EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks([_instance(k) for k in ESTIMATORS], expected_failed_checks=_expected)
def test_sklearn_estimator_contract(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


def test_expected_sklearn_failures_name_real_estimators():
    names = {NAMES[k].obj.__name__ for k in ESTIMATORS}
    assert set(SKLEARN_EXPECTED_FAILURES) <= names


# ---------------------------------------------------------------- PyTorch

torch = pytest.importorskip("torch")

OPTIMIZERS = _classes(torch.optim.Optimizer)
MODULES = [k for k in _classes(torch.nn.Module) if isinstance(REGISTRY.get(f"{k}.forward"), Example)
           or "forward" not in vars(NAMES[k].obj)]


def _model(seed: int = 0) -> torch.nn.Module:
    g = torch.Generator().manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return model


def _optimizer(key: str, params) -> torch.optim.Optimizer:
    example = REGISTRY[key]
    kwargs = complete_kwargs(example, NAMES[key])
    kwargs["params"] = params
    return example.call(**kwargs)


def _steps(model, opt, n: int) -> list[float]:
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(16, 3, generator=g), torch.randn(16, 1, generator=g)
    losses = []
    for _ in range(n):
        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss
        losses.append(float(opt.step(closure)))
    return losses


@pytest.mark.parametrize("key", OPTIMIZERS)
def test_optimizer_state_dict_round_trip_continues_identically(key):
    model = _model()
    opt = _optimizer(key, model.parameters())
    _steps(model, opt, 3)
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    twin = _model(seed=5)
    twin.load_state_dict(saved["model"])
    twin_opt = _optimizer(key, twin.parameters())
    twin_opt.load_state_dict(saved["opt"])
    assert _steps(model, opt, 3) == _steps(twin, twin_opt, 3)
    for a, b in zip(model.parameters(), twin.parameters(), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("key", OPTIMIZERS)
def test_optimizer_param_groups_and_zero_grad(key):
    model = _model()
    layers = [m for m in model if isinstance(m, torch.nn.Linear)]
    frozen = copy.deepcopy(layers[1].state_dict())
    opt = _optimizer(key, [{"params": layers[0].parameters()}, {"params": layers[1].parameters(), "lr": 0.0}])
    assert len(opt.param_groups) == 2
    _steps(model, opt, 2)
    for name, value in layers[1].state_dict().items():
        assert torch.equal(value, frozen[name]), f"a group with lr=0 moved ({name})"
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def _forward_kwargs(key: str):
    example = REGISTRY.get(f"{key}.forward")
    if not isinstance(example, Example):
        return None
    return complete_kwargs(example, NAMES[f"{key}.forward"])


def _as_double(value):
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.double()
    return value


@pytest.mark.parametrize("key", MODULES)
def test_module_construction_leaves_global_rng_alone(key):
    state = torch.random.get_rng_state()
    _instance(key)
    assert torch.equal(state, torch.random.get_rng_state())


@pytest.mark.parametrize("key", MODULES)
def test_module_moves_to_float64_and_follows_input_dtype(key):
    module = _instance(key).to(torch.float64)
    assert all(p.dtype == torch.float64 for p in module.parameters() if p.is_floating_point())
    kwargs = _forward_kwargs(key)
    if kwargs is None:
        pytest.skip("the module has no forward of its own")
    out = module(**{k: _as_double(v) for k, v in kwargs.items()})
    outs = out if isinstance(out, (tuple, list)) else (out,)
    floats = [o for o in outs if isinstance(o, torch.Tensor) and o.is_floating_point()]
    assert floats and all(o.dtype == torch.float64 for o in floats)


# ---------------------------------------------------------------- gymnasium

gymnasium = pytest.importorskip("gymnasium")
ENVIRONMENTS = _classes(gymnasium.Env)


@pytest.mark.parametrize("key", ENVIRONMENTS)
def test_gymnasium_check_env(key):
    from gymnasium.utils.env_checker import check_env

    env = _instance(key)
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_contract_suites_found_their_classes():
    assert len(OPTIMIZERS) >= 1 and len(MODULES) >= 1
    assert np.all([k in NAMES for k in ESTIMATORS + OPTIMIZERS + MODULES + ENVIRONMENTS])

"""Fishers for Free? The Squisher: Adam's squared-gradient accumulator as a diagonal Fisher (Li et al., ICML 2025).

Example
-------
>>> from icml25.data.tensors import digits_tensors
>>> from icml25.utils.nn import make_mlp, train_classifier
>>> from icml25.optim import read_squisher, fisher_diagonal, compare_importance, obd_prune
>>> data = digits_tensors(seed=0)
>>> model = make_mlp([64, 64, 10], seed=0)
>>> opt = train_classifier(model, data.X_train, data.y_train, epochs=5, batch_size=32)
>>> sq = read_squisher(opt, model, n_data=len(data.X_train), batch_size=32)   # free: no data pass
>>> fisher = fisher_diagonal(model, data.X_train, max_examples=500)         # exact class-sum Fisher
>>> compare_importance(sq, fisher)["spearman"] > 0.5
True
>>> masks = obd_prune(model, sq, sparsity=0.8)                              # any consumer takes either

Contents (paper sections and the methods it plugs the Squisher into):

* importance estimates, dicts ``{parameter name: tensor}`` shaped like the parameters:
  ``read_squisher`` (Sec. 2, the rescaled second moment ``v`` of Adam/AdamW/NAdam/RAdam, RMSprop, Adadelta,
  Adagrad, from a live optimizer or its ``state_dict()``), ``fisher_diagonal`` (exact class-sum, sampled
  or empirical Fisher by per-example gradients; ``batch_size > 1`` squares mini-batch means, the
  Squisher's second difference), ``magnitude_importance``, ``uniform_importance``,
  ``random_importance`` and ``compare_importance``;
* Fisher merging (Matena & Raffel 2022) ``fisher_merge`` with ``average_merge``;
* uncertainty-based gradient matching (Daheim et al. 2024) ``ugm_merge`` with ``task_arithmetic``;
* one-shot pruning ``obd_prune`` (saliency ``F θ² / 2``) with ``magnitude_prune``, ``random_prune``,
  ``apply_masks``;
* FISH-mask sparse fine-tuning (Sung et al. 2021) ``fish_mask``, ``random_mask``, ``masked_finetune``;
* EWC (Kirkpatrick et al. 2017) ``EWCPenalty`` (modes ``separate`` and ``online`` as in Avalanche).

Scaling conventions (Sec. 2 of the paper): the Fisher "sum" convention is
``F = Σ_n E_ŷ[(∇ log p(ŷ|x_n))²]`` over the N training examples.  Adam's ``v`` tracks the squared
*mini-batch* gradient; with a loss averaged over the batch (``reduction="mean"``),
``E[g²] ≈ E[(∇l_n)²] / B``, so ``F ≈ N·B·v``; with a summed batch loss, ``F ≈ (N/B)·v``.
"""

from __future__ import annotations

import math
import numbers
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from scipy.stats import spearmanr
from torch import Tensor, nn
from torch.func import functional_call, grad, jacrev, vmap

from icml25.utils.nn import train_classifier
from icml25.utils.random import Seed, torch_generator
from icml25.utils.validation import (
    check_array,
    check_bool,
    check_callable,
    check_choice,
    check_instance,
    check_scalar,
    check_sequence,
    check_tensor,
)

Importance = dict[str, Tensor]
Params = nn.Module | Mapping[str, Tensor] | Iterable[tuple[str, Tensor]]

SCALES = ("fisher_sum", "per_example", "raw")
REDUCTIONS = ("mean", "sum")
FISHER_MODES = ("exact", "sampled", "empirical")
FISHER_METHODS = ("auto", "linear", "vmap")
_VMAP_CHUNK, _LINEAR_CHUNK = 128, 1024     # default examples per pass of fisher_diagonal

# Second-moment keys of torch.optim's state and the group hyper-parameter holding their EMA decay.
_EMA_KEYS = (("exp_avg_sq", "betas"), ("square_avg", "alpha"), ("square_avg", "rho"))
_FACTORED_KEYS = ("row_var", "col_var", "exp_avg_sq_row", "exp_avg_sq_col")
_QUANTIZED_KEYS = ("state2", "qmap2", "absmax2")
_SECOND_MOMENT_OPTIMIZERS = (torch.optim.Adam, torch.optim.AdamW, torch.optim.NAdam, torch.optim.RAdam,
                             torch.optim.RMSprop, torch.optim.Adadelta, torch.optim.Adagrad)


def _named_params(model: Params, *, trainable_only: bool = False, name: str = "model") -> dict[str, Tensor]:
    """``{name: tensor}`` from a module, a mapping or ``(name, tensor)`` pairs."""
    if isinstance(model, nn.Module):
        pairs = list(model.named_parameters())
    elif isinstance(model, Mapping):
        pairs = list(model.items())
    elif model is None or isinstance(model, (str, bytes)) or not hasattr(model, "__iter__"):
        raise TypeError(f"{name} must be an nn.Module, a mapping name -> tensor or (name, tensor) pairs, "
                        f"got {type(model).__name__}")
    else:
        pairs = list(model)
    out: dict[str, Tensor] = {}
    for item in pairs:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], Tensor)):
            raise TypeError(f"{name} must hold (name, tensor) pairs, got {item!r:.80}")
        if not trainable_only or item[1].requires_grad:
            out[item[0]] = item[1]
    return out


def _check_importance(importance: Any, name: str) -> Mapping[str, Tensor]:
    """A non-empty mapping ``{parameter name: tensor}``."""
    check_instance(importance, name, Mapping, "a mapping parameter name -> tensor")
    if not importance:
        raise ValueError(f"{name} must not be empty")
    for k, v in importance.items():
        check_instance(v, f"{name}[{k!r}]", Tensor, "a torch.Tensor")
    return importance


def _check_scale_sizes(n_data: int | None, batch_size: int | None, scale: str) -> tuple[int, int]:
    """``n_data`` and ``batch_size``, both needed to rescale ``v`` to a Fisher unless ``scale="raw"``."""
    for name, value in (("n_data", n_data), ("batch_size", batch_size)):
        if value is None:
            raise ValueError(f"{name} must be an integer >= 1 when scale={scale!r}, got None")
    return check_scalar(n_data, "n_data", "int", min=1), check_scalar(batch_size, "batch_size", "int", min=1)


def _rescale(v: Tensor, scale: str, reduction: str, n_data: int | None, batch_size: int | None) -> Tensor:
    """Map the per-step squared mini-batch gradient ``v`` to the Fisher's scale (Sec. 2)."""
    if scale == "raw":
        return v
    n, b = _check_scale_sizes(n_data, batch_size, scale)
    per_example = v * b if reduction == "mean" else v / b     # ≈ E[(∇l_n)²]
    return per_example * n if scale == "fisher_sum" else per_example


# ----------------------------------------------------------------------------- the Squisher

def _optimizer_entries(optimizer: torch.optim.Optimizer, named: dict[str, Tensor]):
    """Yield ``(name, state, group)`` for every parameter the optimizer holds."""
    by_id = {id(p): n for n, p in named.items()}
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) in by_id:
                yield by_id[id(p)], optimizer.state.get(p, {}), group


def _state_dict_entries(state_dict: Mapping[str, Any], named: dict[str, Tensor], param_names: Sequence[str] | None):
    """Yield ``(name, state, group)`` for a ``state_dict()``, aligning its indices with parameter names."""
    if not {"state", "param_groups"} <= set(state_dict):
        raise ValueError("an optimizer state dict needs the keys 'state' and 'param_groups' "
                         f"(as returned by optimizer.state_dict()), got {sorted(state_dict)[:6]}")
    indices = [i for g in state_dict["param_groups"] for i in g["params"]]
    if param_names is None:
        candidates = [list(named), [n for n, p in named.items() if p.requires_grad]]
        param_names = next((c for c in candidates if len(c) == len(indices)), None)
        if param_names is None:
            raise ValueError(f"the state dict holds {len(indices)} parameters but the model has {len(named)} "
                             "(and a different number of trainable ones); pass param_names= in optimizer order")
    if len(param_names) != len(indices):
        raise ValueError(f"param_names lists {len(param_names)} names for {len(indices)} optimizer parameters")
    name_of = dict(zip(indices, param_names, strict=True))
    for group in state_dict["param_groups"]:
        for i in group["params"]:
            if name_of[i] not in named:
                raise ValueError(f"param_names has {name_of[i]!r}, which is not a parameter of the model")
            yield name_of[i], state_dict["state"].get(i, {}), group


def _second_moment(state: Mapping[str, Any], group: Mapping[str, Any], name: str, opt_name: str,
                   bias_correction: bool) -> Tensor | None:
    """The (bias-corrected) running mean of squared gradients of one parameter, or None if no step yet."""
    if not state:
        return None
    if any(k in state for k in _FACTORED_KEYS):
        raise NotImplementedError(f"{opt_name} keeps a factored (row/column) second moment for {name!r}; "
                                  "only full diagonal accumulators (Adam, AdamW, RMSprop, ...) are supported")
    if any(k in state for k in _QUANTIZED_KEYS):
        raise TypeError(f"{opt_name} keeps a quantized (8-bit) state for {name!r}; dequantize it "
                        "(or train with torch.optim.Adam/AdamW) before reading the Squisher")
    key_decay = next(((k, d) for k, d in _EMA_KEYS if k in state and d in group), None)
    if "sum" not in state and key_decay is None:
        raise ValueError(f"{opt_name} keeps no second-moment state for {name!r} (state keys "
                         f"{sorted(state)}); use Adam, AdamW, NAdam, RAdam, RMSprop, Adadelta or Adagrad")
    step = float(state.get("step", 0))
    if step <= 0:
        return None
    if "sum" in state:                                           # Adagrad: init + Σ_t g_t²
        v = (state["sum"] - group.get("initial_accumulator_value", 0.0)) / step
    else:
        key, decay_name = key_decay
        v = state[key]
        beta2 = float(group[decay_name][1] if decay_name == "betas" else group[decay_name])
        if bias_correction:
            v = v / (1.0 - beta2 ** step)
    if not isinstance(v, Tensor) or not v.is_floating_point():
        raise TypeError(f"the second moment of {name!r} is not a floating tensor ({type(v).__name__}); "
                        "dequantize it or use a plain torch.optim optimizer")
    return v.detach()


def read_squisher(
    optimizer: torch.optim.Optimizer | Mapping[str, Any],
    model: Params,
    *,
    n_data: int | None = None,
    batch_size: int | None = None,
    reduction: str = "mean",
    scale: str = "fisher_sum",
    bias_correction: bool = True,
    strict: bool = True,
    param_names: Sequence[str] | None = None,
) -> Importance:
    """The Squisher: the optimizer's squared-gradient accumulator rescaled to a diagonal Fisher (Sec. 2).

    ``optimizer`` is a live optimizer or its ``state_dict()`` (then its parameter indices are matched
    to ``model``'s parameters in ``named_parameters()`` order, or to ``param_names``).  ``reduction`` is
    how the training loss reduced the mini-batch (``"mean"``: ``F ≈ N·B·v``, ``"sum"``: ``F ≈ N/B·v``);
    ``scale`` is ``"fisher_sum"`` (sum over the ``n_data`` examples, the default), ``"per_example"``
    (divided by N) or ``"raw"`` (``v`` itself; ``n_data``/``batch_size`` not needed).
    ``bias_correction`` divides by ``1 - β2^t`` (Adam's own correction; ~1 after long training).
    With ``amsgrad=True`` the running mean ``exp_avg_sq`` is read, not its running maximum.
    AdamW's decoupled weight decay does not enter ``v``; an L2 term in the loss (or Adam's
    ``weight_decay``) does, and is not corrected for.

    A model parameter the optimizer has not stepped (absent, frozen, or no step taken yet) raises a
    ``ValueError`` when ``strict`` (default); with ``strict=False`` it is skipped with a warning.
    Returns ``{name: tensor}`` with each parameter's shape, device and (at least float32) dtype.
    """
    check_choice(scale, "scale", SCALES)
    check_choice(reduction, "reduction", REDUCTIONS)
    bias_correction = check_bool(bias_correction, "bias_correction")
    strict = check_bool(strict, "strict")
    if scale != "raw":
        _check_scale_sizes(n_data, batch_size, scale)
    named = _named_params(model)
    if isinstance(optimizer, torch.optim.Optimizer):
        opt_name = type(optimizer).__name__
        entries = list(_optimizer_entries(optimizer, named))
        if not any(state for _, state, _ in entries) and not isinstance(optimizer, _SECOND_MOMENT_OPTIMIZERS):
            raise ValueError(f"{opt_name} keeps no second-moment state; the Squisher needs Adam, AdamW, NAdam, "
                             "RAdam, RMSprop, Adadelta or Adagrad")
    elif isinstance(optimizer, Mapping):
        opt_name = "the optimizer state dict"
        entries = list(_state_dict_entries(optimizer, named, param_names))
    else:
        raise TypeError("optimizer must be a torch.optim.Optimizer or its state_dict(), "
                        f"got {type(optimizer).__name__}")
    if not any(state for _, state, _ in entries):
        raise ValueError(f"{opt_name} has no state: no step taken yet (train first, then read the Squisher)")
    out: Importance = {}
    for name, state, group in entries:
        v = _second_moment(state, group, name, opt_name, bias_correction)
        if v is None:
            continue
        param = named[name]
        if tuple(v.shape) != tuple(param.shape):
            raise ValueError(f"optimizer state of {name!r} has shape {tuple(v.shape)}, the parameter "
                             f"{tuple(param.shape)}; is this the optimizer of this model?")
        dtype = torch.promote_types(v.dtype, torch.float32)
        out[name] = _rescale(v.to(device=param.device, dtype=dtype), scale, reduction, n_data, batch_size)
    unseen = [n for n in named if n not in out]
    if unseen:
        message = (f"{opt_name} has no second moment for {len(unseen)} parameter(s) {unseen[:5]} "
                   "(not given to the optimizer, frozen, or never received a gradient)")
        if strict:
            raise ValueError(message + "; pass strict=False to skip them")
        warnings.warn(message + "; skipped", stacklevel=2)
    return out


# ----------------------------------------------------------------------------- the Fisher

def fisher_diagonal(
    model: nn.Module,
    X: Tensor,
    y: Tensor | None = None,
    *,
    mode: str = "exact",
    n_samples: int = 1,
    batch_size: int = 1,
    max_examples: int | None = None,
    n_data: int | None = None,
    scale: str = "fisher_sum",
    chunk_size: int | None = None,
    seed: Seed = 0,
    method: str = "auto",
) -> Importance:
    """Diagonal Fisher of a classifier (logits -> categorical likelihood) by per-example gradients.

    ``mode``: ``"exact"`` sums ``p(c|x) (∇ log p(c|x))²`` over all classes (the gold standard),
    ``"sampled"`` draws ``n_samples`` labels ``ŷ ~ p(·|x)`` per example (seeded), ``"empirical"``
    uses the true labels ``y`` (the empirical Fisher, EF).  The first ``max_examples`` rows of
    ``X`` are used (shuffle ``X`` beforehand for a random subset) and the sum is rescaled to
    ``n_data`` examples (default ``len(X)``); ``scale="per_example"`` divides by ``n_data``.
    ``batch_size > 1`` (sampled/empirical only) squares the gradient of the mean log-likelihood of
    consecutive mini-batches of that size and multiplies it by ``B²`` per batch: the Squisher's
    "squared mini-batch mean" without its moving average (the paper's second difference).
    The model is used as is (call ``model.eval()`` first if it has dropout or batch norm).

    ``method`` says how the per-example gradients are formed (the result is the same up to rounding):
    ``"linear"`` needs every trainable parameter to be the weight or bias of an ``nn.Linear`` called
    once per forward on a ``(batch, features)`` input (an MLP, with any parameter-free layers between);
    then the per-example gradient of a weight is the outer product ``g_n a_nᵀ`` of the layer's output
    gradient and input, so its square summed over examples is ``(g²)ᵀ (a²)``: one forward and one
    backward of the batch per label (C for ``"exact"``), with no per-example gradient formed (BackPACK's
    ``SumGradSquared``/``DiagGGNExact`` use the same factorisation).  ``"vmap"`` differentiates each
    example separately with ``torch.func.vmap`` and works for any model that maps one example to its
    logits; ``"auto"`` (default) takes ``"linear"`` where it applies, else ``"vmap"``.  The ``"linear"``
    path runs the chunk as one batch, so the model must treat examples independently (batch norm or
    dropout in training mode makes ``"auto"`` fall back to ``"vmap"``).  ``chunk_size`` examples go
    through one pass (default 128 for ``"vmap"``, which holds ``chunk_size`` per-example gradients,
    and 1024 for ``"linear"``, which holds only the layers' activations); sampled labels are drawn
    per chunk, so they depend on it.
    """
    check_choice(mode, "mode", FISHER_MODES)
    check_choice(method, "method", FISHER_METHODS)
    check_choice(scale, "scale", ("fisher_sum", "per_example"))
    check_instance(model, "model", nn.Module, "an nn.Module")
    check_instance(X, "X", Tensor, "a torch.Tensor")
    if X.ndim < 2 or X.shape[0] == 0:
        raise ValueError(f"X must be a tensor of shape (n, ...) with n > 0, got shape {tuple(X.shape)}")
    check_tensor(X, "X", finite=True)
    if y is not None:
        check_tensor(y, "y", ndim=1)
        if y.shape[0] != X.shape[0] or y.is_floating_point() or y.dtype == torch.bool:
            raise ValueError(f"y must be integer labels of shape ({X.shape[0]},) matching X, "
                             f"got shape {tuple(y.shape)} and dtype {y.dtype}")
    if mode == "empirical" and y is None:
        raise ValueError("mode='empirical' needs labels y of shape (n,) matching X")
    n_samples = check_scalar(n_samples, "n_samples", "int", min=1)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    chunk_size = None if chunk_size is None else check_scalar(chunk_size, "chunk_size", "int", min=1)
    if batch_size > 1 and mode == "exact":
        raise ValueError("batch_size > 1 squares mini-batch gradients of sampled or true labels; "
                         "use mode='sampled' or 'empirical'")
    m = X.shape[0] if max_examples is None else min(check_scalar(max_examples, "max_examples", "int", min=1),
                                                    X.shape[0])
    n = X.shape[0] if n_data is None else check_scalar(n_data, "n_data", "int", min=1)
    X = X[:m]
    y = None if y is None else y[:m]
    params = {k: p.detach() for k, p in model.named_parameters() if p.requires_grad}
    buffers = dict(model.named_buffers())

    def logits(p: dict[str, Tensor], x: Tensor) -> Tensor:
        out = functional_call(model, (p, buffers), (x,))
        if out.ndim != 2 or out.shape[0] != x.shape[0]:
            raise ValueError(f"X must be a batch that model maps to logits of shape (n, n_classes); an input of "
                             f"shape {tuple(x.shape)} gave shape {tuple(out.shape)}")
        return out
    generator = torch_generator(seed, device=X.device)

    def log_probs(p: dict[str, Tensor], x: Tensor) -> Tensor:
        return torch.log_softmax(logits(p, x), dim=-1)

    def labels(x: Tensor, yb: Tensor | None) -> Tensor:                # (k, b) labels for this chunk
        if mode == "empirical":
            return yb.unsqueeze(0)
        with torch.no_grad():
            probs = torch.softmax(logits(params, x), dim=-1)
        return torch.multinomial(probs, n_samples, replacement=True, generator=generator).T

    factor = n / m if scale == "fisher_sum" else 1.0 / m
    if batch_size == 1 and method != "vmap":
        linear = _linear_fisher(model, params, X, y, mode, n_samples, chunk_size or _LINEAR_CHUNK, seed,
                                strict=method == "linear")
        if linear is not None:
            return {k: v * factor for k, v in linear.items()}
    chunk_size = chunk_size or _VMAP_CHUNK
    total = {k: torch.zeros_like(p) for k, p in params.items()}
    per_label = 1.0 / n_samples if mode == "sampled" else 1.0
    if batch_size > 1:
        for start in range(0, m, batch_size):
            x, yb = X[start:start + batch_size], None if y is None else y[start:start + batch_size]
            b = x.shape[0]
            for lab in labels(x, yb):
                g = grad(lambda p, x=x, lab=lab: log_probs(p, x).gather(1, lab[:, None]).mean())(params)
                for k in total:
                    total[k] += (b * b * per_label) * g[k] ** 2
    elif mode == "exact":
        jac = vmap(jacrev(lambda p, x: log_probs(p, x[None])[0]), in_dims=(None, 0))
        for start in range(0, m, chunk_size):
            x = X[start:start + chunk_size]
            with torch.no_grad():
                probs = torch.softmax(logits(params, x), dim=-1)
            for k, j in jac(params, x).items():                        # j: (b, C, *shape)
                total[k] += torch.einsum("bc,bc...->...", probs, j ** 2)
    else:
        per_example = vmap(grad(lambda p, x, c: log_probs(p, x[None])[0].gather(0, c[None])[0]), in_dims=(None, 0, 0))
        for start in range(0, m, chunk_size):
            x, yb = X[start:start + chunk_size], None if y is None else y[start:start + chunk_size]
            for lab in labels(x, yb):
                for k, g in per_example(params, x, lab).items():
                    total[k] += per_label * (g ** 2).sum(0)
    return {k: v * factor for k, v in total.items()}


_MIXING = (nn.modules.batchnorm._BatchNorm, nn.modules.dropout._DropoutNd)


class _NotLinearError(ValueError):
    """The model is not one the ``method="linear"`` path of ``fisher_diagonal`` handles."""


def _linear_fisher(model: nn.Module, params: dict[str, Tensor], X: Tensor, y: Tensor | None, mode: str,
                   n_samples: int, chunk_size: int, seed: Seed, strict: bool) -> Importance | None:
    """The unscaled Fisher sum by Linear-layer factors, or None (``ValueError`` when ``strict``) where they
    do not apply."""
    try:
        layers = _linear_layers(model, params)
        generator = torch_generator(seed, device=X.device)
        total = {k: torch.zeros_like(p) for k, p in params.items()}
        for start in range(0, X.shape[0], chunk_size):
            x, yb = X[start:start + chunk_size], None if y is None else y[start:start + chunk_size]
            _linear_fisher_chunk(model, layers, x, yb, mode, n_samples, generator, total)
    except _NotLinearError as exc:
        if strict:
            raise ValueError(f"method='linear' does not apply to this model: {exc}; use method='vmap'") from None
        return None
    return total


def _linear_layers(model: nn.Module, params: dict[str, Tensor]) -> dict[nn.Linear, dict[str, str]]:
    """``{Linear module: {"weight" | "bias": parameter name}}`` covering every trainable parameter exactly
    once; ``_NotLinearError`` if a parameter lives elsewhere or is shared, or a module mixes examples in training
    mode."""
    by_id = {id(p): k for k, p in model.named_parameters() if k in params}
    layers: dict[nn.Linear, dict[str, str]] = {}
    seen: list[str] = []
    for module in model.modules():
        if isinstance(module, _MIXING) and module.training:
            raise _NotLinearError(f"{type(module).__name__} in training mode mixes or randomises examples")
        if isinstance(module, nn.Linear):
            owned = {kind: by_id[id(p)] for kind, p in (("weight", module.weight), ("bias", module.bias))
                     if p is not None and id(p) in by_id}
            if owned:
                layers[module] = owned
                seen += owned.values()
    if not params or sorted(seen) != sorted(params):
        raise _NotLinearError("every trainable parameter must belong to exactly one nn.Linear")
    return layers


def _linear_fisher_chunk(model: nn.Module, layers: dict[nn.Linear, dict[str, str]], x: Tensor, yb: Tensor | None,
                         mode: str, n_samples: int, generator: torch.Generator, total: Importance) -> None:
    """Add one chunk's Fisher to ``total`` from the Linear layers' inputs ``a`` and output gradients ``g``:
    ``Σ_n (g_n a_nᵀ)² = (g²)ᵀ (a²)`` for a weight, ``Σ_n g_n²`` for a bias."""
    b = x.shape[0]
    inputs: dict[nn.Linear, Tensor] = {}
    outputs: dict[nn.Linear, Tensor] = {}

    def record(module: nn.Module, args: tuple, output: Tensor) -> Tensor:
        if module in outputs or args[0].ndim != 2 or args[0].shape[0] != b:
            raise _NotLinearError(f"each nn.Linear must run once per forward on a (batch, features) input; got a "
                                  f"second call or an input of shape {tuple(args[0].shape)}")
        inputs[module], outputs[module] = args[0].detach(), output
        return output.clone()          # later in-place ops (ReLU(inplace=True)) must not change ``output``

    handles = [module.register_forward_hook(record) for module in layers]
    try:
        with torch.enable_grad():
            logits = model(x)
    finally:
        for h in handles:
            h.remove()
    if logits.ndim != 2 or logits.shape[0] != b:
        raise ValueError(f"X must be a batch that model maps to logits of shape (n, n_classes); an input of "
                         f"shape {tuple(x.shape)} gave shape {tuple(logits.shape)}")
    if len(outputs) != len(layers):
        raise _NotLinearError("every nn.Linear holding a trainable parameter must run in the forward")
    log_probs = torch.log_softmax(logits, dim=-1)
    probs = torch.softmax(logits.detach(), dim=-1)
    if mode == "exact":                                   # Σ_c p_c (∇ log p_c)²: backpropagate √p_c ∇ log p_c
        weighted = [(log_probs[:, c], probs[:, c].sqrt()) for c in range(logits.shape[1])]
    else:
        labs = yb.unsqueeze(0) if mode == "empirical" else \
            torch.multinomial(probs, n_samples, replacement=True, generator=generator).T
        scale = torch.full((b,), (1.0 / n_samples if mode == "sampled" else 1.0) ** 0.5, dtype=probs.dtype,
                           device=probs.device)
        weighted = [(log_probs.gather(1, lab[:, None])[:, 0], scale) for lab in labs]
    modules = list(layers)
    squares = {module: 0.0 for module in modules}
    for i, (target, weight) in enumerate(weighted):
        grads = torch.autograd.grad(target, [outputs[mod] for mod in modules], grad_outputs=weight,
                                    retain_graph=i < len(weighted) - 1, allow_unused=True)
        for module, g in zip(modules, grads, strict=True):
            if g is not None:
                squares[module] = squares[module] + g.detach() ** 2
    for module, owned in layers.items():
        g2 = squares[module]
        if not isinstance(g2, Tensor):
            continue
        if "weight" in owned:
            total[owned["weight"]] += g2.T @ inputs[module] ** 2
        if "bias" in owned:
            total[owned["bias"]] += g2.sum(0)


# ----------------------------------------------------------------------------- baselines and comparison

def magnitude_importance(model: Params) -> Importance:
    """``|θ|``: the "no Fisher" importance of magnitude pruning."""
    return {k: p.detach().abs().clone() for k, p in _named_params(model).items()}


def uniform_importance(model: Params) -> Importance:
    """All ones: turns Fisher merging into averaging and EWC into an L2 penalty."""
    return {k: torch.ones_like(p, dtype=torch.promote_types(p.dtype, torch.float32))
            for k, p in _named_params(model).items()}


def random_importance(model: Params, seed: Seed = 0) -> Importance:
    """Uniform(0, 1) scores from ``seed`` (random pruning / random masks)."""
    generator = torch_generator(seed)
    return {k: torch.rand(p.shape, generator=generator).to(p.device) for k, p in _named_params(model).items()}


def _flat(importance: Mapping[str, Tensor], names: Sequence[str]) -> Tensor:
    return torch.cat([importance[k].detach().reshape(-1).double().cpu() for k in names])


def compare_importance(a: Mapping[str, Tensor], b: Mapping[str, Tensor], *, eps: float = 1e-30) -> dict[str, float]:
    """How alike two importances are, over all entries of their (identical) keys.

    ``spearman``: rank correlation; ``pearson_log``: correlation of ``log(a + eps)`` and ``log(b + eps)``;
    ``cosine``: cosine similarity of the raw vectors; ``median_log10_ratio``: median of
    ``log10((a + eps)/(b + eps))`` over entries where either is positive (0 means same scale).
    """
    _check_importance(a, "a")
    _check_importance(b, "b")
    if set(a) != set(b):
        raise ValueError(f"importances have different keys: {sorted(set(a) ^ set(b))[:5]}")
    names = sorted(a)
    for k in names:
        if a[k].shape != b[k].shape:
            raise ValueError(f"{k!r}: shapes {tuple(a[k].shape)} and {tuple(b[k].shape)} differ")
    fa, fb = _flat(a, names), _flat(b, names)
    if fa.numel() < 2:
        raise ValueError("need at least two entries to compare")
    check_array(fa, "a")
    check_array(fb, "b")
    eps = check_scalar(eps, "eps", "real", min=0.0, inclusive="neither")
    la, lb = torch.log(fa + eps).numpy(), torch.log(fb + eps).numpy()
    either = ((fa > 0) | (fb > 0)).numpy()
    return {
        "spearman": float(spearmanr(fa.numpy(), fb.numpy()).statistic),
        "pearson_log": float(np.corrcoef(la, lb)[0, 1]),
        "cosine": float(torch.dot(fa, fb) / (fa.norm() * fb.norm()).clamp_min(1e-300)),
        "median_log10_ratio": float(np.median((la - lb)[either]) / math.log(10)) if either.any() else 0.0,
    }


# ----------------------------------------------------------------------------- merging

def _check_dict_list(values: Any, name: str) -> list[Mapping[str, Tensor]]:
    """``values`` as a non-empty list of mappings ``{name: tensor}``."""
    if isinstance(values, Mapping) or values is None or isinstance(values, (str, bytes)) \
            or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a non-empty sequence of state dicts, got {type(values).__name__}")
    out = list(values)
    if not out:
        raise ValueError(f"{name} must be a non-empty sequence of state dicts, got an empty one")
    for i, sd in enumerate(out):
        check_instance(sd, f"{name}[{i}]", Mapping, "a state dict (mapping name -> tensor)")
    return out


def _check_state_dicts(state_dicts: Sequence[Mapping[str, Tensor]]) -> list[str]:
    state_dicts = _check_dict_list(state_dicts, "state_dicts")
    keys = list(state_dicts[0])
    for i, sd in enumerate(state_dicts[1:], start=1):
        if set(sd) != set(keys):
            raise ValueError(f"state dict {i} has different parameter names: {sorted(set(sd) ^ set(keys))[:5]}")
        for k in keys:
            if sd[k].shape != state_dicts[0][k].shape:
                raise ValueError(f"{k!r}: shape {tuple(sd[k].shape)} in state dict {i}, "
                                 f"{tuple(state_dicts[0][k].shape)} in state dict 0")
    return keys


def _weights(weights: Sequence[float] | None, k: int) -> list[float]:
    if weights is None:
        return [1.0 / k] * k
    w = [float(x) for x in check_array(weights, "weights", ndim=1, dtype=float)]
    if len(w) != k or any(x < 0 for x in w) or sum(w) <= 0:
        raise ValueError(f"weights must be {k} non-negative numbers with a positive sum, got {weights!r}")
    return [x / sum(w) for x in w]


def average_merge(state_dicts: Sequence[Mapping[str, Tensor]], weights: Sequence[float] | None = None
                  ) -> dict[str, Tensor]:
    """Weighted parameter average (plain averaging when ``weights`` is None): the merging baseline."""
    keys = _check_state_dicts(state_dicts)
    w = _weights(weights, len(state_dicts))
    return {k: sum(wi * sd[k] for wi, sd in zip(w, state_dicts, strict=True)) if state_dicts[0][k].is_floating_point()
            else state_dicts[0][k].clone() for k in keys}


def fisher_merge(
    state_dicts: Sequence[Mapping[str, Tensor]],
    importances: Sequence[Mapping[str, Tensor]],
    weights: Sequence[float] | None = None,
    *,
    minimal_fisher_weight: float = 1e-8,
    normalize_fisher_weight: bool = False,
    exclude_param_names_regex: Sequence[str] = (),
) -> dict[str, Tensor]:
    """Fisher merging ``θ* = Σ_k λ_k F_k θ_k / Σ_k λ_k F_k`` elementwise (Matena & Raffel 2022, Eq. 3).

    ``importances[k]`` is model k's diagonal Fisher (or Squisher); ``minimal_fisher_weight`` is added
    to every F so that entries with zero importance everywhere fall back to the plain average.
    ``normalize_fisher_weight`` divides each model's F by its global L2 norm first.  Entries whose
    name matches ``exclude_param_names_regex``, or that have no importance (buffers), are averaged.
    Option names follow FusionBench's ``FisherMergingAlgorithm``.
    """
    keys = _check_state_dicts(state_dicts)
    importances = _check_dict_list(importances, "importances")
    if len(importances) != len(state_dicts):
        raise ValueError(f"got {len(importances)} importances for {len(state_dicts)} state dicts")
    minimal_fisher_weight = check_scalar(minimal_fisher_weight, "minimal_fisher_weight", "real", min=0.0)
    normalize_fisher_weight = check_bool(normalize_fisher_weight, "normalize_fisher_weight")
    exclude_param_names_regex = check_sequence(
        exclude_param_names_regex, "exclude_param_names_regex",
        item=lambda r, name: check_instance(r, name, str, "a regular expression string"))
    w = _weights(weights, len(state_dicts))
    fisher_keys = set(importances[0])
    for i, imp in enumerate(importances):
        if set(imp) != fisher_keys:
            raise ValueError(f"importance {i} covers different parameters: {sorted(set(imp) ^ fisher_keys)[:5]}")
        if not set(imp) <= set(keys):
            raise ValueError(f"importance {i} names parameters not in the state dicts: "
                             f"{sorted(set(imp) - set(keys))[:5]}")
    if normalize_fisher_weight:
        norms = [float(_flat(imp, sorted(fisher_keys)).norm()) or 1.0 for imp in importances]
        importances = [{k: v / nrm for k, v in imp.items()} for imp, nrm in zip(importances, norms, strict=True)]
    excluded = [re.compile(r) for r in exclude_param_names_regex]
    merged = average_merge(state_dicts, w)
    for k in keys:
        if k not in fisher_keys or any(r.match(k) for r in excluded):
            continue
        for i, imp in enumerate(importances):
            if imp[k].shape != state_dicts[i][k].shape:
                raise ValueError(f"importance {i} of {k!r} has shape {tuple(imp[k].shape)}, the parameter "
                                 f"{tuple(state_dicts[i][k].shape)}")
        f = [wi * (imp[k].to(sd[k]) + minimal_fisher_weight) for wi, imp, sd in zip(w, importances, state_dicts,
                                                                                   strict=True)]
        num = sum(fi * sd[k] for fi, sd in zip(f, state_dicts, strict=True))
        den = sum(f)
        merged[k] = torch.where(den > 0, num / torch.where(den > 0, den, 1.0), merged[k])
    return merged


def task_arithmetic(base: Mapping[str, Tensor], finetuned: Sequence[Mapping[str, Tensor]],
                    alphas: float | Sequence[float] = 1.0) -> dict[str, Tensor]:
    """``θ0 + Σ_t α_t (θ_t − θ0)``: the UGM baseline."""
    check_instance(base, "base", Mapping, "a state dict (mapping name -> tensor)")
    finetuned = _check_dict_list(finetuned, "finetuned")
    keys = _check_state_dicts([base, *finetuned])
    a = _alphas(alphas, len(finetuned))
    return {k: base[k] + sum(at * (ft[k] - base[k]) for at, ft in zip(a, finetuned, strict=True))
            if base[k].is_floating_point() else base[k].clone() for k in keys}


def _alphas(alphas: float | Sequence[float], t: int) -> list[float]:
    if isinstance(alphas, numbers.Real):
        return [check_scalar(alphas, "alphas", "real", min=0.0)] * t
    a = [float(x) for x in check_array(alphas, "alphas", ndim=1, dtype=float)]
    if len(a) != t or any(x < 0 for x in a):
        raise ValueError(f"alphas must be a non-negative number or {t} of them, got {alphas!r}")
    return a


def ugm_merge(
    base: Mapping[str, Tensor],
    finetuned: Sequence[Mapping[str, Tensor]],
    importances: Sequence[Mapping[str, Tensor]],
    alphas: float | Sequence[float] = 1.0,
    prior_precision: float = 1.0,
) -> dict[str, Tensor]:
    """Uncertainty-based gradient matching (Daheim et al., ICLR 2024, Eq. 9 with diagonal Fishers).

    ``θ* = θ0 + Σ_t α_t (δ + Σ_s α_s F_s)^{-1} (δ + F_t) (θ_t − θ0)`` elementwise, with ``F_t`` the
    Fisher (or Squisher) of task t at ``θ_t`` and ``δ = prior_precision`` the scalar prior precision;
    the absolute scale of F matters here (``δ → ∞`` gives task arithmetic).  Entries without
    importance (buffers) follow task arithmetic.
    """
    check_instance(base, "base", Mapping, "a state dict (mapping name -> tensor)")
    finetuned = _check_dict_list(finetuned, "finetuned")
    keys = _check_state_dicts([base, *finetuned])
    importances = _check_dict_list(importances, "importances")
    if len(importances) != len(finetuned):
        raise ValueError(f"got {len(importances)} importances for {len(finetuned)} fine-tuned models")
    check_scalar(prior_precision, "prior_precision", "real", min=0.0, inclusive="neither")
    a = _alphas(alphas, len(finetuned))
    merged = task_arithmetic(base, finetuned, a)
    for k in keys:
        if not all(k in imp for imp in importances):
            if any(k in imp for imp in importances):
                raise ValueError(f"{k!r} has an importance for some tasks only")
            continue
        f = [imp[k].to(base[k]) for imp in importances]
        precision = prior_precision + sum(at * ft for at, ft in zip(a, f, strict=True))
        step = sum(at * (prior_precision + ft) * (th[k] - base[k]) for at, ft, th in zip(a, f, finetuned, strict=True))
        merged[k] = base[k] + step / precision
    return merged


# ----------------------------------------------------------------------------- pruning and masks

def _select(params: Mapping[str, Tensor], names: Iterable[str] | None) -> list[str]:
    chosen = [k for k, p in params.items() if p.ndim >= 2] if names is None else list(names)
    missing = [k for k in chosen if k not in params]
    if missing or not chosen:
        raise ValueError(f"nothing to select, or unknown parameter names {missing[:5]}")
    return chosen


def _fraction(name: str, value: float) -> float:
    return check_scalar(value, name, "real", min=0.0, max=1.0, inclusive="neither")


def top_fraction_masks(scores: Mapping[str, Tensor], keep_fraction: float, *, scope: str = "global"
                       ) -> dict[str, Tensor]:
    """Boolean masks keeping the ``keep_fraction`` highest-scoring entries (globally or per tensor).

    Ties are broken deterministically: among equal scores the later entry (in key order, then
    flattened index) is kept, so an all-equal score keeps the tail.
    """
    _check_importance(scores, "scores")
    keep_fraction = _fraction("keep_fraction", keep_fraction)
    check_choice(scope, "scope", ("global", "layer"))
    groups = [list(scores)] if scope == "global" else [[k] for k in scores]
    masks: dict[str, Tensor] = {}
    for names in groups:
        flat = _flat(scores, names)
        if torch.isnan(flat).any():
            raise ValueError(f"scores of {names[:3]} contain NaN")
        keep = int(round(keep_fraction * flat.numel()))
        order = torch.sort(flat, stable=True).indices
        mask = torch.zeros(flat.numel(), dtype=torch.bool)
        mask[order[flat.numel() - keep:]] = True
        offset = 0
        for k in names:
            size = scores[k].numel()
            masks[k] = mask[offset:offset + size].reshape(scores[k].shape).to(scores[k].device)
            offset += size
    return masks


def obd_prune(model: Params, importance: Mapping[str, Tensor], sparsity: float, *, scope: str = "global",
              names: Iterable[str] | None = None) -> dict[str, Tensor]:
    """One-shot optimal-brain-damage pruning: remove the ``sparsity`` fraction of lowest ``½ F θ²``.

    Prunes ``names`` (default: all parameters with ``ndim >= 2``, i.e. the weights); returns boolean
    keep-masks to use with ``apply_masks``.
    """
    params = _named_params(model)
    _check_importance(importance, "importance")
    chosen = _select(params, names)
    missing = [k for k in chosen if k not in importance]
    if missing:
        raise ValueError(f"no importance for {missing[:5]}")
    scores = {k: 0.5 * importance[k].to(params[k]) * params[k].detach() ** 2 for k in chosen}
    return top_fraction_masks(scores, 1.0 - _fraction("sparsity", sparsity), scope=scope)


def magnitude_prune(model: Params, sparsity: float, *, scope: str = "global",
                    names: Iterable[str] | None = None) -> dict[str, Tensor]:
    """Magnitude pruning baseline: remove the smallest ``|θ|``."""
    params = _named_params(model)
    scores = {k: params[k].detach().abs() for k in _select(params, names)}
    return top_fraction_masks(scores, 1.0 - _fraction("sparsity", sparsity), scope=scope)


def random_prune(model: Params, sparsity: float, *, seed: Seed = 0, scope: str = "global",
                 names: Iterable[str] | None = None) -> dict[str, Tensor]:
    """Random pruning baseline (seeded)."""
    params = _named_params(model)
    chosen = _select(params, names)
    scores = random_importance({k: params[k] for k in chosen}, seed)
    return top_fraction_masks(scores, 1.0 - _fraction("sparsity", sparsity), scope=scope)


def apply_masks(model: nn.Module | Mapping[str, Tensor], masks: Mapping[str, Tensor], *, inplace: bool = False
                ) -> nn.Module | dict[str, Tensor]:
    """Zero the entries where ``masks`` is False; a new state dict unless ``inplace`` (then the module)."""
    check_instance(model, "model", (nn.Module, Mapping), "an nn.Module or a state dict")
    check_instance(masks, "masks", Mapping, "a mapping parameter name -> boolean tensor")
    if check_bool(inplace, "inplace"):
        if not isinstance(model, nn.Module):
            raise TypeError("inplace=True needs an nn.Module")
        params = dict(model.named_parameters())
        _check_mask_names(masks, params)
        with torch.no_grad():
            for k, m in masks.items():
                params[k].mul_(m.to(params[k]))
        return model
    state = {k: v.detach().clone() for k, v in (model.state_dict() if isinstance(model, nn.Module)
                                                else dict(model)).items()}
    _check_mask_names(masks, state)
    for k, m in masks.items():
        state[k] = state[k] * m.to(state[k])
    return state


def _check_mask_names(masks: Mapping[str, Tensor], params: Mapping[str, Tensor]) -> None:
    for k, m in masks.items():
        if k not in params or m.shape != params[k].shape:
            raise ValueError(f"mask {k!r} has no parameter of shape {tuple(m.shape)}")


def fish_mask(importance: Mapping[str, Tensor], keep_fraction: float, *, names: Iterable[str] | None = None
              ) -> dict[str, Tensor]:
    """FISH mask (Sung et al. 2021): the ``keep_fraction`` entries with the largest importance, globally.

    ``names`` restricts the mask to some parameters (default all keys); the others stay frozen.
    """
    _check_importance(importance, "importance")
    chosen = list(importance) if names is None else _select(importance, names)
    return top_fraction_masks({k: importance[k] for k in chosen}, keep_fraction)


def random_mask(model: Params, keep_fraction: float, *, seed: Seed = 0, names: Iterable[str] | None = None
                ) -> dict[str, Tensor]:
    """A random sparse fine-tuning mask of the same density (the FISH-mask baseline)."""
    params = _named_params(model)
    chosen = list(params) if names is None else _select(params, names)
    return top_fraction_masks(random_importance({k: params[k] for k in chosen}, seed), keep_fraction)


def masked_finetune(model: nn.Module, masks: Mapping[str, Tensor], X: Tensor, y: Tensor, **train_kwargs: Any
                    ) -> torch.optim.Optimizer:
    """Fine-tune only the entries where ``masks`` is True (others, and unmasked parameters, stay fixed).

    Gradients are multiplied by the mask through tensor hooks and parameters without a mask are
    frozen; training is ``icml25.utils.nn.train_classifier(model, X, y, **train_kwargs)``
    with a fresh optimizer (no weight decay, so frozen entries are bit-identical afterwards).
    """
    check_instance(model, "model", nn.Module, "an nn.Module")
    _check_importance(masks, "masks")
    check_tensor(X, "X", finite=True)
    check_tensor(y, "y", ndim=1)
    params = dict(model.named_parameters())
    _check_mask_names(masks, params)
    if train_kwargs.get("weight_decay", 0.0) != 0.0:
        raise ValueError("masked_finetune keeps frozen entries fixed only without weight decay")
    if isinstance(train_kwargs.get("optimizer"), torch.optim.Optimizer):
        raise ValueError("pass an optimizer class (a fresh optimizer is built over the masked parameters)")
    trainable = [p for k, p in params.items() if k in masks]
    factory = train_kwargs.pop("optimizer", None) or torch.optim.Adam
    opt = factory(trainable, lr=train_kwargs.pop("lr", 1e-3))
    handles = [params[k].register_hook(lambda g, m=m: g * m.to(g)) for k, m in masks.items()]
    try:
        return train_classifier(model, X, y, optimizer=opt, **train_kwargs)
    finally:
        for h in handles:
            h.remove()


# ----------------------------------------------------------------------------- EWC

class EWCPenalty:
    """Elastic weight consolidation ``(λ/2) Σ_t Σ_i F_i^t (θ_i − θ_i^t)²`` (Kirkpatrick et al. 2017).

    Call ``consolidate(importance, model)`` at the end of each task with that task's Fisher (or
    Squisher); ``penalty(model)`` is then added to the next task's loss.  ``mode="separate"`` keeps one
    (F, anchor) per task; ``mode="online"`` keeps ``F ← decay·F + F_t`` and the latest anchor
    (Avalanche's ``EWCPlugin`` options).  Parameters without importance are not penalised.
    """

    def __init__(self, lam: float, *, mode: str = "separate", decay: float = 1.0) -> None:
        self.lam = check_scalar(lam, "lam", "real", min=0.0)
        self.mode = check_choice(mode, "mode", ("separate", "online"))
        self.decay = check_scalar(decay, "decay", "real", min=0.0, max=1.0)
        self.tasks: list[tuple[Importance, dict[str, Tensor]]] = []

    def consolidate(self, importance: Mapping[str, Tensor], model: Params) -> None:
        """Record a finished task: its importance and the parameters (anchor) at its end."""
        _check_importance(importance, "importance")
        params = _named_params(model)
        unknown = [k for k in importance if k not in params]
        if unknown:
            raise ValueError(f"importance names parameters the model does not have: {unknown[:5]}")
        for k, f in importance.items():
            if f.shape != params[k].shape:
                raise ValueError(f"importance of {k!r} has shape {tuple(f.shape)}, "
                                 f"the parameter {tuple(params[k].shape)}")
        imp = {k: f.detach().clone() for k, f in importance.items()}
        anchor = {k: params[k].detach().clone() for k in imp}
        if self.mode == "online" and self.tasks:
            old, _ = self.tasks[0]
            imp = {k: self.decay * old.get(k, 0.0) + f for k, f in imp.items()}
            self.tasks = []
        self.tasks.append((imp, anchor))

    def __call__(self, model: Params) -> Tensor:
        """The penalty at ``model``'s current parameters (differentiable)."""
        params = _named_params(model)
        total = None
        for imp, anchor in self.tasks:
            for k, f in imp.items():
                term = (f * (params[k] - anchor[k]) ** 2).sum()
                total = term if total is None else total + term
        if total is None:
            return torch.zeros((), device=next(iter(params.values())).device)
        return 0.5 * self.lam * total


def ewc_loss(penalty: EWCPenalty, model: nn.Module,
             loss_fn: Callable[[Tensor, Tensor], Tensor] = nn.functional.cross_entropy
             ) -> Callable[[Tensor, Tensor], Tensor]:
    """``loss_fn(out, y) + penalty(model)``, shaped for ``train_classifier(loss_fn=...)``."""
    check_instance(penalty, "penalty", EWCPenalty)
    check_instance(model, "model", nn.Module, "an nn.Module")
    check_callable(loss_fn, "loss_fn")
    return lambda out, y: loss_fn(out, y) + penalty(model)

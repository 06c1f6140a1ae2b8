"""The Fisher diagonal of an MLP classifier on scikit-learn's digits (64-256-10 trained with Adam, lr 1e-3,
batch 32, as in the reproduction), all training examples: ours (`icml25.optim.fisher_diagonal`) against
BackPACK and curvlinops, and the Squisher (`read_squisher`, Adam's `v` scaled by N·B) against the exact diagonal.

* The empirical Fisher diagonal is the sum of squared per-example gradients of the summed cross-entropy:
  BackPACK's `SumGradSquared`. The exact (class-sum) Fisher diagonal equals the diagonal of the generalised
  Gauss-Newton matrix for softmax cross-entropy: BackPACK's `DiagGGNExact`. Both agree with ours to rounding in
  float64. Since our Linear-layer path (`method="auto"`, which picks `"linear"` for an MLP) squares the layers'
  output gradients and inputs as BackPACK does, the times are level (EF) or ahead (exact: BackPACK propagates a
  C-column square root of the loss Hessian through every layer, we run C batched backward passes). The generic
  per-example `vmap` path (`method="vmap"`, for models that are not plain MLPs) is several times behind BackPACK:
  it forms every per-example gradient.
* curvlinops has no exact diagonal: `hutchinson_diag(EFLinearOperator, k)` is an unbiased stochastic estimate
  from k matrix-vector products with the empirical Fisher (each a pass over the data). Its time is that of k
  products, so it can be far cheaper than any exact diagonal, at a large relative error; the rows give both.
  The exact agreement with curvlinops is checked on a small MLP through the dense EF matrix (`EF @ I`).
* The Squisher costs no pass over the data (a rescaling of the optimizer's state): it is thousands of times
  faster than BackPACK's exact diagonal and ranks the parameters almost like it (Spearman), but it is an
  approximation (trajectory average, empirical labels, mini-batch means), so its relative error is far behind
  an exact computation's.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from icml25.data.tensors import digits_tensors
from icml25.harness.bench import Agreement, Comparison, compare_times
from icml25.harness.threads import single_thread
from icml25.optim.squisher import compare_importance, fisher_diagonal, read_squisher
from icml25.utils.nn import make_mlp, train_classifier

PEERS = {"backpack": "BackPACK", "curvlinops": "curvlinops"}
BATCH = 32


def _relative(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """``max |a - b| / max |b|`` over all entries."""
    diff = max(float((a[k].double() - b[k].double()).abs().max()) for k in b)
    return diff / max(float(b[k].double().abs().max()) for k in b)


def _rel_l2(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """``||a - b|| / ||b||`` over all entries."""
    flat = lambda d: torch.cat([d[k].double().reshape(-1) for k in sorted(b)])  # noqa: E731
    return float((flat(a) - flat(b)).norm() / flat(b).norm())


def _backpack(model: nn.Module, X: torch.Tensor, y: torch.Tensor, extension: str) -> dict[str, torch.Tensor]:
    """BackPACK's ``SumGradSquared`` or ``DiagGGNExact`` of the summed cross-entropy."""
    from backpack import backpack, extend
    from backpack.extensions import DiagGGNExact, SumGradSquared

    ext, attr = {"sgs": (SumGradSquared, "sum_grad_squared"), "ggn": (DiagGGNExact, "diag_ggn_exact")}[extension]
    model.zero_grad()
    loss = extend(nn.CrossEntropyLoss(reduction="sum"))
    with backpack(ext()):
        loss(model(X), y).backward()
    return {k: getattr(p, attr).detach().clone() for k, p in model.named_parameters()}


def _extended(model: nn.Module) -> nn.Module:
    """A BackPACK-extended copy (its backward hooks stay off our model)."""
    from backpack import extend

    return extend(copy.deepcopy(model))


def _ef_operator(model: nn.Module, X: torch.Tensor, y: torch.Tensor):
    from curvlinops import EFLinearOperator

    return EFLinearOperator(model, nn.CrossEntropyLoss(reduction="sum"), list(model.parameters()), [(X, y)],
                            check_deterministic=False)


def _unflatten(vector: torch.Tensor, model: nn.Module) -> dict[str, torch.Tensor]:
    out, offset = {}, 0
    for k, p in model.named_parameters():
        out[k] = vector[offset:offset + p.numel()].reshape(p.shape)
        offset += p.numel()
    return out


def _hutchinson(model: nn.Module, X: torch.Tensor, y: torch.Tensor, matvecs: int, seed: int) -> dict[str, torch.Tensor]:
    """curvlinops' Hutchinson estimate of the EF diagonal from ``matvecs`` EF-vector products."""
    from curvlinops import hutchinson_diag

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return _unflatten(hutchinson_diag(_ef_operator(model, X, y), matvecs), model)


def _curvlinops_dense_agreement(seed: int, n: int) -> float:
    """Ours against the diagonal of curvlinops' dense EF matrix, on a 64-8-10 MLP in float64."""
    d = digits_tensors(seed=seed)
    X, y = d.X_train[:n].double(), d.y_train[:n]
    model = make_mlp([64, 8, 10], seed=seed).double()
    ef = _ef_operator(model, X, y)
    dense = ef @ torch.eye(ef.shape[1], dtype=torch.float64)
    return _relative(fisher_diagonal(model, X, y, mode="empirical"), _unflatten(dense.diagonal(), model))


def bench(size: str, seed: int) -> list:
    hidden, epochs, n, repeats, matvecs = {"smoke": (32, 2, 200, 2, 4), "full": (256, 60, None, 9, 10)}[size]
    rows = []
    with single_thread():
        d = digits_tensors(seed=seed)
        X, y = (d.X_train, d.y_train) if n is None else (d.X_train[:n], d.y_train[:n])
        model = make_mlp([64, hidden, 10], seed=seed)
        opt = train_classifier(model, X, y, epochs=epochs, batch_size=BATCH, lr=1e-3, seed=seed)
        task = f"MLP 64-{hidden}-10, {len(X)} digits"

        # Agreement in float64.
        m64 = copy.deepcopy(model).double()
        X64 = X.double()
        bp64 = _extended(m64)
        rows.append(Agreement(f"{task}, float64", "empirical Fisher diagonal vs BackPACK SumGradSquared "
                              "(max difference / max entry)",
                              _relative(fisher_diagonal(m64, X64, y, mode="empirical"), _backpack(bp64, X64, y, "sgs")),
                              tolerance=1e-10))
        exact64 = _backpack(bp64, X64, y, "ggn")
        rows.append(Agreement(f"{task}, float64", "exact Fisher diagonal vs BackPACK DiagGGNExact "
                              "(max difference / max entry)",
                              _relative(fisher_diagonal(m64, X64), exact64), tolerance=1e-10))
        rows.append(Agreement("MLP 64-8-10, 200 digits, float64", "empirical Fisher diagonal vs the diagonal of "
                              "curvlinops' dense EFLinearOperator (max difference / max entry)",
                              _curvlinops_dense_agreement(seed, 200), tolerance=1e-10))

        # Time in float32, ours (default method="auto" -> the Linear-layer path) against BackPACK.
        bp = _extended(model)
        rows.append(compare_times(f"{task}: empirical Fisher diagonal, ours vs BackPACK SumGradSquared",
                                  lambda: fisher_diagonal(model, X, y, mode="empirical"),
                                  lambda: _backpack(bp, X, y, "sgs"), repeats=repeats))
        rows.append(compare_times(f"{task}: exact Fisher diagonal, ours vs BackPACK DiagGGNExact",
                                  lambda: fisher_diagonal(model, X), lambda: _backpack(bp, X, y, "ggn"),
                                  repeats=repeats))
        rows.append(compare_times(f"{task}: empirical Fisher diagonal, our generic vmap path (method='vmap') "
                                  "vs BackPACK SumGradSquared",
                                  lambda: fisher_diagonal(model, X, y, mode="empirical", method="vmap"),
                                  lambda: _backpack(bp, X, y, "sgs"), repeats=max(2, repeats // 3)))

        # curvlinops: a stochastic estimate, not the exact diagonal.
        ef_exact = _backpack(bp64, X64, y, "sgs")
        hutch = _hutchinson(model, X, y, matvecs, seed)
        ours_ef = fisher_diagonal(model, X, y, mode="empirical")
        label = f"{task}: EF diagonal, ours exact vs curvlinops hutchinson_diag ({matvecs} EF-vector products)"
        rows.append(Comparison(label, "relative L2 error against the float64 EF diagonal", _rel_l2(ours_ef, ef_exact),
                               _rel_l2(hutch, ef_exact), better="lower"))
        rows.append(compare_times(label, lambda: fisher_diagonal(model, X, y, mode="empirical"),
                                  lambda: _hutchinson(model, X, y, matvecs, seed), repeats=repeats))

        # The Squisher against the exact diagonal (BackPACK DiagGGNExact) and against curvlinops' cheap estimate.
        squisher = read_squisher(opt, model, n_data=len(X), batch_size=BATCH)
        exact32 = _backpack(bp, X, y, "ggn")
        label = f"{task}: Squisher (Adam's v, N·B·v) vs BackPACK's exact Fisher diagonal (DiagGGNExact)"
        rows.append(Comparison(label, "Spearman with the float64 exact Fisher diagonal",
                               compare_importance(squisher, exact64)["spearman"],
                               compare_importance(exact32, exact64)["spearman"], better="higher"))
        rows.append(Comparison(label, "relative L2 error against the float64 exact Fisher diagonal",
                               _rel_l2(squisher, exact64), _rel_l2(exact32, exact64), better="lower"))
        rows.append(compare_times(label, lambda: read_squisher(opt, model, n_data=len(X), batch_size=BATCH),
                                  lambda: _backpack(bp, X, y, "ggn"), repeats=repeats))
        label = f"{task}: cheap diagonal estimates, Squisher vs curvlinops hutchinson_diag ({matvecs} products)"
        rows.append(Comparison(label, "Spearman with the float64 exact Fisher diagonal",
                               compare_importance(squisher, exact64)["spearman"],
                               compare_importance(hutch, exact64)["spearman"], better="higher"))
        rows.append(compare_times(label, lambda: read_squisher(opt, model, n_data=len(X), batch_size=BATCH),
                                  lambda: _hutchinson(model, X, y, matvecs, seed), repeats=repeats))
    return rows

"""Adversarial attacks and adversarial training for PyTorch classifiers: FGSM and PGD under ℓ∞ and ℓ2.

Shared attack toolkit of the package (first used by ``cgro``, Li & Li, ICML 2025).  ``pgd`` is the
projected gradient ascent of Madry et al. (2018), ``δ ← Π_{‖δ‖≤ε}(δ + α·sign ∇_δ ℓ)`` (ℓ∞) or
``δ ← Π(δ + α·∇/‖∇‖₂)`` (ℓ2), with a random start in the ball, restarts and clipping to the data range;
``fgsm`` is its one-step case with the random start of Wong et al. (2020) (α = 1.25ε).
``adversarial_train`` minimises ``(1/N) Σ_i max_{‖δ‖≤ε} ℓ(f(x_i + δ), y_i)`` with the inner maximum
replaced by the attack, and logs clean/robust train/test accuracy per epoch (``History``).

Models return either class logits ``(n, C)`` (cross-entropy, integer labels) or one score ``(n,)``
(logistic loss, labels in {-1, +1}); ``loss="auto"`` picks by the output shape.  Attacks put the model
in eval mode and restore its mode; they never touch parameter gradients.

Example
-------
>>> import torch
>>> from icml25.data.tensors import digits_tensors
>>> from icml25.utils.nn import make_mlp, train_classifier
>>> from icml25.learning_theory.attacks import pgd, robust_accuracy
>>> data = digits_tensors(test_size=0.2, seed=0)
>>> model = make_mlp([64, 64, 10], seed=0)
>>> _ = train_classifier(model, data.X_train, data.y_train, epochs=5)
>>> x_adv = pgd(model, data.X_test[:8], data.y_test[:8], eps=0.1, steps=10)
>>> bool((x_adv - data.X_test[:8]).abs().max() <= 0.1 + 1e-6)
True
>>> 0.0 <= robust_accuracy(model, data.X_test, data.y_test, eps=0.1) <= 1.0
True
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional

from icml25.utils.random import Seed, int_seed, torch_generator
from icml25.utils.validation import (
    check_bool,
    check_callable,
    check_choice,
    check_instance,
    check_scalar,
    check_sequence,
    check_tensor,
)

NORMS = ("linf", "l2")
LOSSES = ("auto", "ce", "logistic")
ATTACKS = ("pgd", "fgsm", "none")

Clip = tuple[float, float] | None


def _check_norm(norm: str) -> str:
    return check_choice(norm, "norm", NORMS)


def _loss_kind(output: torch.Tensor, loss: str) -> str:
    check_choice(loss, "loss", LOSSES)
    if loss != "auto":
        return loss
    return "logistic" if output.ndim == 1 or output.shape[-1] == 1 else "ce"


def classification_loss(output: torch.Tensor, y: torch.Tensor, loss: str = "auto",
                        reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy on logits ``(n, C)`` with integer labels, or logistic ``log(1 + e^{-y f})`` on scores.

    ``loss="auto"`` uses the logistic loss when ``output`` is ``(n,)`` or ``(n, 1)`` (labels in {-1, +1})
    and cross-entropy otherwise.  ``reduction`` is ``"mean"``, ``"sum"`` or ``"none"``.
    """
    if _loss_kind(output, loss) == "ce":
        return functional.cross_entropy(output, y, reduction=reduction)
    values = functional.softplus(-y.to(output.dtype) * output.reshape(output.shape[0]))
    return {"mean": values.mean, "sum": values.sum, "none": lambda: values}[reduction]()


def correct(output: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Boolean mask of correct predictions: arg-max for logits, sign of the score for ``(n,)`` outputs."""
    if output.ndim == 1 or output.shape[-1] == 1:
        return torch.sign(output.reshape(output.shape[0])) == y.to(output.dtype)
    return output.argmax(dim=-1) == y


def _check_model(model: nn.Module) -> nn.Module:
    return check_instance(model, "model", nn.Module, "a torch.nn.Module")


def check_clip(clip: Clip) -> Clip:
    """``None`` or a pair ``(low, high)`` of finite numbers with ``low < high``."""
    if clip is None:
        return None
    bounds = check_sequence(clip, "clip", item=lambda v, name: check_scalar(v, name, "real"))
    if len(bounds) != 2 or not bounds[0] < bounds[1]:
        raise ValueError(f"clip must be None or (low, high) with low < high, got {clip!r}")
    return bounds[0], bounds[1]


def _check_data(x: torch.Tensor, y: torch.Tensor, names: tuple[str, str] = ("x", "y")) -> None:
    """``x`` a finite floating tensor ``(n, ...)`` with ``n >= 1`` and ``y`` a label tensor ``(n,)``."""
    check_tensor(x, names[0], floating=True, finite=True)
    check_tensor(y, names[1], ndim=1)
    if x.ndim < 2 or x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"{names[0]} must be (n, ...) and {names[1]} (n,) with n > 0, got {tuple(x.shape)} "
                         f"and {tuple(y.shape)}")


def _check_inputs(x: torch.Tensor, y: torch.Tensor, clip: Clip, clip_inputs: bool,
                  names: tuple[str, str] = ("x", "y")) -> torch.Tensor:
    _check_data(x, y, names)
    check_bool(clip_inputs, "clip_inputs")
    clip = check_clip(clip)
    if clip is None:
        return x
    lo, hi = clip
    outside = (x < lo) | (x > hi)
    if bool(outside.any()):
        if not clip_inputs:
            raise ValueError(f"{names[0]} lies outside the clip range {clip} ({int(outside.sum())} entries); "
                             "rescale them, pass clip=None, or clip_inputs=True to clip them")
        warnings.warn(f"clipping {int(outside.sum())} input entries to {clip}", RuntimeWarning, stacklevel=3)
        x = x.clamp(lo, hi)
    return x


def _flat_norm(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(t.shape[0], -1).norm(dim=1).reshape(-1, *([1] * (t.ndim - 1)))


def _project(delta: torch.Tensor, x: torch.Tensor, eps: float, norm: str, clip: Clip) -> torch.Tensor:
    if norm == "linf":
        delta = delta.clamp(-eps, eps)
    else:
        delta = delta * torch.clamp(eps / _flat_norm(delta).clamp_min(1e-12), max=1.0)
    if clip is not None:
        delta = (x + delta).clamp(*clip) - x
    return delta


def _random_start(x: torch.Tensor, eps: float, norm: str, generator: torch.Generator) -> torch.Tensor:
    if norm == "linf":
        u = torch.rand(x.shape, generator=generator, dtype=x.dtype)
        return ((2 * u - 1) * eps).to(x.device)
    direction = torch.randn(x.shape, generator=generator, dtype=x.dtype)
    direction = direction / _flat_norm(direction).clamp_min(1e-12)
    n = x[0].numel()
    radius = torch.rand((x.shape[0],) + (1,) * (x.ndim - 1), generator=generator, dtype=x.dtype) ** (1.0 / n)
    return (direction * radius * eps).to(x.device)


def _ascend(model: nn.Module, x: torch.Tensor, y: torch.Tensor, delta: torch.Tensor, eps: float, alpha: float,
            steps: int, norm: str, clip: Clip, loss: str) -> torch.Tensor:
    for _ in range(steps):
        delta = delta.detach().requires_grad_(True)
        value = classification_loss(model(x + delta), y, loss, reduction="sum")
        (grad,) = torch.autograd.grad(value, delta)
        if norm == "linf":
            step = grad.sign()
        else:
            step = grad / _flat_norm(grad).clamp_min(1e-12)
        delta = _project(delta.detach() + alpha * step, x, eps, norm, clip)
    return delta.detach()


def pgd(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float, *, alpha: float | None = None,
        steps: int = 10, norm: str = "linf", random_start: bool = True, restarts: int = 1, clip: Clip = (0.0, 1.0),
        loss: str = "auto", seed: Seed | torch.Generator = 0, clip_inputs: bool = False) -> torch.Tensor:
    """Projected gradient descent attack (Madry et al. 2018); returns ``x + δ`` with ``‖δ‖ ≤ eps``.

    ``alpha`` defaults to ``eps / 4``.  With ``restarts > 1`` each example keeps the first restart that
    fools the model, otherwise the one with the highest loss.  ``clip=(low, high)`` keeps ``x + δ`` in the
    data range (``None`` for unconstrained inputs); inputs outside it raise unless ``clip_inputs=True``.
    """
    eps = check_scalar(eps, "eps", "real", min=0.0, inclusive="neither")
    alpha = eps / 4 if alpha is None else check_scalar(alpha, "alpha", "real", min=0.0, inclusive="neither")
    steps, restarts = check_scalar(steps, "steps", "int", min=1), check_scalar(restarts, "restarts", "int", min=1)
    norm = _check_norm(norm)
    check_bool(random_start, "random_start")
    _check_model(model)
    x = _check_inputs(x, y, clip, clip_inputs)
    generator = torch_generator(seed)
    was_training = model.training
    model.eval()
    try:
        best, best_loss, fooled = None, None, None
        for _ in range(restarts):
            start = _random_start(x, eps, norm, generator) if random_start else torch.zeros_like(x)
            delta = _ascend(model, x, y, _project(start, x, eps, norm, clip), eps, alpha, steps, norm, clip, loss)
            if restarts == 1:
                return (x + delta).detach()
            with torch.no_grad():
                out = model(x + delta)
                value, now_fooled = classification_loss(out, y, loss, reduction="none"), ~correct(out, y)
            if best is None:
                best, best_loss, fooled = delta, value, now_fooled
                continue
            take = ~fooled & (now_fooled | (value > best_loss))
            mask = take.reshape(-1, *([1] * (x.ndim - 1)))
            best = torch.where(mask, delta, best)
            best_loss, fooled = torch.where(take, value, best_loss), fooled | now_fooled
        return (x + best).detach()
    finally:
        model.train(was_training)


def fgsm(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float, *, alpha: float | None = None,
         norm: str = "linf", random_start: bool = True, clip: Clip = (0.0, 1.0), loss: str = "auto",
         seed: Seed | torch.Generator = 0, clip_inputs: bool = False) -> torch.Tensor:
    """One-step attack: FGSM (Goodfellow et al. 2015) or, with ``random_start`` (default), the "fast"
    variant of Wong et al. (2020) with ``alpha = 1.25 eps``; ``alpha`` defaults to ``eps`` without it."""
    eps = check_scalar(eps, "eps", "real", min=0.0, inclusive="neither")
    random_start = check_bool(random_start, "random_start")
    if alpha is None:
        alpha = 1.25 * eps if random_start else eps
    return pgd(model, x, y, eps, alpha=alpha, steps=1, norm=norm, random_start=random_start, clip=clip,
               loss=loss, seed=seed, clip_inputs=clip_inputs)


def perturb(model: nn.Module, x: torch.Tensor, y: torch.Tensor, attack: str, eps: float,
            **kwargs) -> torch.Tensor:
    """Dispatch to ``pgd``, ``fgsm`` or ``"none"`` (returns ``x``) by name."""
    check_choice(attack, "attack", ATTACKS)
    if attack == "none":
        return x
    if attack == "fgsm":
        kwargs.pop("steps", None)
        kwargs.pop("restarts", None)
        return fgsm(model, x, y, eps, **kwargs)
    return pgd(model, x, y, eps, **kwargs)


@torch.no_grad()
def clean_accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of ``X`` classified correctly (logits or ±1 scores); the model's mode is restored.

    ``X`` is a finite floating tensor ``(n, ...)`` with ``n >= 1``, ``y`` its labels ``(n,)``.
    """
    _check_model(model)
    _check_data(X, y, ("X", "y"))
    was_training = model.training
    model.eval()
    try:
        return float(correct(model(X), y).float().mean())
    finally:
        model.train(was_training)


def robust_accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, eps: float, attack: str = "pgd",
                    steps: int = 20, restarts: int = 1, alpha: float | None = None, norm: str = "linf",
                    clip: Clip = (0.0, 1.0), loss: str = "auto", batch_size: int | None = None,
                    seed: Seed | torch.Generator = 0, check_masking: bool = False) -> float:
    """Accuracy on adversarial examples of ``attack`` (default PGD-20, one restart) at radius ``eps``.

    ``batch_size`` bounds memory.  ``check_masking=True`` also runs FGSM and warns when PGD leaves more
    than 5 points *more* accuracy than FGSM (a sign of gradient masking or a too weak PGD).
    """
    if batch_size is not None:
        check_scalar(batch_size, "batch_size", "int", min=1)
    _check_model(model)
    check_choice(attack, "attack", ATTACKS)
    check_bool(check_masking, "check_masking")
    _check_data(X, y, ("X", "y"))
    check_clip(clip)
    generator = torch_generator(seed)
    size = batch_size or X.shape[0]
    hits = 0
    for start in range(0, X.shape[0], size):
        xb, yb = X[start:start + size], y[start:start + size]
        adv = perturb(model, xb, yb, attack, eps, steps=steps, restarts=restarts, alpha=alpha, norm=norm,
                      clip=clip, loss=loss, seed=generator)
        with torch.no_grad():
            was_training = model.training
            model.eval()
            hits += int(correct(model(adv), yb).sum())
            model.train(was_training)
    acc = hits / X.shape[0]
    if check_masking and attack == "pgd":
        one_step = robust_accuracy(model, X, y, eps=eps, attack="fgsm", norm=norm, clip=clip, loss=loss,
                                   batch_size=batch_size, seed=generator)
        if acc > one_step + 0.05:
            warnings.warn(f"PGD robust accuracy {acc:.3f} exceeds FGSM's {one_step:.3f} by more than 5 points: "
                          "possible gradient masking or too few PGD steps", RuntimeWarning, stacklevel=2)
    return acc


@dataclass
class History:
    """Per-epoch log of ``adversarial_train``.

    ``epochs`` lists the epochs at which accuracies were evaluated (0 = before training);
    ``train_loss`` and ``epoch_seconds`` have one entry per training epoch (the loss is the mean loss on
    the training inputs the optimizer saw, adversarial ones when attacking).
    """

    epochs: list[int] = field(default_factory=list)
    clean_train: list[float] = field(default_factory=list)
    robust_train: list[float] = field(default_factory=list)
    clean_test: list[float] = field(default_factory=list)
    robust_test: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    epoch_seconds: list[float] = field(default_factory=list)

    def final(self) -> dict[str, float]:
        """The last evaluated accuracies (keys ``clean_train``, ``robust_train``, ``clean_test``, ``robust_test``)."""
        names = ("clean_train", "robust_train", "clean_test", "robust_test")
        return {name: getattr(self, name)[-1] for name in names if getattr(self, name)}


def adversarial_train(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    eps: float,
    epochs: int,
    attack: str = "pgd",
    steps: int = 10,
    alpha: float | None = None,
    norm: str = "linf",
    clip: Clip = (0.0, 1.0),
    loss: str = "auto",
    batch_size: int | None = 64,
    optimizer: Callable[..., torch.optim.Optimizer] | torch.optim.Optimizer | None = None,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    eval_data: tuple[torch.Tensor, torch.Tensor] | None = None,
    eval_every: int | None = None,
    eval_steps: int = 20,
    eval_eps: float | None = None,
    callback: Callable[[int, nn.Module], None] | None = None,
    seed: Seed = 0,
) -> History:
    """Adversarial training (Madry et al. 2018): each mini-batch is replaced by ``attack``'s examples.

    ``attack="none"`` is standard training with the same loop (the baseline).  ``batch_size=None`` is
    full-batch training (e.g. gradient descent with ``optimizer=torch.optim.SGD``).  ``optimizer`` is a
    factory called as ``optimizer(params, lr=lr, weight_decay=weight_decay)`` (default Adam) or an
    optimizer instance.  Every ``eval_every`` epochs (and at 0 and at the end) the clean and PGD-``eval_steps``
    robust accuracies at ``eval_eps`` (default ``eps``) are logged on the training set and on ``eval_data``.
    ``callback(epoch, model)`` runs at epoch 0 and after every epoch (e.g. a ``DynamicsTracker``).
    """
    _check_model(model)
    check_choice(attack, "attack", ATTACKS)
    eps = check_scalar(eps, "eps", "real", min=0.0, inclusive="neither")
    eval_eps = eps if eval_eps is None else check_scalar(eval_eps, "eval_eps", "real", min=0.0, inclusive="neither")
    epochs = check_scalar(epochs, "epochs", "int", min=1)
    steps = check_scalar(steps, "steps", "int", min=1)
    eval_steps = check_scalar(eval_steps, "eval_steps", "int", min=1)
    _check_norm(norm)
    _check_inputs(X, y, clip, clip_inputs=False, names=("X", "y"))
    if batch_size is not None:
        check_scalar(batch_size, "batch_size", "int", min=1)
    if eval_every is not None:
        check_scalar(eval_every, "eval_every", "int", min=1)
    check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    check_scalar(weight_decay, "weight_decay", "real", min=0.0)
    if callback is not None:
        check_callable(callback, "callback")
    if eval_data is not None:
        pair = check_sequence(eval_data, "eval_data")
        if len(pair) != 2:
            raise ValueError(f"eval_data must be a pair (X, y), got {len(pair)} entries")
        _check_data(pair[0], pair[1], ("eval_data[0]", "eval_data[1]"))
    if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
        check_callable(optimizer, "optimizer")
    if isinstance(optimizer, torch.optim.Optimizer):
        opt = optimizer
    else:
        opt = (optimizer or torch.optim.Adam)(model.parameters(), lr=lr, weight_decay=weight_decay)
    seed = int_seed(seed)
    generator = torch_generator(seed)
    attack_generator = torch_generator(seed + 1)
    history = History()
    size = batch_size or X.shape[0]

    def evaluate(epoch: int) -> None:
        history.epochs.append(epoch)
        eval_seed = torch_generator(seed + 2 + epoch)
        sets = [(X, y, history.clean_train, history.robust_train)]
        if eval_data is not None:
            sets.append((eval_data[0], eval_data[1], history.clean_test, history.robust_test))
        for data_x, data_y, clean_log, robust_log in sets:
            clean_log.append(clean_accuracy(model, data_x, data_y))
            robust_log.append(robust_accuracy(model, data_x, data_y, eps=eval_eps, steps=eval_steps, norm=norm,
                                              clip=clip, loss=loss, seed=eval_seed))

    if eval_every is not None:
        evaluate(0)
    if callback is not None:
        callback(0, model)
    for epoch in range(1, epochs + 1):
        start_time = time.perf_counter()
        order = torch.randperm(X.shape[0], generator=generator).to(X.device) if batch_size else None
        total, seen = 0.0, 0
        for start in range(0, X.shape[0], size):
            idx = order[start:start + size] if order is not None else slice(None)
            xb, yb = X[idx], y[idx]
            xb = perturb(model, xb, yb, attack, eps, steps=steps, alpha=alpha, norm=norm, clip=clip, loss=loss,
                         seed=attack_generator)
            model.train()
            opt.zero_grad()
            value = classification_loss(model(xb), yb, loss)
            value.backward()
            opt.step()
            total += float(value.detach()) * xb.shape[0]
            seen += xb.shape[0]
        model.eval()
        history.train_loss.append(total / seen)
        history.epoch_seconds.append(time.perf_counter() - start_time)
        if eval_every is not None and (epoch % eval_every == 0 or epoch == epochs):
            evaluate(epoch)
        if callback is not None:
            callback(epoch, model)
    return history

"""CAN's clients and server strategy on the shared federated runtime, and a one-call driver (:func:`run_fcl`).

Every task ``t`` is a block of runtime rounds, each with a ``phase`` in its config:

* ``replay`` (t > 0, generative/real replay): the server sends the global model (the old model
  ``f_old`` for the task) and the synthetic pool of all old classes; each client measures how
  much it forgets each old class, allocates its buffer ``B`` over them and fills it from the pool;
  it replies with its allocation.
* ``train`` x ``rounds_per_task``: local training on the task's real data plus a replay batch,
  ``CE(x) + lambda_ce CE(x~) + lambda_kd T^2 KL(f_old(x~)/T || f(x~)/T)`` (old-class logits);
  FedAvg by sample counts.
* ``census`` and ``synthesize`` (t < T-1, client-side synthesis): clients report per-class sample
  counts ``n_{i,c}``; the top-k holders of each class (teaching clients) invert their own
  end-of-task local model for it and upload the samples, which join the pool.  Classes that no
  client can teach (nobody holds them, the teacher failed) are inverted by the server from the
  global model, as is every class under ``synthesis="server"`` (the MFCL/TARGET baseline).

Every phase goes through :func:`icml25.federated.simulate` (or Flower): all its messages are
counted by the ledger, and a client that fails in any phase is reported with its id.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from icml25.federated.can_fcl.metrics import average_accuracy, average_forgetting, backward_transfer
from icml25.federated.can_fcl.navigation import allocate_buffer, select_teachers, uniform_allocation
from icml25.federated.can_fcl.streams import Task, split_task_across_clients
from icml25.federated.can_fcl.synthesis import bn_statistics, invert, masked_logits
from icml25.federated.messages import FitIns, FitRes, MalformedMessageError
from icml25.federated.simulation import Client, History, Strategy, check_same_layout, simulate, weighted_average
from icml25.federated.torch_clients import load_arrays, module_to_arrays
from icml25.utils.random import Seed, int_seed, seeded, torch_generator
from icml25.utils.validation import (
    check_array,
    check_callable,
    check_choice,
    check_consistent_length,
    check_instance,
    check_scalar,
    check_sequence,
)

__all__ = ["METHODS", "CANConfig", "CANClient", "CANStrategy", "FCLResult", "fcl_mlp", "task_accuracy_evaluator",
           "forgetting_profile", "build_fcl", "run_fcl"]

Arrays = dict[str, np.ndarray]

#: Method presets: CAN, its two ablations and the paper's baselines (all share CANConfig's other options).
METHODS: dict[str, dict[str, object]] = {
    "can": {"replay": "synthetic", "synthesis": "client", "allocation": "adaptive"},
    "teachers_only": {"replay": "synthetic", "synthesis": "client", "allocation": "uniform"},
    "allocation_only": {"replay": "synthetic", "synthesis": "server", "allocation": "adaptive"},
    "server_gr": {"replay": "synthetic", "synthesis": "server", "allocation": "uniform"},
    "exemplar": {"replay": "real", "synthesis": "none", "allocation": "uniform"},
    "lwf": {"replay": "none", "synthesis": "none", "kd_on": "current"},
    "finetune": {"replay": "none", "synthesis": "none", "lambda_kd": 0.0},
}

_CHOICES = {
    "replay": ("synthetic", "real", "none"), "synthesis": ("client", "server", "none"),
    "allocation": ("adaptive", "uniform"), "forgetting_signal": ("probe", "global", "local"),
    "forgetting_measure": ("accuracy", "confidence"),
    "allocation_rule": ("linear", "softmax"), "teacher_statistics": ("class", "running"),
    "kd_on": ("replay", "current", "both"), "current_ce": ("seen", "task"),
}


@dataclass(frozen=True)
class CANConfig:
    """Options of the FCL runs; those marked (ours) are our reconstruction, not taken from the paper.

    Training: ``rounds_per_task`` FedAvg rounds of ``local_epochs`` Adam epochs (``lr``,
    ``batch_size``); loss weights ``lambda_ce``, ``lambda_kd``, ``kd_temperature`` (TARGET-style
    defaults, ours); ``kd_on`` which inputs carry the KD term; ``current_ce="seen"`` (CE on current
    data over all seen classes) or ``"task"`` (over the task's classes only, MFCL-style).
    Replay: ``replay`` synthetic / real exemplars / none; ``buffer_size`` B samples per client;
    ``allocation`` adaptive (forgetting-driven, CAN) or uniform; ``forgetting_signal``: ``"probe"``
    (ours: per-class accuracy on the pool of the old model after ``probe_epochs`` of plain
    fine-tuning on the client's new data, default one task's local training ``rounds_per_task *
    local_epochs``, i.e. what this client would forget without replay), ``"global"`` (the
    old global model as is: identical for all clients) or ``"local"`` (the client's last local
    model); ``forgetting_measure``: per-class ``"accuracy"`` a_{i,c} on the pool (the paper's) or mean
    probability of the true class (``"confidence"``, ours: accuracy on synthetic samples saturates);
    ``realloc_every`` R_a re-measures with the current local model every R_a train rounds
    (0: never); ``allocation_rule``/``allocation_eps``/``allocation_temperature`` of
    :func:`~icml25.federated.can_fcl.navigation.allocate_buffer`.
    Synthesis: ``synthesis`` by teaching clients, by the server (global model) or none;
    ``teachers_per_class`` k; ``teacher_statistics``: ``"class"`` (ours: a teaching client matches
    the BN statistics of its own samples of the class) or ``"running"`` (its model's BN running
    statistics); ``pool_per_class`` samples per class (default B); ``gen_steps_per_class``
    generator steps per synthesised class (equal budget for client and server synthesis);
    ``gen_batch``, ``z_dim``, ``lambda_bn``, ``lambda_div``, ``gen_lr`` of
    :func:`~icml25.federated.can_fcl.synthesis.invert`.
    """

    rounds_per_task: int = 5
    local_epochs: int = 2
    lr: float = 1e-3
    batch_size: int = 32
    lambda_ce: float = 1.0
    lambda_kd: float = 1.0
    kd_temperature: float = 2.0
    kd_on: str = "replay"
    current_ce: str = "seen"
    replay: str = "synthetic"
    buffer_size: int = 60
    allocation: str = "adaptive"
    forgetting_signal: str = "probe"
    forgetting_measure: str = "accuracy"
    probe_epochs: int | None = None
    realloc_every: int = 0
    allocation_rule: str = "linear"
    allocation_eps: float = 0.05
    allocation_temperature: float = 1.0
    synthesis: str = "client"
    teachers_per_class: int = 1
    teacher_statistics: str = "class"
    pool_per_class: int | None = None
    gen_steps_per_class: int = 150
    gen_batch: int = 64
    z_dim: int = 32
    lambda_bn: float = 1.0
    lambda_div: float = 1.0
    gen_lr: float = 1e-3

    def __post_init__(self) -> None:
        for name, allowed in _CHOICES.items():
            check_choice(getattr(self, name), name, allowed)
        for name in ("rounds_per_task", "local_epochs", "batch_size", "teachers_per_class", "gen_steps_per_class",
                     "gen_batch", "z_dim"):
            check_scalar(getattr(self, name), name, "int", min=1)
        for name in ("buffer_size", "probe_epochs", "realloc_every"):
            if getattr(self, name) is not None or name != "probe_epochs":
                check_scalar(getattr(self, name), name, "int", min=0)
        if self.pool_per_class is not None:
            check_scalar(self.pool_per_class, "pool_per_class", "int", min=1)
        for name in ("lr", "kd_temperature", "gen_lr", "allocation_temperature"):
            check_scalar(getattr(self, name), name, "real", min=0.0, inclusive="neither")
        for name in ("lambda_ce", "lambda_kd", "lambda_bn", "lambda_div", "allocation_eps"):
            check_scalar(getattr(self, name), name, "real", min=0.0)
        if self.replay == "synthetic" and self.synthesis == "none":
            raise ValueError("replay='synthetic' needs synthesis='client' or 'server'")

    @classmethod
    def for_method(cls, method: str, **overrides: object) -> CANConfig:
        """The preset of ``method`` (a key of :data:`METHODS`) with ``overrides`` applied."""
        check_choice(method, "method", sorted(METHODS))
        return cls(**{**METHODS[method], **overrides})

    @property
    def probe_length(self) -> int:
        """Epochs of the forgetting probe (default: one task's local training)."""
        return self.rounds_per_task * self.local_epochs if self.probe_epochs is None else self.probe_epochs

    @property
    def pool_size(self) -> int:
        return self.pool_per_class if self.pool_per_class is not None else max(1, self.buffer_size)


def fcl_mlp(in_dim: int = 64, n_classes: int = 10, hidden: int = 128, seed: Seed = 0) -> nn.Sequential:
    """The classifier of the quick experiment: ``in -> hidden (BN, ReLU) -> hidden (BN, ReLU) -> n_classes``.

    Initialised from ``seed`` without touching the caller's global torch RNG.
    """
    for name, value in (("in_dim", in_dim), ("n_classes", n_classes), ("hidden", hidden)):
        check_scalar(value, name, "int", min=1)
    with seeded(seed):
        return nn.Sequential(nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                             nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                             nn.Linear(hidden, n_classes))


def _check_generator_range(X: np.ndarray, name: str) -> None:
    """Synthetic replay imitates real features with a tanh generator: they must lie in [-1, 1]."""
    if X.size and (not np.all(np.isfinite(X)) or float(np.abs(X).max()) > 1.0):
        raise ValueError(f"{name} must lie in [-1, 1] with replay='synthetic' (the generator ends in tanh; "
                         f"rescale the features), got values in [{X.min():g}, {X.max():g}]")


def _server_round(server_round: object, n_rounds: int) -> int:
    return check_scalar(server_round, "server_round", "int", min=1, max=n_rounds)


def _check_arrays(arrays: object) -> None:
    check_instance(arrays, "arrays", Mapping, "a mapping name -> array")


def _check_results(results: object, failures: object) -> list[tuple[int, FitRes]]:
    def pair(item: object, name: str) -> tuple[int, FitRes]:
        if not isinstance(item, (tuple, list)) or len(item) != 2 or not isinstance(item[1], FitRes):
            raise TypeError(f"{name} must be a pair (client id, FitRes), got {type(item).__name__}")
        return check_scalar(item[0], f"{name} client id", "int", min=0), item[1]

    out = check_sequence(results, "results", min_len=1, item=pair)
    check_sequence(failures, "failures")
    return out


def _int_ids(values: object, name: str) -> list[int]:
    return check_sequence(values, name, item=lambda v, n: check_scalar(v, n, "int", min=0))


def _ids(text: object) -> list[int]:
    return [int(c) for c in str(text).split(",") if c != ""]


def _model_part(arrays: Mapping[str, np.ndarray]) -> Arrays:
    return {k: v for k, v in arrays.items() if not k.startswith("pool_")}


@torch.no_grad()
def _per_class_score(model: nn.Module, x: torch.Tensor, y: torch.Tensor, classes: Sequence[int],
                     seen: Sequence[int], measure: str = "accuracy") -> dict[int, float]:
    """Per class: accuracy, or mean probability of the true class (``measure="confidence"``), on (x, y)."""
    model.eval()
    if not len(y):
        return {c: float("nan") for c in classes}
    probs = torch.softmax(masked_logits(model(x), seen), dim=1)
    hit = (probs.argmax(dim=1) == y).float() if measure == "accuracy" else probs.gather(1, y[:, None])[:, 0]
    return {c: float(hit[y == c].mean()) if bool((y == c).any()) else float("nan") for c in classes}


class CANClient(Client):
    """One FCL client: its real data per task, its replay buffer, and CAN's client roles.

    ``data[t] = (X, y)`` is the client's share of task ``t`` (may be empty); ``model_fn()`` builds
    a fresh classifier.  The client keeps, across rounds, the old model of the current task, its
    replay buffer (``buffer_x``, ``buffer_y``), its last local model (the teacher it inverts when it
    is a teaching client) and ``task_models[t]``, its local model at the end of task ``t``.
    """

    def __init__(self, model_fn: Callable[[], nn.Module], data: Sequence[tuple[np.ndarray, np.ndarray]],
                 config: CANConfig, *, seed: Seed = 0, device: str | torch.device | None = None) -> None:
        check_callable(model_fn, "model_fn")
        check_instance(config, "config", CANConfig)
        self.model_fn, self.config, self.seed = model_fn, config, int_seed(seed)
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.data = []
        for t, pair in enumerate(check_sequence(data, "data", min_len=1)):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"data[{t}] must be a pair (X, y) of arrays, got {type(pair).__name__}")
            X, y = pair
            X = check_array(X, f"data[{t}] X", ndim=2, dtype=np.float32)
            y = check_array(y, f"data[{t}] y", ndim=1, dtype=None)
            check_consistent_length(X, y, names=(f"data[{t}] X", f"data[{t}] y"))
            if config.replay == "synthetic":
                _check_generator_range(X, f"data[{t}] X")
            self.data.append((torch.as_tensor(X, device=self.device),
                              torch.as_tensor(y.astype(np.int64), device=self.device)))
        self.task = -1
        self.old_model: nn.Module | None = None
        self.buffer_x = torch.zeros(0, 0, device=self.device)
        self.buffer_y = torch.zeros(0, dtype=torch.int64, device=self.device)
        self.pool: tuple[torch.Tensor, torch.Tensor] | None = None
        self.last_local: Arrays | None = None
        self.task_models: dict[int, Arrays] = {}
        self.allocation: dict[int, int] = {}

    def _model(self, arrays: Mapping[str, np.ndarray]) -> nn.Module:
        return load_arrays(self.model_fn().to(self.device), arrays)

    def _task_data(self, task: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not 0 <= task < len(self.data):
            raise ValueError(f"task {task} is outside this client's {len(self.data)} tasks")
        return self.data[task]

    def fit(self, ins: FitIns) -> FitRes:
        check_instance(ins, "ins", FitIns)
        phase, task = ins.config.get("phase"), int(ins.config.get("task", -1))
        seen, new = _ids(ins.config.get("seen", "")), _ids(ins.config.get("new", ""))
        check_choice(phase, "phase", ("train", "replay", "census", "synthesize"))
        self._task_data(task)
        if phase in ("train", "replay") and task != self.task:
            self._start_task(task, _model_part(ins.arrays))
        if phase == "train":
            return self._train(ins, task, seen, new)
        if phase == "replay":
            return self._replay(ins, task, seen, new)
        if phase == "census":
            return self._census(ins, task)
        return self._synthesize(ins, task, seen)

    def _start_task(self, task: int, arrays: Arrays) -> None:
        self.task = task
        self.old_model = self._model(arrays).eval() if task > 0 else None
        if self.config.replay == "real" and task > 0:
            self._fill_real_buffer(task)

    def _fill_real_buffer(self, task: int) -> None:
        X = torch.cat([self.data[t][0] for t in range(task)])
        y = torch.cat([self.data[t][1] for t in range(task)])
        held = sorted(int(c) for c in torch.unique(y)) if len(y) else []
        if not held or self.config.buffer_size == 0:
            return
        self.allocation = uniform_allocation(held, self.config.buffer_size)
        self._draw_buffer(X, y, self.allocation, task)

    def _draw_buffer(self, X: torch.Tensor, y: torch.Tensor, allocation: Mapping[int, int], task: int) -> None:
        g = torch_generator(self.seed * 7919 + 31 * task + 1)
        xs, ys = [], []
        for c, n in sorted(allocation.items()):
            rows = torch.nonzero(y == c).flatten()
            if n == 0 or rows.numel() == 0:
                continue
            pick = torch.randperm(rows.numel(), generator=g)[:n] if n <= rows.numel() else \
                torch.randint(rows.numel(), (n,), generator=g)
            xs.append(X[rows[pick.to(rows.device)]])
            ys.append(y[rows[pick.to(rows.device)]])
        if xs:
            self.buffer_x, self.buffer_y = torch.cat(xs), torch.cat(ys)

    def _forgetting_model(self, task: int, seen: list[int], new: list[int]) -> nn.Module:
        signal = self.config.forgetting_signal
        if signal == "local" and self.last_local is not None:
            return self._model(self.last_local)
        model = self._model(module_to_arrays(self.old_model))
        X, y = self.data[task]
        if signal == "probe" and self.config.probe_length and len(y):
            self._local_epochs(model, X, y, seen, new, self.config.probe_length, self.seed * 7919 + 97 * task,
                               replay=False)
        return model

    def _allocate(self, task: int, seen: list[int], new: list[int], model: nn.Module) -> dict[int, float]:
        px, py = self.pool
        old = [c for c in seen if c not in new]
        acc = _per_class_score(model, px, py, old, seen, self.config.forgetting_measure)
        if self.config.allocation == "adaptive":
            missing = [c for c, a in acc.items() if np.isnan(a)]
            if missing:  # no synthetic sample to test on: counted as fully forgotten
                warnings.warn(f"no accuracy for classes {missing}: counted as 0", RuntimeWarning, stacklevel=2)
            scores = {c: 0.0 if np.isnan(a) else a for c, a in acc.items()}
            self.allocation = allocate_buffer(scores, self.config.buffer_size, eps=self.config.allocation_eps,
                                              rule=self.config.allocation_rule,
                                              temperature=self.config.allocation_temperature)
        else:
            self.allocation = uniform_allocation(old, self.config.buffer_size)
        self._draw_buffer(px, py, self.allocation, task)
        return acc

    def _replay(self, ins: FitIns, task: int, seen: list[int], new: list[int]) -> FitRes:
        if "pool_x" not in ins.arrays or "pool_y" not in ins.arrays:
            raise ValueError("a replay message must carry pool_x and pool_y")
        self.pool = (torch.as_tensor(ins.arrays["pool_x"], device=self.device),
                     torch.as_tensor(ins.arrays["pool_y"].astype(np.int64), device=self.device))
        adaptive = self.config.allocation == "adaptive"
        acc = self._allocate(task, seen, new, self._forgetting_model(task, seen, new) if adaptive else self.old_model)
        n_classes = int(ins.config["n_classes"])
        alloc = np.zeros(n_classes, dtype=np.int32)
        for c, n in self.allocation.items():
            alloc[c] = n
        finite = [a for a in acc.values() if np.isfinite(a)]
        return FitRes({"allocation": alloc}, int(alloc.sum()),
                      {"pool_accuracy": float(np.mean(finite)) if finite else 0.0})

    def _local_epochs(self, model: nn.Module, X: torch.Tensor, y: torch.Tensor, seen: list[int], new: list[int],
                      epochs: int, seed: int, replay: bool = True) -> float:
        """Adam epochs on (X, y) plus, with ``replay``, a buffer batch per step and KD to the old model."""
        cfg = self.config
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        g = torch_generator(seed)
        old = [c for c in seen if c not in new]
        use_replay = replay and self.buffer_y.numel() > 0
        use_kd = replay and self.old_model is not None and cfg.lambda_kd > 0 and bool(old)
        current_classes = seen if cfg.current_ce == "seen" else new
        total, steps = 0.0, 0
        model.train()
        for _ in range(epochs):
            order = torch.randperm(len(y), generator=g).to(y.device)
            for start in range(0, len(y), cfg.batch_size):
                idx = order[start:start + cfg.batch_size]
                xb, yb, n_cur = X[idx], y[idx], len(idx)
                if n_cur < 2 and not use_replay:  # BatchNorm cannot train on a single sample
                    continue
                if use_replay:
                    ridx = torch.randint(len(self.buffer_y), (cfg.batch_size,), generator=g).to(y.device)
                    xb = torch.cat([xb, self.buffer_x[ridx]])
                logits = model(xb)
                loss = F.cross_entropy(masked_logits(logits[:n_cur], current_classes), yb)
                if use_replay:
                    loss = loss + cfg.lambda_ce * F.cross_entropy(masked_logits(logits[n_cur:], seen),
                                                                  self.buffer_y[ridx])
                if use_kd:
                    kd_rows = {"replay": slice(n_cur, None), "current": slice(0, n_cur),
                               "both": slice(0, None)}[cfg.kd_on]
                    kd_x = xb[kd_rows]
                    if len(kd_x):
                        with torch.no_grad():
                            teacher = self.old_model(kd_x)[:, old] / cfg.kd_temperature
                        student = logits[kd_rows][:, old] / cfg.kd_temperature
                        kd = F.kl_div(F.log_softmax(student, dim=1), F.softmax(teacher, dim=1), reduction="batchmean")
                        loss = loss + cfg.lambda_kd * cfg.kd_temperature ** 2 * kd
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, steps = total + float(loss.detach()), steps + 1
        model.eval()
        return total / max(steps, 1)

    def _train(self, ins: FitIns, task: int, seen: list[int], new: list[int]) -> FitRes:
        cfg, local_round = self.config, int(ins.config.get("local_round", 1))
        model = self._model(_model_part(ins.arrays))
        if (cfg.realloc_every and self.pool is not None and self.last_local is not None and local_round > 1
                and (local_round - 1) % cfg.realloc_every == 0 and cfg.replay == "synthetic"):
            self._allocate(task, seen, new, self._model(self.last_local))
        X, y = self.data[task]
        if len(y) == 0:
            return FitRes(module_to_arrays(model), 0, {})
        loss = self._local_epochs(model, X, y, seen, new, cfg.local_epochs,
                                  self.seed * 7919 + 1009 * task + local_round)
        self.last_local = module_to_arrays(model)
        self.task_models[task] = self.last_local
        return FitRes(self.last_local, int(len(y)), {"train_loss": loss})

    def _census(self, ins: FitIns, task: int) -> FitRes:
        classes = ins.arrays.get("classes")
        if classes is None:
            raise ValueError("a census message must carry the task's classes")
        y = self.data[task][1]
        counts = np.array([int((y == int(c)).sum()) for c in classes], dtype=np.int64)
        return FitRes({"counts": counts}, int(len(y)))

    def _synthesize(self, ins: FitIns, task: int, seen: list[int]) -> FitRes:
        cfg = self.config
        if self.last_local is None:
            raise ValueError("this client has no local model to teach with (it never trained)")
        classes = [int(c) for c in ins.arrays["classes"]]
        teacher = self._model(self.last_local)
        X, y = self.data[task]
        targets = None
        if cfg.teacher_statistics == "class" and all(int((y == c).sum()) >= 2 for c in classes):
            targets = {c: bn_statistics(teacher, X[y == c]) for c in classes}
        _, samples = invert(teacher, classes, n_classes=int(ins.config["n_classes"]), in_dim=X.shape[1],
                            n_per_class=int(ins.config["n_per_class"]), steps=int(ins.config["steps"]),
                            batch_size=cfg.gen_batch, z_dim=cfg.z_dim, lambda_bn=cfg.lambda_bn,
                            lambda_div=cfg.lambda_div, lr=cfg.gen_lr, seen=seen, bn_targets=targets,
                            seed=self.seed * 7919 + 13 * task + 5)
        x = torch.cat([samples[c] for c in classes]).detach().cpu().numpy().astype(np.float32)
        labels = np.repeat(np.array(classes, dtype=np.int32), [len(samples[c]) for c in classes])
        return FitRes({"x": x, "y": labels}, int(len(labels)))


class CANStrategy(Strategy):
    """The server of CAN and of the generative-replay baselines (see the module docstring for the phases).

    ``task_classes[t]`` lists task t's classes; ``model_fn`` builds the classifier (for server-side
    synthesis); ``evaluate_fn(arrays, t)`` (optional) returns the accuracy on tasks 0..t and fills
    ``acc_rows``.  State: ``pool`` (class -> synthetic samples), ``counts`` (census per task),
    ``teachers`` (per task: class -> client ids), ``allocations`` (per task: client -> per-class
    buffer counts), ``task_end_arrays`` (the global model at the end of each task),
    ``server_synthesised`` (classes the server had to invert itself).
    """

    def __init__(self, initial_arrays: Mapping[str, np.ndarray], task_classes: Sequence[Sequence[int]],
                 model_fn: Callable[[], nn.Module], config: CANConfig, *, n_classes: int, in_dim: int,
                 evaluate_fn: Callable[[Arrays, int], list[float]] | None = None, seed: Seed = 0,
                 device: str | torch.device | None = None) -> None:
        check_instance(initial_arrays, "initial_arrays", Mapping, "a mapping name -> array")
        check_callable(model_fn, "model_fn")
        check_instance(config, "config", CANConfig)
        if evaluate_fn is not None:
            check_callable(evaluate_fn, "evaluate_fn")
        n_classes = check_scalar(n_classes, "n_classes", "int", min=1)
        groups = [_int_ids(g, f"task_classes[{i}]")
                  for i, g in enumerate(check_sequence(task_classes, "task_classes", min_len=1))]
        flat = [c for g in groups for c in g]
        if not groups or any(not g for g in groups):
            raise ValueError("task_classes must be a non-empty list of non-empty class lists")
        if len(set(flat)) != len(flat):
            raise ValueError("a class appears in more than one task; tasks must have disjoint classes")
        if min(flat) < 0 or max(flat) >= n_classes:
            raise ValueError(f"class ids must lie in [0, {n_classes}), got {sorted(flat)}")
        self.initial_arrays = {k: np.asarray(v).copy() for k, v in initial_arrays.items()}
        self.task_classes, self.model_fn, self.config = groups, model_fn, config
        self.n_classes, self.in_dim = n_classes, check_scalar(in_dim, "in_dim", "int", min=1)
        self.evaluate_fn = evaluate_fn
        self.seed = int_seed(seed)
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.schedule: list[tuple[str, int, int]] = []
        for t in range(len(groups)):
            if t > 0 and config.replay == "synthetic":
                self.schedule.append(("replay", t, 0))
            self.schedule += [("train", t, r) for r in range(1, config.rounds_per_task + 1)]
            if t < len(groups) - 1 and config.replay == "synthetic" and config.synthesis == "client":
                self.schedule += [("census", t, 0), ("synthesize", t, 0)]
        self.pool: dict[int, np.ndarray] = {}
        self.counts: dict[int, dict[int, np.ndarray]] = {}
        self.teachers: dict[int, dict[int, list[int]]] = {}
        self.assigned: dict[int, dict[int, list[int]]] = {}
        self.allocations: dict[int, dict[int, np.ndarray]] = {}
        self.task_end_arrays: dict[int, Arrays] = {}
        self.acc_rows: dict[int, list[float]] = {}
        self.server_synthesised: list[int] = []

    @property
    def n_rounds(self) -> int:
        """Rounds of the whole stream (all phases of all tasks)."""
        return len(self.schedule)

    def phase(self, server_round: int) -> tuple[str, int, int]:
        """(phase, task, round within the task's training) of ``server_round`` (1-based, within the schedule)."""
        return self.schedule[_server_round(server_round, len(self.schedule)) - 1]

    def seen(self, task: int) -> list[int]:
        """Classes of tasks 0..task (the classifier's active head); ``task`` in [0, n_tasks)."""
        task = check_scalar(task, "task", "int", min=0, max=len(self.task_classes) - 1)
        return sorted(c for g in self.task_classes[:task + 1] for c in g)

    def initialize(self) -> Arrays:
        return {k: v.copy() for k, v in self.initial_arrays.items()}

    def _config(self, server_round: int) -> dict[str, object]:
        phase, task, local_round = self.phase(server_round)
        return {"round": server_round, "phase": phase, "task": task, "local_round": local_round,
                "seen": ",".join(map(str, self.seen(task))), "new": ",".join(map(str, self.task_classes[task])),
                "n_classes": self.n_classes}

    def fit_config(self, server_round: int) -> dict[str, object]:
        return self._config(server_round)

    def synthesize_on_server(self, arrays: Mapping[str, np.ndarray], classes: Sequence[int], seen: Sequence[int],
                             seed: Seed) -> dict[int, np.ndarray]:
        """Invert the global model for ``classes`` (the server-navigated baseline, equal step budget)."""
        _check_arrays(arrays)
        classes, seen = _int_ids(classes, "classes"), _int_ids(seen, "seen")
        cfg = self.config
        teacher = load_arrays(self.model_fn().to(self.device), arrays)
        _, samples = invert(teacher, list(classes), n_classes=self.n_classes, in_dim=self.in_dim,
                            n_per_class=cfg.pool_size, steps=cfg.gen_steps_per_class * len(classes),
                            batch_size=cfg.gen_batch, z_dim=cfg.z_dim, lambda_bn=cfg.lambda_bn,
                            lambda_div=cfg.lambda_div, lr=cfg.gen_lr, seen=seen, seed=seed)
        return {c: s.detach().cpu().numpy().astype(np.float32) for c, s in samples.items()}

    def _ensure_pool(self, task: int, arrays: Arrays) -> None:
        for t in range(task):
            missing = [c for c in self.task_classes[t] if c not in self.pool]
            if not missing:
                continue
            if self.config.synthesis == "client":
                warnings.warn(f"no teaching client synthesised classes {missing}: the global model teaches them",
                              RuntimeWarning, stacklevel=2)
            source = self.task_end_arrays.get(t, arrays)
            self.pool.update(self.synthesize_on_server(source, missing, self.seen(t), self.seed * 7919 + 17 * t + 3))
            self.server_synthesised += missing

    def configure_fit(self, server_round: int, arrays: Arrays, clients: Sequence[int]) -> dict[int, FitIns]:
        phase, task, _ = self.phase(server_round)
        _check_arrays(arrays)
        clients = _int_ids(clients, "clients")
        config = self._config(server_round)
        if phase == "train":
            return {cid: FitIns(arrays, dict(config)) for cid in clients}
        if phase == "replay":
            self._ensure_pool(task, arrays)
            classes = sorted(self.pool)
            pool_x = np.concatenate([self.pool[c] for c in classes]).astype(np.float32)
            pool_y = np.repeat(np.array(classes, dtype=np.int32), [len(self.pool[c]) for c in classes])
            return {cid: FitIns({**arrays, "pool_x": pool_x, "pool_y": pool_y}, dict(config)) for cid in clients}
        classes = np.array(self.task_classes[task], dtype=np.int32)
        if phase == "census":
            return {cid: FitIns({"classes": classes}, dict(config)) for cid in clients}
        counts = np.zeros((max([*clients, *self.counts.get(task, {})], default=-1) + 1, len(classes)), dtype=np.int64)
        for cid, row in self.counts.get(task, {}).items():
            counts[cid] = row
        teachers = select_teachers(counts, range(len(classes)), k=self.config.teachers_per_class) if len(counts) \
            else {j: [] for j in range(len(classes))}
        self.teachers[task] = {int(classes[j]): ids for j, ids in teachers.items()}
        assigned: dict[int, list[int]] = {}
        for c, ids in self.teachers[task].items():
            for cid in ids:
                if cid in clients:
                    assigned.setdefault(cid, []).append(c)
        self.assigned[task] = assigned
        k = self.config.teachers_per_class
        return {cid: FitIns({"classes": np.array(cs, dtype=np.int32)},
                            {**config, "n_per_class": -(-self.config.pool_size // k),
                             "steps": max(1, self.config.gen_steps_per_class * len(cs) // k)})
                for cid, cs in sorted(assigned.items())}

    def validate_fit(self, server_round: int, arrays: Arrays, res: FitRes) -> None:
        phase, task, _ = self.phase(server_round)
        _check_arrays(arrays)
        check_instance(res, "res", FitRes)
        if phase == "train":
            check_same_layout(arrays, res.arrays)
            return
        expected = {"replay": {"allocation"}, "census": {"counts"}, "synthesize": {"x", "y"}}[phase]
        if set(res.arrays) != expected:
            raise MalformedMessageError(f"{phase} reply must carry exactly {sorted(expected)}, "
                                        f"got {sorted(res.arrays)}")
        if phase == "replay":
            alloc = res.arrays["allocation"]
            if alloc.shape != (self.n_classes,) or alloc.dtype.kind not in "iu" or alloc.min() < 0 \
                    or alloc.sum() > self.config.buffer_size:
                raise MalformedMessageError(f"allocation must be {self.n_classes} non-negative integers summing to at "
                                            f"most {self.config.buffer_size}")
        elif phase == "census":
            counts = res.arrays["counts"]
            if counts.shape != (len(self.task_classes[task]),) or counts.dtype.kind not in "iu" or counts.min() < 0:
                raise MalformedMessageError(f"counts must be {len(self.task_classes[task])} non-negative integers")
        else:
            x, y = res.arrays["x"], res.arrays["y"]
            if x.ndim != 2 or x.shape[1] != self.in_dim or x.dtype.kind != "f" or y.shape != (x.shape[0],) \
                    or y.dtype.kind not in "iu" or not set(np.unique(y).tolist()) <= set(self.task_classes[task]):
                raise MalformedMessageError(f"synthetic samples must be x (n, {self.in_dim}) floats and y (n,) "
                                            f"labels among task {task}'s classes {self.task_classes[task]}")

    def aggregate_fit(self, server_round, arrays, results, failures):
        phase, task, local_round = self.phase(server_round)
        _check_arrays(arrays)
        results = _check_results(results, failures)
        if phase == "train":
            new = weighted_average([(res.arrays, res.num_examples) for _, res in results])
            if local_round == self.config.rounds_per_task:
                self.task_end_arrays[task] = {k: v.copy() for k, v in new.items()}
            return new, {"clients": len(results), "examples": int(sum(r.num_examples for _, r in results))}
        if phase == "census":
            self.counts[task] = {cid: res.arrays["counts"] for cid, res in results}
            return arrays, {"clients": len(results)}
        if phase == "synthesize":
            got: dict[int, list[np.ndarray]] = {}
            for cid, res in results:
                for c in self.assigned.get(task, {}).get(cid, []):
                    got.setdefault(c, []).append(res.arrays["x"][res.arrays["y"] == c])
            for c, parts in got.items():
                samples = np.concatenate(parts)[:self.config.pool_size]
                if len(samples):
                    self.pool[c] = samples.astype(np.float32)
            return arrays, {"teachers": len(results), "classes": len(got)}
        self.allocations[task] = {cid: res.arrays["allocation"] for cid, res in results}
        table = np.stack(list(self.allocations[task].values())).astype(float) if results else np.zeros((1, 1))
        return arrays, {"clients": len(results), "allocation_std": float(table.std(axis=0).mean())}

    def evaluate(self, server_round: int, arrays: Arrays) -> dict[str, object]:
        phase, task, local_round = self.phase(server_round)
        _check_arrays(arrays)
        if self.evaluate_fn is None or phase != "train" or local_round != self.config.rounds_per_task:
            return {}
        row = [float(a) for a in self.evaluate_fn(arrays, task)]
        self.acc_rows[task] = row
        return {"task": task, "accuracy": float(np.mean(row)), **{f"acc_task{j}": a for j, a in enumerate(row)}}


def task_accuracy_evaluator(model_fn: Callable[[], nn.Module], tasks: Sequence[Task],
                            device: str | torch.device | None = None) -> Callable[[Arrays, int], list[float]]:
    """``evaluate(arrays, t)``: test accuracy on tasks 0..t, predicting among the classes of tasks 0..t."""
    check_callable(model_fn, "model_fn")
    tasks = check_sequence(tasks, "tasks", min_len=1, item=lambda t, n: check_instance(t, n, Task))
    device = torch.device(device) if device is not None else torch.device("cpu")
    tests = [(torch.as_tensor(t.X_test, device=device), torch.as_tensor(t.y_test, dtype=torch.int64, device=device))
             for t in tasks]

    def evaluate(arrays: Arrays, task: int) -> list[float]:
        model = load_arrays(model_fn().to(device), arrays).eval()
        seen = sorted(c for t in tasks[:task + 1] for c in t.classes)
        with torch.no_grad():
            return [float((masked_logits(model(X), seen).argmax(1) == y).float().mean()) for X, y in tests[:task + 1]]
    return evaluate


@dataclass
class FCLResult:
    """One FCL run: accuracy matrix (NaN above the diagonal), ACC, FGT, BWT, ledger bits and the run's objects."""

    method: str
    acc_matrix: np.ndarray
    acc: float
    forgetting: float
    bwt: float
    up_bits: int
    down_bits: int
    buffer_bytes: float
    history: History
    strategy: CANStrategy
    clients: list[CANClient]
    config: CANConfig
    split: list[list[np.ndarray]] = field(default_factory=list)

    def summary(self) -> dict[str, object]:
        """JSON-able numbers of the run."""
        return {"method": self.method, "acc": self.acc, "forgetting": self.forgetting, "bwt": self.bwt,
                "acc_matrix": [[None if np.isnan(a) else float(a) for a in row] for row in self.acc_matrix],
                "up_bits": self.up_bits, "down_bits": self.down_bits, "buffer_bytes": self.buffer_bytes,
                "failures": len(self.history.failures), "config": asdict(self.config)}


def forgetting_profile(model_fn: Callable[[], nn.Module], arrays: Mapping[str, np.ndarray],
                       client_data: Sequence[tuple[np.ndarray, np.ndarray]], X_old: np.ndarray, y_old: np.ndarray,
                       seen: Sequence[int], *, epochs: int = 10, lr: float = 1e-3, batch_size: int = 32,
                       seed: Seed = 0) -> np.ndarray:
    """Per client and old class: the accuracy drop on real old-class data after plain local training.

    Each client trains a copy of the global model ``arrays`` on its own new-task data
    ``client_data[i]`` for ``epochs`` (Adam, CE over the ``seen`` classes, no replay); the result is
    (clients, old classes) of accuracy before minus after on ``(X_old, y_old)``, NaN for a client
    without data.  Its spread across clients is CAN's "client forgetting variance".
    """
    check_callable(model_fn, "model_fn")
    check_instance(arrays, "arrays", Mapping, "a mapping name -> array")
    client_data = check_sequence(client_data, "client_data", min_len=1)
    for i, pair in enumerate(client_data):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"client_data[{i}] must be a pair (X, y) of arrays, got {type(pair).__name__}")
        check_consistent_length(check_array(pair[0], f"client_data[{i}] X", ndim=2),
                                check_array(pair[1], f"client_data[{i}] y", ndim=1),
                                names=(f"client_data[{i}] X", f"client_data[{i}] y"))
    X_old = check_array(X_old, "X_old", ndim=2, dtype=np.float32, min_len=1)
    y_old = check_array(y_old, "y_old", ndim=1, dtype=None)
    if y_old.dtype.kind not in "iu":
        raise TypeError(f"y_old must hold integer class ids, got dtype {y_old.dtype}")
    check_consistent_length(X_old, y_old, names=("X_old", "y_old"))
    seen = check_sequence(seen, "seen", min_len=1, item=lambda v, n: check_scalar(v, n, "int", min=0))
    epochs = check_scalar(epochs, "epochs", "int", min=0)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    seed = int_seed(seed)
    classes = sorted(int(c) for c in np.unique(y_old))
    X_old_t, y_old_t = torch.as_tensor(np.asarray(X_old, dtype=np.float32)), torch.as_tensor(np.asarray(y_old))
    before = _per_class_score(load_arrays(model_fn(), arrays), X_old_t, y_old_t, classes, seen)
    out = np.full((len(client_data), len(classes)), np.nan)
    for i, (X, y) in enumerate(client_data):
        if len(y) < 2:
            continue
        model = load_arrays(model_fn(), arrays)
        X_t, y_t = torch.as_tensor(np.asarray(X, dtype=np.float32)), torch.as_tensor(np.asarray(y, dtype=np.int64))
        g = torch_generator(seed + i)
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        model.train()
        for _ in range(epochs):
            order = torch.randperm(len(y_t), generator=g)
            for start in range(0, len(y_t) - 1, batch_size):
                idx = order[start:start + batch_size]
                if len(idx) < 2:
                    continue
                opt.zero_grad()
                F.cross_entropy(masked_logits(model(X_t[idx]), seen), y_t[idx]).backward()
                opt.step()
        after = _per_class_score(model, X_old_t, y_old_t, classes, seen)
        out[i] = [before[c] - after[c] for c in classes]
    return out


def build_fcl(tasks: Sequence[Task], method: str = "can", *, n_clients: int = 5, alpha: float | None = 0.3,
              seed: Seed = 0, config: CANConfig | None = None, model_fn: Callable[[], nn.Module] | None = None,
              device: str | torch.device | None = None, **overrides: object
              ) -> tuple[list[CANClient], CANStrategy, list[list[np.ndarray]]]:
    """The clients, the strategy and the per-task client split of a run, ready for ``simulate`` or Flower.

    Each task's training data is dealt to ``n_clients`` with Dirichlet(``alpha``) label skew
    (``alpha=None``: IID).  ``config`` (default: the preset of ``method``, a key of
    :data:`METHODS`) takes ``overrides``.  The classifier defaults to :func:`fcl_mlp` seeded by ``seed``.
    With synthetic replay the features must lie in [-1, 1] (the generator ends in tanh;
    :func:`~icml25.federated.can_fcl.streams.digits_tasks` scales pixels so): ValueError otherwise.
    """
    if not tasks:
        raise ValueError("tasks is empty: a class-incremental stream needs at least one task")
    for i, t in enumerate(tasks):
        check_instance(t, f"tasks[{i}]", Task, "a Task (see class_incremental_tasks)")
    seed = int_seed(seed)
    if model_fn is not None:
        check_callable(model_fn, "model_fn")
    cfg = CANConfig.for_method(method, **overrides) if config is None else replace(config, **overrides)
    if cfg.replay == "synthetic":
        for i, t in enumerate(tasks):
            _check_generator_range(t.X_train, f"tasks[{i}].X_train")
    in_dim = int(tasks[0].X_train.shape[1])
    n_classes = 1 + max(c for t in tasks for c in t.classes)
    if model_fn is None:
        template = fcl_mlp(in_dim, n_classes, seed=seed)
        model_fn = partial(copy.deepcopy, template)
    split = [split_task_across_clients(t, n_clients, alpha, seed=seed * 1000 + t.index) for t in tasks]
    clients = [CANClient(model_fn, [(t.X_train[split[k][i]], t.y_train[split[k][i]]) for k, t in enumerate(tasks)],
                         cfg, seed=seed * 1000 + i, device=device) for i in range(n_clients)]
    strategy = CANStrategy(module_to_arrays(model_fn()), [t.classes for t in tasks], model_fn, cfg, n_classes=n_classes,
                           in_dim=in_dim, evaluate_fn=task_accuracy_evaluator(model_fn, tasks, device), seed=seed,
                           device=device)
    return clients, strategy, split


def run_fcl(tasks: Sequence[Task], method: str = "can", *, n_clients: int = 5, alpha: float | None = 0.3,
            seed: Seed = 0, config: CANConfig | None = None, model_fn: Callable[[], nn.Module] | None = None,
            clients_per_round: int | None = None, on_failure: str = "skip",
            device: str | torch.device | None = None, **overrides: object) -> FCLResult:
    """Run ``method`` (a key of :data:`METHODS`) over the task stream with :func:`icml25.federated.simulate`.

    Arguments as in :func:`build_fcl`; ``clients_per_round`` and ``on_failure`` go to ``simulate``.
    With one task there is no replay and the run equals FedAvg.
    """
    seed = int_seed(seed)
    clients, strategy, split = build_fcl(tasks, method, n_clients=n_clients, alpha=alpha, seed=seed, config=config,
                                         model_fn=model_fn, device=device, **overrides)
    history = simulate(clients, strategy, rounds=strategy.n_rounds, clients_per_round=clients_per_round, seed=seed,
                       on_failure=on_failure)
    T = len(tasks)
    A = np.full((T, T), np.nan)
    for t, row in strategy.acc_rows.items():
        A[t, :len(row)] = row
    complete = len(strategy.acc_rows) == T
    buffer_bytes = float(np.mean([c.buffer_x.numel() * c.buffer_x.element_size()
                                  + c.buffer_y.numel() * 4 for c in clients]))
    return FCLResult(method, A,
                     average_accuracy(A) if complete else float("nan"),
                     average_forgetting(A) if complete else float("nan"),
                     backward_transfer(A) if complete else float("nan"), history.ledger.total("up"),
                     history.ledger.total("down"), buffer_bytes, history, strategy, clients, strategy.config, split)

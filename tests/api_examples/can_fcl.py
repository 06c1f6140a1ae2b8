"""Valid calls of ``icml25.federated.can_fcl`` (CAN: federated class-incremental learning with generative replay)."""

import functools

import numpy as np

from api_examples._core import Example, Exempt
from icml25.federated.can_fcl import (
    CANClient,
    CANConfig,
    CANStrategy,
    ConditionalGenerator,
    allocate_buffer,
    average_accuracy,
    average_forgetting,
    backward_transfer,
    bn_stat_loss,
    bn_statistics,
    build_fcl,
    class_incremental_tasks,
    digits_tasks,
    fcl_mlp,
    forgetting_profile,
    gaussian_mixture,
    invert,
    run_fcl,
    select_teachers,
    split_task_across_clients,
    task_accuracy_evaluator,
    uniform_allocation,
)

P = "icml25.federated.can_fcl."
TINY = {"rounds_per_task": 1, "local_epochs": 1, "gen_steps_per_class": 2, "buffer_size": 4, "gen_batch": 8,
        "batch_size": 8, "z_dim": 4}


def _torch():
    import torch

    return torch


@functools.cache
def _stream():
    X, y = gaussian_mixture(4, 3, 12, separation=6.0, seed=0)
    return tuple(class_incremental_tasks(X / np.abs(X).max(), y, 2, seed=0))


def _tasks():
    return list(_stream())


def _model():
    return fcl_mlp(3, 4, hidden=8, seed=0)


def _config():
    return CANConfig(**TINY)


def _built():
    return build_fcl(_tasks(), "can", n_clients=2, seed=0, model_fn=_model, **TINY)


def _strategy():
    return _built()[1]


def _arrays():
    from icml25.federated.torch_clients import module_to_arrays

    return module_to_arrays(_model())


def _client_data():
    t = _stream()[0]
    return [(t.X_train[:12], t.y_train[:12]), (t.X_train[12:], t.y_train[12:])]


@functools.cache
def _train_reply():
    clients, strategy, _ = _built()
    return clients[0].fit(strategy.configure_fit(1, strategy.initialize(), [0])[0])


def _teacher():
    return _model().eval()


_DEVICE = {"device": "a torch device spec"}
_POSITIVE_TINY = [k for k in TINY if k != "buffer_size"]
_POSITIVE_CONFIG = ["rounds_per_task", "local_epochs", "lr", "batch_size", "kd_temperature", "allocation_temperature",
                    "teachers_per_class", "gen_steps_per_class", "gen_batch", "z_dim", "gen_lr"]
_NONNEG_CONFIG = ["lambda_ce", "lambda_kd", "buffer_size", "realloc_every", "allocation_eps", "lambda_bn", "lambda_div"]

EXAMPLES = {
    P + "Task": Exempt("record"),
    P + "FCLResult": Exempt("record"),
    P + "CANConfig": Example(CANConfig, {}, positive=_POSITIVE_CONFIG, nonneg=_NONNEG_CONFIG),
    P + "fcl_mlp": Example(fcl_mlp, {"in_dim": 3, "n_classes": 4, "hidden": 8}, positive=["in_dim", "n_classes",
                                                                                         "hidden"]),
    P + "gaussian_mixture": Example(gaussian_mixture, {"n_classes": 3, "dim": 2, "n_per_class": 4},
                                    positive=["n_classes", "dim", "n_per_class"], nonneg=["separation"]),
    P + "class_incremental_tasks": Example(
        class_incremental_tasks, lambda: {"X": np.arange(24, dtype=np.float32).reshape(12, 2) / 24,
                                          "y": np.repeat(np.arange(4), 3), "n_tasks": 2, "order_seed": 1},
        paired=[("X", "y")], positive=["n_tasks", "test_fraction"]),
    P + "digits_tasks": Example(digits_tasks, {"n_tasks": 2}, positive=["n_tasks", "test_fraction"],
                                allow={"order_seed": "none"}),  # None: classes in sorted order
    P + "split_task_across_clients": Example(split_task_across_clients,
                                             lambda: {"task": _stream()[0], "n_clients": 2, "alpha": 0.5},
                                             positive=["n_clients", "alpha"],
                                             allow={"alpha": "none"}),  # None: IID shards
    P + "select_teachers": Example(select_teachers, lambda: {"class_counts": np.array([[5, 0, 1], [9, 0, 1]]),
                                                             "classes": [0, 2], "k": 1}, positive=["k"],
                                   allow={"classes": "empty"}),  # no class asked: no teacher
    P + "allocate_buffer": Example(allocate_buffer, lambda: {"per_class_acc": {0: 0.9, 1: 0.2}, "buffer_size": 12},
                                   positive=["temperature"], nonneg=["eps"]),
    P + "uniform_allocation": Example(uniform_allocation, {"classes": [4, 5, 6], "buffer_size": 10}),
    P + "average_accuracy": Example(average_accuracy, lambda: {"A": np.array([[0.9, np.nan], [0.6, 0.8]])}),
    P + "average_forgetting": Example(average_forgetting, lambda: {"A": np.array([[0.9, np.nan], [0.6, 0.8]])}),
    P + "backward_transfer": Example(backward_transfer, lambda: {"A": np.array([[0.9, np.nan], [0.6, 0.8]])}),
    P + "ConditionalGenerator": Example(ConditionalGenerator, {"z_dim": 4, "n_classes": 3, "out_dim": 2, "hidden": 8},
                                        positive=["z_dim", "n_classes", "out_dim", "hidden"]),
    P + "ConditionalGenerator.forward": Example(
        lambda **kw: ConditionalGenerator(4, 3, 2, 8).forward(**kw),
        lambda: {"z": _torch().zeros(5, 4), "labels": _torch().tensor([0, 1, 2, 0, 1])},
        paired=[("z", "labels")], allow={"z": "nan"}),  # a forward pass propagates NaN as torch does
    P + "bn_statistics": Example(bn_statistics, lambda: {"model": _teacher(), "X": _torch().ones(4, 3)}),
    P + "bn_stat_loss": Example(bn_stat_loss, lambda: {"model": _teacher(), "x": _torch().ones(4, 3),
                                                       "labels": _torch().tensor([0, 1, 0, 1])},
                                paired=[("x", "labels")],
                                allow={"x": "nan"}),  # a differentiable loss term: NaN propagates as in torch
    P + "invert": Example(invert, lambda: {"teacher": _teacher(), "classes": [0, 1], "n_classes": 4, "in_dim": 3,
                                           "n_per_class": 2, "steps": 2, "batch_size": 4, "z_dim": 4, "hidden": 8},
                          positive=["n_classes", "in_dim", "n_per_class", "steps", "batch_size", "z_dim", "hidden",
                                    "lr"], nonneg=["lambda_bn", "lambda_div"]),
    P + "forgetting_profile": Example(
        forgetting_profile, lambda: {"model_fn": _model, "arrays": _arrays(), "client_data": _client_data(),
                                     "X_old": _stream()[0].X_test, "y_old": _stream()[0].y_test, "seen": [0, 1],
                                     "epochs": 1, "batch_size": 4},
        paired=[("X_old", "y_old")], positive=["lr", "batch_size"], nonneg=["epochs"]),
    P + "task_accuracy_evaluator": Example(task_accuracy_evaluator, lambda: {"model_fn": _model, "tasks": _tasks()},
                                           skip=_DEVICE),
    P + "CANClient": Example(CANClient, lambda: {"model_fn": _model, "data": _client_data(), "config": _config()},
                             skip=_DEVICE),
    P + "CANClient.fit": Example(lambda **kw: _built()[0][0].fit(**kw),
                                 lambda: {"ins": _strategy().configure_fit(1, _arrays(), [0])[0]}),
    P + "CANStrategy": Example(CANStrategy, lambda: {"initial_arrays": _arrays(), "task_classes": [[0, 1], [2, 3]],
                                                     "model_fn": _model, "config": _config(), "n_classes": 4,
                                                     "in_dim": 3},
                               positive=["n_classes", "in_dim"], skip=_DEVICE),
    P + "CANStrategy.phase": Example(lambda **kw: _strategy().phase(**kw), {"server_round": 1},
                                     positive=["server_round"]),
    P + "CANStrategy.seen": Example(lambda **kw: _strategy().seen(**kw), {"task": 1}),
    P + "CANStrategy.fit_config": Example(lambda **kw: _strategy().fit_config(**kw), {"server_round": 1},
                                          positive=["server_round"]),
    P + "CANStrategy.synthesize_on_server": Example(
        lambda **kw: _strategy().synthesize_on_server(**kw),
        lambda: {"arrays": _arrays(), "classes": [0, 1], "seen": [0, 1], "seed": 0},
        allow={"seen": "empty"}),  # seen is joined with classes: empty means the inverted classes only
    P + "CANStrategy.configure_fit": Example(lambda **kw: _strategy().configure_fit(**kw),
                                             lambda: {"server_round": 1, "arrays": _arrays(), "clients": [0, 1]},
                                             positive=["server_round"],
                                             allow={"clients": "empty"}),  # no client sampled: no instruction
    P + "CANStrategy.validate_fit": Example(lambda **kw: _strategy().validate_fit(**kw),
                                            lambda: {"server_round": 1, "arrays": _arrays(), "res": _train_reply()},
                                            positive=["server_round"]),
    P + "CANStrategy.aggregate_fit": Example(lambda **kw: _strategy().aggregate_fit(**kw),
                                             lambda: {"server_round": 1, "arrays": _arrays(),
                                                      "results": [(0, _train_reply())], "failures": []},
                                             positive=["server_round"], allow={"failures": "empty"}),  # none failed
    P + "CANStrategy.evaluate": Example(lambda **kw: _strategy().evaluate(**kw),
                                        lambda: {"server_round": 1, "arrays": _arrays()}, positive=["server_round"]),
    P + "build_fcl": Example(build_fcl, lambda: {"tasks": _tasks(), "method": "can", "n_clients": 2, "alpha": 0.5,
                                                 "model_fn": _model, **TINY},
                             positive=["n_clients", "alpha", *_POSITIVE_TINY], nonneg=["buffer_size"],
                             allow={"alpha": "none"}),  # None: IID
    P + "run_fcl": Example(run_fcl, lambda: {"tasks": _tasks(), "method": "can", "n_clients": 2, "alpha": 0.5,
                                             "model_fn": _model, **TINY},
                           positive=["n_clients", "alpha", *_POSITIVE_TINY], nonneg=["buffer_size"],
                           allow={"alpha": "none"}, timeout=20.0),
}

EXAMPLES.update({
    P + "CANConfig.for_method": Example(CANConfig.for_method, {"method": "can", "rounds_per_task": 1},
                                        positive=["rounds_per_task"]),
})

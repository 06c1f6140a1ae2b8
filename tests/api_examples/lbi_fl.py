"""Valid calls of ``icml25.federated.lbi_fl`` (LBI-FL: low-bit integerized federated learning)."""

import functools

import numpy as np

from api_examples._core import Example, Exempt
from icml25.federated.lbi_fl import (
    BitConfig,
    BitWidthState,
    Decision,
    FixedPolicy,
    LBIFLClient,
    LBIFLStrategy,
    Policy,
    ProxyTask,
    QConv2d,
    QLinear,
    RandomPolicy,
    RLPolicy,
    TeacherSchedulePolicy,
    action_mask,
    apply_action,
    bitops_per_sample,
    check_bits,
    count_macs,
    decode_arrays,
    dequantize,
    encode_arrays,
    fake_quant,
    integer_linear,
    lbi_reward,
    lowbit_accuracy_evaluator,
    message_bits,
    plan_bitops,
    pretrained_policy,
    quant_error,
    quantize_model,
    quantize_stochastic_asym,
    quantize_symmetric,
    run_lbi_fl,
    train_agent,
    training_bitops,
)

P = "icml25.federated.lbi_fl."
_STATE_FREE = {"seed": "the policy's randomness: any seed, used as is"}


def _torch():
    import torch

    return torch


def _model():
    from icml25.utils.nn import make_mlp

    return make_mlp([4, 6, 3], seed=0)


def _data(n=8, seed=0):
    torch = _torch()
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 4, generator=g), torch.randint(0, 3, (n,), generator=g)


def _state():
    return BitWidthState(0.2, (4, 4, 4), (0.1, 0.2, 0.3), 0.1)


def _arrays():
    from icml25.federated.torch_clients import module_to_arrays

    return module_to_arrays(_model())


@functools.cache
def _client():
    X, y = _data()
    return LBIFLClient(_model, X, y, epochs=1, batch_size=4)


def _strategy():
    return LBIFLStrategy(_arrays(), FixedPolicy(), rounds=2, n_clients=2, itv=1)


@functools.cache
def _reply():
    strategy = _strategy()
    ins = strategy.configure_fit(1, strategy.initialize(), [0])[0]
    return _client().fit(ins)


def _results():
    return [(0, _reply())]


def _decisions(policy, seed):
    return [Decision(0, _state().vector(), action_mask((4, 4, 4)), 1, 1.0),
            Decision(0, _state().vector(), action_mask((4, 4, 6)), 0, 0.5)]


def _conv_input():
    return _torch().ones(1, 2, 5, 5)


_SEED = {"seed": "the stochastic rounding's randomness: any seed or torch.Generator"}

EXAMPLES = {
    P + "BitConfig": Example(BitConfig, {"w": 4, "a": 6, "g": 8},
                             allow={"w": "none", "a": "none", "g": "none"}),  # None: that component stays FP32
    P + "BitConfig.raise_": Example(lambda **kw: BitConfig().raise_(**kw), {"component": "w"}),
    P + "BitWidthState": Exempt("record"),
    P + "Decision": Exempt("record"),
    P + "LBIFLRun": Exempt("record"),
    P + "FixedPolicy": Example(FixedPolicy, {}),
    P + "FixedPolicy.act": Example(lambda **kw: FixedPolicy().act(**kw), lambda: {"state": _state(), "seed": 0}),
    P + "Policy": Example(Policy, {}),
    P + "RandomPolicy": Example(RandomPolicy, {"p_raise": 0.5}, nonneg=["p_raise"]),
    P + "RandomPolicy.act": Example(lambda **kw: RandomPolicy(0.5).act(**kw), lambda: {"state": _state(), "seed": 0}),
    P + "TeacherSchedulePolicy": Example(TeacherSchedulePolicy, {"g_at": (0.1, 0.2), "a_at": 0.7},
                                         nonneg=["a_at"]),
    P + "TeacherSchedulePolicy.target": Example(lambda **kw: TeacherSchedulePolicy().target(**kw), {"t": 0.5},
                                                nonneg=["t"]),
    P + "TeacherSchedulePolicy.act": Example(lambda **kw: TeacherSchedulePolicy().act(**kw),
                                             lambda: {"state": _state(), "seed": 0}),
    P + "RLPolicy": Example(RLPolicy, {"hidden": 4, "seed": 0, "greedy": True}, positive=["hidden"]),
    P + "RLPolicy.forward": Example(
        lambda **kw: RLPolicy(hidden=4).forward(**kw),
        lambda: {"states": _torch().zeros(2, 8), "masks": _torch().ones(2, 4, dtype=_torch().bool)},
        allow={"states": "nan"}),  # a forward pass propagates NaN as torch does
    P + "RLPolicy.probabilities": Example(lambda **kw: RLPolicy(hidden=4).probabilities(**kw),
                                          lambda: {"state": _state()}),
    P + "RLPolicy.act": Example(lambda **kw: RLPolicy(hidden=4).act(**kw), lambda: {"state": _state(), "seed": 0}),
    P + "RLPolicy.save": Example(lambda **kw: RLPolicy(hidden=4).save(**kw), lambda: {"path": _tmp_path()},
                                 skip={"path": "any file path (a string names a file)"}),
    P + "pretrained_policy": Example(pretrained_policy, {}),
    P + "action_mask": Example(action_mask, {"bits": (4, 6, 8)}),
    P + "apply_action": Example(apply_action, lambda: {"bits": BitConfig(), "action": 1}),
    P + "bitops_per_sample": Example(bitops_per_sample, {"total_macs": 100, "bits": (4, 4, 8)}),
    P + "training_bitops": Example(training_bitops, {"macs_per_layer": {"0": 24, "2": 18}, "bits": (4, 4, 8),
                                                     "n_samples": 10}),
    P + "check_bits": Example(check_bits, {"bits": 6, "what": "bits"}, skip={"what": "a label used in messages"}),
    P + "count_macs": Example(count_macs, lambda: {"model": _model(), "input_shape": (4,)}),
    P + "message_bits": Example(message_bits, lambda: {"arrays": {"w": np.zeros(5, np.float32)}, "b_w": 4},
                                allow={"b_w": "none"}),  # None: an FP32 message
    P + "lbi_reward": Example(lbi_reward, {"bitops": 50.0, "bitops_int8": 100.0, "acc": 0.8, "acc_ref": 0.85,
                                           "t": 0.5, "theta": 1.0, "delta": 0.02},
                              positive=["bitops", "bitops_int8", "delta"], nonneg=["acc", "acc_ref", "t", "theta"]),
    P + "quantize_symmetric": Example(
        quantize_symmetric, lambda: {"x": _torch().tensor([0.7, -1.4, 0.1]), "bits": 4, "seed": 0},
        allow={"x": ("empty", "ndim")}, skip=_SEED),  # any shape quantizes, an empty tensor to an empty one
    P + "quantize_stochastic_asym": Example(
        quantize_stochastic_asym, lambda: {"x": _torch().tensor([0.7, -1.4, 0.1]), "bits": 4, "seed": 0},
        allow={"x": ("empty", "ndim")}, skip=_SEED),
    P + "dequantize": Example(
        dequantize, lambda: {"q": _torch().ones(2, 3, dtype=_torch().int8), "scale": _torch().tensor([[0.5], [0.25]]),
                             "zero": None},
        allow={"scale": "nan"}),  # elementwise tensor arithmetic propagates NaN as torch does
    P + "fake_quant": Example(fake_quant, lambda: {"x": _torch().tensor([0.7, -1.4, 0.1]), "bits": 4, "seed": 0},
                              allow={"x": ("empty", "ndim")}, skip=_SEED),
    P + "quant_error": Example(quant_error, lambda: {"x": _torch().tensor([0.7, -1.4, 0.1]), "bits": 4, "seed": 0},
                               allow={"x": "ndim"}, skip=_SEED),
    P + "integer_linear": Example(
        integer_linear, lambda: {"x": _torch().ones(2, 3), "weight": _torch().ones(4, 3) * 0.5,
                                 "bias": _torch().zeros(4), "w_bits": 4, "a_bits": 4},
        allow={"x": ("empty", "ndim"), "bias": "none"}),  # leading dimensions are batch dimensions; no bias
    P + "QLinear": Example(QLinear, lambda: {"in_features": 3, "out_features": 2, "bits": BitConfig()},
                           positive=["in_features", "out_features"],
                           skip={"seed": "any seed or torch.Generator", "device": "a torch device spec",
                                 "dtype": "a torch dtype"},
                           allow={"init_seed": "none"}),  # None: a fresh random initialisation
    P + "QLinear.forward": Example(lambda **kw: QLinear(3, 2, seed=0).forward(**kw), lambda: {"x": _torch().ones(2, 3)},
                                   allow={"x": ("empty", "ndim")}),  # nn.Linear semantics
    P + "QConv2d": Example(QConv2d, lambda: {"in_channels": 2, "out_channels": 3, "kernel_size": 3,
                                             "bits": BitConfig()},
                           positive=["in_channels", "out_channels", "kernel_size", "stride", "dilation", "groups"],
                           skip={"seed": "any seed or torch.Generator", "device": "a torch device spec",
                                 "dtype": "a torch dtype"},
                           allow={"init_seed": "none"}),  # None: a fresh random initialisation
    P + "QConv2d.forward": Example(lambda **kw: QConv2d(2, 3, 3, seed=0).forward(**kw), lambda: {"x": _conv_input()},
                                   allow={"x": "empty"}),  # an empty batch, as nn.Conv2d
    P + "quantize_model": Example(quantize_model, lambda: {"model": _model(), "bits": BitConfig(), "seed": 0},
                                  skip=_SEED),
    P + "encode_arrays": Example(encode_arrays, lambda: {"arrays": {"w": np.array([0.5, -1.0], np.float32)},
                                                         "b_w": 4, "seed": 0}, skip=_SEED),
    P + "decode_arrays": Example(decode_arrays, lambda: {
        "message": encode_arrays({"w": np.array([0.5, -1.0], np.float32)}, 4),
        "layout": {"w": np.zeros(2, np.float32)}, "b_w": 4}),
    P + "lowbit_accuracy_evaluator": Example(lowbit_accuracy_evaluator,
                                             lambda: {"model_fn": _model, "X": _data()[0], "y": _data()[1]},
                                             paired=[("X", "y")]),
    P + "LBIFLClient": Example(LBIFLClient, lambda: {"model_fn": _model, "X": _data()[0], "y": _data()[1],
                                                     "epochs": 1, "batch_size": 4},
                               paired=[("X", "y")], positive=["epochs", "lr", "batch_size"]),
    P + "LBIFLClient.fit": Example(lambda **kw: _client().fit(**kw),
                                   lambda: {"ins": _strategy().configure_fit(1, _strategy().initialize(), [0])[0]}),
    P + "LBIFLStrategy": Example(LBIFLStrategy, lambda: {"initial_arrays": _arrays(), "policy": FixedPolicy(),
                                                         "rounds": 2, "n_clients": 2, "itv": 1},
                                 positive=["rounds", "n_clients", "itv"]),
    P + "LBIFLStrategy.configure_fit": Example(lambda **kw: _strategy().configure_fit(**kw),
                                               lambda: {"server_round": 1, "arrays": _arrays(), "clients": [0, 1]},
                                               positive=["server_round"],
                                               allow={"clients": "empty"}),  # no client sampled: no instruction
    P + "LBIFLStrategy.validate_fit": Example(lambda **kw: _strategy().validate_fit(**kw),
                                              lambda: {"server_round": 1, "arrays": _arrays(), "res": _reply()},
                                              positive=["server_round"]),
    P + "LBIFLStrategy.aggregate_fit": Example(lambda **kw: _strategy().aggregate_fit(**kw),
                                               lambda: {"server_round": 1, "arrays": _arrays(), "results": _results(),
                                                        "failures": []},
                                               positive=["server_round"],
                                               allow={"failures": "empty"}),  # no client failed
    P + "LBIFLStrategy.evaluate": Example(lambda **kw: _strategy().evaluate(**kw),
                                          lambda: {"server_round": 1, "arrays": _arrays()}, positive=["server_round"]),
    P + "run_lbi_fl": Example(run_lbi_fl, lambda: {"model_fn": _model, "client_data": [_data(8, 0), _data(8, 1)],
                                                   "rounds": 2, "policy": FixedPolicy(), "X_test": _data(6, 2)[0],
                                                   "y_test": _data(6, 2)[1], "itv": 1, "local_epochs": 1,
                                                   "batch_size": 4},
                              paired=[("X_test", "y_test")], positive=["rounds", "itv", "local_epochs", "lr",
                                                                       "batch_size"], timeout=20.0),
    P + "plan_bitops": Example(plan_bitops, lambda: {"policy": RandomPolicy(), "client_samples": [10, 20],
                                                     "rounds": 4, "macs": 100, "itv": 2},
                               positive=["rounds", "itv", "local_epochs"]),
    P + "ProxyTask": Example(ProxyTask, lambda: {"model_fn": _model, "client_data": [_data(8, 0), _data(8, 1)],
                                                 "X_test": _data(6, 2)[0], "y_test": _data(6, 2)[1], "rounds": 2,
                                                 "itv": 1, "local_epochs": 1, "batch_size": 4},
                             paired=[("X_test", "y_test")],
                             positive=["rounds", "itv", "local_epochs", "lr", "batch_size", "delta"],
                             nonneg=["theta"], timeout=20.0),
    P + "train_agent": Example(train_agent, lambda: {"proxy_task_fn": _decisions, "episodes": 1, "hidden": 4},
                               positive=["episodes", "lr", "hidden"], nonneg=["bc_weight", "bc_decay",
                                                                              "baseline_momentum"]),
}


def _tmp_path():
    import tempfile
    from pathlib import Path

    return str(Path(tempfile.mkdtemp(prefix="lbi_fl_policy_")) / "policy.npz")


def _saved_policy():
    path = _tmp_path()
    RLPolicy(hidden=4).save(path)
    return path


EXAMPLES.update({
    P + "Policy.act": Exempt("abstract"),
    P + "RLPolicy.load": Example(RLPolicy.load, lambda: {"path": _saved_policy()},
                                 skip={"path": "any file path; a missing file raises FileNotFoundError, the standard "
                                               "exception for it"}),
})

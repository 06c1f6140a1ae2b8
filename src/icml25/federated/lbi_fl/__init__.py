"""LBI-FL: Low-Bit Integerized Federated Learning with Temporally Dynamic Bit-Width Allocation (Ding et al., ICML 2025).

Clients train with weights, activations and gradients quantized to INT4/6/8 (fake quantization,
BitOPs counted analytically); the model travels both ways as packed b_w-bit integers plus float32
scales; a small policy raises bit-widths every few rounds.  Built on the shared runtime
(:func:`icml25.federated.simulate`, Flower adapter).  The reward and quantization-error forms are
reconstructed (the paper's Eqs. 5-8 were not available): see :mod:`icml25.federated.lbi_fl.agent`.

Example
-------
>>> import torch
>>> from icml25.federated.lbi_fl import BitConfig, QLinear, fake_quant
>>> fake_quant(torch.tensor([0.7, -1.4, 0.1]), bits=4).tolist()  # scale 1.4 / 7: q = 4, -7, 0
[0.800000011920929, -1.399999976158142, 0.0]
>>> layer = QLinear(8, 2, bits=BitConfig(w=4, a=4, g=8))
>>> layer(torch.ones(3, 8)).shape
torch.Size([3, 2])
"""

from icml25.federated.lbi_fl.agent import (
    ACTIONS,
    PRETRAINED_PATH,
    STATE_DIM,
    BitWidthState,
    Decision,
    FixedPolicy,
    Policy,
    RandomPolicy,
    RLPolicy,
    TeacherSchedulePolicy,
    action_mask,
    apply_action,
    lbi_reward,
    pretrained_policy,
    train_agent,
)
from icml25.federated.lbi_fl.fl import (
    LBIFLClient,
    LBIFLRun,
    LBIFLStrategy,
    ProxyTask,
    decode_arrays,
    encode_arrays,
    lowbit_accuracy_evaluator,
    plan_bitops,
    run_lbi_fl,
)
from icml25.federated.lbi_fl.quant import (
    BITS,
    BitConfig,
    QConv2d,
    QLinear,
    bitops_per_sample,
    check_bits,
    count_macs,
    dequantize,
    fake_quant,
    integer_linear,
    message_bits,
    quant_error,
    quantize_model,
    quantize_stochastic_asym,
    quantize_symmetric,
    training_bitops,
)

__all__ = [
    "ACTIONS", "PRETRAINED_PATH", "STATE_DIM", "BitWidthState", "Decision", "FixedPolicy", "Policy", "RandomPolicy",
    "RLPolicy", "TeacherSchedulePolicy", "action_mask", "apply_action", "lbi_reward", "pretrained_policy",
    "train_agent", "LBIFLClient", "LBIFLRun", "LBIFLStrategy", "ProxyTask", "decode_arrays", "encode_arrays",
    "lowbit_accuracy_evaluator", "plan_bitops", "run_lbi_fl", "BITS", "BitConfig", "QConv2d", "QLinear",
    "bitops_per_sample", "check_bits", "count_macs", "dequantize", "fake_quant", "integer_linear", "message_bits",
    "quant_error", "quantize_model", "quantize_stochastic_asym", "quantize_symmetric", "training_bitops",
]

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from icml25.federated import Client, FitRes, MalformedMessageError, payload_bits, simulate  # noqa: E402
from icml25.federated.lbi_fl import (  # noqa: E402
    ACTIONS,
    BitConfig,
    BitWidthState,
    Decision,
    FixedPolicy,
    LBIFLClient,
    LBIFLStrategy,
    QConv2d,
    QLinear,
    RandomPolicy,
    RLPolicy,
    TeacherSchedulePolicy,
    action_mask,
    apply_action,
    bitops_per_sample,
    count_macs,
    decode_arrays,
    encode_arrays,
    fake_quant,
    integer_linear,
    lbi_reward,
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
from icml25.federated.torch_clients import module_to_arrays  # noqa: E402
from icml25.utils.nn import make_mlp  # noqa: E402


# ---------------------------------------------------------------- quantizers
def test_symmetric_quantizer_known_values_and_range():
    x = torch.tensor([0.7, -1.4, 0.1, 0.0])
    q, s = quantize_symmetric(x, 4)
    assert q.dtype == torch.int8 and math.isclose(float(s), 1.4 / 7, rel_tol=1e-6)
    assert q.tolist() == [4, -7, 0, 0]  # 0.7 / 0.2 = 3.5 rounds to 4 (half to even); 0.1 / 0.2 = 0.5 -> 0
    q8, _ = quantize_symmetric(torch.randn(1000), 8)
    assert int(q8.abs().max()) == 127
    assert torch.equal(fake_quant(x, 6), quantize_symmetric(x, 6)[0].float() * quantize_symmetric(x, 6)[1])


def test_symmetric_quantizer_per_channel_and_zero_tensor():
    w = torch.tensor([[1.0, -0.6], [0.0, 0.0], [0.021, 0.01]])
    q, s = quantize_symmetric(w, 4, per_channel=True)
    assert s.shape == (3, 1) and float(s[1, 0]) == 0.0
    assert q[1].tolist() == [0, 0] and q[0].tolist() == [7, -4] and q[2].tolist() == [7, 3]
    q0, s0 = quantize_symmetric(torch.zeros(5), 4)
    assert float(s0) == 0.0 and q0.tolist() == [0] * 5
    assert quant_error(torch.zeros(4), 4) == 0.0


def test_quantizers_reject_bad_input():
    with pytest.raises(ValueError, match="finite values, got NaN or inf"):
        quantize_symmetric(torch.tensor([1.0, float("nan")]), 4)
    with pytest.raises(ValueError, match="finite values, got NaN or inf"):
        quantize_stochastic_asym(torch.tensor([1.0, float("inf")]), 4)
    with pytest.raises(TypeError, match="floating-point"):
        quantize_symmetric(torch.tensor([1, 2]), 4)
    with pytest.raises(ValueError, match="bits"):
        quantize_symmetric(torch.ones(2), 1)
    with pytest.raises(TypeError, match="bits must be an integer"):
        quantize_symmetric(torch.ones(2), 4.0)
    with pytest.raises(ValueError, match="mode"):
        fake_quant(torch.ones(2), 4, mode="floor")
    with pytest.raises(ValueError, match="rounding"):
        quantize_stochastic_asym(torch.ones(2), 4, rounding="up")


def test_stochastic_rounding_is_unbiased_and_on_grid():
    x = torch.tensor([-0.83, -0.2, 0.0, 0.137, 0.5, 1.1])
    draws = torch.stack([fake_quant(x, 4, "stochastic", torch.Generator().manual_seed(i)) for i in range(10_000)])
    se = draws.std(0) / math.sqrt(draws.shape[0])
    assert torch.all((draws.mean(0) - x).abs() <= 3 * se + 1e-6)
    q, s, z = quantize_stochastic_asym(x, 4, torch.Generator().manual_seed(0))
    assert int(q.min()) >= 0 and int(q.max()) <= 15 and math.isclose(float(s), 1.93 / 15, rel_tol=1e-6)
    assert float(z) == pytest.approx(-0.83)
    near = fake_quant(x, 4, "asym_nearest")  # round-to-nearest: deterministic and biased
    assert torch.equal(near, fake_quant(x, 4, "asym_nearest"))


def test_stochastic_quantizer_constant_tensor_and_seed():
    q, s, z = quantize_stochastic_asym(torch.full((4,), 2.5), 4, torch.Generator().manual_seed(0))
    assert float(s) == 0.0 and q.tolist() == [0] * 4
    assert torch.equal(fake_quant(torch.full((4,), 2.5), 4, "stochastic"), torch.full((4,), 2.5))
    x = torch.randn(50)
    a = fake_quant(x, 4, "stochastic", torch.Generator().manual_seed(3))
    b = fake_quant(x, 4, "stochastic", torch.Generator().manual_seed(3))
    assert torch.equal(a, b)


# ---------------------------------------------------------------- bit config
def test_bitconfig_only_valid_bits_and_never_lower():
    bits = BitConfig()
    assert bits.as_tuple() == (4, 4, 4)
    bits.raise_("g")
    bits.raise_("g")
    assert bits.g == 8
    with pytest.raises(ValueError, match="cannot be raised"):
        bits.raise_("g")
    with pytest.raises(ValueError, match="only increase"):
        bits.g = 6
    with pytest.raises(ValueError, match="one of 4, 6, 8"):
        BitConfig(w=5)
    with pytest.raises(ValueError, match="one of 4, 6, 8"):
        BitConfig(a=16)
    with pytest.raises(TypeError, match="bit-width w must be an integer"):
        BitConfig(w="4")
    with pytest.raises(ValueError, match="component"):
        bits.raise_("x")


# ---------------------------------------------------------------- low-bit layers
def test_qlinear_forward_backward_match_their_definition():
    torch.manual_seed(0)
    layer = QLinear(6, 3, bits=BitConfig(4, 6, 8), seed=torch.Generator().manual_seed(1))
    x = torch.randn(5, 6, requires_grad=True)
    y = layer(x)
    a_hat, w_hat = fake_quant(x.detach(), 6), fake_quant(layer.weight.detach(), 4)
    torch.testing.assert_close(y, F.linear(a_hat, w_hat, layer.bias))
    g = torch.randn(5, 3)
    y.backward(g)
    g_hat = fake_quant(g, 8, "stochastic", torch.Generator().manual_seed(1))
    torch.testing.assert_close(x.grad, g_hat @ w_hat)
    torch.testing.assert_close(layer.weight.grad, g_hat.T @ a_hat)
    torch.testing.assert_close(layer.bias.grad, g_hat.sum(0))
    assert set(layer.errors) == {"w", "a", "g"} and all(0 < e < 1 for e in layer.errors.values())


def test_integer_product_matches_fake_quantization():
    torch.manual_seed(1)
    layer = QLinear(16, 4, bits=BitConfig(4, 8, 8))
    x = torch.randn(7, 16)
    torch.testing.assert_close(integer_linear(x, layer.weight, layer.bias, 4, 8), layer(x).detach())


def test_qconv2d_matches_fake_quantized_conv_and_its_gradients():
    torch.manual_seed(2)
    bits = BitConfig(4, 4, 4)
    bits.g = None  # exact gradients: the STE backward must then equal autograd of the fake-quantized conv
    conv = QConv2d(2, 3, 3, padding=1, bits=bits)
    x = torch.randn(2, 2, 5, 5, requires_grad=True)
    conv(x).square().sum().backward()
    x2 = x.detach().clone().requires_grad_(True)
    w2 = conv.weight.detach().clone().requires_grad_(True)
    a_hat = x2 + (fake_quant(x2.detach(), 4) - x2).detach()
    w_hat = w2 + (fake_quant(w2.detach(), 4) - w2).detach()
    F.conv2d(a_hat, w_hat, conv.bias.detach(), padding=1).square().sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(conv.weight.grad, w2.grad)


def test_layer_reports_nan_with_its_name():
    model = quantize_model(make_mlp([4, 3, 2], seed=0), BitConfig(), strict=True)
    with pytest.raises(ValueError, match=r"layer '0': input activation: x must contain only finite values, got NaN"):
        model(torch.tensor([[1.0, float("nan"), 0.0, 0.0]]))


def test_quantize_model_swaps_layers_lists_unsupported_and_keeps_rng():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(2 * 6 * 6, 3))
    before = model(torch.ones(1, 1, 8, 8)).detach()
    state = torch.random.get_rng_state()
    with pytest.warns(UserWarning, match=r"1 \(BatchNorm2d\)"):
        quantize_model(model, BitConfig(8, 8, 8))
    assert torch.equal(state, torch.random.get_rng_state())
    assert isinstance(model[0], QConv2d) and isinstance(model[3], QLinear)
    assert (model(torch.ones(1, 1, 8, 8)).detach() - before).abs().max() < 0.1
    with pytest.raises(TypeError, match="BatchNorm1d"):
        quantize_model(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)), BitConfig(), strict=True)
    with pytest.raises(TypeError, match="BitConfig"):
        quantize_model(model, (4, 4, 4))
    with pytest.raises(TypeError, match="bare Linear"):  # a root layer cannot be swapped in place
        quantize_model(nn.Linear(2, 2), BitConfig())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_qlinear_runs_on_cuda():
    layer = QLinear(8, 2, bits=BitConfig(), seed=torch.Generator(device="cuda").manual_seed(0)).cuda()
    x = torch.randn(4, 8, device="cuda", requires_grad=True)
    layer(x).sum().backward()
    assert x.grad.device.type == "cuda"


# ---------------------------------------------------------------- BitOPs and messages
def test_macs_and_bitops_follow_the_papers_accounting():
    mlp = make_mlp([64, 256, 128, 10], seed=0)
    macs = count_macs(mlp, (64,))
    assert sum(macs.values()) == 64 * 256 + 256 * 128 + 128 * 10
    conv = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.Flatten(), nn.Linear(4 * 8 * 8, 10))
    assert count_macs(conv, (1, 8, 8)) == {"0": 4 * 64 * 9, "2": 256 * 10}
    m = 1000
    assert [bitops_per_sample(m, b) for b in [(8, 8, 8), (4, 4, 8), (4, 6, 8), (4, 4, 4)]] == \
        [192 * m, 80 * m, 104 * m, 48 * m]
    assert training_bitops({"a": 10, "b": 5}, BitConfig(), 3) == 15 * 48 * 3
    with pytest.raises(ValueError, match="n_samples"):
        training_bitops({"a": 1}, BitConfig(), -1)


def test_encoded_message_is_packed_bits_plus_float32_scales():
    arrays = module_to_arrays(make_mlp([64, 256, 10], seed=0))
    for b in (4, 6, 8):
        message = encode_arrays(arrays, b)
        expected = sum(8 * ((v.size * b + 7) // 8) + 32 for v in arrays.values())
        assert payload_bits(message) == expected
        assert abs(payload_bits(message) - message_bits(arrays, b)) <= 8 * len(arrays)
        decoded = decode_arrays(message, arrays, b)
        for name, value in arrays.items():
            step = np.abs(value).max() / (2 ** (b - 1) - 1)
            assert np.abs(decoded[name] - value).max() <= step / 2 + 1e-6
    fp32 = sum(32 * v.size for v in arrays.values())
    assert fp32 / payload_bits(encode_arrays(arrays, 4)) > 7.9


def test_decode_rejects_malformed_messages():
    arrays = {"w": np.ones((3, 2), np.float32)}
    message = encode_arrays(arrays, 4)
    with pytest.raises(MalformedMessageError, match="names"):
        decode_arrays({"w::q": message["w::q"]}, arrays, 4)
    with pytest.raises(MalformedMessageError, match="packed"):
        decode_arrays({**message, "w::q": np.zeros(9, np.uint8)}, arrays, 4)
    with pytest.raises(MalformedMessageError, match="range"):
        decode_arrays({**message, "w::q": np.full(3, 255, np.uint8)}, arrays, 4)
    with pytest.raises(MalformedMessageError, match="scales"):
        decode_arrays({**message, "w::s": np.array([-1.0], np.float32)}, arrays, 4)
    with pytest.raises(ValueError, match="b_w"):
        encode_arrays(arrays, 3)


# ---------------------------------------------------------------- policies and agent
def _state(t, bits=(4, 4, 4)):
    return BitWidthState(t, bits, (0.01, 0.02, 0.5), 0.0)


def test_actions_masks_and_teacher_schedule():
    assert action_mask((4, 8, 6)).tolist() == [True, True, False, True]
    bits = BitConfig(4, 8, 4)
    with pytest.raises(ValueError, match="masked"):
        apply_action(bits, ACTIONS.index("a"))
    with pytest.raises(ValueError, match="action"):
        apply_action(bits, 7)
    assert apply_action(bits, ACTIONS.index("g")) and bits.g == 6 and not apply_action(bits, 0)
    teacher, rng = TeacherSchedulePolicy(), np.random.default_rng(0)
    assert teacher.act(_state(0.05), rng) == 0
    assert teacher.act(_state(0.1), rng) == ACTIONS.index("g")
    assert teacher.act(_state(0.25, (4, 4, 6)), rng) == ACTIONS.index("g")
    assert teacher.act(_state(0.5, (4, 4, 8)), rng) == 0
    assert teacher.act(_state(0.75, (4, 4, 8)), rng) == ACTIONS.index("a")
    random = RandomPolicy(1.0)
    assert all(random.act(_state(0.5, (8, 8, 6)), rng) == ACTIONS.index("g") for _ in range(20))
    assert FixedPolicy().act(_state(0.5), rng) == 0
    with pytest.raises(ValueError, match="p_raise"):
        RandomPolicy(1.5)


def test_reward_instantiation():
    assert lbi_reward(80, 192, 0.9, 0.9, 0.5) == pytest.approx(192 / 80 * 0.5)
    assert lbi_reward(80, 192, 0.88, 0.9, 1.0) == pytest.approx(192 / 80 * math.exp(-1))
    assert lbi_reward(80, 192, 0.95, 0.9, 1.0) == pytest.approx(192 / 80)
    with pytest.raises(ValueError, match=r"bitops must be a real number in \(0, inf\)"):
        lbi_reward(0, 192, 0.9, 0.9, 1.0)


def test_rl_policy_save_load_roundtrip_and_size_check(tmp_path):
    policy = RLPolicy(hidden=32, seed=3)
    assert sum(p.numel() for p in policy.parameters()) == 8 * 32 + 32 + 32 * 32 + 32 + 32 * 4 + 4
    policy.save(tmp_path / "p.npz")
    loaded = RLPolicy.load(tmp_path / "p.npz")
    s = _state(0.3, (4, 6, 8))
    np.testing.assert_allclose(loaded.probabilities(s), policy.probabilities(s))
    assert loaded.probabilities(_state(0.3, (8, 8, 8)))[1:].sum() == 0.0  # every raise masked
    with np.load(tmp_path / "p.npz") as f:
        arrays = dict(f)
    np.savez(tmp_path / "bad.npz", **{**arrays, "state_dim": 9})
    with pytest.raises(ValueError, match="state/action size"):
        RLPolicy.load(tmp_path / "bad.npz")


def test_train_agent_behaviour_cloning_learns_the_teacher():
    teacher, rng = TeacherSchedulePolicy(), np.random.default_rng(0)

    def proxy(policy, seed):  # a synthetic episode: rewards are zero, so only behaviour cloning acts
        gen, out = np.random.default_rng(seed), []
        for client in range(4):
            bits = BitConfig()
            for t in np.arange(1, 8) / 8:
                state = BitWidthState(float(t), bits.as_tuple(), tuple(gen.random(3) * 0.1), 0.0)
                action = policy.act(state, gen)
                out.append(Decision(client, state.vector(), action_mask(bits), action, 0.0))
                apply_action(bits, action)
        return out

    policy = train_agent(proxy, episodes=150, bc_weight=1.0, bc_decay=1.0, lr=0.02, seed=0)
    states = [_state(t, b) for t, b in [(0.15, (4, 4, 4)), (0.3, (4, 4, 6)), (0.5, (4, 4, 8)),
                                        (0.8, (4, 4, 8)), (0.9, (4, 6, 8))]]
    assert [policy.act(s, rng) for s in states] == [teacher.act(s, rng) for s in states]
    with pytest.raises(ValueError, match="episodes"):
        train_agent(proxy, episodes=0)


def test_shipped_agent_loads_and_keeps_weights_at_int4():
    policy = pretrained_policy()
    rng = np.random.default_rng(0)
    bits = BitConfig()
    for t in np.arange(1, 8) / 8:
        apply_action(bits, policy.act(BitWidthState(float(t), bits.as_tuple(), (0.05, 0.1, 0.5), 0.0), rng))
    assert bits.w == 4 and bits.g == 8  # the learned schedule raises gradients and keeps weights at INT4


# ---------------------------------------------------------------- federated loop
def _clients_data(n_clients=3, n=40, seed=0):
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(n_clients * n, 8, generator=gen)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).long()
    return [(X[i * n:(i + 1) * n], y[i * n:(i + 1) * n]) for i in range(n_clients)], X, y


def _model():
    return make_mlp([8, 16, 2], seed=0)


def test_run_lbi_fl_learns_counts_ledger_bits_and_is_deterministic():
    data, X, y = _clients_data()
    kw = dict(rounds=6, policy=TeacherSchedulePolicy(), X_test=X, y_test=y, itv=2, seed=0, lr=0.3, batch_size=16)
    run = run_lbi_fl(_model, data, **kw)
    assert run.final_accuracy > 0.85
    arrays = module_to_arrays(_model())
    per_message = payload_bits(encode_arrays(arrays, 4))
    assert run.history.ledger.total("down") == run.history.ledger.total("up") == 6 * 3 * per_message
    assert [b[0] for b in run.bits_log] == [(4, 4, 4)] * 2 + [(4, 4, 6)] * 2 + [(4, 4, 8)] * 2
    macs = sum(count_macs(_model(), (8,)).values())
    assert run.bitops == pytest.approx(plan_bitops(TeacherSchedulePolicy(), [40] * 3, 6, macs, itv=2))
    again = run_lbi_fl(_model, data, **kw)
    assert again.accuracy == run.accuracy


def test_failing_client_is_reported_and_empty_client_is_harmless():
    data, X, y = _clients_data()

    class Broken(Client):
        def fit(self, ins):
            return FitRes({"oops": np.zeros(3, np.float32)}, 5, {"b_w": 4, "err_w": 0.0, "err_a": 0.0, "err_g": 0.0,
                                                                 "bitops": 0.0})

    clients = [LBIFLClient(_model, *data[0]), LBIFLClient(_model, X[:0], y[:0]), Broken()]
    strategy = LBIFLStrategy(module_to_arrays(_model()), FixedPolicy(), rounds=2, n_clients=3)
    history = simulate(clients, strategy, rounds=2)
    assert [f.client for f in history.failures] == [2, 2]
    assert "names differ" in history.failures[0].error
    stopped = simulate(clients, LBIFLStrategy(module_to_arrays(_model()), FixedPolicy(), 2, 3), rounds=2,
                       on_failure="stop")
    assert stopped.stopped.startswith("round 1: client 2")
    with pytest.raises(TypeError, match="Policy"):
        LBIFLStrategy(module_to_arrays(_model()), "teacher", 2, 3)
    with pytest.raises(ValueError, match="initial_bits"):
        LBIFLStrategy(module_to_arrays(_model()), FixedPolicy(), 2, 3, initial_bits=(4, 4, 2))


def test_flower_adapter_runs_lbi_fl_like_the_simulator():
    pytest.importorskip("flwr")
    from icml25.federated.flower import FlowerStrategy, drive_in_process

    data, X, y = _clients_data()

    def build():
        clients = [LBIFLClient(_model, Xc, yc, seed=i) for i, (Xc, yc) in enumerate(data)]
        return clients, LBIFLStrategy(module_to_arrays(_model()), TeacherSchedulePolicy(), rounds=4, n_clients=3,
                                      itv=1)

    clients, strategy = build()
    wrapped = FlowerStrategy(strategy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        drive_in_process(clients, wrapped, rounds=2)
    clients2, reference = build()
    history = simulate(clients2, reference, rounds=2)
    for name, value in history.arrays.items():
        np.testing.assert_allclose(wrapped.arrays[name], value)
    assert strategy.bits_log == reference.bits_log


def test_stochastic_message_rounding_is_unbiased_and_validated():
    arrays = {"w": np.array([[0.3, -0.11], [0.05, 1.0]], np.float32)}
    gen = torch.Generator().manual_seed(0)
    mean = np.mean([decode_arrays(encode_arrays(arrays, 4, rounding="stochastic", seed=gen), arrays, 4)["w"]
                    for _ in range(4000)], axis=0)
    np.testing.assert_allclose(mean, arrays["w"], atol=0.01)
    nearest = decode_arrays(encode_arrays(arrays, 4), arrays, 4)["w"]
    assert abs(nearest[1, 0] - 0.05) > 0.04  # round-to-nearest drops 0.05 (less than half a step of 1/7)
    with pytest.raises(ValueError, match="rounding"):
        encode_arrays(arrays, 4, rounding="floor")
    data, X, y = _clients_data()
    with pytest.raises(ValueError, match="message_rounding"):
        LBIFLClient(_model, *data[0], message_rounding="up")
    run = run_lbi_fl(_model, data, rounds=3, policy=FixedPolicy(), X_test=X, y_test=y, lr=0.3, batch_size=16,
                     message_rounding="stochastic")
    assert len(run.accuracy) == 3 and run.history.ledger.total("up") == 3 * 3 * payload_bits(
        encode_arrays(module_to_arrays(_model()), 4))


def test_per_channel_messages_carry_one_scale_per_output_channel():
    arrays = module_to_arrays(make_mlp([8, 16, 2], seed=0))
    arrays["0.weight"][3] *= 20.0  # one large row: per-tensor scales would flatten the others to few levels
    message = encode_arrays(arrays, 4, per_channel=True)
    assert payload_bits(message) == sum(8 * ((v.size * 4 + 7) // 8) + 32 * (v.shape[0] if v.ndim >= 2 else 1)
                                        for v in arrays.values())
    decoded = decode_arrays(message, arrays, 4)
    per_tensor = decode_arrays(encode_arrays(arrays, 4), arrays, 4)
    w = arrays["0.weight"]
    step = np.abs(w).max(axis=1, keepdims=True) / 7
    assert np.all(np.abs(decoded["0.weight"] - w) <= step / 2 + 1e-6)
    assert np.abs(decoded["0.weight"] - w).sum() < np.abs(per_tensor["0.weight"] - w).sum()


def test_per_channel_reaches_the_evaluator_and_is_validated():
    from icml25.federated.lbi_fl import lowbit_accuracy_evaluator

    # two outputs: the weak row (class 1) sits below half a per-tensor INT4 step, so only a
    # per-channel evaluation keeps it
    model = nn.Sequential(nn.Linear(2, 2, bias=False))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 0.05]]))
    X = torch.tensor([[0.02, 1.0], [1.0, 0.0]])
    y = torch.tensor([1, 0])
    arrays = module_to_arrays(model)
    fn = lambda: nn.Sequential(nn.Linear(2, 2, bias=False))  # noqa: E731
    bits = BitConfig(4, 8, None)
    assert lowbit_accuracy_evaluator(fn, X, y, per_channel=True)(arrays, bits)["accuracy"] == 1.0
    assert lowbit_accuracy_evaluator(fn, X, y)(arrays, bits)["accuracy"] == 0.5
    data, Xd, yd = _clients_data()
    run = run_lbi_fl(_model, data, rounds=2, policy=FixedPolicy(), X_test=Xd, y_test=yd, lr=0.3, batch_size=16,
                     per_channel=True)
    assert run.history.ledger.total("up") == 2 * 3 * payload_bits(
        encode_arrays(module_to_arrays(_model()), 4, per_channel=True))
    for bad in ("yes", 1, None):
        with pytest.raises(TypeError, match="per_channel must be True or False"):
            encode_arrays(arrays, 4, per_channel=bad)
        with pytest.raises(TypeError, match="per_channel"):
            LBIFLClient(_model, *data[0], per_channel=bad)
        with pytest.raises(TypeError, match="per_channel"):
            LBIFLStrategy(module_to_arrays(_model()), FixedPolicy(), 2, 3, per_channel=bad)
        with pytest.raises(TypeError, match="per_channel"):
            lowbit_accuracy_evaluator(fn, X, y, per_channel=bad)


def test_bad_run_and_plan_arguments_are_refused_up_front():
    data, X, y = _clients_data()
    kw = dict(rounds=2, policy=FixedPolicy(), X_test=X, y_test=y, itv=1)
    for bad, exc, name in [({"lr": "abc"}, TypeError, "lr"), ({"local_epochs": 0}, ValueError, "local_epochs"),
                           ({"X_test": X[:3]}, ValueError, "X_test"), ({"policy_seed": "abc"}, TypeError,
                                                                       "policy_seed")]:
        with pytest.raises(exc, match=name):
            run_lbi_fl(_model, data, **{**kw, **bad})
    with pytest.raises(ValueError, match="macs"):
        plan_bitops(FixedPolicy(), [10, 20], rounds=4, macs=-1)
    with pytest.raises(ValueError, match="client_samples"):
        plan_bitops(FixedPolicy(), [], rounds=4, macs=100)
    with pytest.raises(ValueError, match="itv"):
        plan_bitops(FixedPolicy(), [10], rounds=4, macs=100, itv=0)
    with pytest.raises(ValueError, match="total_macs"):
        bitops_per_sample(-1, (4, 4, 4))
    with pytest.raises(TypeError, match="state"):
        FixedPolicy().act("not a state")

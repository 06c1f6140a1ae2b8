"""The federated loop of LBI-FL (Algorithm 1) on the shared runtime: low-bit clients, a re-quantizing server.

Every message carries the model as packed b_w-bit integers plus one float32 scale per tensor
(:func:`encode_arrays`), so the runtime's ledger counts the bits LBI-FL really transmits.  The
server dequantizes the uploads, averages them (FedAvg) and re-quantizes the average for the next
downlink; every ``itv`` rounds the policy raises (or keeps) each client's bit-widths.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from icml25.federated.lbi_fl.agent import (
    BitWidthState,
    Decision,
    FixedPolicy,
    Policy,
    action_mask,
    apply_action,
    lbi_reward,
)
from icml25.federated.lbi_fl.quant import (
    COMPONENTS,
    BitConfig,
    LowBitMixin,
    TorchSeed,
    bitops_per_sample,
    check_bits,
    count_macs,
    dequantize,
    quantize_model,
    quantize_symmetric,
)
from icml25.federated.ledger import CommunicationLedger
from icml25.federated.messages import FitIns, FitRes, MalformedMessageError, pack_uint, unpack_uint
from icml25.federated.simulation import Client, History, Strategy, simulate, weighted_average
from icml25.federated.torch_clients import load_arrays, module_to_arrays
from icml25.utils.nn import accuracy, train_classifier
from icml25.utils.random import Seed, as_generator, check_seed, int_seed, torch_generator
from icml25.utils.validation import (
    check_bool,
    check_callable,
    check_choice,
    check_consistent_length,
    check_instance,
    check_scalar,
    check_sequence,
    check_tensor,
)

__all__ = [
    "encode_arrays", "decode_arrays", "LBIFLClient", "LBIFLStrategy", "lowbit_accuracy_evaluator", "LBIFLRun",
    "run_lbi_fl", "plan_bitops", "ProxyTask",
]

Arrays = dict[str, np.ndarray]
Q_SUFFIX, S_SUFFIX = "::q", "::s"


def encode_arrays(arrays: Mapping[str, np.ndarray], b_w: int, per_channel: bool = False, rounding: str = "nearest",
                  seed: TorchSeed = None) -> Arrays:
    """The message of a model at ``b_w`` bits: per tensor ``name::q`` (packed unsigned ints) and ``name::s``
    (float32 scales).  Symmetric quantization (``rounding`` "nearest", the paper's, or "stochastic",
    unbiased, drawn with ``seed``: see :mod:`icml25.federated.lbi_fl.quant`); ``q + 2^(b-1) - 1`` is sent so
    that it fits in b bits."""
    check_instance(arrays, "arrays", Mapping, "a mapping name -> array")
    check_bits(b_w, "b_w")
    per_channel = check_bool(per_channel, "per_channel")
    check_choice(rounding, "rounding", ("nearest", "stochastic"))
    generator = None if seed is None else torch_generator(seed)
    offset = 2 ** (b_w - 1) - 1
    out: Arrays = {}
    for name, value in arrays.items():
        q, scale = quantize_symmetric(torch.as_tensor(np.asarray(value, dtype=np.float32)), b_w,
                                      per_channel and np.ndim(value) >= 2, rounding, generator)
        out[name + Q_SUFFIX] = pack_uint(q.numpy().astype(np.int32) + offset, b_w)
        out[name + S_SUFFIX] = scale.numpy().astype(np.float32).reshape(-1)
    return out


def decode_arrays(message: Mapping[str, np.ndarray], layout: Mapping[str, np.ndarray], b_w: int) -> Arrays:
    """Inverse of :func:`encode_arrays` for a model whose tensors have the shapes of ``layout``.

    Raises :class:`MalformedMessageError` when names, sizes or values do not fit the layout.
    """
    check_instance(message, "message", Mapping, "a mapping name -> array")
    check_instance(layout, "layout", Mapping, "a mapping name -> array")
    check_bits(b_w, "b_w")
    expected = {n + s for n in layout for s in (Q_SUFFIX, S_SUFFIX)}
    if set(message) != expected:
        raise MalformedMessageError(f"quantized message names differ: missing {sorted(expected - set(message))}, "
                                    f"unexpected {sorted(set(message) - expected)}")
    offset = 2 ** (b_w - 1) - 1
    out: Arrays = {}
    for name, ref in layout.items():
        packed, scale = message[name + Q_SUFFIX], message[name + S_SUFFIX]
        count = int(np.prod(ref.shape))
        if packed.dtype != np.uint8 or packed.size != (count * b_w + 7) // 8:
            raise MalformedMessageError(f"{name}: expected {(count * b_w + 7) // 8} packed uint8, got "
                                        f"{packed.size} {packed.dtype}")
        if scale.dtype != np.float32 or scale.size not in (1, ref.shape[0] if ref.ndim else 1) or np.any(scale < 0):
            raise MalformedMessageError(f"{name}: scales must be float32 >= 0, one or one per output channel")
        q = unpack_uint(packed, b_w, count).astype(np.int64) - offset
        if np.any(np.abs(q) > offset):
            raise MalformedMessageError(f"{name}: integers outside the symmetric {b_w}-bit range")
        q = q.reshape(ref.shape)
        s = scale.reshape((-1,) + (1,) * (ref.ndim - 1)) if scale.size > 1 else scale.reshape(())
        out[name] = dequantize(torch.as_tensor(q), torch.as_tensor(s)).numpy().astype(np.float32)
    return out


def _layout(model: nn.Module) -> Arrays:
    return module_to_arrays(model)


def _check_xy(X: object, y: object, x_name: str, y_name: str) -> None:
    """Features (n, ...) floating and finite, labels (n,) integer, at least one sample."""
    check_tensor(X, x_name, ndim=(2, 3, 4), floating=True, finite=True)
    check_tensor(y, y_name, ndim=1)
    if y.is_floating_point() or y.dtype == torch.bool:
        raise TypeError(f"{y_name} must hold integer class labels, got dtype {y.dtype}")
    check_consistent_length(X, y, names=(x_name, y_name))


def _server_round(server_round: object) -> int:
    return check_scalar(server_round, "server_round", "int", min=1)


def _config_bits(config: Mapping[str, object]) -> BitConfig:
    try:
        return BitConfig(*(int(config[f"b_{c}"]) for c in COMPONENTS))
    except KeyError as exc:
        raise ValueError(f"the fit config lacks the bit-width {exc}") from exc


def _check_initial_bits(initial_bits: object) -> None:
    values = check_sequence(initial_bits, "initial_bits", item=check_bits)
    if len(values) != 3:
        raise ValueError(f"initial_bits must give three bit-widths (w, a, g), got {initial_bits!r}")


def _check_result(item: object, name: str) -> tuple[int, FitRes]:
    if not isinstance(item, (tuple, list)) or len(item) != 2 or not isinstance(item[1], FitRes):
        raise TypeError(f"{name} must be a pair (client id, FitRes), got {type(item).__name__}")
    return check_scalar(item[0], f"{name} client id", "int", min=0), item[1]


class LBIFLClient(Client):
    """An LBI-FL client: decodes the b_w-bit global model, trains with low-bit layers, uploads at b_w bits.

    The bit-widths arrive in the config (``b_w``, ``b_a``, ``b_g``); local training is ``epochs``
    epochs of plain SGD with seeded shuffling (``seed + round``) and seeded stochastic rounding.  The
    reply's metrics carry the relative quantization errors of W, A, G on the last local batch
    (``err_w``, ``err_a``, ``err_g``, averaged over layers) and the training ``bitops`` spent.
    ``per_channel=True`` gives every weight matrix / kernel one scale per output channel, in the
    low-bit layers and in the upload (one float32 scale per channel on the wire); biases keep one.
    """

    def __init__(self, model_fn: Callable[[], nn.Module], X: torch.Tensor, y: torch.Tensor, epochs: int = 2,
                 lr: float = 0.1, batch_size: int = 32, per_channel: bool = False, seed: Seed = 0,
                 grad_rounding: str = "stochastic", message_rounding: str = "nearest") -> None:
        check_callable(model_fn, "model_fn")
        _check_xy(X, y, "X", "y")
        self.model_fn, self.X, self.y = model_fn, X, y
        self.epochs = check_scalar(epochs, "epochs", "int", min=1)
        self.lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
        self.batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
        self.per_channel = check_bool(per_channel, "per_channel")
        check_choice(grad_rounding, "grad_rounding", ("stochastic", "nearest"))
        check_choice(message_rounding, "message_rounding", ("nearest", "stochastic"))
        self.seed, self.grad_rounding, self.message_rounding = int_seed(seed), grad_rounding, message_rounding
        self.macs = sum(count_macs(model_fn(), tuple(X.shape[1:])).values())

    def fit(self, ins: FitIns) -> FitRes:
        check_instance(ins, "ins", FitIns)
        bits = _config_bits(ins.config)
        server_round = int(ins.config.get("round", 0))
        model = self.model_fn()
        load_arrays(model, decode_arrays(ins.arrays, _layout(model), bits.w))
        generator = torch_generator(self.seed * 1_000_003 + server_round, device=self.X.device)
        quantize_model(model, bits, self.per_channel, generator, self.grad_rounding, strict=True)
        n = int(self.X.shape[0])
        metrics: dict[str, float] = {"b_w": bits.w, "err_w": 0.0, "err_a": 0.0, "err_g": 0.0, "bitops": 0.0}
        if n:
            train_classifier(model, self.X, self.y, epochs=self.epochs, batch_size=self.batch_size, lr=self.lr,
                             optimizer=torch.optim.SGD, seed=self.seed + server_round)
            layers = [m for m in model.modules() if isinstance(m, LowBitMixin)]
            errors = [m.errors for m in layers]
            for c in COMPONENTS:
                values = [e[c] for e in errors if c in e]
                metrics[f"err_{c}"] = float(np.mean(values)) if values else 0.0
            metrics["bitops"] = float(bitops_per_sample(self.macs, bits) * n * self.epochs)
        upload = encode_arrays(module_to_arrays(model), bits.w, self.per_channel, self.message_rounding, generator)
        return FitRes(upload, n, metrics)


@dataclass
class _ClientBits:
    bits: BitConfig
    errors: tuple[float, float, float] = (0.0, 0.0, 0.0)
    last_change: int = 0


class LBIFLStrategy(Strategy):
    """The LBI-FL server: per-client bit-widths, b_w-bit downlink, FedAvg of dequantized uploads, the agent.

    ``policy`` decides every ``itv`` rounds for each client that took part in the round (a client
    that was not sampled keeps its bit state); ``rounds`` is T (for the state's t / T).
    ``evaluate_fn(arrays, bits)`` evaluates the global float model under a :class:`BitConfig`
    (the lowest b_w and b_a among the clients).  ``decisions`` logs every decision; ``bitops`` sums
    the clients' training BitOPs; ``bits_log`` holds each round's (b_w, b_a, b_g) per client.
    ``seed`` seeds the policy's random generator (and the stochastic rounding of the downlink).
    ``message_rounding`` is how the messages round the weights: ``"nearest"`` (the paper's weight
    quantizer) or ``"stochastic"`` (our option, not the paper's: unbiased, so small FedAvg updates are not
    rounded away).  ``per_channel`` gives the downlink's weight tensors one scale per output channel (an
    option; the paper's quantizer has one scale per tensor).
    """

    def __init__(self, initial_arrays: Mapping[str, np.ndarray], policy: Policy, rounds: int, n_clients: int,
                 itv: int = 5, initial_bits: tuple[int, int, int] = (4, 4, 4), per_channel: bool = False,
                 evaluate_fn: Callable[[Arrays, BitConfig], dict[str, float]] | None = None, seed: Seed = 0,
                 message_rounding: str = "nearest") -> None:
        check_instance(initial_arrays, "initial_arrays", Mapping, "a mapping name -> array")
        check_instance(policy, "policy", Policy)
        for name, value in (("rounds", rounds), ("n_clients", n_clients), ("itv", itv)):
            check_scalar(value, name, "int", min=1)
        _check_initial_bits(initial_bits)
        if evaluate_fn is not None:
            check_callable(evaluate_fn, "evaluate_fn")
        seed = int_seed(seed)
        self.layout = {k: np.asarray(v, dtype=np.float32).copy() for k, v in initial_arrays.items()}
        self.policy, self.rounds, self.itv = policy, rounds, itv
        self.per_channel = check_bool(per_channel, "per_channel")
        check_choice(message_rounding, "message_rounding", ("nearest", "stochastic"))
        self.evaluate_fn, self.message_rounding, self.seed = evaluate_fn, message_rounding, seed
        self.rng = as_generator(seed)
        self.clients = {cid: _ClientBits(BitConfig(*initial_bits)) for cid in range(n_clients)}
        self.decisions: list[tuple[int, int, BitWidthState, int]] = []
        self.bits_log: list[dict[int, tuple[int, int, int]]] = []
        self.bitops = 0.0
        self._decoded: dict[int, Arrays] = {}

    def initialize(self) -> Arrays:
        return {k: v.copy() for k, v in self.layout.items()}

    def _state(self, cid: int) -> _ClientBits:
        if cid not in self.clients:
            raise MalformedMessageError(f"unknown client id {cid}")
        return self.clients[cid]

    def configure_fit(self, server_round, arrays, clients):
        server_round = _server_round(server_round)
        check_instance(arrays, "arrays", Mapping, "a mapping name -> array")
        clients = check_sequence(clients, "clients", item=lambda v, n: check_scalar(v, n, "int", min=0))
        out, messages = {}, {}
        for cid in clients:
            bits = self._state(cid).bits
            if bits.w not in messages:  # the global model re-quantized once per downlink bit-width
                generator = torch_generator(self.seed * 1_000_003 + server_round)
                messages[bits.w] = encode_arrays(arrays, bits.w, self.per_channel, self.message_rounding, generator)
            config = {"round": server_round, "b_w": bits.w, "b_a": bits.a, "b_g": bits.g}
            out[cid] = FitIns(messages[bits.w], config)
        return out

    def validate_fit(self, server_round, arrays, res):
        _server_round(server_round)
        check_instance(arrays, "arrays", Mapping, "a mapping name -> array")
        check_instance(res, "res", FitRes)
        for key in ("b_w", "err_w", "err_a", "err_g", "bitops"):
            if key not in res.metrics:
                raise MalformedMessageError(f"the reply lacks the metric {key!r}")
        try:
            b_w = check_bits(res.metrics["b_w"], "the reply's b_w")
        except ValueError as exc:
            raise MalformedMessageError(str(exc)) from exc
        self._decoded[id(res)] = decode_arrays(res.arrays, self.layout, b_w)

    def aggregate_fit(self, server_round, arrays, results, failures):
        server_round = _server_round(server_round)
        check_instance(arrays, "arrays", Mapping, "a mapping name -> array")
        results = check_sequence(results, "results", min_len=1, item=_check_result)
        check_sequence(failures, "failures")
        items = []
        for cid, res in results:
            state = self._state(cid)
            decoded = self._decoded.pop(id(res), None)
            if decoded is None:
                decoded = decode_arrays(res.arrays, self.layout, state.bits.w)
            items.append((decoded, res.num_examples))
            state.errors = tuple(float(res.metrics[f"err_{c}"]) for c in COMPONENTS)
            self.bitops += float(res.metrics["bitops"])
        self._decoded.clear()
        new = weighted_average(items)
        self.bits_log.append({cid: s.bits.as_tuple() for cid, s in self.clients.items()})
        if server_round % self.itv == 0 and server_round < self.rounds:
            for cid, _ in results:
                self._decide(server_round, cid)
        return new, {"clients": len(results), "bitops": self.bitops}

    def _decide(self, server_round: int, cid: int) -> None:
        s = self.clients[cid]
        state = BitWidthState(server_round / self.rounds, s.bits.as_tuple(), s.errors,
                              (server_round - s.last_change) / self.rounds)
        action = int(self.policy.act(state, self.rng))
        if apply_action(s.bits, action):
            s.last_change = server_round
        self.decisions.append((server_round, cid, state, action))

    def eval_bits(self) -> BitConfig:
        """The inference configuration of the global model: the lowest b_w and b_a among the clients."""
        return BitConfig(min(s.bits.w for s in self.clients.values()), min(s.bits.a for s in self.clients.values()),
                         None)

    def evaluate(self, server_round, arrays):
        _server_round(server_round)
        check_instance(arrays, "arrays", Mapping, "a mapping name -> array")
        return {} if self.evaluate_fn is None else dict(self.evaluate_fn(arrays, self.eval_bits()))


def lowbit_accuracy_evaluator(model_fn: Callable[[], nn.Module], X: torch.Tensor, y: torch.Tensor,
                              per_channel: bool = False
                              ) -> Callable[[Mapping[str, np.ndarray], BitConfig | None], dict[str, float]]:
    """``evaluate_fn(arrays, bits)``: test accuracy of the global model run with low-bit layers at ``bits``
    (FP32 when ``bits`` is None); ``per_channel`` gives the weights one scale per output channel, as
    in training."""
    check_callable(model_fn, "model_fn")
    _check_xy(X, y, "X", "y")
    per_channel = check_bool(per_channel, "per_channel")

    def evaluate(arrays: Mapping[str, np.ndarray], bits: BitConfig | None = None) -> dict[str, float]:
        model = load_arrays(model_fn(), arrays)
        if bits is not None:
            quantize_model(model, bits, per_channel, strict=True)
        return {"accuracy": accuracy(model, X, y)}
    return evaluate


@dataclass
class LBIFLRun:
    """What :func:`run_lbi_fl` returns: the runtime history and LBI-FL's own logs."""

    history: History
    accuracy: list[float]
    bitops: float
    bits_log: list[dict[int, tuple[int, int, int]]]
    decisions: list[tuple[int, int, BitWidthState, int]] = field(default_factory=list)

    @property
    def final_accuracy(self) -> float:
        return self.accuracy[-1]

    def mean_bits(self) -> tuple[float, float, float]:
        """Average (b_w, b_a, b_g) over rounds and clients."""
        values = np.array([b for r in self.bits_log for b in r.values()], dtype=float)
        return tuple(float(v) for v in values.mean(axis=0))


def run_lbi_fl(model_fn: Callable[[], nn.Module], client_data: Sequence[tuple[torch.Tensor, torch.Tensor]],
               rounds: int, policy: Policy, X_test: torch.Tensor, y_test: torch.Tensor, itv: int = 5,
               local_epochs: int = 2, lr: float = 0.1, batch_size: int = 32,
               initial_bits: tuple[int, int, int] = (4, 4, 4), per_channel: bool = False, seed: Seed = 0,
               clients_per_round: int | None = None, on_failure: str = "skip",
               policy_seed: Seed = None, message_rounding: str = "nearest") -> LBIFLRun:
    """Run LBI-FL (or a fixed/random/teacher baseline, through ``policy`` and ``initial_bits``) on the runtime.

    ``seed`` fixes the model's data order, stochastic rounding and client sampling; ``policy_seed``
    (default ``seed``) the policy's random generator (as in :func:`plan_bitops`).  ``per_channel``
    (an option, off by default as in the paper) gives weights one scale per output channel everywhere: in the
    clients' low-bit layers, in both messages and in the low-bit evaluation of the global model.
    """
    check_callable(model_fn, "model_fn")
    client_data = check_sequence(client_data, "client_data", min_len=1)
    for i, pair in enumerate(client_data):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"client_data[{i}] must be a pair (X, y) of tensors, got {type(pair).__name__}")
        _check_xy(*pair, f"client_data[{i}] X", f"client_data[{i}] y")
    rounds = check_scalar(rounds, "rounds", "int", min=1)
    check_instance(policy, "policy", Policy)
    _check_xy(X_test, y_test, "X_test", "y_test")
    itv = check_scalar(itv, "itv", "int", min=1)
    local_epochs = check_scalar(local_epochs, "local_epochs", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    _check_initial_bits(initial_bits)
    per_channel = check_bool(per_channel, "per_channel")
    if clients_per_round is not None:
        check_scalar(clients_per_round, "clients_per_round", "int", min=1, max=len(client_data))
    check_choice(on_failure, "on_failure", ("skip", "stop"))
    check_seed(policy_seed, "policy_seed")
    check_choice(message_rounding, "message_rounding", ("nearest", "stochastic"))
    seed = int_seed(seed)
    clients = [LBIFLClient(model_fn, X, y, local_epochs, lr, batch_size, per_channel, seed * 1000 + i,
                           message_rounding=message_rounding) for i, (X, y) in enumerate(client_data)]
    strategy = LBIFLStrategy(module_to_arrays(model_fn()), policy, rounds, len(clients), itv, initial_bits,
                             per_channel, lowbit_accuracy_evaluator(model_fn, X_test, y_test, per_channel),
                             seed if policy_seed is None else policy_seed, message_rounding)
    history = simulate(clients, strategy, rounds, clients_per_round, seed, on_failure, CommunicationLedger())
    return LBIFLRun(history, history.curve("accuracy"), strategy.bitops, strategy.bits_log, strategy.decisions)


def plan_bitops(policy: Policy, client_samples: Sequence[int], rounds: int, macs: int, itv: int = 5,
                local_epochs: int = 2, initial_bits: tuple[int, int, int] = (4, 4, 4), seed: Seed = 0) -> float:
    """Training BitOPs of a policy that ignores the quantization errors (fixed, random, teacher), without
    training: the same decision loop as :class:`LBIFLStrategy` with full participation.

    ``client_samples`` gives each client's sample count (ints >= 0, at least one client); ``macs`` is the
    model's multiply-accumulates per sample (an int >= 0).
    """
    check_instance(policy, "policy", Policy)
    client_samples = check_sequence(client_samples, "client_samples", min_len=1,
                                    item=lambda v, n: check_scalar(v, n, "int", min=0))
    rounds = check_scalar(rounds, "rounds", "int", min=1)
    macs = check_scalar(macs, "macs", "int", min=0)
    itv = check_scalar(itv, "itv", "int", min=1)
    local_epochs = check_scalar(local_epochs, "local_epochs", "int", min=1)
    _check_initial_bits(initial_bits)
    bits = [BitConfig(*initial_bits) for _ in client_samples]
    last = [0] * len(client_samples)
    rng = as_generator(seed)
    total = 0.0
    for r in range(1, rounds + 1):
        total += sum(bitops_per_sample(macs, b) * n * local_epochs for b, n in zip(bits, client_samples, strict=True))
        if r % itv == 0 and r < rounds:
            for cid, b in enumerate(bits):
                state = BitWidthState(r / rounds, b.as_tuple(), (0.0, 0.0, 0.0), (r - last[cid]) / rounds)
                if apply_action(b, int(policy.act(state, rng))):
                    last[cid] = r
    return total


class ProxyTask:
    """The agent's proxy task: a short LBI-FL run whose decisions are scored by :func:`lbi_reward`.

    ``acc_ref`` is the accuracy curve of one all-INT8 (UI8) run of the same task, recorded once.
    Calling ``task(policy, seed)`` runs one episode and returns its :class:`Decision` list; the reward
    of a decision at round t uses the client's BitOPs per sample after the action and the global
    accuracy at round t + itv against ``acc_ref`` there, with ``tau = (t + itv) / T``.
    """

    def __init__(self, model_fn: Callable[[], nn.Module], client_data, X_test, y_test, rounds: int = 40,
                 itv: int = 5, local_epochs: int = 2, lr: float = 0.1, batch_size: int = 32, theta: float = 1.0,
                 delta: float = 0.02, seed: Seed = 0) -> None:
        self.theta = check_scalar(theta, "theta", "real", min=0.0)
        self.delta = check_scalar(delta, "delta", "real", min=0.0, inclusive="neither")
        self.model_fn, self.client_data, self.X_test, self.y_test = model_fn, client_data, X_test, y_test
        self.kw = dict(rounds=rounds, itv=itv, local_epochs=local_epochs, lr=lr, batch_size=batch_size)
        self.acc_ref = run_lbi_fl(model_fn, client_data, policy=FixedPolicy(), X_test=X_test, y_test=y_test,
                                  initial_bits=(8, 8, 8), seed=seed, **self.kw).accuracy
        self.macs = sum(count_macs(model_fn(), tuple(client_data[0][0].shape[1:])).values())

    def __call__(self, policy: Policy, seed: Seed) -> list[Decision]:
        run = run_lbi_fl(self.model_fn, self.client_data, policy=policy, X_test=self.X_test, y_test=self.y_test,
                         seed=seed, **self.kw)
        itv, rounds = self.kw["itv"], self.kw["rounds"]
        int8 = bitops_per_sample(self.macs, (8, 8, 8))
        out = []
        for r, cid, state, action in run.decisions:
            bits_after = run.bits_log[r][cid]  # bits_log[r] is round r + 1's configuration
            t = min(r + itv, rounds)
            reward = lbi_reward(bitops_per_sample(self.macs, bits_after), int8, run.accuracy[t - 1],
                                self.acc_ref[t - 1], t / rounds, self.theta, self.delta)
            out.append(Decision(cid, state.vector(), action_mask(state.bits), action, reward))
        return out

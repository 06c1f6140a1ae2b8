"""LBI-FL: low-bit integerized federated learning with an RL bit-width agent, on digits (docs/papers/lbi_fl.md).

Ding et al., "LBI-FL: Low-Bit Integerized Federated Learning with Temporally Dynamic Bit-Width Allocation",
ICML 2025 (PMLR 267:13885-13899).

Quick scale (a CPU substitute for the paper's CIFAR/ResNet experiments): scikit-learn digits, MLP 64-256-128-10,
10 clients with a Dirichlet(0.5) label split, all participating, 20 rounds of 2 local epochs of SGD
(lr 0.1, batch 32), decisions every 5 rounds, 3 seeds.  Per seed, in the same run and with the same data:

* FP32 FedAvg (the runtime's FedAvg and TorchClassifierClient): accuracy and bits on the wire;
* UI8 (all components INT8, INT8 messages) and UI4 (all INT4): fixed policies;
* LBI-FL: every component starts at INT4, the shipped agent (``agent_policy.npz``, trained on a
  digits proxy by ``python -m icml25.federated.lbi_fl.train``) decides every 5 rounds;
* Random: a random valid raise (probability 0.5) at each decision, with the first policy seed
  whose planned BitOPs are within 5% of LBI-FL's (matched average BitOPs);
* INT4-weight ceiling (a metric, not a claim): fixed (4, 8, 8), i.e. every bit an agent that keeps
  weights at INT4 (and so the 8x communication) could ever add, from the first round;
* transfer: the same agent, unchanged, on a small CNN with Dirichlet(0.25), against UI8 there;
* convex check: federated multinomial logistic regression where only the gradients are INT4
  (stochastic rounding), against FP32 FedAvg and INT4 round-to-nearest gradients.

Weights use one scale per tensor (the paper's quantizer; ``PER_CHANNEL`` switches every quantized
arm to per-output-channel scales at once).  Communication is read from the runtime's ledger (packed
integers + float32 scales as serialized); BitOPs are counted analytically (forward m b_w b_a +
backward m b_w b_g + m b_a b_g per sample).
"Accuracy" is the global model's test accuracy averaged over the last 5 rounds (one round is noisy).
Measured numbers, calibration history and the known misses: the docs page, section "Calibration notes".
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

from icml25.data.partition import dirichlet_partition
from icml25.data.tensors import digits_tensors
from icml25.federated import FedAvg, FitIns, FitRes, simulate
from icml25.federated.lbi_fl import (
    BitConfig,
    FixedPolicy,
    RandomPolicy,
    count_macs,
    fake_quant,
    plan_bitops,
    pretrained_policy,
    quantize_model,
    run_lbi_fl,
)
from icml25.federated.torch_clients import (
    TorchClassifierClient,
    accuracy_evaluator,
    load_arrays,
    module_to_arrays,
)
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.parallel import run_jobs
from icml25.harness.stats import summary
from icml25.utils.nn import make_mlp, train_classifier
from icml25.utils.random import seeded, torch_generator

PAPER = Paper(
    id="lbi_fl",
    title="LBI-FL: Low-Bit Integerized Federated Learning with Temporally Dynamic Bit-Width Allocation",
    module="icml25.federated.lbi_fl",
    anchors=("QPyTorch", "Brevitas", "torchao", "Flower"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch",),
    known_misses={
        "LBI-FL accuracy vs UI8 (mean over seeds)":
            "4-bit round-to-nearest messages cost 5-6 points on digits; no policy keeping b_w = 4 can recover them",
        "LBI-FL accuracy vs static INT4 (UI4)":
            "the INT4-weight ceiling (4, 8, 8) is only 1.2 points above UI4, so +2 points is out of reach",
        "LBI-FL accuracy vs random allocation at matched BitOPs (within 5%)":
            "the shipped agent keeps activations at INT4; the random policy sometimes raises them earlier",
        "agent transferred unchanged to a CNN, Dirichlet 0.25: accuracy vs UI8 (mean)":
            "the same 4-bit message cost, larger on the CNN (INT4-weight ceiling 0.61 vs UI8 0.83)",
    },
)

LR, BATCH, EPOCHS = 0.1, 32, 2
PER_CHANNEL = False  # per-tensor weight scales, the paper's quantizer; the per-channel option: see the docs page


def _mlp(seed: int):
    return lambda: make_mlp([64, 256, 128, 10], seed=seed)


def _cnn(seed: int):
    def build() -> nn.Module:
        with seeded(seed):
            return nn.Sequential(nn.Unflatten(1, (1, 8, 8)), nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                 nn.Linear(64, 10))
    return build


def _split(seed: int, n_clients: int, alpha: float):
    data = digits_tensors(test_size=0.25, seed=seed)
    parts = dirichlet_partition(data.y_train.numpy(), n_clients, alpha, seed=seed, min_size=5)
    return data, [(data.X_train[p], data.y_train[p]) for p in parts]


def _tail(curve: list[float], k: int = 5) -> float:
    return float(np.mean(curve[-k:]))


class _GradOnlyClient(TorchClassifierClient):
    """Convex check: FP32 weights and activations, only the backward error signal quantized (INT4)."""

    def __init__(self, *args, grad_rounding: str = "stochastic", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.grad_rounding = grad_rounding

    def fit(self, ins: FitIns) -> FitRes:
        model = load_arrays(self.model_fn(), ins.arrays)
        server_round = int(ins.config.get("round", 0))
        bits = BitConfig(None, None, 4)
        gen = torch_generator(self.seed * 1_000_003 + server_round)
        quantize_model(model, bits, seed=gen, grad_rounding=self.grad_rounding, strict=True)
        train_classifier(model, self.X, self.y, epochs=self.epochs, batch_size=self.batch_size, lr=self.lr,
                         optimizer=torch.optim.SGD, seed=self.seed + server_round)
        return FitRes(module_to_arrays(model), int(self.X.shape[0]), {})


def _convex_check(seed: int, rounds: int, n_clients: int) -> dict[str, float]:
    data, clients = _split(seed, n_clients, 0.5)

    def model_fn() -> nn.Module:  # multinomial logistic regression
        return make_mlp([64, 10], seed=seed)

    def train_loss(arrays) -> float:
        with torch.no_grad():
            return float(nn.functional.cross_entropy(load_arrays(model_fn(), arrays)(data.X_train), data.y_train))

    out = {}
    for name, cls, kw in (("fp32", TorchClassifierClient, {}), ("int4_sr", _GradOnlyClient, {}),
                          ("int4_rtn", _GradOnlyClient, {"grad_rounding": "nearest"})):
        cl = [cls(model_fn, X, y, epochs=1, lr=0.2, batch_size=BATCH, optimizer="sgd", seed=seed * 1000 + i, **kw)
              for i, (X, y) in enumerate(clients)]
        history = simulate(cl, FedAvg(module_to_arrays(model_fn())), rounds, seed=seed)
        out[name] = train_loss(history.arrays)
    return out


def _unbiasedness(n_draws: int) -> dict[str, float]:
    x = torch.linspace(-1.0, 1.3, 11)
    draws = torch.stack([fake_quant(x, 4, "stochastic", seed=i) for i in range(n_draws)])
    z = ((draws.mean(0) - x).abs() / (draws.std(0) / np.sqrt(n_draws)).clamp_min(1e-12))
    exact = draws.std(0) == 0  # the endpoints are reproduced exactly
    return {"max_abs_z": float(z[~exact].max()), "exact_endpoints": int(exact.sum())}


def _seed_runs(seed: int, rounds: int, itv: int, n_clients: int, convex_rounds: int) -> dict:
    """Every arm of one seed: per-seed numbers, accuracy curves and the agent's schedule."""
    agent = pretrained_policy()
    kw = dict(rounds=rounds, itv=itv, local_epochs=EPOCHS, lr=LR, batch_size=BATCH, per_channel=PER_CHANNEL)
    data, clients = _split(seed, n_clients, 0.5)
    model_fn = _mlp(seed)
    fp_clients = [TorchClassifierClient(model_fn, X, y, epochs=EPOCHS, lr=LR, batch_size=BATCH, optimizer="sgd",
                                        seed=seed * 1000 + c) for c, (X, y) in enumerate(clients)]
    fp = simulate(fp_clients, FedAvg(module_to_arrays(model_fn()),
                                     evaluate_fn=accuracy_evaluator(model_fn, data.X_test, data.y_test)),
                  rounds, seed=seed)
    runs = {}
    for name, policy, bits in (("ui8", FixedPolicy(), (8, 8, 8)), ("ui4", FixedPolicy(), (4, 4, 4)),
                               ("lbi", agent, (4, 4, 4)), ("w4_ceiling", FixedPolicy(), (4, 8, 8))):
        runs[name] = run_lbi_fl(model_fn, clients, policy=policy, X_test=data.X_test, y_test=data.y_test,
                                initial_bits=bits, seed=seed, **kw)
    macs = sum(count_macs(model_fn(), (64,)).values())
    samples = [int(X.shape[0]) for X, _ in clients]
    target = runs["lbi"].bitops
    policy_seed = next((k for k in range(1000) if abs(plan_bitops(
        RandomPolicy(0.5), samples, rounds, macs, itv, EPOCHS, seed=k) / target - 1) <= 0.05), 0)
    runs["random"] = run_lbi_fl(model_fn, clients, policy=RandomPolicy(0.5), X_test=data.X_test,
                                y_test=data.y_test, seed=seed, policy_seed=policy_seed, **kw)
    cnn_data, cnn_clients = _split(seed, n_clients, 0.25)
    cnn = {name: run_lbi_fl(_cnn(seed), cnn_clients, policy=policy, X_test=cnn_data.X_test,
                            y_test=cnn_data.y_test, initial_bits=bits, seed=seed, **kw)
           for name, policy, bits in (("lbi", agent, (4, 4, 4)), ("ui8", FixedPolicy(), (8, 8, 8)))}
    convex = _convex_check(seed, convex_rounds, n_clients)

    values = {"fp32_acc": _tail(fp.curve("accuracy")), "fp32_bits": fp.ledger.total(),
              "lbi_bits": runs["lbi"].history.ledger.total(), "ui8_bits": runs["ui8"].history.ledger.total(),
              "random_policy_seed": policy_seed, "lbi_mean_bits": list(runs["lbi"].mean_bits()),
              "w4_ceiling_acc": _tail(runs["w4_ceiling"].accuracy)}
    for name in ("ui8", "ui4", "lbi", "random"):
        values[f"{name}_acc"] = _tail(runs[name].accuracy)
        values[f"{name}_bitops"] = runs[name].bitops
    for name in ("lbi", "ui8"):
        values[f"cnn_{name}_acc"] = _tail(cnn[name].accuracy)
        values[f"cnn_{name}_bitops"] = cnn[name].bitops
    for name, value in convex.items():
        values[f"lr_loss_{name}"] = value
    curves = {"fp32": fp.curve("accuracy"), **{name: runs[name].accuracy for name in ("ui8", "ui4", "lbi", "random")}}
    schedule = np.array([[np.mean([b[c] for b in r.values()]) for c in range(3)] for r in runs["lbi"].bits_log])
    return {"values": values, "curves": curves, "schedule": schedule}


def reproduce(run: Run) -> Result:
    # 1. set-up: sizes per scale (quick: 20 rounds to fit the budget; why, see the docs page)
    rounds = run.pick(smoke=4, quick=20, full=100)
    itv = run.pick(smoke=2, quick=5, full=5)
    n_clients = run.pick(smoke=3, quick=10, full=10)
    workers = run.pick(smoke=1, quick=2, full=2)
    seeds = run.pick(smoke=run.seeds[:1], quick=run.seeds, full=run.seeds)
    args = (rounds, itv, n_clients, run.pick(smoke=3, quick=15, full=50))

    # 2. the experiment: every arm per seed, the seeds in single-threaded processes (every arm is seeded, so
    # the numbers do not depend on the number of processes); the unbiasedness test once
    outcome = run_jobs(_seed_runs, [(seed, *args) for seed in seeds], workers, run.progress,
                       describe=lambda job: f"seed {job[0]} done")
    per_seed = {k: [o["values"][k] for o in outcome] for k in outcome[0]["values"]}
    curves = {k: [o["curves"][k] for o in outcome] for k in outcome[0]["curves"]}
    schedules = [o["schedule"] for o in outcome]
    unbiased = _unbiasedness(run.pick(smoke=2000, quick=10_000, full=10_000))
    ratios = {"comm_ratio": _ratios(per_seed, "fp32_bits", "lbi_bits"),
              "bitops_ratio": _ratios(per_seed, "lbi_bitops", "ui8_bitops"),
              "random_bitops_match": _ratios(per_seed, "random_bitops", "lbi_bitops"),
              "cnn_bitops_ratio": _ratios(per_seed, "cnn_lbi_bitops", "cnn_ui8_bitops"),
              "convex_loss_ratio": _ratios(per_seed, "lr_loss_int4_sr", "lr_loss_fp32"),
              "convex_rtn_loss_ratio": _ratios(per_seed, "lr_loss_int4_rtn", "lr_loss_fp32")}

    # 3. the claims
    claims = [_claim_communication(ratios["comm_ratio"]), _claim_bitops(ratios["bitops_ratio"]),
              _claim_vs_ui8(per_seed), _claim_vs_ui4(per_seed),
              _claim_vs_random(per_seed, ratios["random_bitops_match"]), _claim_unbiased(unbiased),
              _claim_convex(ratios["convex_loss_ratio"]),
              _claim_cnn_bitops(ratios["cnn_bitops_ratio"]), _claim_cnn_accuracy(per_seed)]

    # 4. figure and metrics
    figure = _figure(run, curves, schedules, rounds)
    means = {k: float(np.mean(v)) for k, v in per_seed.items() if k != "lbi_mean_bits"}
    metrics = {"per_seed": per_seed, "mean": means, **ratios, "unbiasedness": unbiased,
               "mean_accuracy_curves": {k: np.mean(v, axis=0).tolist() for k, v in curves.items()},
               "config": {"rounds": rounds, "itv": itv, "clients": n_clients, "local_epochs": EPOCHS, "lr": LR,
                          "batch_size": BATCH, "per_channel": PER_CHANNEL}}
    return Result(metrics=metrics, claims=claims, figures=[figure])


def _ratios(per_seed: dict, top: str, bottom: str) -> list[float]:
    return [a / b for a, b in zip(per_seed[top], per_seed[bottom], strict=True)]


def _mean(per_seed: dict, key: str) -> float:
    return float(np.mean(per_seed[key]))


def _claim_communication(comm_ratio: list[float]) -> Claim:
    return Claim("communication: FP32 bits / LBI-FL bits (both directions, from the ledger), min over seeds",
                 criterion="FP32 bits / LBI-FL bits >= 7.5 on every seed (scale overhead included)",
                 measured=summary(comm_ratio), baseline=1.0, holds=bool(min(comm_ratio) >= 7.5),
                 paper="8x lower communication than full-precision FL (abstract)", kind="check")


def _claim_bitops(bitops_ratio: list[float]) -> Claim:
    return Claim("training BitOPs of LBI-FL / UI8, max over seeds",
                 criterion="BitOPs(LBI-FL) / BitOPs(UI8) <= 0.55 on every seed",
                 measured=summary(bitops_ratio), baseline=1.0, holds=bool(max(bitops_ratio) <= 0.55),
                 paper="> 50% fewer BitOPs per client than INT8 low-bit training (abstract)")


def _claim_vs_ui8(per_seed: dict) -> Claim:
    lbi, ui8 = _mean(per_seed, "lbi_acc"), _mean(per_seed, "ui8_acc")
    return Claim("LBI-FL accuracy vs UI8 (mean over seeds)",
                 criterion="mean accuracy(LBI-FL) >= mean accuracy(UI8) - 2 points",
                 measured=summary(per_seed["lbi_acc"]), baseline=summary(per_seed["ui8_acc"]),
                 holds=bool(lbi >= ui8 - 0.02), paper="< 2% accuracy loss against INT8 low-bit training (abstract)")


def _claim_vs_ui4(per_seed: dict) -> Claim:
    lbi, ui4 = _mean(per_seed, "lbi_acc"), _mean(per_seed, "ui4_acc")
    return Claim("LBI-FL accuracy vs static INT4 (UI4)",
                 criterion="mean accuracy(LBI-FL) >= mean accuracy(UI4) + 2 points",
                 measured=summary(per_seed["lbi_acc"]), baseline=summary(per_seed["ui4_acc"]),
                 holds=bool(lbi >= ui4 + 0.02), paper=None)


def _claim_vs_random(per_seed: dict, random_match: list[float]) -> Claim:
    lbi, random = _mean(per_seed, "lbi_acc"), _mean(per_seed, "random_acc")
    return Claim("LBI-FL accuracy vs random allocation at matched BitOPs (within 5%)",
                 criterion="mean accuracy(LBI-FL) >= mean accuracy(random) + 1 point, the random policy's BitOPs "
                           "within 5% of LBI-FL's on every seed",
                 measured=summary(per_seed["lbi_acc"]), baseline=summary(per_seed["random_acc"]),
                 holds=bool(lbi >= random + 0.01 and all(abs(r - 1) <= 0.05 for r in random_match)), paper=None)


def _claim_unbiased(unbiased: dict) -> Claim:
    return Claim("stochastic rounding is unbiased: max |mean - x| / s.e. over 10^4 draws",
                 criterion="max over grid points of |mean of the draws - x| / standard error <= 3",
                 measured=unbiased["max_abs_z"], baseline=None, holds=bool(unbiased["max_abs_z"] <= 3.0),
                 paper=None, kind="check")


def _claim_convex(lr_ratio: list[float]) -> Claim:
    return Claim("convex FL (logistic regression), INT4 stochastic-rounded gradients: final train loss / FP32's "
                 "(max over seeds)",
                 criterion="final training loss(INT4 SR gradients) / loss(FP32 FedAvg) <= 1.10 on every seed",
                 measured=summary(lr_ratio), baseline=1.0, holds=bool(max(lr_ratio) <= 1.10),
                 paper="gradient quantization keeps FedAvg's convergence rate (abstract; a theorem)")


def _claim_cnn_bitops(cnn_ratio: list[float]) -> Claim:
    return Claim("agent transferred unchanged to a CNN, Dirichlet 0.25: BitOPs / UI8 (max over seeds)",
                 criterion="BitOPs(LBI-FL) / BitOPs(UI8) <= 0.6 on the CNN, every seed",
                 measured=summary(cnn_ratio), baseline=1.0, holds=bool(max(cnn_ratio) <= 0.6),
                 paper="an agent trained on small data generalizes to other architectures (abstract)")


def _claim_cnn_accuracy(per_seed: dict) -> Claim:
    lbi, ui8 = _mean(per_seed, "cnn_lbi_acc"), _mean(per_seed, "cnn_ui8_acc")
    return Claim("agent transferred unchanged to a CNN, Dirichlet 0.25: accuracy vs UI8 (mean)",
                 criterion="mean accuracy(LBI-FL) >= mean accuracy(UI8) - 3 points on the CNN",
                 measured=summary(per_seed["cnn_lbi_acc"]), baseline=summary(per_seed["cnn_ui8_acc"]),
                 holds=bool(lbi >= ui8 - 0.03),
                 paper="an agent trained on small data generalizes to other architectures (abstract)")


def _figure(run: Run, curves: dict, schedules: list, rounds: int) -> str:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    x = np.arange(1, rounds + 1)
    for name, label in (("fp32", "FP32 FedAvg"), ("ui8", "UI8"), ("ui4", "UI4"), ("lbi", "LBI-FL (agent)"),
                        ("random", "random (matched BitOPs)")):
        ax1.plot(x, np.mean(curves[name], axis=0), label=label)
    ax1.set(xlabel="round", ylabel="test accuracy (mean over seeds)", title="digits MLP, 10 clients, Dir(0.5)")
    ax1.legend(fontsize=8)
    schedule = np.mean(schedules, axis=0)
    for c, label in enumerate(("weights b_w", "activations b_a", "gradients b_g")):
        ax2.step(x, schedule[:, c], where="post", label=label)
    ax2.set(xlabel="round", ylabel="mean bit-width over clients", title="bit-widths chosen by the agent", ylim=(3, 9))
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return run.savefig(fig, "lbi_fl")

"""LBI-FL: low-bit integerized federated learning with an RL bit-width agent, on digits.

Quick scale (the brief's substitute for CIFAR/ResNet): scikit-learn digits, MLP 64-256-128-10,
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

Weights use one scale per tensor (the brief's quantizer; ``PER_CHANNEL`` switches every quantized
arm to per-output-channel scales at once).  Communication is read from the runtime's ledger (packed
integers + float32 scales as serialized); BitOPs are counted analytically (forward m b_w b_a +
backward m b_w b_g + m b_a b_g per sample).
"Accuracy" is the global model's test accuracy averaged over the last 5 rounds (one round is noisy).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
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
from icml25.utils.nn import make_mlp, train_classifier

PAPER = Paper(
    id="lbi_fl",
    title="LBI-FL: Low-Bit Integerized Federated Learning with Temporally Dynamic Bit-Width Allocation",
    seed="000_2b600ba1808e0b5e.txt",
    abstract=13,
    module="icml25.federated.lbi_fl",
    anchors=("QPyTorch", "Brevitas", "torchao", "Flower"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch",),
    known_misses=(
        "LBI-FL accuracy vs UI8 (mean over seeds)",
        "LBI-FL accuracy vs static INT4 (UI4)",
        "LBI-FL accuracy vs random allocation at matched BitOPs (within 5%)",
        "agent transferred unchanged to a CNN, Dirichlet 0.25: accuracy vs UI8 (mean)",
    ),
)

LR, BATCH, EPOCHS = 0.1, 32, 2
# Per-tensor weight scales (the brief's default).  Per-output-channel scales (the brief's option) were
# measured for every quantized arm at once (quick setting, 20 rounds, 3 seeds, means): they lower the MLP
# arms (UI4 0.770 vs 0.837, LBI-FL 0.764 vs 0.817, random 0.786 vs 0.840; UI8 0.897 either way), raise
# the CNN's INT4 arms (LBI-FL 0.660 vs 0.576; UI8 0.834 vs 0.833), flip no claim, and cut the message
# ratio to 7.53 (one float32 scale per output channel).
PER_CHANNEL = False


def _mlp(seed: int):
    return lambda: make_mlp([64, 256, 128, 10], seed=seed)


def _cnn(seed: int):
    def build() -> nn.Module:
        state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        try:
            return nn.Sequential(nn.Unflatten(1, (1, 8, 8)), nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                 nn.Linear(64, 10))
        finally:
            torch.random.set_rng_state(state)
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
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + server_round)
        quantize_model(model, bits, generator=gen, grad_rounding=self.grad_rounding, strict=True)
        train_classifier(model, self.X, self.y, epochs=self.epochs, batch_size=self.batch_size, lr=self.lr,
                         optimizer=torch.optim.SGD, seed=self.seed + server_round)
        return FitRes(module_to_arrays(model), int(self.X.shape[0]), {})


def _convex_check(seed: int, rounds: int, n_clients: int) -> dict[str, float]:
    data, clients = _split(seed, n_clients, 0.5)
    model_fn = lambda: make_mlp([64, 10], seed=seed)  # noqa: E731  (multinomial logistic regression)

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
    draws = torch.stack([fake_quant(x, 4, "stochastic", torch.Generator().manual_seed(i)) for i in range(n_draws)])
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
    # quick: 20 rounds (the brief says 40) to fit the 120 s budget: 25 rounds cost 111 s of process time
    # on the shared 2-core machine (414 s wall at load 10-14), 30 rounds 133 s; the claims' verdicts
    # were the same at 25 and 30 rounds.  The seeds run in 2 single-threaded processes (every arm is seeded,
    # so the numbers do not depend on the number of processes): one process took 127 s on the quiet machine.
    rounds = run.pick(smoke=4, quick=20, full=100)
    itv = run.pick(smoke=2, quick=5, full=5)
    n_clients = run.pick(smoke=3, quick=10, full=10)
    workers = run.pick(smoke=1, quick=2, full=2)
    seeds = run.pick(smoke=run.seeds[:1], quick=run.seeds, full=run.seeds)
    args = (rounds, itv, n_clients, run.pick(smoke=3, quick=15, full=50))
    outcome = run_jobs(_seed_runs, [(seed, *args) for seed in seeds], workers, run.progress,
                       describe=lambda job: f"seed {job[0]} done")
    per_seed = {k: [o["values"][k] for o in outcome] for k in outcome[0]["values"]}
    curves = {k: [o["curves"][k] for o in outcome] for k in outcome[0]["curves"]}
    schedules = [o["schedule"] for o in outcome]

    m = {k: float(np.mean(v)) for k, v in per_seed.items() if k not in ("lbi_mean_bits",)}
    comm_ratio = [f / q for f, q in zip(per_seed["fp32_bits"], per_seed["lbi_bits"], strict=True)]
    bitops_ratio = [a / b for a, b in zip(per_seed["lbi_bitops"], per_seed["ui8_bitops"], strict=True)]
    random_match = [a / b for a, b in zip(per_seed["random_bitops"], per_seed["lbi_bitops"], strict=True)]
    cnn_ratio = [a / b for a, b in zip(per_seed["cnn_lbi_bitops"], per_seed["cnn_ui8_bitops"], strict=True)]
    lr_ratio = [a / b for a, b in zip(per_seed["lr_loss_int4_sr"], per_seed["lr_loss_fp32"], strict=True)]
    unbiased = _unbiasedness(run.pick(smoke=2000, quick=10_000, full=10_000))

    # Known misses (measured at quick scale with the faithful method; thresholds kept as in the brief).
    # Where the accuracy gap comes from (20 rounds, 3 seeds, means): the INT4-weight ceiling, fixed
    # (4, 8, 8) from the first round, reaches 0.849 on the MLP (UI8 0.897, UI4 0.837): gradient and
    # activation bits, the only ones an agent that keeps b_w = 4 raises, are worth about 1 point here,
    # so no such policy can be within 2 points of UI8 or 2 points above UI4.  The cost is the 4-bit
    # round-to-nearest re-quantization of the model in the messages (it discards FedAvg updates smaller
    # than half a step): one-off runs with the message bit-width decoupled from b_w by hand gave 0.895
    # for INT4 W/A/G layers with INT8 messages and 0.832 for INT8 layers with INT4 messages; fixed
    # (8, 4, 4) gives 0.900.  Raising b_w to 6 would cut the communication ratio to about 5.3 (claim 1).
    # The shipped agent raises gradients to INT8 within two decisions and keeps W and A at INT4
    # ((4, 4, 8) for most of training, BitOPs 0.354 x UI8), landing at UI4's level (0.817 vs 0.837);
    # the random policy at matched BitOPs (0.840) sometimes raises activations earlier.  The CNN
    # (Dirichlet 0.25) shows the same at a larger scale: (4, 8, 8) 0.610, (8, 4, 4) 0.822, UI8 0.833.
    # Per-output-channel scales (PER_CHANNEL) flip none of these (numbers above PER_CHANNEL); neither
    # does message_rounding="stochastic" (ours, not the brief's), which closes the gap to UI8 (LBI-FL
    # 0.890 vs UI8 0.897) but lifts UI4 (0.889) and random (0.886) as much, and leaves the CNN at 0.774
    # vs 0.835.  Larger per-round updates do not close it either (3 seeds, UI8 / UI4 / LBI-FL / (4, 8, 8)):
    # lr 0.3 gives 0.947 / 0.887 / 0.884 / 0.889, 5 local epochs 0.943 / 0.887 / 0.878 / 0.885.
    claims = [
        Claim("communication: FP32 bits / LBI-FL bits (both directions, from the ledger), min over seeds",
              "8x (pass: >= 7.5)", min(comm_ratio), 1.0, min(comm_ratio) >= 7.5),
        Claim("training BitOPs of LBI-FL / UI8, max over seeds", "> 50% reduction (pass: <= 0.55)",
              max(bitops_ratio), 1.0, max(bitops_ratio) <= 0.55),
        Claim("LBI-FL accuracy vs UI8 (mean over seeds)", "< 2% loss (pass: >= UI8 - 0.02)",
              m["lbi_acc"], m["ui8_acc"], m["lbi_acc"] >= m["ui8_acc"] - 0.02),
        Claim("LBI-FL accuracy vs static INT4 (UI4)", "dynamic beats static (pass: >= UI4 + 0.02)",
              m["lbi_acc"], m["ui4_acc"], m["lbi_acc"] >= m["ui4_acc"] + 0.02),
        Claim("LBI-FL accuracy vs random allocation at matched BitOPs (within 5%)",
              "dynamic beats random (pass: >= random + 0.01)", m["lbi_acc"], m["random_acc"],
              m["lbi_acc"] >= m["random_acc"] + 0.01 and all(abs(r - 1) <= 0.05 for r in random_match)),
        Claim("stochastic rounding is unbiased: max |mean - x| / s.e. over 10^4 draws", "unbiased (pass: <= 3)",
              unbiased["max_abs_z"], None, unbiased["max_abs_z"] <= 3.0),
        Claim("convex FL (logistic regression), INT4 stochastic-rounded gradients: final train loss / FP32's "
              "(max over seeds)", "FedAvg rate kept (pass: <= 1.10)", max(lr_ratio), 1.0, max(lr_ratio) <= 1.10),
        Claim("agent transferred unchanged to a CNN, Dirichlet 0.25: BitOPs / UI8 (max over seeds)",
              "pass: <= 0.6", max(cnn_ratio), 1.0, max(cnn_ratio) <= 0.6),
        Claim("agent transferred unchanged to a CNN, Dirichlet 0.25: accuracy vs UI8 (mean)",
              "pass: >= UI8 - 0.03", m["cnn_lbi_acc"], m["cnn_ui8_acc"], m["cnn_lbi_acc"] >= m["cnn_ui8_acc"] - 0.03),
    ]

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
    figure = run.savefig(fig, "lbi_fl")
    plt.close(fig)

    metrics = {"per_seed": per_seed, "mean": m, "comm_ratio": comm_ratio, "bitops_ratio": bitops_ratio,
               "random_bitops_match": random_match, "cnn_bitops_ratio": cnn_ratio, "convex_loss_ratio": lr_ratio,
               "convex_rtn_loss_ratio": [a / b for a, b in zip(per_seed["lr_loss_int4_rtn"], per_seed["lr_loss_fp32"],
                                                               strict=True)],
               "unbiasedness": unbiased, "mean_accuracy_curves": {k: np.mean(v, axis=0).tolist()
                                                                  for k, v in curves.items()},
               "config": {"rounds": rounds, "itv": itv, "clients": n_clients, "local_epochs": EPOCHS, "lr": LR,
                          "batch_size": BATCH, "per_channel": PER_CHANNEL}}
    return Result(metrics=metrics, claims=claims, figures=[figure])

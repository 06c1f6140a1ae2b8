"""Reproduction of Singh et al., "Efficiently Serving Large Multimodal Models Using EPD Disaggregation" (ICML 2025,
arXiv 2501.05460; official code github.com/vbdi/epdserve, read for design only). Guide, results and calibration
notes: docs/papers/epd_serving.md.

A real multi-process serving system on CPU (a tiny seeded LMM, one worker per OS process, one torch thread each)
in three deployments started once and fed the same Poisson traces: aggregated (2 vLLM-style replicas: the same two
cores as the others), PD (EP worker + D worker) and EPD (2 E, 1 P, 1 D, intra-request parallelism on).

1. correctness: identical greedy tokens across the three deployments and an in-process reference (check);
2. memory: LLM-stage workers hold no encoder (tensor accounting) and, under one per-worker memory budget, the
   decode worker's KV capacity against the aggregated worker's (check: accounting);
3. TPOT p90: EPD against aggregated on the image-heavy trace (finding);
4. TTFT of single 8-image requests on the EPD system: IRP on (images split over both E workers) against IRP off
   (one E worker encodes the request) (finding); at full scale also swept over 1-32 images per request (log-log
   slopes, finding);
5. simulator fidelity: the simulator fitted (least squares) to each deployment's profile on a tuning-seed trace
   predicts mean TTFT and TPOT of the reporting-seed traces (finding);
6. at scale (SIMULATED, GPU preset): SLO attainment and TTFT over arrival rates, 8 devices, allocator-chosen
   EPD and PD against aggregated (finding);
7. allocator and role switching (SIMULATED): more E workers as images/request grow; E<->P role switching on a
   two-phase trace against the best static deployment for phase 1 (finding);
8. engineering checks: the MM-token cache skips repeated images, bad requests are rejected not crashed, no worker
   process survives the run (check).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

import matplotlib.pyplot as plt
import numpy as np
import torch

from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_vs_size
from icml25.harness.stats import loglog_slope, summary
from icml25.serving import (
    LatencyModel,
    Limits,
    LMConfig,
    Request,
    RoleSwitcher,
    SamplingParams,
    ServingSystem,
    SimConfig,
    SimRequest,
    TinyLMM,
    allocate,
    make_trace,
    simulate,
    summarize,
)
from icml25.serving.engine import image_hash

CLAIM_EXACT = "identical greedy outputs for every request across aggregated, PD and EPD"
CLAIM_MEMORY = "LLM-stage workers hold no encoder and get a larger KV cache under the same memory budget"
CLAIM_TPOT = "EPD lowers TPOT: decode is not blocked by encoding (p90 TPOT <= 0.7 x aggregated)"
CLAIM_IRP = "intra-request parallel encoding lowers TTFT of 8-image requests (2 E workers <= 0.75 x 1 E worker)"
CLAIM_IRP_SWEEP = ("TTFT grows linearly in the images per request with IRP on and off (slopes within 0.25); "
                   "IRP <= 0.75 x one E worker at the largest size")
CLAIM_SIM = "the simulator fitted to the real system predicts its mean TTFT and TPOT within 30 %"
CLAIM_SCALE = "simulated at scale: EPD's SLO attainment >= both baselines and >= +30 points at high load"
CLAIM_SWITCH = "simulated: the allocator adds E workers as images grow; role switching beats the best static config"
CLAIM_SYSTEM = "MM cache skips repeated images, bad requests are rejected, no worker process outlives the run"

PAPER = Paper(
    id="epd_serving",
    title="Efficiently Serving Large Multimodal Models Using EPD Disaggregation",
    module="icml25.serving",
    anchors=("vbdi/epdserve", "vLLM (vllm bench serve)", "DistServe (simdistserve)", "SGLang PD disaggregation"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch", "serving"),
    commands=("icml25.serving.cli",),
    known_misses={
        CLAIM_TPOT: "decode is blocked by encoding only when the workers queue: at quick scale (12 requests a seed) "
                    "p90 TPOT sits at the noise floor (0.64 +- 0.16 x aggregated in one run, 0.83 +- 0.32 x in CI); "
                    "at full scale it held on a loaded machine (0.70 +- 0.73) and missed on an idle one, where 6 "
                    "req/s do not queue (0.98 +- 0.18, p90 TPOT about 1 ms in every deployment)",
        CLAIM_IRP: "load-dependent: on the idle 2-core machine IRP gives 0.54 +- 0.01 x one E worker's TTFT at full "
                   "scale, but under load (the CI's parallel tests, other jobs) the second E worker gets no free "
                   "core and the ratio was 0.90-0.94 x while the encode CPU on the critical path halved",
        CLAIM_IRP_SWEEP: "full scale, load-dependent: on the idle machine TTFT is linear in the images (slopes 0.94 "
                         "and 0.83) and IRP gives 0.58-0.66 x from 4 images (0.62 at 32); on the shared machine at "
                         "load 7-11 the ratio stayed at 0.84-1.02 while the busiest E worker's encode CPU halved",
        CLAIM_SIM: "load-dependent: on the idle machine every sim / real ratio is within 0.85-1.12; on the loaded "
                   "machine queueing the step model does not capture put TTFT at 1.65-2.28 x and TPOT at 0.16-3.11 x",
        CLAIM_SCALE: "with the illustrative GPU preset, splitting 8 devices into stages costs EPD more encode/prefill "
                     "throughput than its memory gains return (14 req/s: EPD 57 %, aggregated 72 %, PD 61 %)",
        CLAIM_SWITCH: "the allocator's n_E is not monotone (2, 3, 2, 2 for 0-1 ... 9-12 images) and E <-> P role "
                      "switching loses 13 +- 11 attainment points against the static phase-1 config",
    },
)

DEPLOYMENTS = {"aggregated": {"mode": "aggregated", "n_decode": 2}, "pd": {"mode": "pd"},
               "epd": {"mode": "epd", "n_encode": 2}}
GB = 1e9
DEVICE_BYTES, LLM_BYTES, ENC_BYTES = 40 * GB, 14 * GB, 0.6 * GB  # GPU preset memory model (illustrative)
ENC_ACT_BYTES, LLM_ACT_BYTES = 8 * GB, 1 * GB
SWITCH_RATE = 8.0  # requests/s of the two-phase trace


@dataclass(frozen=True)
class Sizes:
    requests: int        # per real trace
    rate: float          # real trace arrivals, requests/s
    irp_requests: int    # single 8-image requests per seed
    sim_requests: int    # per simulated trace
    rates: tuple[float, ...]  # simulated arrival rates (8 devices)
    switch_requests: int  # per phase of the role-switching trace
    sweep_images: tuple[int, ...] = ()  # images per request of the IRP cost-vs-size sweep (empty: no sweep)
    sweep_repeats: int = 1  # interleaved IRP-off / IRP-on pairs per size


def reproduce(run: Run) -> Result:
    sz = run.pick(smoke=Sizes(4, 8.0, 1, 40, (8.0, 16.0), 40, (1, 2), 1),
                  quick=Sizes(12, 5.0, 3, 100, (8.0, 14.0, 20.0, 26.0), 80),
                  full=Sizes(40, 6.0, 8, 400, (4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 28.0), 300, (1, 2, 4, 8, 16, 32), 3))
    real = _real(run, sz)
    run.progress(0.65, "IRP cost against images per request")
    sweep = _irp_sweep(run, sz)
    run.progress(0.7, "simulator fidelity")
    fidelity = _fidelity(run, real)
    run.progress(0.75, "simulated at scale")
    scale = _at_scale(run, sz)
    run.progress(0.9, "allocator and role switching")
    switching = _switching(run, sz)
    claims = [_claim_exact(real), _claim_memory(real), _claim_tpot(run, real), _claim_irp(run, real),
              _claim_sim(fidelity), _claim_scale(scale), _claim_switch(switching), _claim_system(real)]
    figures = [_figure_real(run, real), _figure_scale(run, scale, fidelity)]
    if sweep is not None:
        claims.append(_claim_irp_sweep(sweep))
        figures.append(_figure_irp_sweep(run, sweep))
    metrics = {"greedy_mismatches": claims[0].measured["mismatched_requests"],
               "real_latency_seconds": {name: {str(s): real["summaries"][name][s] for s in run.seeds}
                                        for name in DEPLOYMENTS},
               "worker_memory_at_runtime": real["stats"], "fidelity_sim_over_real_time": fidelity,
               "at_scale": scale, "switching": switching}
    if sweep is not None:
        metrics["irp_sweep"] = sweep
    return Result(metrics=metrics, claims=claims, figures=figures)


# ------------------------------------------------------------------ the real system
def _traces(run: Run, sz: Sizes) -> dict[int, list[Request]]:
    return {s: make_trace(sz.requests, sz.rate, images=(1, 8), prompt=(16, 64), output=(32, 64), seed=s)
            for s in (run.tune_seeds[0], *run.seeds)}


def _irp_requests(seed: int, n: int) -> list[Request]:
    rng = np.random.default_rng(seed + 7919)
    return [Request(f"irp-{seed}-{i}", rng.integers(0, 512, 32),
                    rng.standard_normal((8, 3, 64, 64)).astype(np.float32), SamplingParams(4)) for i in range(n)]


def _real(run: Run, sz: Sizes) -> dict:
    traces = _traces(run, sz)
    out = {"tokens": {}, "summaries": {}, "profiles": {}, "stats": {}, "irp_ttft": {}, "alive_after": {},
           "traces": traces, "param_bytes": None, "system": None}
    for k, (name, kw) in enumerate(DEPLOYMENTS.items()):
        run.progress(0.6 * k / len(DEPLOYMENTS), f"real system: {name}")
        with ServingSystem(**kw, limits=Limits(kv_capacity_tokens=8192)) as system:
            out["param_bytes"] = system.param_bytes
            out["tokens"][name], out["summaries"][name], out["profiles"][name] = {}, {}, {}
            for seed, trace in traces.items():
                before = len(system.profile)
                metrics = system.run_trace(trace, timeout=300)
                out["tokens"][name][seed] = [m.tokens if m.ok else m.error for m in metrics]
                out["summaries"][name][seed] = summarize(metrics)
                out["profiles"][name][seed] = system.profile[before:]
            if name == "epd":
                out["irp_ttft"] = _irp(run, sz, system)
                out["system"] = _system_checks(system)
            out["stats"][name] = system.worker_stats()
        out["alive_after"][name] = system.alive_pids()
    model = TinyLMM(seed=0)
    out["reference"] = {seed: [model.generate(torch.tensor(r.prompt), None if r.images is None else
                                              torch.from_numpy(r.images), r.sampling.max_new_tokens) for r in trace]
                        for seed, trace in traces.items()}
    return out


def _irp(run: Run, sz: Sizes, system: ServingSystem) -> dict:
    """TTFT of single 8-image requests, one at a time, with IRP off (one E worker) and on (both), in turns (fresh
    images for each request, so the MM cache never hits)."""
    out = {"epd_1e": {}, "epd_irp": {}, "cpu_epd_1e": {}, "cpu_epd_irp": {}}
    for s in run.seeds:
        pairs = zip(_irp_requests(2 * s, sz.irp_requests), _irp_requests(2 * s + 1, sz.irp_requests), strict=True)
        for key in out:
            out[key][s] = []
        for off, on in pairs:
            for key, irp, req in (("epd_1e", False, off), ("epd_irp", True, on)):
                system.irp = irp
                before = len(system.profile)
                out[key][s].append(system.run_trace([req])[0].ttft)
                out[f"cpu_{key}"][s].append(_encode_critical_cpu(system, before))
    system.irp = True
    return out


def _encode_critical_cpu(system: ServingSystem, before: int) -> float:
    """Encode CPU seconds of the busiest E worker in ``system.profile[before:]``: the encode critical path."""
    per_worker: dict[str, float] = {}
    for p in system.profile[before:]:
        if p["kind"] == "encode":
            per_worker[p["worker"]] = per_worker.get(p["worker"], 0.0) + p["cpu_seconds"]
    return max(per_worker.values())


def _irp_sweep(run: Run, sz: Sizes) -> dict | None:
    """TTFT of single requests with ``n`` images (fresh images, 32 text tokens, 4 new tokens) for every ``n`` in
    ``sz.sweep_images``, on an EPD system (2 E, 1 P, 1 D) whose LM positions and KV capacity fit the largest request;
    IRP off and on in turns (the order flips every repeat), medians of the repeats, and the log-log slopes in ``n``;
    beside TTFT, the encode CPU seconds of the busiest E worker (the encode critical path).
    Paper's cost model (Section 3.2): TTFT = fixed + prefill(n) + encode(n) / (E workers sharing the request), with
    encode linear in n, so both are linear in the encode work and IRP halves its share (ceil(n/2) images)."""
    if not sz.sweep_images:
        return None
    largest = max(sz.sweep_images)
    tokens = TinyLMM(seed=0).enc_cfg.tokens_per_image
    max_len = largest * tokens + 64
    rng = np.random.default_rng(run.seeds[0] + 104729)
    ttft: dict[str, dict[int, list[float]]] = {k: {n: [] for n in sz.sweep_images} for k in ("epd_1e", "epd_irp")}
    cpu: dict[str, dict[int, list[float]]] = {k: {n: [] for n in sz.sweep_images} for k in ("epd_1e", "epd_irp")}
    limits = Limits(max_images_per_request=largest, kv_capacity_tokens=max_len)
    with ServingSystem(mode="epd", n_encode=2, llm_cfg=LMConfig(max_len=max_len), limits=limits) as system:
        for rep in range(sz.sweep_repeats):
            for n in sz.sweep_images:
                order = (("epd_1e", False), ("epd_irp", True))
                for key, irp in order if rep % 2 == 0 else order[::-1]:
                    system.irp = irp
                    req = Request(f"sweep-{rep}-{n}-{key}", rng.integers(0, 512, 32),
                                  rng.standard_normal((n, 3, 64, 64)).astype(np.float32), SamplingParams(4))
                    before = len(system.profile)
                    result = system.run_trace([req])[0]
                    if not result.ok:
                        raise RuntimeError(f"IRP sweep request failed: {result.error}")
                    ttft[key][n].append(result.ttft)
                    cpu[key][n].append(_encode_critical_cpu(system, before))
    rows = [{"images": n, "one_e_ttft_seconds": statistics.median(ttft["epd_1e"][n]),
             "irp_ttft_seconds": statistics.median(ttft["epd_irp"][n]),
             "one_e_encode_cpu_seconds": statistics.median(cpu["epd_1e"][n]),
             "irp_encode_cpu_seconds": statistics.median(cpu["epd_irp"][n])} for n in sz.sweep_images]
    for r in rows:
        r["irp_over_one_e_time_ratio"] = r["irp_ttft_seconds"] / r["one_e_ttft_seconds"]
        r["irp_over_one_e_encode_cpu_time_ratio"] = r["irp_encode_cpu_seconds"] / r["one_e_encode_cpu_seconds"]
    sizes = [r["images"] for r in rows]
    return {"rows": rows, "clock": "wall (TTFT from the serving system)", "repeats": sz.sweep_repeats,
            "ttft_seconds": {k: {str(n): v for n, v in d.items()} for k, d in ttft.items()},
            "time_slope_in_images": {k: loglog_slope(sizes, [r[f"{k}_ttft_seconds"] for r in rows])
                                     for k in ("one_e", "irp")}}


def _system_checks(system: ServingSystem) -> dict:
    """MM cache reuse and rejection of bad requests on a running EPD system."""
    trace = make_trace(6, math.inf, images=(2, 4), prompt=(8, 16), output=(4, 4), repeat=0.6, seed=12345)
    before = len(system.profile)
    metrics = system.run_trace(trace)
    encoded = sum(p["n"] for p in system.profile[before:] if p["kind"] == "encode")
    unique = len({image_hash(img) for r in trace for img in r.images})
    rng = np.random.default_rng(0)
    bad = {"too_many_images": Request("bad-images", [1, 2], rng.standard_normal((9, 3, 64, 64)).astype(np.float32)),
           "longer_than_capacity": Request("bad-long", list(range(500)), rng.standard_normal((8, 3, 64, 64)).astype(
               np.float32), SamplingParams(600))}
    rejected = {k: system.run_trace([r])[0].error for k, r in bad.items()}
    ok_after = system.run_trace([Request("after-bad", [1, 2, 3], None, SamplingParams(3))])[0].ok
    return {"images": sum(r.n_images for r in trace), "unique_images": unique, "encoded_images": encoded,
            "cached_images": sum(m.cached_images for m in metrics), "all_ok": all(m.ok for m in metrics),
            "rejected": rejected, "ok_after_rejections": ok_after}


def _claim_exact(real: dict) -> Claim:
    mismatches = {name: sum(a != b for seed in real["reference"] for a, b in
                            zip(real["tokens"][name][seed], real["reference"][seed], strict=True))
                  for name in DEPLOYMENTS}
    n = sum(len(v) for v in real["reference"].values())
    return Claim(
        text=CLAIM_EXACT, kind="check",
        criterion=f"greedy tokens of all {n} requests (every seed's trace and the tuning trace) equal the in-process "
                  "reference TinyLMM.generate, in each deployment",
        paper="EPD changes where phases run, not what the model computes (Section 3)",
        measured={"mismatched_requests": mismatches, "requests": n}, baseline=None,
        holds=all(v == 0 for v in mismatches.values()),
    )


def _claim_memory(real: dict) -> Claim:
    def acct(stats: dict) -> float:
        return stats["param_bytes"] + stats["activation_peak"]

    agg, epd = real["stats"]["aggregated"]["A0"], real["stats"]["epd"]
    enc = real["param_bytes"]["encoder"]
    budget = 2 * (real["param_bytes"]["encoder"] + real["param_bytes"]["lm"])  # a device twice the model size
    kv_token = TinyLMM(seed=0).llm_cfg.kv_bytes_per_token()
    cap_agg, cap_d = (budget - acct(agg)) / kv_token, (budget - acct(epd["D0"])) / kv_token
    llm_peak = max(acct(epd["P0"]) + epd["P0"]["cache_peak"], acct(epd["D0"]) + epd["D0"]["cache_peak"])
    return Claim(
        text=CLAIM_MEMORY, kind="check",
        criterion="tensor accounting (parameters + activation peak + cache peak): max over EPD's P and D workers <= "
                  "aggregated worker - 0.8 x encoder parameter bytes; KV capacity under a budget of 2 x (encoder + "
                  "LLM) bytes per worker: D / aggregated >= 1.5",
        paper="2.2x larger KV cache, up to 15x lower peak memory on encoder-free workers (abstract, Section 5.1)",
        measured={"epd_llm_worker_peak_bytes": llm_peak, "kv_capacity_ratio": cap_d / cap_agg,
                  "kv_capacity_tokens": {"aggregated": cap_agg, "epd_decode": cap_d},
                  "rss_bytes": {n: s["rss"] for n, s in epd.items()}},
        baseline={"aggregated_peak_bytes": acct(agg) + agg["cache_peak"], "encoder_param_bytes": enc,
                  "aggregated_rss_bytes": agg["rss"]},
        holds=llm_peak <= acct(agg) + agg["cache_peak"] - 0.8 * enc and cap_d >= 1.5 * cap_agg,
    )


def _claim_tpot(run: Run, real: dict) -> Claim:
    ratio = [real["summaries"]["epd"][s]["p90_tpot"] / real["summaries"]["aggregated"][s]["p90_tpot"]
             for s in run.seeds]
    return Claim(
        text=CLAIM_TPOT,
        criterion="Poisson trace (1-8 images, 16-64 text tokens, 32-64 new tokens): p90 TPOT(EPD 1E1P1D) / "
                  "p90 TPOT(aggregated, 2 replicas) <= 0.7, mean over seeds",
        paper="lower TPOT and higher SLO attainment than non-disaggregated serving (Figures 5-6)",
        measured={"p90_tpot_ratio": summary(ratio),
                  "epd_p90_tpot_s": summary([real["summaries"]["epd"][s]["p90_tpot"] for s in run.seeds]),
                  "pd_p90_tpot_s": summary([real["summaries"]["pd"][s]["p90_tpot"] for s in run.seeds])},
        baseline={"aggregated_p90_tpot_s": summary([real["summaries"]["aggregated"][s]["p90_tpot"]
                                                    for s in run.seeds])},
        holds=statistics.mean(ratio) <= 0.7,
    )


def _claim_irp(run: Run, real: dict) -> Claim:
    med = {n: [statistics.median(real["irp_ttft"][n][s]) for s in run.seeds] for n in ("epd_1e", "epd_irp")}
    ratio = [a / b for a, b in zip(med["epd_irp"], med["epd_1e"], strict=True)]
    return Claim(
        text=CLAIM_IRP,
        criterion="single requests with 8 images (64 px, 64 MM tokens each), one at a time on the EPD system, IRP "
                  "on and off in turns: median TTFT(IRP: images split over 2 E workers) / median TTFT(one E worker) "
                  "<= 0.75, mean over seeds (ideal on 2 idle cores: about 0.5 of the encode share)",
        paper="intra-request parallelism reduces TTFT (up to 71 % lower TTFT, Section 5.3)",
        measured={"ttft_ratio": summary(ratio), "irp_median_ttft_s": summary(med["epd_irp"]),
                  "encode_cpu_critical_path_ratio": summary(
                      [statistics.median(real["irp_ttft"]["cpu_epd_irp"][s])
                       / statistics.median(real["irp_ttft"]["cpu_epd_1e"][s]) for s in run.seeds])},
        baseline={"one_e_worker_median_ttft_s": summary(med["epd_1e"])},
        holds=statistics.mean(ratio) <= 0.75,
    )


def _claim_irp_sweep(sweep: dict) -> Claim:
    rows, slopes = sweep["rows"], sweep["time_slope_in_images"]
    last = rows[-1]
    return Claim(
        text=CLAIM_IRP_SWEEP,
        criterion=f"single requests with {', '.join(str(r['images']) for r in rows)} images, one at a time on the EPD "
                  f"system, IRP on and off in turns, medians of {sweep['repeats']} repeats (one sweep): fitted log-log "
                  "slopes of TTFT in the images per request within 0.25 of each other (both linear in the encode "
                  "work; halving the encode share alone moves the slope by at most log 2 / log(32) = 0.2), and "
                  f"TTFT(IRP) / TTFT(one E worker) <= 0.75 at {last['images']} images",
        paper="intra-request parallelism splits a request's images over the E workers (Section 3.2, Section 5.3)",
        measured={"slope_irp": slopes["irp"], "ratio_by_images": {r["images"]: r["irp_over_one_e_time_ratio"]
                                                                 for r in rows},
                  "encode_cpu_critical_path_ratio_by_images": {r["images"]: r["irp_over_one_e_encode_cpu_time_ratio"]
                                                               for r in rows}},
        baseline={"slope_one_e": slopes["one_e"]},
        holds=abs(slopes["irp"] - slopes["one_e"]) <= 0.25 and last["irp_over_one_e_time_ratio"] <= 0.75,
    )


# ------------------------------------------------------------------ the simulator against the real system
def _fidelity(run: Run, real: dict) -> dict:
    model = TinyLMM(seed=0)
    mm_bytes = model.enc_cfg.tokens_per_image * model.llm_cfg.dim * 8
    out = {}
    for name, kw in DEPLOYMENTS.items():
        tune = run.tune_seeds[0]
        lat = LatencyModel.fit(real["profiles"][name][tune], mm_bytes, model.llm_cfg.kv_bytes_per_token())
        cfg = SimConfig(**kw, tokens_per_image=model.enc_cfg.tokens_per_image, kv_capacity_tokens=8192)
        rows = {}
        for seed in run.seeds:
            sim = summarize(simulate(cfg, real["traces"][seed], lat))
            meas = real["summaries"][name][seed]
            rows[seed] = {k: sim[f"mean_{k}"] / meas[f"mean_{k}"] for k in ("ttft", "tpot")}
        out[name] = {"sim_over_real": {k: summary([rows[s][k] for s in run.seeds]) for k in ("ttft", "tpot")},
                     "latency_model": vars(lat)}
    return out


def _claim_sim(fidelity: dict) -> Claim:
    worst = max(abs(v["sim_over_real"][k]["mean"] - 1) for v in fidelity.values() for k in ("ttft", "tpot"))
    return Claim(
        text=CLAIM_SIM,
        criterion="latency model fitted by non-negative least squares on each deployment's tuning-seed trace; on the "
                  "reporting seeds' traces, mean-over-seeds of simulated / measured mean TTFT and mean TPOT in "
                  "[0.7, 1.3] for all three deployments",
        paper="the allocator relies on a simulator of the serving system (Section 4.1, DistServe's simulator)",
        measured={n: v["sim_over_real"] for n, v in fidelity.items()}, baseline=None,
        holds=worst <= 0.3,
    )


# ------------------------------------------------------------------ at scale (simulated, GPU preset)
def _capacity(act: float, enc: float, lat: LatencyModel) -> int:
    return int((DEVICE_BYTES - LLM_BYTES - enc - act) / lat.kv_bytes_per_token)


def _scale_trace(n: int, rate: float, seed: int, images=(4, 10)) -> list[SimRequest]:
    return [SimRequest.from_request(r) for r in make_trace(n, rate, images=images, prompt=(32, 128),
                                                           output=(64, 256), image_size=1, seed=seed)]


def _slo(lat: LatencyModel) -> tuple[float, float]:
    """SLOs as multiples of unloaded latency (DistServe's convention): TTFT 4x an average request's encode + prefill
    on one device (7 images, 80 text tokens), TPOT 3x a batch-1 decode step."""
    return 4 * (lat.encode(7) + lat.prefill(7 * 576 + 80)), 3 * lat.decode(1, 4200)


def _at_scale(run: Run, sz: Sizes) -> dict:
    lat = LatencyModel.gpu_preset()
    slo = _slo(lat)
    base = SimConfig(tokens_per_image=576, kv_capacity_tokens=_capacity(LLM_ACT_BYTES, 0, lat), max_decode_batch=64)
    agg = replace(base, mode="aggregated", n_decode=8, kv_capacity_tokens=_capacity(ENC_ACT_BYTES, ENC_BYTES, lat))
    out = {"slo": slo, "kv_capacity": {"aggregated": agg.kv_capacity_tokens, "decode": base.kv_capacity_tokens},
           "rates": list(sz.rates), "rows": []}
    for rate in sz.rates:
        tune = _scale_trace(sz.sim_requests, rate, run.tune_seeds[0])
        configs = {"aggregated": agg, "pd": allocate(8, tune, slo, lat, "pd", base, batch_grid=(8,)).config,
                   "epd": allocate(8, tune, slo, lat, "epd", base, batch_grid=(4, 16)).config}
        row = {"rate": rate, "alloc": {k: [c.n_encode, c.n_prefill, c.n_decode] for k, c in configs.items()}}
        for name, cfg in configs.items():
            s = [summarize(simulate(cfg, _scale_trace(sz.sim_requests, rate, seed), lat), *slo) for seed in run.seeds]
            row[name] = {"slo_attainment": summary([x["slo_attainment"] for x in s]),
                         "mean_ttft": summary([x["mean_ttft"] for x in s])}
        out["rows"].append(row)
    return out


def _claim_scale(scale: dict) -> Claim:
    rows = scale["rows"]
    att = lambda r, n: r[n]["slo_attainment"]["mean"]  # noqa: E731
    ge_all = all(att(r, "epd") >= max(att(r, "aggregated"), att(r, "pd")) - 1e-9 for r in rows)
    eligible = [r for r in rows if max(att(r, "aggregated"), att(r, "pd")) >= 0.5]
    high = eligible[-1] if eligible else rows[-1]
    gain = att(high, "epd") - max(att(high, "aggregated"), att(high, "pd"))
    ttft_ratio = high["epd"]["mean_ttft"]["mean"] / high["aggregated"]["mean_ttft"]["mean"]
    return Claim(
        text=CLAIM_SCALE,
        criterion="SIMULATED with the illustrative GPU preset (8 devices, 40 GB each, 4-10 images x 576 tokens): "
                  "EPD (allocator) attainment >= aggregated and PD (allocator) at every rate, >= +30 points at the "
                  "highest rate where a baseline is >= 50 %, and mean TTFT there <= 0.7 x aggregated",
        paper="+90-100 % SLO attainment, -71 % TTFT against systems that do not disaggregate (abstract, Figure 5)",
        measured={"epd_attainment": {r["rate"]: r["epd"]["slo_attainment"]["mean"] for r in rows},
                  "gain_points_at_high_load": 100 * gain, "high_load_rate": high["rate"],
                  "ttft_ratio_at_high_load": ttft_ratio, "allocations": {r["rate"]: r["alloc"] for r in rows}},
        baseline={n: {r["rate"]: r[n]["slo_attainment"]["mean"] for r in rows} for n in ("aggregated", "pd")},
        holds=ge_all and gain >= 0.3 and ttft_ratio <= 0.7,
    )


def _switching(run: Run, sz: Sizes) -> dict:
    lat = LatencyModel.gpu_preset()
    slo = _slo(lat)
    base = SimConfig(tokens_per_image=576, kv_capacity_tokens=_capacity(LLM_ACT_BYTES, 0, lat), max_decode_batch=64)
    monotone = {}
    for lo, hi in ((0, 1), (2, 4), (5, 8), (9, 12)):
        tune = _scale_trace(sz.sim_requests, 10.0, run.tune_seeds[0], images=(lo, hi))
        monotone[f"{lo}-{hi}"] = allocate(8, tune, slo, lat, "epd", base, batch_grid=(8,)).config.n_encode

    def two_phase(seed: int) -> list[SimRequest]:
        heavy = _scale_trace(sz.switch_requests, SWITCH_RATE, seed, images=(8, 12))
        t0 = heavy[-1].arrival + 1.0 / SWITCH_RATE
        light = [SimRequest(t0 + r.arrival, 0, r.prompt_len, r.output_len) for r in
                 (SimRequest.from_request(q) for q in make_trace(sz.switch_requests, SWITCH_RATE, images=(0, 0),
                                                                  prompt=(3000, 6000), output=(64, 256), seed=seed))]
        return heavy + light

    phase1 = _scale_trace(sz.switch_requests, SWITCH_RATE, run.tune_seeds[0], images=(8, 12))
    static = allocate(8, phase1, slo, lat, "epd", base, batch_grid=(8,)).config
    rows = {"static": [], "switching": [], "switches": []}
    for seed in run.seeds:
        trace = two_phase(seed)
        rows["static"].append(summarize(simulate(static, trace, lat), *slo)["slo_attainment"])
        switcher = RoleSwitcher(threshold=0.5, window=0.5, switch_cost=0.05)
        rows["switching"].append(summarize(simulate(static, trace, lat, switcher), *slo)["slo_attainment"])
        rows["switches"].append(len(switcher.switches))
    return {"n_encode_by_images": monotone, "static_config": [static.n_encode, static.n_prefill, static.n_decode],
            "static": summary(rows["static"]), "switching": summary(rows["switching"]), "switches": rows["switches"]}


def _claim_switch(sw: dict) -> Claim:
    ns = list(sw["n_encode_by_images"].values())
    gain = [a - b for a, b in zip(sw["switching"]["values"], sw["static"]["values"], strict=True)]
    return Claim(
        text=CLAIM_SWITCH,
        criterion="SIMULATED (GPU preset, 8 devices): allocator's n_E non-decreasing over images/request 0-1, 2-4, "
                  "5-8, 9-12; two-phase trace (8-12 images, then text-only 3-6k-token prompts): E<->P role switching "
                  "from the best static config for phase 1 gains >= 10 attainment points, mean over seeds",
        paper="the allocator adapts to the workload; role switching handles workload shifts (Sections 4.1-4.2)",
        measured={"n_encode_by_images": sw["n_encode_by_images"], "switching_attainment": sw["switching"],
                  "gain_points": summary([100 * g for g in gain]), "switches": sw["switches"]},
        baseline={"static_attainment": sw["static"], "static_config": sw["static_config"]},
        holds=all(a <= b for a, b in zip(ns, ns[1:], strict=False)) and statistics.mean(gain) >= 0.10,
    )


def _claim_system(real: dict) -> Claim:
    sc = real["system"]
    alive = {n: v for n, v in real["alive_after"].items() if v}
    return Claim(
        text=CLAIM_SYSTEM, kind="check",
        criterion="EPD, 6 concurrent requests with repeated images: encoded images == distinct images and all "
                  "complete; 9 images and a request longer than the KV capacity are rejected with an error and the "
                  "system keeps serving; after shutdown no worker pid of any deployment is alive",
        paper="MM-token cache, bounded KV capacity (Section 3.1)",
        measured={**sc, "alive_worker_pids": alive}, baseline=None,
        holds=(sc["encoded_images"] == sc["unique_images"] and sc["all_ok"] and sc["ok_after_rejections"]
               and all(str(e).startswith("rejected") for e in sc["rejected"].values()) and not alive),
    )


# ------------------------------------------------------------------ figures
def _figure_real(run: Run, real: dict) -> str:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    names = list(DEPLOYMENTS)
    for ax, key, label in ((axes[0], "ttft", "TTFT (s)"), (axes[1], "tpot", "TPOT (s)")):
        for q, off in (("p50", -0.2), ("p90", 0.0), ("p99", 0.2)):
            vals = [np.mean([real["summaries"][n][s][f"{q}_{key}"] for s in run.seeds]) for n in names]
            ax.bar(np.arange(len(names)) + off, vals, width=0.2, label=q)
        ax.set_xticks(range(len(names)), names)
        ax.set_ylabel(label)
        ax.set_yscale("log")
        ax.legend()
    fig.suptitle("Real CPU system (tiny LMM, worker processes): latency percentiles, mean over seeds")
    return run.savefig(fig, "real_latency")


def _figure_irp_sweep(run: Run, sweep: dict) -> str:
    rows = sweep["rows"]
    return cost_vs_size(
        run, "irp_ttft_vs_images", [r["images"] for r in rows],
        {"IRP off (one E worker)": [r["one_e_ttft_seconds"] for r in rows],
         "IRP on (2 E workers)": [r["irp_ttft_seconds"] for r in rows]},
        xlabel="images per request (64 MM tokens each)", ylabel="median TTFT [s, wall]",
        title="TTFT against images per request",
        ratios={"TTFT (wall)": [r["irp_over_one_e_time_ratio"] for r in rows],
                "encode CPU of the busiest E worker": [r["irp_over_one_e_encode_cpu_time_ratio"] for r in rows]},
        bounds={"0.75 (the claim)": 0.75, "0.5 (encode-only ideal)": 0.5}, ratio_ylabel="IRP on / IRP off")


def _figure_scale(run: Run, scale: dict, fidelity: dict) -> str:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    rates = [r["rate"] for r in scale["rows"]]
    for name in ("aggregated", "pd", "epd"):
        axes[0].plot(rates, [100 * r[name]["slo_attainment"]["mean"] for r in scale["rows"]], "o-", label=name)
    axes[0].set_xlabel("arrival rate (requests/s, 8 devices)")
    axes[0].set_ylabel("SLO attainment (%)")
    axes[0].set_title("SIMULATED, illustrative GPU preset")
    axes[0].legend()
    names = list(fidelity)
    for k, off in (("ttft", -0.15), ("tpot", 0.15)):
        axes[1].bar(np.arange(len(names)) + off, [fidelity[n]["sim_over_real"][k]["mean"] for n in names],
                    width=0.3, label=k)
    axes[1].axhspan(0.7, 1.3, color="grey", alpha=0.15)
    axes[1].set_xticks(range(len(names)), names)
    axes[1].set_ylabel("simulated / measured mean")
    axes[1].set_title("simulator fitted to the CPU system")
    axes[1].legend()
    fig.suptitle("EPD disaggregation: at-scale simulation and simulator fidelity")
    return run.savefig(fig, "simulated_slo")

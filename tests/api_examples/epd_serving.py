"""Valid calls of ``icml25.serving`` (EPD disaggregated serving: tiny LMM, serving system, metrics, simulator)."""

from functools import cache

import numpy as np
import torch

from api_examples._core import Example, Exempt
from icml25 import serving as sv

_START = "starts worker processes: mutating it would start a system per bad value; tests/serving covers it"


@cache
def _model():
    return sv.TinyLMM(sv.EncoderConfig(image_size=16, patch=8, dim=32, layers=1, heads=2),
                      sv.LMConfig(vocab=64, dim=32, layers=1, heads=2, max_len=64), seed=0)


def _img(n=1, size=16):
    return torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


def _kv():
    from icml25.serving.model import grow_cache

    _, kv = _model().prefill(torch.tensor([1, 2, 3]))
    return grow_cache(kv, 8)


def _req(**kw):
    return sv.Request("r0", [1, 2, 3], np.zeros((1, 3, 16, 16), np.float32), sv.SamplingParams(2), **kw)


def _metrics():
    return [sv.RequestMetrics("a", 0.0, tokens=[1, 2], token_times=[0.5, 0.7], finish=0.7)]


def _small_system():
    return sv.ServingSystem("aggregated", enc_cfg=sv.EncoderConfig(image_size=16, patch=8, dim=32, layers=1, heads=2),
                            llm_cfg=sv.LMConfig(vocab=64, dim=32, layers=1, heads=2, max_len=64))


def _with_system(method):
    def call(**kw):
        with _small_system() as system:
            return getattr(system, method)(**kw)
    return call


def _start(**kw):
    system = _small_system()
    try:
        return system.start(**kw)
    finally:
        system.shutdown()


def _sim_trace():
    return [sv.SimRequest(0.0, 2, 10, 4), sv.SimRequest(0.5, 0, 20, 3)]


_LAT = dict(e0=0.01, e1=0.02, p0=0.01, p1=1e-4, p2=0.0, d0=0.01, d1=1e-3, d2=1e-6, bandwidth=1e9,
            mm_bytes_per_image=1e4, kv_bytes_per_token=100.0)
_PROFILE = [{"kind": "encode", "n": 1, "seconds": 0.03}, {"kind": "encode", "n": 3, "seconds": 0.07},
            {"kind": "prefill", "n": 10, "seconds": 0.01}, {"kind": "prefill", "n": 20, "seconds": 0.012},
            {"kind": "prefill", "n": 40, "seconds": 0.02},
            {"kind": "decode", "batch": 1, "ctx": 10, "seconds": 0.01}, {"kind": "decode", "batch": 2, "ctx": 30,
                                                                         "seconds": 0.012},
            {"kind": "decode", "batch": 4, "ctx": 80, "seconds": 0.015}]

EXAMPLES = {
    "icml25.serving.EncoderConfig": Example(sv.EncoderConfig, {"image_size": 16, "patch": 8, "dim": 32, "layers": 1,
                                                               "heads": 2}, positive=("image_size", "patch", "dim",
                                                                                      "layers", "heads")),
    "icml25.serving.LMConfig": Example(sv.LMConfig, {"vocab": 64, "dim": 32, "layers": 1, "heads": 2, "max_len": 64},
                                       positive=("vocab", "dim", "layers", "heads", "max_len")),
    "icml25.serving.LMConfig.kv_bytes_per_token": Example(lambda **kw: sv.LMConfig().kv_bytes_per_token(**kw)),
    "icml25.serving.TinyLMM": Example(sv.TinyLMM, lambda: {"enc_cfg": _model().enc_cfg, "llm_cfg": _model().llm_cfg,
                                                           "seed": 0}),
    "icml25.serving.TinyLMM.encode": Example(lambda **kw: _model().encode(**kw), lambda: {"images": _img(2)}),
    "icml25.serving.TinyLMM.prefill": Example(lambda **kw: _model().prefill(**kw),
                                              lambda: {"tokens": torch.tensor([1, 2]),
                                                       "mm_tokens": torch.zeros(3, 32, dtype=torch.float64)},
                                              allow={"tokens": "empty", "mm_tokens": "empty"}),
    "icml25.serving.TinyLMM.decode_step": Example(lambda **kw: _model().decode_step(**kw),
                                                  lambda: {"tokens": torch.tensor([4]), "kvs": [_kv()],
                                                           "lengths": [3]}),
    "icml25.serving.TinyLMM.generate": Example(lambda **kw: _model().generate(**kw),
                                               lambda: {"tokens": torch.tensor([1, 2]), "images": _img(1),
                                                        "max_new_tokens": 3},
                                               allow={"tokens": "empty"}, positive=("max_new_tokens",)),
    "icml25.serving.Request": Example(sv.Request, lambda: {"id": "r0", "prompt": [1, 2, 3],
                                                           "images": np.zeros((1, 3, 16, 16), np.float32),
                                                           "sampling": sv.SamplingParams(2), "arrival": 0.5},
                                      allow={"images": "empty", "prompt": "empty"},
                                      skip={"id": "free text: any non-empty string"},
                                      nonneg=("arrival",)),
    "icml25.serving.SamplingParams": Example(sv.SamplingParams, {"max_new_tokens": 4, "stop_token": 0},
                                             positive=("max_new_tokens",), allow={"stop_token": "neg"}),
    "icml25.serving.RequestMetrics": Exempt("record"),
    "icml25.serving.Limits": Example(sv.Limits, {}, positive=("max_images_per_request", "max_images_per_batch",
                                                              "max_prefill_tokens", "max_decode_batch",
                                                              "kv_capacity_tokens")),
    "icml25.serving.ServingSystem": Example(sv.ServingSystem, {"mode": "epd", "n_encode": 2, "irp": True, "seed": 0},
                                            positive=("n_encode", "n_prefill", "n_decode", "threads")),
    "icml25.serving.ServingSystem.start": Example(_start, {"timeout": 120.0}, skip={"timeout": _START}, timeout=180),
    "icml25.serving.ServingSystem.submit": Example(_with_system("submit"), lambda: {"req": _req()},
                                                   skip={"req": _START, "on_event": _START}, timeout=180),
    "icml25.serving.ServingSystem.run_trace": Example(_with_system("run_trace"), lambda: {"trace": [_req()]},
                                                      skip={"trace": _START, "timeout": _START}, timeout=180),
    "icml25.serving.ServingSystem.worker_stats": Example(_with_system("worker_stats"), {},
                                                         skip={"timeout": _START}, timeout=180),
    "icml25.serving.make_trace": Example(sv.make_trace, {"n": 3, "rate": 2.0, "images": (0, 2), "image_size": 8,
                                                         "seed": 0},
                                         positive=("n", "rate", "image_size", "vocab"), nonneg=("repeat",)),
    "icml25.serving.summarize": Example(sv.summarize, lambda: {"metrics": _metrics(), "slo_ttft": 1.0,
                                                               "slo_tpot": 0.5},
                                        positive=("slo_ttft", "slo_tpot")),
    "icml25.serving.LatencyModel": Example(sv.LatencyModel, dict(_LAT), nonneg=tuple(_LAT), positive=("bandwidth",)),
    "icml25.serving.LatencyModel.encode": Example(lambda **kw: sv.LatencyModel(**_LAT).encode(**kw), {"n": 3}),
    "icml25.serving.LatencyModel.prefill": Example(lambda **kw: sv.LatencyModel(**_LAT).prefill(**kw), {"tokens": 30}),
    "icml25.serving.LatencyModel.decode": Example(lambda **kw: sv.LatencyModel(**_LAT).decode(**kw),
                                                  {"batch": 2, "ctx": 40}),
    "icml25.serving.LatencyModel.transfer": Example(lambda **kw: sv.LatencyModel(**_LAT).transfer(**kw),
                                                    {"nbytes": 1e6}, nonneg=("nbytes",)),
    "icml25.serving.LatencyModel.fit": Example(sv.LatencyModel.fit, lambda: {"profile": list(_PROFILE),
                                                                             "mm_bytes_per_image": 1e4,
                                                                             "kv_bytes_per_token": 100.0},
                                               nonneg=("mm_bytes_per_image", "kv_bytes_per_token")),
    "icml25.serving.SimConfig": Example(sv.SimConfig, {"mode": "epd", "n_encode": 2, "irp": True},
                                        positive=("n_encode", "n_prefill", "n_decode", "tokens_per_image",
                                                  "max_images_per_batch", "max_decode_batch", "kv_capacity_tokens")),
    "icml25.serving.SimRequest": Example(sv.SimRequest, {"arrival": 0.5, "n_images": 2, "prompt_len": 10,
                                                         "output_len": 4}, nonneg=("arrival",),
                                         positive=("output_len",)),
    "icml25.serving.SimRequest.from_request": Example(sv.SimRequest.from_request, lambda: {"req": _req()}),
    "icml25.serving.RoleSwitcher": Example(sv.RoleSwitcher, {"threshold": 0.5, "window": 1.0, "switch_cost": 0.05},
                                           nonneg=("threshold", "switch_cost"), positive=("window",)),
    "icml25.serving.simulate": Example(sv.simulate, lambda: {"config": sv.SimConfig("epd", tokens_per_image=4),
                                                             "trace": _sim_trace(), "latency": sv.LatencyModel(**_LAT),
                                                             "switcher": sv.RoleSwitcher()}),
    "icml25.serving.Allocation": Exempt("record"),
    "icml25.serving.allocate": Example(sv.allocate, lambda: {"budget": 3, "workload": _sim_trace(), "slo": (1.0, 0.1),
                                                             "latency": sv.LatencyModel(**_LAT), "mode": "epd",
                                                             "batch_grid": (4, 8)},
                                       positive=("budget",)),
    "icml25.serving.create_app": Example(sv.create_app, lambda: {"system": sv.ServingSystem("epd")}),
    "icml25.serving.running_server": Example(sv.running_server, lambda: {"system": sv.ServingSystem("epd"),
                                                                         "port": 8123, "host": "127.0.0.1"},
                                             positive=("port",)),
}

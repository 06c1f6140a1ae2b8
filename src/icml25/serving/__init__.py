"""LLM/LMM serving: EPD disaggregation (Singh et al., "Efficiently Serving Large Multimodal Models Using EPD
Disaggregation", ICML 2025, arXiv 2501.05460): a real multi-process encode / prefill / decode serving system on CPU
with a tiny seeded LMM, its aggregated (vLLM-style) and PD (DistServe-style) baselines, vLLM-style serving metrics,
an OpenAI-compatible HTTP front end, and a discrete-event simulator with a resource allocator and role switching.

Everything needs the ``torch`` extra (the HTTP server: ``serving``); names are imported lazily.  Worker processes
are started with ``spawn``, so a script that starts a system needs the ``if __name__ == "__main__":`` guard.

>>> from icml25.serving import LatencyModel, SimConfig, make_trace, simulate, summarize
>>> trace = make_trace(20, rate=2.0, images=(1, 4), image_size=8, seed=0)
>>> out = summarize(simulate(SimConfig("epd", 2, 1, 1), trace, LatencyModel.gpu_preset()), slo_ttft=2.0, slo_tpot=0.1)
>>> out["completed"]
20
"""

from importlib import import_module

_EXPORTS = {
    "EncoderConfig": "icml25.serving.model",
    "LMConfig": "icml25.serving.model",
    "TinyLMM": "icml25.serving.model",
    "Request": "icml25.serving.request",
    "SamplingParams": "icml25.serving.request",
    "RequestMetrics": "icml25.serving.request",
    "Limits": "icml25.serving.engine",
    "ServingSystem": "icml25.serving.engine",
    "make_trace": "icml25.serving.workload",
    "summarize": "icml25.serving.metrics",
    "LatencyModel": "icml25.serving.simulator",
    "SimConfig": "icml25.serving.simulator",
    "SimRequest": "icml25.serving.simulator",
    "RoleSwitcher": "icml25.serving.simulator",
    "simulate": "icml25.serving.simulator",
    "Allocation": "icml25.serving.allocator",
    "allocate": "icml25.serving.allocator",
    "create_app": "icml25.serving.server",
    "running_server": "icml25.serving.server",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'icml25.serving' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

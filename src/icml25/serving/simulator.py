"""A discrete-event simulator of the three serving modes, with the real system's schedulers (DistServe's
"simdistserve" extended with an encode stage, as in Singh et al., arXiv 2501.05460, Section 4.1).

Latency model (seconds): ``encode(n) = e0 + e1 n`` images; ``prefill(t) = p0 + p1 t + p2 t^2`` tokens;
``decode(b, c) = d0 + d1 b + d2 c`` for a batch of b requests holding c context tokens; ``transfer(x) = x / bandwidth``.
:meth:`LatencyModel.fit` fits it by non-negative least squares to a :class:`~icml25.serving.engine.ServingSystem`
profile, so the simulator can be validated against the real system; :meth:`LatencyModel.gpu_preset` holds
illustrative LLaVA-class numbers for the at-scale experiments (simulated, not measured).

Schedulers mirrored from :mod:`icml25.serving.engine` / :mod:`icml25.serving.workers`: E workers batch images up to
``max_images_per_batch`` (aggregated and EP workers encode a request in chunks of that size; IRP spreads a
request's images over the least-loaded E workers); admission is FIFO and
reserves a request's KV tokens (prompt + MM + output) on a decode worker; P workers prefill one request at a time
(PD: encode then prefill on the same worker); D workers run continuous batching; aggregated workers give waiting
prefills priority over decode steps.  Optional online role switching (:class:`RoleSwitcher`) moves workers between
the E and P pools.
"""

from __future__ import annotations

import heapq
import itertools
import math
import numbers
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import nnls

from icml25.serving.request import Request, RequestMetrics

MODES = ("aggregated", "pd", "epd")
PROFILE_KEYS = {"encode": ("n", "seconds"), "prefill": ("n", "seconds"), "decode": ("batch", "ctx", "seconds"),
                "transfer": ("bytes", "seconds")}


def _count(x: object, name: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(x).__name__}")
    if x < 0:
        raise ValueError(f"{name} must be >= 0, got {x}")
    return int(x)


@dataclass(frozen=True)
class LatencyModel:
    """Per-stage latency coefficients (seconds) and transfer sizes (bytes); see the module docstring."""

    e0: float = 0.0
    e1: float = 0.0
    p0: float = 0.0
    p1: float = 0.0
    p2: float = 0.0
    d0: float = 0.0
    d1: float = 0.0
    d2: float = 0.0
    bandwidth: float = math.inf
    mm_bytes_per_image: float = 0.0
    kv_bytes_per_token: float = 0.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or math.isnan(value):
                raise ValueError(f"{name} must be a real >= 0, got {value!r}")
        if self.bandwidth == 0:
            raise ValueError("bandwidth must be > 0")

    def encode(self, n: int) -> float:
        """Seconds to encode a batch of ``n`` images (0 for none)."""
        n = _count(n, "n")
        return self.e0 + self.e1 * n if n else 0.0

    def prefill(self, tokens: int) -> float:
        """Seconds to prefill ``tokens`` tokens (text + MM)."""
        tokens = _count(tokens, "tokens")
        return self.p0 + self.p1 * tokens + self.p2 * tokens * tokens

    def decode(self, batch: int, ctx: int) -> float:
        """Seconds of one decode step for ``batch`` requests holding ``ctx`` context tokens."""
        batch, ctx = _count(batch, "batch"), _count(ctx, "ctx")
        return self.d0 + self.d1 * batch + self.d2 * ctx

    def transfer(self, nbytes: float) -> float:
        """Seconds to move ``nbytes`` bytes between workers."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float)) or not nbytes >= 0:
            raise ValueError(f"nbytes must be a real >= 0, got {nbytes!r}")
        return nbytes / self.bandwidth

    @classmethod
    def fit(cls, profile: Sequence[dict], mm_bytes_per_image: float = 0.0,
            kv_bytes_per_token: float = 0.0) -> LatencyModel:
        """Non-negative least squares on a profile (``ServingSystem.profile``: dicts with ``kind`` in encode,
        prefill, decode, transfer and their sizes and ``seconds``); a stage absent from the profile gets zeros."""
        if not isinstance(profile, (list, tuple)) or not all(isinstance(p, dict) for p in profile):
            raise TypeError(f"profile must be a list of dicts (ServingSystem.profile), got {type(profile).__name__}")
        for name, value in (("mm_bytes_per_image", mm_bytes_per_image), ("kv_bytes_per_token", kv_bytes_per_token)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"{name} must be a real >= 0, got {value!r}")
        rows = {k: [p for p in profile if p.get("kind") == k] for k in PROFILE_KEYS}
        if not any(rows.values()):
            raise ValueError("profile has no encode, prefill, decode or transfer record")
        for kind, recs in rows.items():
            for rec in recs:
                if not all(isinstance(rec.get(k), numbers.Real) and math.isfinite(rec[k]) and rec[k] >= 0
                           for k in PROFILE_KEYS[kind]):
                    raise ValueError(f"profile {kind} records need finite {PROFILE_KEYS[kind]} >= 0, got {rec}")

        def solve(design: list[list[float]], seconds: list[float], n: int) -> np.ndarray:
            if len(seconds) < n:
                return np.zeros(n)
            return nnls(np.asarray(design, float), np.asarray(seconds, float))[0]

        e = solve([[1, p["n"]] for p in rows["encode"]], [p["seconds"] for p in rows["encode"]], 2)
        p = solve([[1, r["n"], r["n"] ** 2] for r in rows["prefill"]], [r["seconds"] for r in rows["prefill"]], 3)
        d = solve([[1, r["batch"], r["ctx"]] for r in rows["decode"]], [r["seconds"] for r in rows["decode"]], 3)
        nbytes = sum(r["bytes"] for r in rows["transfer"])
        secs = sum(r["seconds"] for r in rows["transfer"])
        bandwidth = nbytes / secs if secs > 0 and nbytes > 0 else math.inf
        return cls(*map(float, e), *map(float, p), *map(float, d), bandwidth, mm_bytes_per_image, kv_bytes_per_token)

    @classmethod
    def gpu_preset(cls) -> LatencyModel:
        """Illustrative numbers for a 7B LLaVA-class LMM on one A100-class GPU (fp16): a ViT-L image with
        multi-crop slicing ~25 ms (576 MM tokens per crop), prefill ~16k tokens/s, a decode step ~12 ms plus
        per-request and per-context-token costs, 50 GB/s transfers.  Not measured here."""
        return cls(e0=0.01, e1=0.025, p0=0.01, p1=6e-5, p2=1e-9, d0=0.012, d1=2e-4, d2=5e-8, bandwidth=50e9,
                   mm_bytes_per_image=576 * 4096 * 2, kv_bytes_per_token=2 * 32 * 4096 * 2)


@dataclass(frozen=True)
class SimConfig:
    """A deployment: mode, workers per stage, IRP, scheduler limits and MM tokens per image."""

    mode: str = "epd"
    n_encode: int = 1
    n_prefill: int = 1
    n_decode: int = 1
    irp: bool = True
    tokens_per_image: int = 64
    max_images_per_batch: int = 8
    max_decode_batch: int = 32
    kv_capacity_tokens: int = 16384

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not isinstance(self.irp, bool):
            raise TypeError(f"irp must be a bool, got {type(self.irp).__name__}")
        for name in ("n_encode", "n_prefill", "n_decode", "tokens_per_image", "max_images_per_batch",
                     "max_decode_batch", "kv_capacity_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")

    @property
    def devices(self) -> int:
        return {"aggregated": self.n_decode, "pd": self.n_prefill + self.n_decode,
                "epd": self.n_encode + self.n_prefill + self.n_decode}[self.mode]


@dataclass(frozen=True)
class SimRequest:
    """The sizes of one request: arrival (s), images, text prompt tokens, output tokens."""

    arrival: float
    n_images: int
    prompt_len: int
    output_len: int

    def __post_init__(self) -> None:
        if isinstance(self.arrival, bool) or not isinstance(self.arrival, (int, float)) or not self.arrival >= 0:
            raise ValueError(f"arrival must be a real >= 0, got {self.arrival!r}")
        for name in ("n_images", "prompt_len", "output_len"):
            _count(getattr(self, name), name)
        if self.output_len < 1:
            raise ValueError(f"output_len must be >= 1, got {self.output_len}")
        if self.n_images + self.prompt_len < 1:
            raise ValueError("a request needs n_images >= 1 or prompt_len >= 1")

    @classmethod
    def from_request(cls, req: Request) -> SimRequest:
        """The sizes of a :class:`~icml25.serving.request.Request`."""
        if not isinstance(req, Request):
            raise TypeError(f"req must be a Request, got {type(req).__name__}")
        return cls(req.arrival, req.n_images, len(req.prompt), req.sampling.max_new_tokens)


@dataclass
class RoleSwitcher:
    """Online role switching between the E and P pools (Singh et al., Section 4.2).

    Every ``window`` seconds the estimated waiting time of each pool (queued work / workers) is compared; when one
    exceeds the other by more than ``threshold`` seconds, one worker of the other pool drains its current job, pays
    ``switch_cost`` seconds (weights already in shared memory) and joins the loaded pool.  Each pool keeps >= 1.
    """

    threshold: float = 0.5
    window: float = 1.0
    switch_cost: float = 0.05
    switches: list[tuple[float, str, str]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        for name in ("threshold", "window", "switch_cost"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"{name} must be a real >= 0, got {value!r}")
        if not self.window > 0:
            raise ValueError(f"window must be > 0, got {self.window}")


class _Sim:
    def __init__(self, cfg: SimConfig, reqs: list[SimRequest], lat: LatencyModel, switcher: RoleSwitcher | None):
        self.cfg, self.reqs, self.lat, self.switcher = cfg, reqs, lat, switcher
        self.now, self.events, self.seq = 0.0, [], itertools.count()
        self.m = [RequestMetrics(f"sim-{i}", r.arrival, r.n_images, r.prompt_len + r.n_images * cfg.tokens_per_image)
                  for i, r in enumerate(reqs)]
        self.left_images = [r.n_images for r in reqs]
        self.admit_q: deque[int] = deque()
        n_e = cfg.n_encode if cfg.mode == "epd" else 0
        n_p = cfg.n_prefill if cfg.mode != "aggregated" else 0
        self.e_workers = [{"q": deque(), "busy": False, "role": "E"} for _ in range(n_e)]
        self.p_workers = [{"q": deque(), "busy": False, "role": "P"} for _ in range(n_p)]
        self.d_workers = [{"waiting": deque(), "active": {}, "busy": False, "reserved": 0, "prefill": deque()}
                          for _ in range(cfg.n_decode)]

    def at(self, t: float, fn, *args) -> None:
        heapq.heappush(self.events, (t, next(self.seq), fn, args))

    def need(self, i: int) -> int:
        return self.m[i].prompt_len + self.reqs[i].output_len

    def run(self) -> list[RequestMetrics]:
        for i, r in enumerate(self.reqs):
            if self.need(i) > self.cfg.kv_capacity_tokens:
                self.m[i].error = "rejected: longer than the KV capacity"
                self.m[i].finish = r.arrival
                continue
            self.at(r.arrival, self.arrive, i)
        if self.switcher is not None and self.cfg.mode == "epd":
            self.at(self.switcher.window, self.check_switch)
        while self.events:
            self.now, _, fn, args = heapq.heappop(self.events)
            fn(*args)
        for m in self.m:
            if m.finish is None:
                m.error = "not finished"
        return self.m

    # ----- encode stage
    def arrive(self, i: int) -> None:
        r = self.reqs[i]
        if self.cfg.mode != "epd" or r.n_images == 0:
            self.admit_q.append(i)
            self.admit()
            return
        self.m[i].encode_start = self.now
        pool = self.pool("E")
        load = lambda w: len(w["q"]) + w["busy"]  # noqa: E731
        if self.cfg.irp:
            for _ in range(r.n_images):
                min(pool, key=load)["q"].append(i)
        else:
            min(pool, key=load)["q"].extend([i] * r.n_images)
        for w in pool:
            self.start_encode(w)

    def start_encode(self, w: dict) -> None:
        if w["busy"] or not w["q"] or w["role"] != "E":
            return
        batch = [w["q"].popleft() for _ in range(min(self.cfg.max_images_per_batch, len(w["q"])))]
        w["busy"] = True
        self.at(self.now + self.lat.encode(len(batch)), self.end_encode, w, batch)

    def end_encode(self, w: dict, batch: list[int]) -> None:
        w["busy"] = False
        for i in batch:
            self.left_images[i] -= 1
            if self.left_images[i] == 0:
                self.m[i].encode_end = self.now
                mm = self.reqs[i].n_images * self.lat.mm_bytes_per_image
                self.at(self.now + self.lat.transfer(mm), self.enqueue_admit, i)
        self.after_job(w)

    def enqueue_admit(self, i: int) -> None:
        self.admit_q.append(i)
        self.admit()

    def after_job(self, w: dict) -> None:
        if w.get("switch_to"):
            self.at(self.now + self.switcher.switch_cost, self.join_role, w, w["switch_to"])
            return
        (self.start_encode if w["role"] == "E" else self.start_prefill)(w)

    def join_role(self, w: dict, role: str) -> None:
        w["role"] = role
        del w["switch_to"]
        if role == "E":  # take a share of the queued images of the other E workers
            pool = [x for x in self.pool("E") if x is not w]
            for x in pool:
                while len(x["q"]) > len(w["q"]) + 1:
                    w["q"].append(x["q"].pop())
            self.start_encode(w)
        else:
            self.start_prefill(w)
            self.admit()

    # ----- admission, prefill
    def admit(self) -> None:
        while self.admit_q:
            i = self.admit_q[0]
            need = self.need(i)
            fits = [d for d in self.d_workers if d["reserved"] + need <= self.cfg.kv_capacity_tokens]
            if not fits:
                return
            self.admit_q.popleft()
            d = min(fits, key=lambda d: d["reserved"])
            d["reserved"] += need
            self.m[i].prefill_start = self.now
            if self.cfg.mode == "aggregated":
                d["prefill"].append(i)
                self.step_decode(d)
                continue
            pool = [w for w in self.pool("P")]
            w = min(pool, key=lambda w: len(w["q"]) + w["busy"])
            w["q"].append((i, d))
            self.start_prefill(w)

    def pool(self, role: str) -> list[dict]:
        """The workers serving ``role`` now (a worker being switched serves neither)."""
        return [w for w in self.e_workers + self.p_workers if w["role"] == role and not w.get("switch_to")]

    def start_prefill(self, w: dict) -> None:
        if w["busy"] or not w["q"] or w["role"] != "P":
            return
        i, d = w["q"].popleft()
        r = self.reqs[i]
        t = self.lat.prefill(self.m[i].prompt_len)
        if self.cfg.mode == "pd":
            t += self.encode_chunks(r.n_images)
        w["busy"] = True
        self.at(self.now + t, self.end_prefill, w, i, d)

    def end_prefill(self, w: dict, i: int, d: dict) -> None:
        w["busy"] = False
        self.first_token(i)
        if self.reqs[i].output_len > 1:
            kv = self.m[i].prompt_len * self.lat.kv_bytes_per_token
            self.at(self.now + self.lat.transfer(kv), self.join_decode, d, i)
        else:
            self.finish(d, i)
        self.after_job(w)

    def encode_chunks(self, n: int) -> float:
        """Encoding inside an aggregated / EP worker: batches of at most ``max_images_per_batch`` images."""
        b = self.cfg.max_images_per_batch
        return sum(self.lat.encode(min(b, n - k)) for k in range(0, n, b))

    def first_token(self, i: int) -> None:
        self.m[i].tokens.append(0)
        self.m[i].token_times.append(self.now)

    # ----- decode (and aggregated)
    def join_decode(self, d: dict, i: int) -> None:
        d["waiting"].append(i)
        self.step_decode(d)

    def step_decode(self, d: dict) -> None:
        if d["busy"]:
            return
        if d["prefill"]:  # aggregated: prefill priority
            i = d["prefill"].popleft()
            t = self.encode_chunks(self.reqs[i].n_images) + self.lat.prefill(self.m[i].prompt_len)
            d["busy"] = True
            self.at(self.now + t, self.end_agg_prefill, d, i)
            return
        while d["waiting"] and len(d["active"]) < self.cfg.max_decode_batch:
            i = d["waiting"].popleft()
            d["active"][i] = self.m[i].prompt_len + 1
        if not d["active"]:
            return
        d["busy"] = True
        t = self.lat.decode(len(d["active"]), sum(d["active"].values()))
        self.at(self.now + t, self.end_decode, d)

    def end_agg_prefill(self, d: dict, i: int) -> None:
        d["busy"] = False
        self.first_token(i)
        if self.reqs[i].output_len > 1:
            d["waiting"].append(i)
        else:
            self.finish(d, i)
        self.step_decode(d)

    def end_decode(self, d: dict) -> None:
        d["busy"] = False
        for i in list(d["active"]):
            self.m[i].tokens.append(0)
            self.m[i].token_times.append(self.now)
            d["active"][i] += 1
            if len(self.m[i].tokens) >= self.reqs[i].output_len:
                del d["active"][i]
                self.finish(d, i)
        self.step_decode(d)

    def finish(self, d: dict, i: int) -> None:
        self.m[i].finish = self.now
        d["reserved"] -= self.need(i)
        self.admit()

    # ----- role switching (E <-> P)
    def check_switch(self) -> None:
        sw = self.switcher
        pools = {"E": self.pool("E"), "P": self.pool("P")}
        e_work = sum(len(w["q"]) for w in self.e_workers) * self.lat.encode(1)
        p_work = sum(self.lat.prefill(self.m[i].prompt_len) for w in self.pool("P") for i, _ in w["q"])
        wait = {"E": e_work / max(len(pools["E"]), 1), "P": p_work / max(len(pools["P"]), 1)}
        hot, cold = ("E", "P") if wait["E"] > wait["P"] else ("P", "E")
        donors = pools[cold]
        if wait[hot] - wait[cold] > sw.threshold and len(donors) > 1:
            w = min(donors, key=lambda w: len(w["q"]) + w["busy"])
            sw.switches.append((self.now, cold, hot))
            for job in list(w["q"]):  # hand its queue to the rest of its pool
                w["q"].remove(job)
                min((x for x in donors if x is not w), key=lambda x: len(x["q"]))["q"].append(job)
            w["switch_to"] = hot
            if not w["busy"]:
                self.after_job(w)
        if any(m.finish is None for m in self.m if m.error is None):
            self.at(self.now + sw.window, self.check_switch)


def simulate(config: SimConfig, trace: Sequence[Request | SimRequest], latency: LatencyModel,
             switcher: RoleSwitcher | None = None) -> list[RequestMetrics]:
    """Simulate ``trace`` on the deployment ``config`` with ``latency``; per-request metrics in trace order
    (token ids are placeholders; times are simulated seconds).  ``switcher`` enables E<->P role switching (EPD)."""
    if not isinstance(config, SimConfig):
        raise TypeError(f"config must be a SimConfig, got {type(config).__name__}")
    if not isinstance(latency, LatencyModel):
        raise TypeError(f"latency must be a LatencyModel, got {type(latency).__name__}")
    if switcher is not None and not isinstance(switcher, RoleSwitcher):
        raise TypeError(f"switcher must be a RoleSwitcher or None, got {type(switcher).__name__}")
    if not isinstance(trace, (list, tuple)):
        raise TypeError(f"trace must be a list of Request or SimRequest, got {type(trace).__name__}")
    reqs = [SimRequest.from_request(r) if isinstance(r, Request) else r for r in trace]
    if not reqs or not all(isinstance(r, SimRequest) for r in reqs):
        raise ValueError("trace must be a non-empty sequence of Request or SimRequest")
    if switcher is not None:
        switcher.switches.clear()
    if config.mode == "epd" and any(r.n_images for r in reqs) and config.n_encode < 1:
        raise ValueError("an EPD config needs n_encode >= 1")
    return _Sim(replace(config), reqs, latency, switcher).run()

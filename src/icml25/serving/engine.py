"""The multi-process serving system: EPD (encode, prefill and decode on separate workers), PD (DistServe-style:
encode+prefill together, decode apart) and aggregated (vLLM-style: one worker does all three).

Singh et al., "Efficiently Serving Large Multimodal Models Using EPD Disaggregation" (ICML 2025, arXiv 2501.05460),
Section 3.  The system process routes requests: images go to the E workers (split across them within a request:
intra-request parallelism, IRP), MM tokens land in an MM-token cache keyed by request and by image content hash (a
repeated image is not encoded again), a request whose MM tokens are all present is admitted to a P worker once a D
worker has KV capacity reserved for it (otherwise it queues; a request that can never fit is rejected), the P
worker emits token 1 and hands the KV cache to that D worker through shared memory, and D runs continuous batching.

Worker processes never outlive the system: :meth:`ServingSystem.shutdown` (also on ``with`` exit, at garbage
collection and at interpreter exit) asks each worker to stop, joins it, then terminates and kills it by pid; a
worker that dies unexpectedly turns every in-flight request into an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import secrets
import subprocess
import sys
import threading
import time
import uuid
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Listener, wait
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml25.serving import transfer
from icml25.serving.model import EncoderConfig, LMConfig, TinyLMM
from icml25.serving.request import Request, RequestMetrics
from icml25.serving.workers import WorkerSpec

MODES = ("aggregated", "pd", "epd")
JOIN_S = 5.0


@dataclass(frozen=True)
class Limits:
    """Scheduler limits.

    max_images_per_request : more images -> the request is rejected with an error result.
    max_images_per_batch : images per encode batch (E workers).
    max_prefill_tokens : token budget of one aggregated prefill iteration.
    max_decode_batch : requests per decode step.
    kv_capacity_tokens : KV cache capacity of each decode (or aggregated) worker, in tokens; a request needing more
        than this is rejected, one that does not fit now queues.
    mm_cache_images : MM-token cache entries (images) kept for reuse by content hash (0 disables reuse).
    """

    max_images_per_request: int = 8
    max_images_per_batch: int = 8
    max_prefill_tokens: int = 2048
    max_decode_batch: int = 32
    kv_capacity_tokens: int = 16384
    mm_cache_images: int = 64

    def __post_init__(self) -> None:
        for name in ("max_images_per_request", "max_images_per_batch", "max_prefill_tokens", "max_decode_batch",
                     "kv_capacity_tokens", "mm_cache_images"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value < (0 if name == "mm_cache_images" else 1):
                raise ValueError(f"{name} must be >= {0 if name == 'mm_cache_images' else 1}, got {value}")


@dataclass
class _State:
    req: Request
    metrics: RequestMetrics
    on_event: Callable[[str, Any], None] | None
    hashes: list[str] = field(default_factory=list)
    handles: dict[int, transfer.Handle] = field(default_factory=dict)
    need: int = 0
    worker: str | None = None
    done: threading.Event = field(default_factory=threading.Event)


def image_hash(image: np.ndarray) -> str:
    """Content hash of one image (SHA-256 of its bytes, shape and dtype): the MM cache's second key."""
    arr = np.ascontiguousarray(image)
    return hashlib.sha256(arr.tobytes() + str((arr.shape, arr.dtype.str)).encode()).hexdigest()


class ServingSystem:
    """A serving system of worker processes on this machine.

    Parameters
    ----------
    mode : ``"epd"`` (E, P, D workers), ``"pd"`` (EP workers that encode and prefill, D workers) or
        ``"aggregated"`` (``n_decode`` workers that each do everything).
    n_encode, n_prefill, n_decode : workers per stage (``n_encode`` only for EPD, ``n_prefill`` not for aggregated).
    irp : intra-request parallelism: split one request's images across all E workers (EPD only).
    enc_cfg, llm_cfg, seed : the :class:`~icml25.serving.model.TinyLMM` every worker builds (same weights).
    limits : :class:`Limits`.
    threads : torch threads inside each worker process (set there, not here).
    """

    def __init__(self, mode: str = "epd", n_encode: int = 1, n_prefill: int = 1, n_decode: int = 1, irp: bool = True,
                 enc_cfg: EncoderConfig | None = None, llm_cfg: LMConfig | None = None, seed: int = 0,
                 limits: Limits | None = None, threads: int = 1) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        for name, value in (("n_encode", n_encode), ("n_prefill", n_prefill), ("n_decode", n_decode),
                            ("threads", threads), ("seed", seed)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value < (0 if name == "seed" else 1):
                raise ValueError(f"{name} must be >= {0 if name == 'seed' else 1}, got {value}")
        if not isinstance(irp, bool):
            raise TypeError(f"irp must be a bool, got {type(irp).__name__}")
        self.enc_cfg = EncoderConfig() if enc_cfg is None else enc_cfg
        self.llm_cfg = LMConfig() if llm_cfg is None else llm_cfg
        if not isinstance(self.enc_cfg, EncoderConfig) or not isinstance(self.llm_cfg, LMConfig):
            raise TypeError("enc_cfg and llm_cfg must be EncoderConfig and LMConfig")
        self.limits = Limits() if limits is None else limits
        if not isinstance(self.limits, Limits):
            raise TypeError(f"limits must be a Limits, got {type(self.limits).__name__}")
        self.mode, self.irp, self.seed, self.threads = mode, irp, seed, threads
        self.n_encode = n_encode if mode == "epd" else 0
        self.n_prefill = n_prefill if mode != "aggregated" else 0
        self.n_decode = n_decode
        self.prefix = f"icml25-epd-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.profile: list[dict] = []
        self.param_bytes: dict[str, int] = {}
        self.error: str | None = None
        self._lock = threading.RLock()
        self._states: dict[str, _State] = {}
        self._procs: dict[str, subprocess.Popen] = {}
        self._conns: dict[str, Any] = {}
        self._listener: Listener | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._started = False
        self._closed = False
        self._admit_q: deque[str] = deque()
        self._reserved: dict[str, int] = {}
        self._load: dict[str, int] = {}
        self._mm_cache: OrderedDict[str, transfer.Handle] = OrderedDict()
        self._mm_refs: dict[str, int] = {}
        self._encoding: dict[str, list[tuple[str, int]]] = {}
        self._stats: dict[str, dict] = {}
        self._stats_event = threading.Condition(self._lock)
        self._rr = itertools.count()
        self._finalizer = None

    # ----------------------------------------------------------------- lifecycle
    def _names(self) -> dict[str, str]:
        names = {f"E{i}": "encode" for i in range(self.n_encode)}
        p_role = "encode_prefill" if self.mode == "pd" else "prefill"
        names.update({f"P{i}": p_role for i in range(self.n_prefill)})
        d_role = "aggregated" if self.mode == "aggregated" else "decode"
        names.update({f"{'A' if self.mode == 'aggregated' else 'D'}{i}": d_role for i in range(self.n_decode)})
        return names

    @property
    def pids(self) -> dict[str, int]:
        """Worker name -> process id."""
        return {name: p.pid for name, p in self._procs.items() if p.pid is not None}

    def start(self, timeout: float = 120.0) -> ServingSystem:
        """Start the worker processes and wait until each has built its model."""
        if self._started:
            raise RuntimeError("the serving system was already started")
        self._started = True
        model = TinyLMM(self.enc_cfg, self.llm_cfg, seed=self.seed)
        self.param_bytes = {"encoder": model.encoder_bytes(), "lm": model.lm_bytes()}
        state_path = os.path.join(transfer.SHM_DIR, f"{self.prefix}-weights")
        torch.save(model.state_dict(), state_path)  # every worker loads the same weights from shared memory
        key = secrets.token_bytes(16)
        self._listener = Listener(family="AF_UNIX", authkey=key)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                          env.get("PYTHONPATH")]))
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(self.threads)  # the worker's own thread pool
        names = self._names()
        self._finalizer = weakref.finalize(self, _stop_processes, self._procs, self._conns, self._listener,
                                           self.prefix)
        for name in names:
            proc = subprocess.Popen([sys.executable, "-m", "icml25.serving.workers", self._listener.address, name],
                                    stdin=subprocess.PIPE, env=env)
            proc.stdin.write((key.hex() + "\n").encode())
            proc.stdin.close()
            self._procs[name] = proc
            self._reserved[name], self._load[name] = 0, 0
        accepter = threading.Thread(target=self._accept, args=(len(names),), daemon=True)
        accepter.start()
        accepter.join(timeout)
        lim = self.limits
        try:
            if len(self._conns) < len(names):
                raise RuntimeError(f"workers {sorted(set(names) - set(self._conns))} did not connect")
            for name, role in names.items():
                self._conns[name].send(WorkerSpec(role, name, model.config(), state_path, self.prefix,
                                                  lim.max_images_per_batch, lim.max_prefill_tokens,
                                                  lim.max_decode_batch))
            self._wait_ready(timeout)
        except BaseException:
            self.shutdown()
            raise
        finally:
            transfer.release(transfer.Handle(state_path, (), "", 0))
        self._thread = threading.Thread(target=self._dispatch_loop, name="icml25-epd-dispatch", daemon=True)
        self._thread.start()
        return self

    def _accept(self, n: int) -> None:
        for _ in range(n):
            try:
                conn = self._listener.accept()
                hello = conn.recv()
            except (OSError, EOFError):
                return
            self._conns[hello[1]] = conn

    def _wait_ready(self, timeout: float) -> None:
        ready: set[str] = set()
        by_conn = {c: n for n, c in self._conns.items()}
        deadline = time.monotonic() + timeout
        while len(ready) < len(self._procs):
            dead = [n for n, p in self._procs.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"workers {dead or sorted(set(self._procs) - ready)} failed to start")
            for conn in wait([c for c, n in by_conn.items() if n not in ready], timeout=0.5):
                try:
                    msg = conn.recv()
                except (OSError, EOFError):
                    continue
                if msg[0] == "ready":
                    ready.add(msg[1])
                    self._stats[msg[1]] = msg[2]
                elif msg[0] == "crashed":
                    raise RuntimeError(f"worker {msg[1]} failed to start:\n{msg[2]}")

    def __enter__(self) -> ServingSystem:
        return self.start() if not self._started else self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def shutdown(self) -> None:
        """Stop every worker: ask, join (5 s), then terminate and kill by pid; fail what is still in flight."""
        if self._closed:
            return
        self._closed = True
        self._stopping.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=JOIN_S)
        self._fail_all(self.error or "the serving system was shut down")
        if self._finalizer is not None:
            self._finalizer()
        else:
            transfer.cleanup(self.prefix)

    def alive_pids(self) -> list[int]:
        """Worker pids that are still running (empty after :meth:`shutdown`)."""
        return [p.pid for p in self._procs.values() if p.poll() is None]

    # ----------------------------------------------------------------- requests
    def submit(self, req: Request, on_event: Callable[[str, Any], None] | None = None) -> RequestMetrics:
        """Submit ``req`` now; returns its (live) metrics.  ``on_event(kind, value)`` is called from the system's
        thread with ``("token", id)``, then ``("done", None)`` or ``("error", message)``.  A request that can never be
        served (too many images, longer than the KV capacity or ``max_len``) is rejected: its metrics carry
        ``error`` and ``on_event("error", ...)`` fires; the id of a request still in flight raises ``ValueError``."""
        if not isinstance(req, Request):
            raise TypeError(f"req must be a Request, got {type(req).__name__}")
        if on_event is not None and not callable(on_event):
            raise TypeError("on_event must be callable or None")
        if not self._started or self._closed:
            raise RuntimeError("the serving system is not running (call start())")
        if self.error is not None:
            raise RuntimeError(f"the serving system has failed: {self.error}")
        now = time.perf_counter()
        n_mm = req.n_images * self.enc_cfg.tokens_per_image
        m = RequestMetrics(req.id, now, req.n_images, len(req.prompt) + n_mm)
        with self._lock:
            if req.id in self._states and not self._states[req.id].done.is_set():
                raise ValueError(f"duplicate request id {req.id!r} (a request with this id is in flight)")
            state = _State(req, m, on_event)
            self._states[req.id] = state
            need = m.prompt_len + req.sampling.max_new_tokens
            if req.n_images > self.limits.max_images_per_request:
                self._finish(state, f"rejected: {req.n_images} images > max_images_per_request="
                                    f"{self.limits.max_images_per_request}")
            elif need > min(self.limits.kv_capacity_tokens, self.llm_cfg.max_len):
                self._finish(state, f"rejected: needs {need} KV tokens > capacity "
                                    f"{min(self.limits.kv_capacity_tokens, self.llm_cfg.max_len)}")
            elif req.images is not None and req.images.shape[2:] != (self.enc_cfg.image_size,) * 2:
                self._finish(state, f"rejected: images must be {self.enc_cfg.image_size} px square, "
                                    f"got {req.images.shape[2:]}")
            elif self.mode == "epd" and req.n_images:
                self._route_images(state)
            else:
                self._admit_q.append(req.id)
                self._admit()
        return m

    def run_trace(self, trace: Sequence[Request], timeout: float = 600.0) -> list[RequestMetrics]:
        """Submit each request at its ``arrival`` offset, wait for all; metrics in trace order.  A request still
        unfinished after ``timeout`` seconds gets an error (the system keeps running)."""
        trace = list(trace)
        for r in trace:
            if not isinstance(r, Request):
                raise TypeError(f"trace must hold Request objects, got {type(r).__name__}")
        order = sorted(range(len(trace)), key=lambda i: trace[i].arrival)
        t0 = time.perf_counter()
        out: dict[int, RequestMetrics] = {}
        for i in order:
            delay = t0 + trace[i].arrival - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            if self.error is not None:
                out[i] = RequestMetrics(trace[i].id, time.perf_counter(), trace[i].n_images, len(trace[i].prompt),
                                        error=f"not submitted: {self.error}")
                continue
            out[i] = self.submit(trace[i])
        deadline = time.perf_counter() + timeout
        for i in order:
            st = self._states.get(trace[i].id)
            if st is not None and not st.done.wait(max(0.0, deadline - time.perf_counter())):
                with self._lock:
                    self._finish(st, f"timed out after {timeout} s")
        return [out[i] for i in range(len(trace))]

    def worker_stats(self, timeout: float = 10.0) -> dict[str, dict]:
        """Memory accounting of each live worker: parameter bytes, activation and cache peaks, RSS."""
        with self._lock:
            self._stats = {n: {} for n in self._procs}
            for name in self._procs:
                self._send(name, ("stats",))
            self._stats_event.wait_for(lambda: all(self._stats.values()) or self.error is not None, timeout)
            return dict(self._stats)

    # ----------------------------------------------------------------- routing (called under the lock)
    def _emit(self, st: _State, kind: str, value: Any) -> None:
        if st.on_event is not None:
            st.on_event(kind, value)

    def _finish(self, st: _State, error: str | None = None) -> None:
        if st.done.is_set():
            return
        m = st.metrics
        m.finish, m.error = time.perf_counter(), error
        if st.worker is not None:
            self._reserved[st.worker] -= self._need(st)
            st.worker = None
        for h in st.hashes:
            if h in self._mm_refs:
                self._mm_refs[h] -= 1
        st.done.set()
        self._emit(st, "done" if error is None else "error", error)

    def _need(self, st: _State) -> int:
        return st.metrics.prompt_len + st.req.sampling.max_new_tokens

    def _route_images(self, st: _State) -> None:
        """EPD: look each image up in the MM cache by hash; send the rest to the E workers (IRP: spread)."""
        m, req = st.metrics, st.req
        m.encode_start = time.perf_counter()
        todo: list[tuple[int, np.ndarray]] = []
        for idx, image in enumerate(req.images):
            h = image_hash(image)
            st.hashes.append(h)
            self._mm_refs[h] = self._mm_refs.get(h, 0) + 1
            if h in self._mm_cache:
                self._mm_cache.move_to_end(h)
                st.handles[idx] = self._mm_cache[h]
                m.cached_images += 1
            elif h in self._encoding:
                self._encoding[h].append((req.id, idx))
                m.cached_images += 1
            else:
                self._encoding[h] = [(req.id, idx)]
                todo.append((idx, image))
        st.need = req.n_images - len(st.handles)
        if not todo:
            if not st.need:
                m.encode_end = time.perf_counter()
                self._admit_q.append(req.id)
                self._admit()
            return
        workers = [f"E{i}" for i in range(self.n_encode)]
        if self.irp:  # least-loaded worker for each image in turn
            groups: dict[str, list] = {w: [] for w in workers}
            for idx, image in todo:
                w = min(workers, key=lambda n: (self._load[n] + len(groups[n]), n))
                groups[w].append((req.id, idx, np.asarray(image)))
        else:
            w = min(workers, key=lambda n: (self._load[n], n))
            groups = {w: [(req.id, idx, np.asarray(image)) for idx, image in todo]}
        for w, items in groups.items():
            if items:
                self._load[w] += len(items)
                self._send(w, ("encode", items))

    def _admit(self) -> None:
        """FIFO admission: reserve KV capacity on a decode worker, then send to prefill (or the aggregated worker)."""
        while self._admit_q:
            st = self._states[self._admit_q[0]]
            if st.done.is_set():
                self._admit_q.popleft()
                continue
            need = self._need(st)
            d_names = [n for n in self._procs if n[0] in "AD"]
            fits = [n for n in d_names if self._reserved[n] + need <= self.limits.kv_capacity_tokens]
            if not fits:
                return
            self._admit_q.popleft()
            d = min(fits, key=lambda n: (self._reserved[n], n))
            self._reserved[d] += need
            st.worker = d
            req, m = st.req, st.metrics
            m.prefill_start = time.perf_counter()
            stop = req.sampling.stop_token
            if self.mode == "aggregated":
                self._send(d, ("request", req.id, req.prompt, req.images, req.sampling.max_new_tokens,
                                  m.prompt_len, stop))
                continue
            p = min((n for n in self._procs if n[0] == "P"), key=lambda n: (self._load[n], n))
            self._load[p] += 1
            handles = [st.handles[i] for i in range(req.n_images)] if self.mode == "epd" else []
            images = req.images if self.mode == "pd" else None
            self._send(p, ("prefill", req.id, req.prompt, handles, images))

    def _evict(self) -> None:
        while len(self._mm_cache) > self.limits.mm_cache_images:
            victim = next((h for h in self._mm_cache if not self._mm_refs.get(h)), None)
            if victim is None:
                return
            transfer.release(self._mm_cache.pop(victim))
            self._mm_refs.pop(victim, None)

    def _send(self, name: str, msg: tuple) -> None:
        """Send to a worker (callers hold the lock); a broken connection is a crash the dispatcher reports."""
        with contextlib.suppress(OSError, EOFError):
            self._conns[name].send(msg)

    # ----------------------------------------------------------------- the dispatcher thread
    def _dispatch_loop(self) -> None:
        conns = {c: n for n, c in self._conns.items()}
        while not self._stopping.is_set():
            for conn in wait(list(conns), timeout=0.05):
                try:
                    msg = conn.recv()
                except (OSError, EOFError):
                    self._check_workers(conns.pop(conn))
                    continue
                with self._lock:
                    self._handle(msg)
            self._check_workers()
            if self.error is not None:
                return

    def _check_workers(self, lost: str | None = None) -> None:
        if self._stopping.is_set():
            return
        dead = [(n, p) for n, p in self._procs.items() if p.poll() is not None or n == lost]
        if dead:
            name, p = dead[0]
            with self._lock:
                self.error = f"worker {name} (pid {p.pid}) exited with code {p.poll()}"
                self._fail_all(self.error)

    def _fail_all(self, message: str) -> None:
        with self._lock:
            for st in list(self._states.values()):
                if not st.done.is_set():
                    self._finish(st, message)
            self._stats_event.notify_all()

    def _handle(self, msg: tuple) -> None:
        kind, name = msg[0], msg[1]
        now = time.perf_counter()
        if kind == "encoded":
            _, _, items, seconds, put_seconds, cpu = msg
            self._load[name] -= len(items)
            self.profile.append({"kind": "encode", "worker": name, "n": len(items), "seconds": seconds,
                                 "cpu_seconds": cpu, "requests": sorted({rid for rid, *_ in items})})
            self.profile.append({"kind": "transfer", "worker": name, "bytes": sum(h.nbytes for *_, h in items),
                                 "seconds": put_seconds})
            for rid, idx, handle in items:
                h = self._states[rid].hashes[idx]
                if self.limits.mm_cache_images:
                    self._mm_cache[h] = handle
                waiters = self._encoding.pop(h, [(rid, idx)])
                for wrid, widx in waiters:
                    st = self._states[wrid]
                    st.handles[widx] = handle
                    st.need -= 1
                    if st.need == 0 and not st.done.is_set():
                        st.metrics.encode_end = now
                        self._admit_q.append(wrid)
            self._admit()
            self._evict()
        elif kind == "first":
            _, _, rid, token, timing, handle = msg
            for key, (n, seconds) in timing.items():
                field_name = "bytes" if key in ("mm_transfer", "kv_put") else "n"
                self.profile.append({"kind": "transfer" if field_name == "bytes" else key, "worker": name,
                                     field_name: n, "seconds": seconds})
            if name[0] == "P":
                self._load[name] -= 1
            st = self._states[rid]
            if st.done.is_set():
                if handle is not None:
                    transfer.release(handle)
                return
            m = st.metrics
            m.tokens.append(token)
            m.token_times.append(now)
            self._emit(st, "token", token)
            sp = st.req.sampling
            if sp.max_new_tokens == 1 or token == sp.stop_token:
                if handle is not None:
                    transfer.release(handle)
                self._finish(st)
                self._admit()
            elif handle is not None:
                m.decode_start = now
                self._send(st.worker, ("decode", rid, handle, token, sp.max_new_tokens, sp.stop_token))
        elif kind == "tokens":
            _, _, items, seconds, batch, ctx = msg
            self.profile.append({"kind": "decode", "worker": name, "batch": batch, "ctx": ctx, "seconds": seconds})
            for rid, token, done in items:
                st = self._states[rid]
                if st.done.is_set():
                    continue
                st.metrics.tokens.append(token)
                st.metrics.token_times.append(now)
                self._emit(st, "token", token)
                if done:
                    self._finish(st)
            self._admit()
        elif kind == "transfer":
            self.profile.append({"kind": "transfer", "worker": name, "bytes": msg[2], "seconds": msg[3]})
        elif kind == "failed":
            st = self._states[msg[2]]
            if name[0] == "P":
                self._load[name] -= 1
            self._finish(st, f"failed on {name}: {msg[3]}")
            self._admit()
        elif kind == "stats":
            self._stats[name] = msg[2]
            self._stats_event.notify_all()
        elif kind == "crashed":
            self.error = f"worker {name} crashed: {msg[2].strip().splitlines()[-1]}"
            self._fail_all(self.error)


def _stop_processes(procs: dict, conns: dict, listener, prefix: str) -> None:
    """Ask each worker to stop, wait for it, then terminate / kill it by pid; close the sockets; remove shm files."""
    for name, conn in conns.items():
        if procs[name].poll() is None:
            with contextlib.suppress(OSError, EOFError, ValueError):
                conn.send(None)
    deadline = time.monotonic() + JOIN_S
    for p in procs.values():
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(max(0.0, deadline - time.monotonic()))
    for p in procs.values():
        for stop in (p.terminate, p.kill):
            if p.poll() is None:
                stop()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(2.0)
    for conn in conns.values():
        conn.close()
    if listener is not None:
        listener.close()
    transfer.cleanup(prefix)
